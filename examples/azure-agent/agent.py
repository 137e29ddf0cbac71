"""A tool-calling weather assistant on the `openai` SDK's `AzureOpenAI` client: chat
completions on a deployment (`/openai/deployments/{deployment}/chat/completions`, with an
`api-version` and the key in an `api-key` header), as Azure OpenAI serves them.

The client reads AZURE_OPENAI_ENDPOINT and AZURE_OPENAI_API_KEY: agentproxy sets the
first (and a placeholder of the second in a replay), so this file needs no change to run
under it. Usage: python agent.py "What's the weather in Paris?"  (or AGENTPROXY_INPUT)
"""

import json
import os
import sys

from openai import AzureOpenAI

DEPLOYMENT = "weather-gpt-4o"
TOOLS = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
            "required": ["city"],
        },
    },
}]
WEATHER = {"Paris": (18, "sunny"), "Tokyo": (22, "cloudy")}


def main():
    question = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("AGENTPROXY_INPUT", "")
    client = AzureOpenAI(api_version="2024-10-21", azure_deployment=DEPLOYMENT)
    messages = [{"role": "system", "content": "You are a concise weather assistant."},
                {"role": "user", "content": question}]
    for _ in range(5):
        message = client.chat.completions.create(
            model=DEPLOYMENT, messages=messages, tools=TOOLS).choices[0].message
        if not message.tool_calls:
            print(message.content)
            return 0
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            args = json.loads(call.function.arguments)
            print(f"tool: {call.function.name} {json.dumps(args, sort_keys=True)}")
            temp, sky = WEATHER.get(args["city"], (15, "mild"))
            messages.append({"role": "tool", "tool_call_id": call.id,
                             "content": json.dumps({"city": args["city"], "temp_c": temp, "sky": sky})})
    print("the model kept calling tools", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
