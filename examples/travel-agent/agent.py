"""A tool-calling travel assistant on the official `openai` SDK.

It offers the model two tools, runs the ones the model asks for, and prints each call and
the final answer. Arguments that do not fit the tool's schema are not run: the model is
told what is wrong, as the tool's result (TRAVEL_UNCHECKED=1 skips that check; the docs
use it to show a fuzz run that fails). `get_time` returns the real current time: a
volatile value that would break replay of the follow-up request, which is why its spec
mocks it.
"""

import json
import os
import sys
from datetime import datetime, timezone

import jsonschema
from openai import OpenAI

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "Local time in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    },
]

WEATHER = {"Paris": (18, "sunny"), "Tokyo": (22, "cloudy"), "Oslo": (4, "rainy")}


def run_tool(name, args):
    tool = next((t["function"] for t in TOOLS if t["function"]["name"] == name), None)
    if tool is None:
        return {"error": f"unknown tool {name}"}
    problem = next(jsonschema.Draft202012Validator(tool["parameters"]).iter_errors(args), None)
    if problem is not None and not os.environ.get("TRAVEL_UNCHECKED"):
        return {"error": f"invalid arguments: {problem.message}"}
    if name == "get_weather":
        temp, sky = WEATHER.get(args["city"], (15, "mild"))
        return {"city": args["city"], "temp_c": temp, "sky": sky}
    if name == "get_time":
        return {"city": args["city"], "time": datetime.now(timezone.utc).strftime("%H:%M:%S")}


# The prompt the cassettes were recorded with; TRAVEL_SYSTEM_PROMPT changes it (the docs
# use that to show what a drifted prompt does to a replay).
SYSTEM_PROMPT = "You are a travel assistant. Use the tools."


def main():
    client = OpenAI()
    question = os.environ.get("AGENTPROXY_INPUT") or " ".join(sys.argv[1:]) or "What's the weather in Paris?"
    messages = [
        {"role": "system", "content": os.environ.get("TRAVEL_SYSTEM_PROMPT", SYSTEM_PROMPT)},
        {"role": "user", "content": question},
    ]
    for _ in range(5):
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            print(f"assistant: {message.content}")
            return
        for call in message.tool_calls:
            args = json.loads(call.function.arguments)
            print(f"tool: {call.function.name} {json.dumps(args, sort_keys=True)}")
            result = run_tool(call.function.name, args)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
    sys.exit("too many tool rounds")


if __name__ == "__main__":
    main()
