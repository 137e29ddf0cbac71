"""A multi-turn travel assistant on the official `openai` SDK's Responses API.

Each line on stdin is one user turn. The conversation lives on the server: every request
after the first names the previous response in `previous_response_id` and sends only the
new items (the user's line, or the `function_call_output`s of the tools the model called).
It prints each tool call and one `assistant: ...` line per turn. With AGENT_STREAM=1 each
answer is read through the SDK's streaming helper (`client.responses.stream`) instead.

`get_time` returns the real current time: a volatile value that would change the follow-up
request on every run, which is why `responses.yaml` mocks it. The SDK reads OPENAI_BASE_URL
and OPENAI_API_KEY, so agentproxy needs no change to this file.

Usage: echo "What's the weather in Paris?" | python agent.py
"""

import json
import os
import sys
from datetime import datetime, timezone

from openai import OpenAI

MODEL = "gpt-4o-mini"
INSTRUCTIONS = "You are a travel assistant. Use the tools."

TOOLS = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city", "unit"],
            "additionalProperties": False,
        },
        "strict": True,
    },
    {
        "type": "function",
        "name": "get_time",
        "description": "Local time in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
        "strict": True,
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


def ask(client, new_items, previous):
    request = {"model": MODEL, "instructions": INSTRUCTIONS, "tools": TOOLS, "input": new_items}
    if previous is not None:
        request["previous_response_id"] = previous
    if os.environ.get("AGENT_STREAM") == "1":
        with client.responses.stream(**request) as stream:
            return stream.get_final_response()
    return client.responses.create(**request)


def main():
    client = OpenAI()
    previous = None
    for line in sys.stdin:
        new_items = [{"role": "user", "content": line.strip()}]
        for _ in range(5):
            response = ask(client, new_items, previous)
            previous = response.id
            calls = [item for item in response.output if item.type == "function_call"]
            if not calls:
                print(f"assistant: {response.output_text}", flush=True)
                break
            new_items = []
            for call in calls:
                args = json.loads(call.arguments)
                print(f"tool: {call.name} {json.dumps(args, sort_keys=True)}", flush=True)
                result = run_tool(call.name, args)
                new_items.append({"type": "function_call_output", "call_id": call.call_id, "output": json.dumps(result)})
        else:
            sys.exit("too many tool rounds")


if __name__ == "__main__":
    main()
