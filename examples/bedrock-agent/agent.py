"""A tool-calling weather assistant on AWS Bedrock through boto3's Converse API.

It offers the model a `get_weather` tool, runs the calls it asks for (`toolUse` blocks),
sends the results back as `toolResult` blocks, and prints each call and the final answer.
With AGENT_STREAM=1 it reads each answer through ConverseStream instead (AWS event-stream
frames). boto3 reads AWS_ENDPOINT_URL_BEDROCK_RUNTIME and its credentials from the
environment, so agentproxy needs no change to this file; in a replay it gives placeholder
credentials and a region.

Usage: python agent.py "What's the weather in Paris?"   (or AGENTPROXY_INPUT)
"""

import json
import os
import sys

import boto3

MODEL = "anthropic.claude-3-haiku-20240307-v1:0"
TOOLS = {"tools": [{"toolSpec": {
    "name": "get_weather",
    "description": "Current weather for a city.",
    "inputSchema": {"json": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
}}]}
WEATHER = {"Paris": "18C and sunny", "Tokyo": "22C and cloudy"}


def streamed(client, messages):
    """One ConverseStream answer as the message it amounts to, and its stop reason."""
    answer = client.converse_stream(modelId=MODEL, messages=messages, toolConfig=TOOLS)
    blocks, stop = {}, None
    for event in answer["stream"]:
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            blocks[start["contentBlockIndex"]] = {"toolUse": dict(start["start"]["toolUse"], input="")}
        elif "contentBlockDelta" in event:
            delta = event["contentBlockDelta"]
            block = blocks.setdefault(delta["contentBlockIndex"], {"text": ""})
            if "text" in delta["delta"]:
                block["text"] += delta["delta"]["text"]
            else:
                block["toolUse"]["input"] += delta["delta"]["toolUse"]["input"]
        elif "messageStop" in event:
            stop = event["messageStop"]["stopReason"]
    for block in blocks.values():
        if "toolUse" in block:
            block["toolUse"]["input"] = json.loads(block["toolUse"]["input"] or "{}")
    return {"role": "assistant", "content": [blocks[i] for i in sorted(blocks)]}, stop


def ask(client, messages):
    if os.environ.get("AGENT_STREAM") == "1":
        return streamed(client, messages)
    answer = client.converse(modelId=MODEL, messages=messages, toolConfig=TOOLS)
    return answer["output"]["message"], answer["stopReason"]


def main():
    client = boto3.client("bedrock-runtime", region_name=os.environ.get("AWS_REGION", "us-east-1"))
    question = os.environ.get("AGENTPROXY_INPUT") or " ".join(sys.argv[1:]) or "What's the weather in Paris?"
    messages = [{"role": "user", "content": [{"text": question}]}]
    for _ in range(5):
        message, stop = ask(client, messages)
        messages.append(message)
        calls = [block["toolUse"] for block in message["content"] if "toolUse" in block]
        if stop != "tool_use":
            print("assistant:", "".join(block.get("text", "") for block in message["content"]))
            return
        results = []
        for call in calls:
            print(f"tool: {call['name']} {json.dumps(call['input'], sort_keys=True)}")
            said = f"{WEATHER.get(call['input']['city'], '15C and mild')} in {call['input']['city']}"
            results.append({"toolResult": {"toolUseId": call["toolUseId"], "content": [{"text": said}]}})
        messages.append({"role": "user", "content": results})
    sys.exit("too many tool rounds")


if __name__ == "__main__":
    main()
