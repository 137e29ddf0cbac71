"""The agent loop of chat_tools.py, streamed (stream=True, include_usage).

Tool-call deltas are accumulated per `index` the way real apps do it: the first fragment
of a call carries its id and name, the `arguments` string arrives in pieces. The default
question names two cities, so the model makes two parallel calls whose fragments have to
be kept apart. Each text delta is printed as it arrives, so a replay that merged or split
events differently prints something else.

Usage: chat_stream.py [QUESTION]
"""

import sys

from openai import OpenAI

from weather import MAX_TURNS, MODEL, TOOLS, first_messages, print_call, run_tool


def read_stream(stream):
    """Returns (text, tool calls by index, finish reason, usage) of one streamed answer."""
    text, calls, finish, usage = "", {}, None, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        delta = choice.delta
        if delta.content:
            print(f"delta: {delta.content!r}")
            text += delta.content
        for fragment in delta.tool_calls or []:
            call = calls.setdefault(fragment.index, {"id": "", "name": "", "arguments": ""})
            if fragment.id:
                call["id"] = fragment.id
            if fragment.function and fragment.function.name:
                call["name"] = fragment.function.name
            if fragment.function and fragment.function.arguments:
                call["arguments"] += fragment.function.arguments
        if choice.finish_reason:
            finish = choice.finish_reason
    return text, calls, finish, usage


def main():
    client = OpenAI()
    messages = first_messages("What's the weather in Paris and Tokyo?")
    for _ in range(MAX_TURNS):
        stream = client.chat.completions.create(
            model=MODEL,
            messages=messages,
            tools=TOOLS,
            stream=True,
            stream_options={"include_usage": True},
        )
        text, calls, finish, usage = read_stream(stream)
        print(f"finish: {finish}")
        if usage is None:
            print("the stream carried no usage chunk", file=sys.stderr)
            return 1
        if not calls:
            print(f"reply: {text}")
            print(f"usage: {usage.prompt_tokens}+{usage.completion_tokens}")
            return 0
        ordered = [calls[index] for index in sorted(calls)]
        messages.append(
            {
                "role": "assistant",
                "content": text or None,
                "tool_calls": [
                    {
                        "id": call["id"],
                        "type": "function",
                        "function": {"name": call["name"], "arguments": call["arguments"]},
                    }
                    for call in ordered
                ],
            }
        )
        for call in ordered:
            print_call(call["name"], call["arguments"])
            result = run_tool(call["name"], call["arguments"])
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    print(f"the model was still calling tools after {MAX_TURNS} turns", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
