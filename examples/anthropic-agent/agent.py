"""A tool-calling travel assistant on the official `anthropic` SDK (Messages API).

It offers Claude two tools, runs the ones it asks for (`tool_use` blocks), sends the
results back as `tool_result` blocks, and prints each call and the final answer. With
AGENT_STREAM=1 it reads each answer through the SDK's streaming helper instead.

`get_time` returns the real current time: a volatile value that would change the follow-up
request on every run, which is why `anthropic.yaml` mocks it. The SDK reads
ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY, so agentproxy needs no change to this file.

Usage: python agent.py "What's the weather in Paris?"   (or AGENTPROXY_INPUT)
"""

import json
import os
import sys
from datetime import datetime, timezone

import anthropic

MODEL = "claude-sonnet-5"
SYSTEM = "You are a travel assistant. Use the tools."

TOOLS = [
    {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "input_schema": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
    {
        "name": "get_time",
        "description": "Local time in a city.",
        "input_schema": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
]

WEATHER = {"Paris": (18, "sunny"), "Tokyo": (22, "cloudy"), "Oslo": (4, "rainy")}


def run_tool(name, args):
    if name == "get_weather":
        temp, sky = WEATHER.get(args["city"], (15, "mild"))
        return {"city": args["city"], "temp_c": temp, "sky": sky}
    if name == "get_time":
        return {"city": args["city"], "time": datetime.now(timezone.utc).strftime("%H:%M:%S")}
    return {"error": f"unknown tool {name}"}


def ask(client, messages):
    request = {"model": MODEL, "max_tokens": 1024, "system": SYSTEM, "tools": TOOLS, "messages": messages}
    if os.environ.get("AGENT_STREAM") == "1":
        with client.messages.stream(**request) as stream:
            return stream.get_final_message()
    return client.messages.create(**request)


def main():
    client = anthropic.Anthropic()
    question = os.environ.get("AGENTPROXY_INPUT") or " ".join(sys.argv[1:]) or "What's the weather in Paris?"
    messages = [{"role": "user", "content": question}]
    for _ in range(5):
        message = ask(client, messages)
        messages.append({"role": "assistant", "content": message.content})
        uses = [block for block in message.content if block.type == "tool_use"]
        if not uses:
            text = "".join(block.text for block in message.content if block.type == "text")
            print(f"assistant: {text}")
            return
        results = []
        for use in uses:
            print(f"tool: {use.name} {json.dumps(use.input, sort_keys=True)}")
            result = run_tool(use.name, use.input)
            results.append({"type": "tool_result", "tool_use_id": use.id, "content": json.dumps(result)})
        messages.append({"role": "user", "content": results})
    sys.exit("too many tool rounds")


if __name__ == "__main__":
    main()
