"""The tools and prompts shared by the chat agents in this directory.

The tool is deterministic on purpose: a real weather tool would return something fresh
(a timestamp, a live reading) on every run, the follow-up request that carries its result
would differ between record and replay, and the replay would miss. Making volatile tool
results stable is what `agentproxy test` mocks are for; these scripts test the proxy alone.
"""

import json
import sys

MODEL = "gpt-4o-mini"
SYSTEM = "You are a concise weather assistant. Use the tools."
# The bound on model round-trips: an agent that never stops calling tools is a bug.
MAX_TURNS = 5

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city"],
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

_READINGS = {"Paris": (18, "sunny"), "Tokyo": (22, "cloudy")}


def run_tool(name, arguments):
    """Runs one tool call; returns the result as the JSON string the model is sent."""
    args = json.loads(arguments)
    city = args.get("city", "")
    if name == "get_weather":
        temp_c, sky = _READINGS.get(city, (20, "clear"))
        return json.dumps({"city": city, "temp_c": temp_c, "sky": sky})
    if name == "get_time":
        return json.dumps({"city": city, "time": "09:00"})
    raise ValueError(f"the model called an unknown tool: {name}")


def first_messages(default_question):
    """The opening conversation; argv[1], when given, replaces the user's question."""
    question = sys.argv[1] if len(sys.argv) > 1 else default_question
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]


def print_call(name, arguments):
    # Arguments re-serialised with sorted keys: the output must not depend on how the
    # model spaced or ordered them. The call id is volatile and never printed.
    print(f"tool call: {name} {json.dumps(json.loads(arguments), sort_keys=True)}")
