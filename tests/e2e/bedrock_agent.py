"""An agent on AWS Bedrock through boto3 and the Anthropic SDK (tests/clients/e2e_bedrock.rs).

A Converse tool loop (the model asks for `get_weather`, the tool answers, the model
replies), once with converse and once with converse_stream; InvokeModel and its response
stream with an Anthropic body through boto3; and AnthropicBedrock's messages.create, plain
and streamed. Each prints what it got, so a replay can be compared with its record.

`intercept`: drop the endpoint agentproxy gives, so boto3 goes to the real host
(bedrock-runtime.us-east-1.amazonaws.com) through the session's forward proxy.
"""

import json
import os
import sys

if "intercept" in sys.argv:
    os.environ.pop("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", None)

import boto3
from anthropic import AnthropicBedrock

MODEL = "anthropic.claude-3-haiku-20240307-v1:0"
TOOLS = {"tools": [{"toolSpec": {
    "name": "get_weather",
    "description": "The weather in a city",
    "inputSchema": {"json": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
}}]}
client = boto3.client("bedrock-runtime", region_name="us-east-1")


def read_stream(stream):
    """A ConverseStream as the Converse message it amounts to, and its stop reason."""
    blocks, stop = {}, None
    for event in stream:
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
        elif "metadata" in event:
            print("usage:", event["metadata"]["usage"]["totalTokens"])
    for block in blocks.values():
        if "toolUse" in block:
            block["toolUse"]["input"] = json.loads(block["toolUse"]["input"])
    return {"role": "assistant", "content": [blocks[i] for i in sorted(blocks)]}, stop


def converse_loop(streamed):
    messages = [{"role": "user", "content": [{"text": "What's the weather in Paris?"}]}]
    for _ in range(3):
        if streamed:
            answer = client.converse_stream(modelId=MODEL, messages=messages, toolConfig=TOOLS)
            message, stop = read_stream(answer["stream"])
        else:
            answer = client.converse(modelId=MODEL, messages=messages, toolConfig=TOOLS)
            message, stop = answer["output"]["message"], answer["stopReason"]
        messages.append(message)
        calls = [b["toolUse"] for b in message["content"] if "toolUse" in b]
        for call in calls:
            print("tool call:", call["name"], json.dumps(call["input"]))
        if stop != "tool_use":
            print("reply:", "".join(b.get("text", "") for b in message["content"]))
            return
        results = [{"toolResult": {"toolUseId": c["toolUseId"], "content": [{"text": f"18C and sunny in {c['input']['city']}"}]}} for c in calls]
        messages.append({"role": "user", "content": results})


def invoke_stream():
    body = json.dumps({"anthropic_version": "bedrock-2023-05-31", "max_tokens": 64,
                       "messages": [{"role": "user", "content": "Say hello in French."}]})
    answer = client.invoke_model_with_response_stream(modelId=MODEL, body=body)
    text = ""
    for event in answer["body"]:
        chunk = json.loads(event["chunk"]["bytes"])
        if chunk["type"] == "content_block_delta":
            text += chunk["delta"]["text"]
    print("invoke stream:", text)


def anthropic_bedrock():
    claude = AnthropicBedrock(aws_region="us-east-1")
    ask = [{"role": "user", "content": "Say hello in French."}]
    message = claude.messages.create(model=MODEL, max_tokens=64, messages=ask)
    print("anthropic:", message.content[0].text)
    with claude.messages.stream(model=MODEL, max_tokens=64, messages=ask) as stream:
        print("anthropic stream:", "".join(stream.text_stream))


converse_loop(streamed=False)
converse_loop(streamed=True)
invoke_stream()
if "intercept" not in sys.argv:
    anthropic_bedrock()
