"""A voice-style agent on the real openai SDK's Realtime client (`client.realtime.connect()`).

One socket: the session is given instructions and a function tool with text output; a
user message and `response.create` get a function call; its output goes back as a
`function_call_output` item and the next response answers in text; then the session
switches to audio output (and no tools) and the last response is audio with its transcript. Every
event's type is printed (deltas with their text), and the audio's size and SHA-256, so a
replay that did not send the recorded bytes prints something else.
Usage: realtime_agent.py [QUESTION]
"""

import base64
import hashlib
import sys

from openai import OpenAI

from weather import SYSTEM, TOOLS, print_call, run_tool

REALTIME_TOOLS = [{"type": "function", **tool["function"]} for tool in TOOLS]


def read_response(conn):
    """Reads events up to `response.done`; returns its response and the audio sent."""
    audio = b""
    for event in conn:
        if event.type == "response.output_text.delta":
            print(f"delta: {event.delta!r}")
        elif event.type == "response.output_audio.delta":
            audio += base64.b64decode(event.delta)
        elif event.type == "error":
            raise SystemExit(f"error event: {event.error}")
        else:
            print(f"event: {event.type}")
        if event.type == "response.done":
            return event.response, audio
    raise SystemExit("the socket ended mid-turn")


def main():
    question = sys.argv[1] if len(sys.argv) > 1 else "What's the weather in Paris?"
    client = OpenAI()
    with client.realtime.connect(model="gpt-realtime") as conn:
        conn.session.update(session={"type": "realtime", "output_modalities": ["text"],
                                     "instructions": SYSTEM, "tools": REALTIME_TOOLS})
        conn.conversation.item.create(item={"type": "message", "role": "user",
                                            "content": [{"type": "input_text", "text": question}]})
        conn.response.create()
        response, _ = read_response(conn)
        calls = [item for item in response.output if item.type == "function_call"]
        for call in calls:
            print_call(call.name, call.arguments)
            conn.conversation.item.create(item={"type": "function_call_output", "call_id": call.call_id,
                                                "output": run_tool(call.name, call.arguments)})
        conn.response.create()
        response, _ = read_response(conn)
        print(f"reply: {response.output[0].content[0].text}")
        conn.session.update(session={"type": "realtime", "output_modalities": ["audio"], "tools": []})
        conn.conversation.item.create(item={"type": "message", "role": "user",
                                            "content": [{"type": "input_text", "text": "Say it again."}]})
        conn.response.create()
        response, audio = read_response(conn)
        print(f"audio: {len(audio)} bytes, sha256 {hashlib.sha256(audio).hexdigest()[:16]}")
        print(f"transcript: {response.output[0].content[0].transcript}")


if __name__ == "__main__":
    main()
