"""A minimal tool-calling agent on the OpenAI chat-completions API, standard library only.

It asks the model a question with one tool, runs the tool calls the model asks for, sends
the results back, and prints the final reply. It reads OPENAI_BASE_URL like the official
SDKs do, so `agentproxy record|replay -- python3 agent.py` needs no change to it.
"""

import json
import os
import sys
import urllib.error
import urllib.request

BASE_URL = os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1").rstrip("/")
API_KEY = os.environ.get("OPENAI_API_KEY", "")
MODEL = os.environ.get("AGENT_MODEL", "gpt-4o-mini")

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
            },
        },
    }
]


def get_weather(city, unit="celsius"):
    # A real tool would call a weather service; a fixed answer keeps the example hermetic.
    return {"city": city, "temp_c": 18, "sky": "sunny", "unit": unit}


def chat(messages):
    body = json.dumps({"model": MODEL, "messages": messages, "tools": TOOLS}).encode()
    req = urllib.request.Request(
        f"{BASE_URL}/chat/completions",
        data=body,
        headers={"content-type": "application/json", "authorization": f"Bearer {API_KEY}"},
    )
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return json.load(resp)
    except urllib.error.HTTPError as e:
        sys.exit(f"model request failed with HTTP {e.code}: {e.read().decode(errors='replace')}")


def main():
    question = " ".join(sys.argv[1:]) or os.environ.get("AGENTPROXY_INPUT") or "What's the weather in Paris?"
    messages = [
        {"role": "system", "content": "You are a concise weather assistant."},
        {"role": "user", "content": question},
    ]
    for _ in range(5):
        message = chat(messages)["choices"][0]["message"]
        messages.append(message)
        calls = message.get("tool_calls") or []
        if not calls:
            print(f"assistant: {message.get('content')}")
            return
        for call in calls:
            args = json.loads(call["function"]["arguments"])
            print(f"tool: {call['function']['name']} {json.dumps(args, sort_keys=True)}")
            result = get_weather(**args)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)})
    sys.exit("the model kept calling tools; giving up after 5 steps")


if __name__ == "__main__":
    main()
