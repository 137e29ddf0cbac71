"""A tool-calling weather assistant on the official `ollama` Python client, against
Ollama's native API (`/api/chat`).

It offers one tool, runs the calls the model asks for, sends each result back as a
`role: tool` message naming its tool, and prints each call and the final answer. With
AGENT_STREAM=1 it reads each answer as a stream (Ollama's default) instead of whole.

The client reads OLLAMA_HOST, which agentproxy sets, so this file needs no change to run
under agentproxy. Usage: python agent.py "What's the weather in Paris?"  (or AGENTPROXY_INPUT)
"""

import json
import os
import sys

from ollama import Client

MODEL = "llama3.2"
TOOLS = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
            "required": ["city"],
        },
    },
}]
WEATHER = {"Paris": (18, "sunny"), "Tokyo": (22, "cloudy")}


def get_weather(city, unit="celsius"):
    temp, sky = WEATHER.get(city, (15, "mild"))
    return {"city": city, "temp_c": temp, "sky": sky}


def ask(client, messages):
    """The answer's text and tool calls, whole or streamed."""
    if os.environ.get("AGENT_STREAM") != "1":
        message = client.chat(model=MODEL, messages=messages, tools=TOOLS, stream=False).message
        return message.content, message.tool_calls or []
    text, calls = "", []
    for chunk in client.chat(model=MODEL, messages=messages, tools=TOOLS, stream=True):
        text += chunk.message.content or ""
        calls += chunk.message.tool_calls or []
    return text, calls


def main():
    question = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("AGENTPROXY_INPUT", "")
    client = Client()
    messages = [{"role": "user", "content": question}]
    for _ in range(5):
        text, calls = ask(client, messages)
        if not calls:
            print(text)
            return 0
        messages.append({"role": "assistant", "content": text,
                         "tool_calls": [c.model_dump() for c in calls]})
        for call in calls:
            args = call.function.arguments
            print(f"tool: {call.function.name} {json.dumps(args, sort_keys=True)}")
            messages.append({"role": "tool", "tool_name": call.function.name,
                             "content": json.dumps(get_weather(**args))})
    print("the model kept calling tools", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
