"""A tool-calling travel assistant on the official `google-genai` SDK (Gemini API).

It declares two functions, runs the ones Gemini asks for (`function_call` parts), echoes
the model's turn back verbatim (its `thought_signature` included, as Gemini 3 requires)
and answers with `function_response` parts, then prints each call and the final answer.
Automatic function calling is off: the loop is the program's own, as in most agents. With
AGENT_STREAM=1 it reads each answer with `generate_content_stream` instead.

`get_time` returns the real current time: a volatile value that would change the follow-up
request on every run, which is why `gemini.yaml` mocks it. The SDK reads
GOOGLE_GEMINI_BASE_URL and GEMINI_API_KEY, so agentproxy needs no change to this file.

Usage: python agent.py "What's the weather in Paris?"   (or AGENTPROXY_INPUT)
"""

import json
import os
import sys
from datetime import datetime, timezone

from google import genai
from google.genai import types

MODEL = "gemini-3-flash-preview"
SYSTEM = "You are a travel assistant. Use the tools."

CONFIG = types.GenerateContentConfig(
    system_instruction=SYSTEM,
    tools=[
        types.Tool(
            function_declarations=[
                types.FunctionDeclaration(
                    name="get_weather",
                    description="Current weather for a city.",
                    parameters_json_schema={
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                        "required": ["city"],
                    },
                ),
                types.FunctionDeclaration(
                    name="get_time",
                    description="Local time in a city.",
                    parameters_json_schema={
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                        "required": ["city"],
                    },
                ),
            ]
        )
    ],
    automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
)

WEATHER = {"Paris": (18, "sunny"), "Tokyo": (22, "cloudy"), "Oslo": (4, "rainy")}


def run_tool(name, args):
    if name == "get_weather":
        temp, sky = WEATHER.get(args["city"], (15, "mild"))
        return {"city": args["city"], "temp_c": temp, "sky": sky}
    if name == "get_time":
        return {"city": args["city"], "time": datetime.now(timezone.utc).strftime("%H:%M:%S")}
    return {"error": f"unknown tool {name}"}


def ask(client, contents):
    if os.environ.get("AGENT_STREAM") == "1":
        parts = []
        for chunk in client.models.generate_content_stream(model=MODEL, contents=contents, config=CONFIG):
            if chunk.candidates and chunk.candidates[0].content and chunk.candidates[0].content.parts:
                parts.extend(chunk.candidates[0].content.parts)
        return types.Content(role="model", parts=parts)
    response = client.models.generate_content(model=MODEL, contents=contents, config=CONFIG)
    return response.candidates[0].content


def main():
    client = genai.Client()
    question = os.environ.get("AGENTPROXY_INPUT") or " ".join(sys.argv[1:]) or "What's the weather in Paris?"
    contents = [types.Content(role="user", parts=[types.Part.from_text(text=question)])]
    for _ in range(5):
        turn = ask(client, contents)
        contents.append(turn)
        calls = [part.function_call for part in turn.parts if part.function_call]
        if not calls:
            text = "".join(part.text or "" for part in turn.parts if not part.thought)
            print(f"assistant: {text}")
            return
        answers = []
        for call in calls:
            print(f"tool: {call.name} {json.dumps(call.args, sort_keys=True)}")
            result = run_tool(call.name, call.args)
            answers.append(types.Part.from_function_response(name=call.name, response=result))
        contents.append(types.Content(role="user", parts=answers))
    sys.exit("too many tool rounds")


if __name__ == "__main__":
    main()
