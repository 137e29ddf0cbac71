"""A multi-turn voice-style travel assistant on the official `openai` SDK's Realtime API.

One WebSocket for the whole session (`client.realtime.connect`): the session gets the
instructions and a function tool, then each line on stdin is one user turn, sent as a
conversation item followed by `response.create`. When the model calls a tool, its output
goes back as a `function_call_output` item and the model is asked again. It prints each
tool call and one `assistant: ...` line per turn (the reply's text).

The SDK reads OPENAI_BASE_URL and OPENAI_API_KEY (its socket goes to the same host, as
`ws://` for an `http://` base), so agentproxy needs no change to this file.

Usage: echo "What's the weather in Paris?" | python agent.py
"""

import json
import sys

from openai import OpenAI

MODEL = "gpt-realtime"
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
        },
    },
]

WEATHER = {"Paris": (18, "sunny"), "Tokyo": (22, "cloudy"), "Oslo": (4, "rainy")}


def run_tool(name, args):
    if name == "get_weather":
        temp, sky = WEATHER.get(args["city"], (15, "mild"))
        return {"city": args["city"], "temp_c": temp, "sky": sky}
    return {"error": f"unknown tool {name}"}


def respond(conn):
    """Asks for a response and reads it to `response.done`; returns the response."""
    conn.response.create()
    for event in conn:
        if event.type == "error":
            raise SystemExit(f"error: {event.error.message}")
        if event.type == "response.done":
            return event.response
    raise SystemExit("the socket closed mid-turn")


def main():
    client = OpenAI()
    with client.realtime.connect(model=MODEL) as conn:
        conn.session.update(session={"type": "realtime", "output_modalities": ["text"],
                                     "instructions": INSTRUCTIONS, "tools": TOOLS})
        for line in sys.stdin:
            text = line.strip()
            if not text:
                continue
            conn.conversation.item.create(item={"type": "message", "role": "user",
                                                "content": [{"type": "input_text", "text": text}]})
            response = respond(conn)
            calls = [item for item in response.output if item.type == "function_call"]
            while calls:
                for call in calls:
                    args = json.loads(call.arguments)
                    print(f"tool: {call.name} {json.dumps(args, sort_keys=True)}", flush=True)
                    output = json.dumps(run_tool(call.name, args))
                    conn.conversation.item.create(item={"type": "function_call_output",
                                                        "call_id": call.call_id, "output": output})
                response = respond(conn)
                calls = [item for item in response.output if item.type == "function_call"]
            reply = "".join(part.text or "" for item in response.output if item.type == "message"
                            for part in item.content)
            print(f"assistant: {reply}", flush=True)


if __name__ == "__main__":
    main()
