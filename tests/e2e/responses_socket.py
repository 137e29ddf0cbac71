"""An agent loop with the real openai SDK over the Responses API's WebSocket mode
(`client.responses.connect()`, the transport Codex CLI uses by default).

One socket carries the whole loop: the first `response.create` frame has the question and
a function tool; the model answers with `function_call` items; the follow-up on the same
socket names the previous response and sends only the `function_call_output` items, so
on replay the proxy must serve the recorded response id for the chain to match. Every
event's type is printed, deltas with their text. Usage: responses_socket.py [QUESTION]
"""

import sys

from openai import OpenAI

from weather import MODEL, SYSTEM, TOOLS, print_call, run_tool

RESPONSES_TOOLS = [{"type": "function", **tool["function"]} for tool in TOOLS]


def read_turn(conn):
    """Reads one turn's events; returns the completed response."""
    for event in conn:
        if event.type == "response.output_text.delta":
            print(f"delta: {event.delta!r}")
        elif event.type == "response.function_call_arguments.delta":
            print(f"arguments delta: {event.delta!r}")
        elif event.type == "error":
            raise SystemExit(f"error event: {event.error}")
        else:
            print(f"event: {event.type}")
        if event.type == "response.completed":
            return event.response
    raise SystemExit("the socket ended mid-turn")


def main():
    question = sys.argv[1] if len(sys.argv) > 1 else "What's the weather in Paris?"
    client = OpenAI()
    with client.responses.connect() as conn:
        conn.response.create(model=MODEL, instructions=SYSTEM, input=question, tools=RESPONSES_TOOLS)
        response = read_turn(conn)
        calls = [item for item in response.output if item.type == "function_call"]
        for call in calls:
            print_call(call.name, call.arguments)
        outputs = [
            {"type": "function_call_output", "call_id": call.call_id, "output": run_tool(call.name, call.arguments)}
            for call in calls
        ]
        conn.response.create(model=MODEL, previous_response_id=response.id, input=outputs, tools=RESPONSES_TOOLS)
        final = read_turn(conn)
        print(f"reply: {final.output_text}")


if __name__ == "__main__":
    main()
