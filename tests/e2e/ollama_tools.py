"""The weather agent loop with the real `ollama` Python client, against Ollama's native API.

Two runs until the model stops calling tools: not streamed (`stream=False`), then
streamed (the client's chunks, each printed as it arrives); the assistant message is sent
back as the client returned it and each result as `role: tool` with its `tool_name`, as
Ollama's docs show. Then a completion (`generate`), whole and streamed, and the
plain-HTTP side of the API: the model list and an embedding.

The client reads OLLAMA_HOST, which agentproxy sets. Everything printed is deterministic.
"""

import json
import sys

from ollama import Client

from weather import MAX_TURNS, TOOLS, first_messages, print_call, run_tool

MODEL = "llama3.2"


def loop(client, label, stream):
    messages = first_messages("What's the weather in Paris and Tokyo?")
    for _ in range(MAX_TURNS):
        if stream:
            content, calls, done = "", [], None
            for chunk in client.chat(model=MODEL, messages=messages, tools=TOOLS, stream=True):
                if chunk.message.content:
                    print(f"{label} delta: {chunk.message.content!r}")
                    content += chunk.message.content
                calls += chunk.message.tool_calls or []
                if chunk.done:
                    done = chunk
            message = {"role": "assistant", "content": content,
                       "tool_calls": [c.model_dump() for c in calls]}
        else:
            done = client.chat(model=MODEL, messages=messages, tools=TOOLS, stream=False)
            message, calls = done.message, done.message.tool_calls or []
        print(f"{label} done: {done.done_reason}, {done.prompt_eval_count}+{done.eval_count} tokens")
        if not calls:
            print(f"{label} reply: {done.message.content or content}")
            return True
        messages.append(message)
        for call in calls:
            arguments = json.dumps(call.function.arguments)
            print_call(call.function.name, arguments)
            messages.append({"role": "tool", "tool_name": call.function.name,
                             "content": run_tool(call.function.name, arguments)})
    print(f"{label}: still calling tools after {MAX_TURNS} turns", file=sys.stderr)
    return False


def main():
    client = Client()
    if not (loop(client, "whole", stream=False) and loop(client, "stream", stream=True)):
        return 1
    done = client.generate(model=MODEL, prompt="Why is the sky blue?", stream=False)
    print(f"generate whole: {done.response} ({done.done_reason}, {done.eval_count} tokens)")
    pieces = [c.response for c in client.generate(model=MODEL, prompt="Say hi", stream=True)]
    print(f"generate stream: {pieces!r}")
    print("models:", " ".join(m.model for m in client.list().models))
    print("embedding dims:", len(client.embed(model="all-minilm", input="hi").embeddings[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
