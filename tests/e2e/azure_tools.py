"""The weather agent loop against Azure OpenAI, with the real openai SDK's Azure clients.

Three runs, each until the model stops calling tools:

1. `AzureOpenAI` on a deployment (`/openai/deployments/{d}/chat/completions?api-version=…`,
   the key in an `api-key` header), not streamed;
2. the same, streamed, with tool-call fragments accumulated per index;
3. the v1 form: the plain `OpenAI` client on `{endpoint}/openai/v1` (no api-version, the
   key as a bearer token), as HoloDeck's azure_openai provider builds it.

The clients read AZURE_OPENAI_ENDPOINT and AZURE_OPENAI_API_KEY, which agentproxy sets
(the endpoint) and the test sets (the key; a replay gets agentproxy's placeholder).
"""

import os
import sys

from openai import AzureOpenAI, OpenAI

from chat_stream import read_stream
from weather import MAX_TURNS, MODEL, TOOLS, first_messages, print_call, run_tool

DEPLOYMENT = "weather-prod"
API_VERSION = "2024-10-21"


def loop(label, ask):
    """Runs the agent loop with `ask(messages)` -> (text, calls, finish) per model call."""
    messages = first_messages("What's the weather in Paris?")
    for _ in range(MAX_TURNS):
        text, calls, finish = ask(messages)
        print(f"{label} finish: {finish}")
        if not calls:
            print(f"{label} reply: {text}")
            return True
        messages.append({
            "role": "assistant",
            "tool_calls": [
                {"id": c["id"], "type": "function",
                 "function": {"name": c["name"], "arguments": c["arguments"]}}
                for c in calls
            ],
        })
        for c in calls:
            print_call(c["name"], c["arguments"])
            messages.append({"role": "tool", "tool_call_id": c["id"],
                             "content": run_tool(c["name"], c["arguments"])})
    print(f"{label}: still calling tools after {MAX_TURNS} turns", file=sys.stderr)
    return False


def whole(client, model):
    def ask(messages):
        r = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)
        m = r.choices[0].message
        calls = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                 for c in m.tool_calls or []]
        return m.content, calls, r.choices[0].finish_reason
    return ask


def streamed(client, model):
    def ask(messages):
        stream = client.chat.completions.create(
            model=model, messages=messages, tools=TOOLS, stream=True,
            stream_options={"include_usage": True})
        text, calls, finish, _ = read_stream(stream)
        return text, [calls[i] for i in sorted(calls)], finish
    return ask


def main():
    azure = AzureOpenAI(api_version=API_VERSION, azure_deployment=DEPLOYMENT)
    v1 = OpenAI(base_url=os.environ["AZURE_OPENAI_ENDPOINT"].rstrip("/") + "/openai/v1",
                api_key=os.environ["AZURE_OPENAI_API_KEY"])
    ok = (loop("deployment", whole(azure, MODEL))
          and loop("deployment stream", streamed(azure, MODEL))
          and loop("v1", whole(v1, DEPLOYMENT)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
