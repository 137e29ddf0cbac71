"""An agent loop with the real openai SDK on the Responses API (`responses.create`).

The first request carries the question and a function tool; the model answers with
`function_call` items; every follow-up names the previous response in
`previous_response_id` and sends only the `function_call_output` items, so the proxy must
serve the recorded response ids for the chain to match on replay.

With `--stream`, the first request is `responses.create(stream=True)`: the raw typed events
are read one by one (sequence numbers checked, argument and text deltas printed, calls
rebuilt from `function_call_arguments.delta`); follow-ups go through the SDK's helper
`responses.stream(...)`, which checks the event order strictly and assembles the final
response. Usage: responses_tools.py [--stream] [QUESTION]
"""

import sys

from openai import OpenAI

from weather import MAX_TURNS, MODEL, SYSTEM, TOOLS, print_call, run_tool

# The chat tools of weather.py in the Responses shape (flat, no `function` wrapper).
RESPONSES_TOOLS = [{"type": "function", **tool["function"]} for tool in TOOLS]


def read_raw_stream(stream):
    """Reads a `stream=True` response event by event; returns the completed response."""
    expected = 0
    completed = None
    for event in stream:
        if event.sequence_number != expected:
            raise SystemExit(f"event {event.type} has sequence_number {event.sequence_number}, not {expected}")
        expected += 1
        if event.type == "response.output_item.added":
            print(f"item added: {event.item.type}")
        elif event.type == "response.function_call_arguments.delta":
            print(f"arguments delta: {event.delta!r}")
        elif event.type == "response.output_text.delta":
            print(f"delta: {event.delta!r}")
        elif event.type == "response.completed":
            completed = event.response
    print(f"events: {expected}")
    return completed


def read_helper_stream(stream):
    with stream as events:
        for event in events:
            if event.type == "response.output_text.delta":
                print(f"delta: {event.delta!r}")
            elif event.type == "response.function_call_arguments.delta":
                print(f"arguments delta: {event.delta!r}")
        return events.get_final_response()


def main():
    streaming = "--stream" in sys.argv[1:]
    words = [arg for arg in sys.argv[1:] if arg != "--stream"]
    default = "What's the weather in Paris and the time in Tokyo?" if streaming else "What's the weather in Paris?"
    question = words[0] if words else default
    client = OpenAI()
    request = {"model": MODEL, "instructions": SYSTEM, "tools": RESPONSES_TOOLS}
    if streaming:
        response = read_raw_stream(client.responses.create(input=question, stream=True, **request))
    else:
        response = client.responses.create(input=question, **request)
    for _ in range(MAX_TURNS):
        print(f"status: {response.status}")
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            print(f"reply: {response.output_text}")
            print(f"usage: {response.usage.input_tokens}+{response.usage.output_tokens}")
            return 0
        outputs = []
        for call in calls:
            print_call(call.name, call.arguments)
            outputs.append(
                {"type": "function_call_output", "call_id": call.call_id, "output": run_tool(call.name, call.arguments)}
            )
        follow_up = {"previous_response_id": response.id, "input": outputs, **request}
        if streaming:
            response = read_helper_stream(client.responses.stream(**follow_up))
        else:
            response = client.responses.create(**follow_up)
    print(f"the model was still calling tools after {MAX_TURNS} turns", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
