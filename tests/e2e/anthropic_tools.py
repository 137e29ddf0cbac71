"""An agent loop with the real anthropic SDK: Messages API with tools.

The user asks for the weather; the model answers with a text block and `tool_use` blocks;
the script runs the tools, sends `tool_result` blocks back in a user turn and prints the
final reply. With `--stream` each request goes through the SDK's streaming helper
(`client.messages.stream`): every text delta and every `input_json` fragment is printed as
it arrives, so a replay that merged or split the recorded events prints something else,
and the helper's accumulated final message drives the loop. The streamed question names two
cities, so two `tool_use` blocks are streamed in one message.

The SDK reads ANTHROPIC_BASE_URL (agentproxy injects it, without /v1) and
ANTHROPIC_API_KEY. Usage: anthropic_tools.py [--stream] [QUESTION]
"""

import json
import sys

import anthropic

from weather import MAX_TURNS, SYSTEM, TOOLS, print_call, run_tool

MODEL = "claude-sonnet-5"
# The chat tools of weather.py in Anthropic's shape.
ANTHROPIC_TOOLS = [
    {
        "name": tool["function"]["name"],
        "description": tool["function"]["description"],
        "input_schema": tool["function"]["parameters"],
    }
    for tool in TOOLS
]


def ask_streaming(client, messages):
    """One streamed request through the SDK helper; returns its final message."""
    with client.messages.stream(
        model=MODEL, max_tokens=1024, system=SYSTEM, tools=ANTHROPIC_TOOLS, messages=messages
    ) as stream:
        for event in stream:
            if event.type == "text":
                print(f"delta: {event.text!r}")
            elif event.type == "input_json":
                print(f"input_json: {event.partial_json!r}")
            elif event.type == "content_block_stop" and event.content_block.type == "tool_use":
                print(f"tool input complete: {json.dumps(event.content_block.input, sort_keys=True)}")
        return stream.get_final_message()


def main():
    streaming = "--stream" in sys.argv[1:]
    words = [arg for arg in sys.argv[1:] if arg != "--stream"]
    default = "What's the weather in Paris and Tokyo?" if streaming else "What's the weather in Paris?"
    question = words[0] if words else default
    client = anthropic.Anthropic()
    messages = [{"role": "user", "content": question}]
    for _ in range(MAX_TURNS):
        if streaming:
            message = ask_streaming(client, messages)
        else:
            message = client.messages.create(
                model=MODEL, max_tokens=1024, system=SYSTEM, tools=ANTHROPIC_TOOLS, messages=messages
            )
        print(f"stop: {message.stop_reason}")
        text = "".join(block.text for block in message.content if block.type == "text")
        uses = [block for block in message.content if block.type == "tool_use"]
        if not uses:
            print(f"reply: {text}")
            print(f"usage: {message.usage.input_tokens}+{message.usage.output_tokens}")
            return 0
        print(f"text: {text}")
        # The assistant turn goes back as the SDK returned it, as Anthropic's docs show.
        messages.append({"role": "assistant", "content": message.content})
        results = []
        for use in uses:
            print_call(use.name, json.dumps(use.input))
            output = run_tool(use.name, json.dumps(use.input))
            results.append({"type": "tool_result", "tool_use_id": use.id, "content": output})
        messages.append({"role": "user", "content": results})
    print(f"the model was still calling tools after {MAX_TURNS} turns", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
