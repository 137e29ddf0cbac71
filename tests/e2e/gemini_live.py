"""A live agent on the real google-genai SDK's Live client (`client.aio.live.connect`).

The SDK dials `wss://` on the base URL's host whatever its scheme (agentproxy answers TLS
on the session's port with a certificate of the session's authority, which the program
trusts through SSL_CERT_FILE). One socket: the setup declares a function tool and text
output; a user turn gets a `toolCall`; its result goes back as a tool response and the
model answers in text, piece by piece, up to `turn_complete`. Printed: each call with its
arguments (keys sorted), each text piece, the reply; never an id.

The SDK reads GOOGLE_GEMINI_BASE_URL (agentproxy injects it) and GEMINI_API_KEY.
Usage: gemini_live.py [QUESTION]
"""

import asyncio
import json
import sys

from google import genai
from google.genai import types

from weather import SYSTEM, TOOLS, run_tool

MODEL = "gemini-2.0-flash-live-001"
DECLARATIONS = [
    types.FunctionDeclaration(name=t["function"]["name"], description=t["function"]["description"],
                              parameters_json_schema=t["function"]["parameters"])
    for t in TOOLS
]


async def read_turn(session):
    """Messages up to a tool call or the end of the model's turn: (calls, text)."""
    text = ""
    async for message in session.receive():
        if message.tool_call:
            return message.tool_call.function_calls, text
        content = message.server_content
        if content and content.model_turn:
            for part in content.model_turn.parts:
                if part.text:
                    print(f"piece: {part.text!r}")
                    text += part.text
        if content and content.turn_complete:
            return [], text
    raise SystemExit("the socket ended mid-turn")


async def main():
    question = sys.argv[1] if len(sys.argv) > 1 else "What's the weather in Paris?"
    client = genai.Client()
    config = types.LiveConnectConfig(response_modalities=["TEXT"], system_instruction=SYSTEM,
                                     tools=[types.Tool(function_declarations=DECLARATIONS)])
    async with client.aio.live.connect(model=MODEL, config=config) as session:
        await session.send_client_content(turns=types.Content(role="user", parts=[types.Part(text=question)]),
                                          turn_complete=True)
        calls, _ = await read_turn(session)
        responses = []
        for call in calls:
            print(f"tool call: {call.name} {json.dumps(call.args, sort_keys=True)}")
            result = json.loads(run_tool(call.name, json.dumps(call.args)))
            responses.append(types.FunctionResponse(id=call.id, name=call.name, response=result))
        await session.send_tool_response(function_responses=responses)
        _, reply = await read_turn(session)
        print(f"reply: {reply}")


if __name__ == "__main__":
    asyncio.run(main())
