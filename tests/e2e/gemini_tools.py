"""An agent loop with the real google-genai SDK: generate_content with two function tools.

The user asks for the weather in one city and the time in another; the model calls
`get_weather`, then, once its result is back, `get_time`, then answers. The loop is
manual (automatic function calling is off, and the tools are declarations, not Python
callables): the script runs each call, echoes the model's turn back verbatim (its
`thought_signature` included, which the SDK re-encodes in the URL-safe base64 alphabet)
and answers in a user turn of `function_response` parts. `get_weather` is declared with
a plain JSON Schema (`parameters_json_schema`, which the SDK sends in snake_case),
`get_time` with the SDK's `Schema` type (upper-case types).

With `stream` each request is `generate_content_stream` (server-sent events): every chunk
is printed as it arrives, so a replay that merged or split the recorded chunks prints
something else, and the parts of all chunks make the model's turn.

Printed: each call with its arguments (keys sorted), whether it had an id and a short
hash of its signature bytes, the finish reason and usage of each answer, and the reply;
never an id or `responseId`, which are fresh on every call.

The SDK reads GOOGLE_GEMINI_BASE_URL (agentproxy injects it, without a version) and
GEMINI_API_KEY. Usage: gemini_tools.py [stream] [QUESTION]
"""

import hashlib
import json
import sys

from google import genai
from google.genai import types

from weather import MAX_TURNS, SYSTEM, TOOLS, run_tool

MODEL = "gemini-3-flash-preview"
QUESTION = "What's the weather in Paris and the time in Tokyo?"

_CHAT = {tool["function"]["name"]: tool["function"] for tool in TOOLS}
DECLARATIONS = [
    types.FunctionDeclaration(
        name="get_weather",
        description=_CHAT["get_weather"]["description"],
        parameters_json_schema=_CHAT["get_weather"]["parameters"],
    ),
    types.FunctionDeclaration(
        name="get_time",
        description=_CHAT["get_time"]["description"],
        parameters=types.Schema(
            type="OBJECT",
            properties={"city": types.Schema(type="STRING", description="A city name.")},
            required=["city"],
        ),
    ),
]
CONFIG = types.GenerateContentConfig(
    system_instruction=SYSTEM,
    temperature=0.0,
    max_output_tokens=1024,
    tools=[types.Tool(function_declarations=DECLARATIONS)],
    tool_config=types.ToolConfig(
        function_calling_config=types.FunctionCallingConfig(mode="AUTO")
    ),
    automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
)


def signature(part):
    """A short, stable view of a part's thought signature bytes."""
    if not part.thought_signature:
        return "none"
    return hashlib.sha256(part.thought_signature).hexdigest()[:12]


def describe(part):
    if part.function_call:
        return f"call {part.function_call.name}"
    if part.text is not None:
        return f"text {part.text!r}"
    return "other"


def ask_streaming(client, contents):
    """One streamed request; returns the model's turn (all chunks' parts) and the last chunk."""
    parts, last = [], None
    for chunk in client.models.generate_content_stream(
        model=MODEL, contents=contents, config=CONFIG
    ):
        last = chunk
        candidate = chunk.candidates[0] if chunk.candidates else None
        chunk_parts = candidate.content.parts if candidate and candidate.content else None
        chunk_parts = chunk_parts or []
        parts.extend(chunk_parts)
        finish = candidate.finish_reason.name if candidate and candidate.finish_reason else "-"
        print(f"chunk: {', '.join(describe(p) for p in chunk_parts) or 'no parts'} (finish: {finish})")
    return types.Content(role="model", parts=parts), last


def main():
    args = sys.argv[1:]
    streaming = bool(args) and args[0] == "stream"
    if streaming:
        args = args[1:]
    question = args[0] if args else QUESTION
    client = genai.Client()
    contents = [types.Content(role="user", parts=[types.Part.from_text(text=question)])]
    for _ in range(MAX_TURNS):
        if streaming:
            model_turn, response = ask_streaming(client, contents)
        else:
            response = client.models.generate_content(
                model=MODEL, contents=contents, config=CONFIG
            )
            model_turn = response.candidates[0].content
        print(f"finish: {response.candidates[0].finish_reason.name}")
        print(f"model version: {response.model_version}")
        usage = response.usage_metadata
        print(
            f"usage: prompt={usage.prompt_token_count} candidates={usage.candidates_token_count}"
            f" thoughts={usage.thoughts_token_count} total={usage.total_token_count}"
        )
        calls = [p for p in model_turn.parts if p.function_call]
        if not calls:
            text = "".join(p.text or "" for p in model_turn.parts if not p.thought)
            signed = [signature(p) for p in model_turn.parts if p.thought_signature]
            print(f"reply signature: {', '.join(signed) or 'none'}")
            print(f"reply: {text}")
            return 0
        # The model's turn goes back as the SDK returned it, signatures included.
        contents.append(model_turn)
        results = []
        for part in calls:
            call = part.function_call
            arguments = json.dumps(dict(call.args or {}), sort_keys=True)
            print(
                f"tool call: {call.name} {arguments} (id: {'yes' if call.id else 'no'},"
                f" signature: {signature(part)})"
            )
            output = json.loads(run_tool(call.name, arguments))
            results.append(
                types.Part(
                    function_response=types.FunctionResponse(
                        id=call.id, name=call.name, response={"result": output}
                    )
                )
            )
        contents.append(types.Content(role="user", parts=results))
    print(f"the model was still calling tools after {MAX_TURNS} turns", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
