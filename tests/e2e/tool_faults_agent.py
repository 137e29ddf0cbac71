"""A small tool-using agent for the tool-call fault tests (tests/clients/e2e_faults.rs).

CLIENT picks the SDK: `openai` (chat, whole), `openai-stream`, `anthropic` (Messages,
whole), `anthropic-stream`. It asks for the weather in Paris with one tool, `get_weather`,
checks each call as a careful agent does (arguments that are JSON, an object that fits
the tool's schema, a tool it knows) and sends a failed check back as the tool's result, so
the model can try again. An answer cut short by the length limit ends the run: prints
`error: cut short (REASON)` and exits 1. Otherwise prints `called: NAME ARGS` per tool
call and `reply: TEXT`.
"""

import json
import os
import sys

CLIENT = os.environ["CLIENT"]
QUESTION = "What's the weather in Paris?"
SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
    "required": ["city"],
    "additionalProperties": False,
}


def run_tool(name, args):
    """The tool's result for a call, or what is wrong with the call."""
    if name != "get_weather":
        return f"error: unknown tool {name}"
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return "error: the arguments are not JSON"
    if not isinstance(args, dict) or "city" not in args:
        return "error: `city` is required"
    if not isinstance(args["city"], str):
        return "error: `city` must be a string"
    if args.get("unit", "celsius") not in SCHEMA["properties"]["unit"]["enum"]:
        return f"error: unknown unit {args['unit']}"
    if set(args) - set(SCHEMA["properties"]):
        return "error: unexpected arguments"
    return json.dumps({"city": args["city"], "temp_c": 18, "sky": "sunny"})


def cut_short(reason):
    print(f"error: cut short ({reason})")
    sys.exit(1)


def openai_agent(stream):
    from openai import OpenAI

    client = OpenAI()
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}}]
    messages = [{"role": "user", "content": QUESTION}]
    for _ in range(4):
        if stream:
            calls, text, finish = {}, "", None
            for chunk in client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools, stream=True):
                if not chunk.choices:
                    continue
                choice = chunk.choices[0]
                text += choice.delta.content or ""
                for d in choice.delta.tool_calls or []:
                    c = calls.setdefault(d.index, {"id": "", "name": "", "arguments": ""})
                    c["id"] += d.id or ""
                    c["name"] += (d.function and d.function.name) or ""
                    c["arguments"] += (d.function and d.function.arguments) or ""
                finish = choice.finish_reason or finish
            calls = list(calls.values())
        else:
            choice = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools).choices[0]
            text, finish = choice.message.content or "", choice.finish_reason
            calls = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments} for c in choice.message.tool_calls or []]
        if finish == "length":
            cut_short(finish)
        if not calls:
            return text
        messages.append({"role": "assistant", "tool_calls": [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls]})
        for c in calls:
            print("called:", c["name"], c["arguments"])
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": run_tool(c["name"], c["arguments"])})
    return text


def anthropic_agent(stream):
    import anthropic

    client = anthropic.Anthropic()
    tools = [{"name": "get_weather", "description": "Weather for a city.", "input_schema": SCHEMA}]
    messages = [{"role": "user", "content": QUESTION}]
    for _ in range(4):
        args = dict(model="claude-sonnet-4-5", max_tokens=200, tools=tools, messages=messages)
        if stream:
            with client.messages.stream(**args) as s:
                message = s.get_final_message()
        else:
            message = client.messages.create(**args)
        if message.stop_reason == "max_tokens":
            cut_short(message.stop_reason)
        calls = [b for b in message.content if b.type == "tool_use"]
        if not calls:
            return "".join(b.text for b in message.content if b.type == "text")
        messages.append({"role": "assistant", "content": [b.model_dump() for b in message.content]})
        results = []
        for c in calls:
            print("called:", c.name, json.dumps(c.input))
            results.append({"type": "tool_result", "tool_use_id": c.id, "content": run_tool(c.name, c.input)})
        messages.append({"role": "user", "content": results})
    return ""


def main():
    sdk, _, mode = CLIENT.partition("-")
    agent = openai_agent if sdk == "openai" else anthropic_agent
    print("reply:", agent(mode == "stream"))


main()
