"""A non-streaming agent loop with the real openai SDK.

The user asks for the weather; the model calls get_weather; the script runs the tool,
sends the result back and prints the final reply. Everything printed is deterministic
(never the volatile ids), so a record run and its replay print the same thing.

The SDK reads OPENAI_BASE_URL and OPENAI_API_KEY from the environment: agentproxy injects
the first, the test sets the second. Usage: chat_tools.py [QUESTION]
"""

import sys

from openai import OpenAI

from weather import MAX_TURNS, MODEL, TOOLS, first_messages, print_call, run_tool


def main():
    client = OpenAI()
    messages = first_messages("What's the weather in Paris?")
    for _ in range(MAX_TURNS):
        response = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
        choice = response.choices[0]
        message = choice.message
        print(f"finish: {choice.finish_reason}")
        if not message.tool_calls:
            print(f"reply: {message.content}")
            print(f"usage: {response.usage.prompt_tokens}+{response.usage.completion_tokens}")
            return 0
        # Echo the assistant turn back as the SDK returned it, as real apps do.
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            print_call(call.function.name, call.function.arguments)
            result = run_tool(call.function.name, call.function.arguments)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    print(f"the model was still calling tools after {MAX_TURNS} turns", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
