"""A mail-sending agent for the fuzz tests (tests/clients/e2e_fuzz.rs).

Asks for the weather in Paris to be mailed to ops@example.com, with two tools:
`get_weather` and `send_email` (six properties, two of them required). The careful agent
(the default) checks each `send_email` call against the tool's schema with `jsonschema` and
sends a failed check back as the tool's result; with FRAGILE=1 it trusts the model and
reads the address's domain straight from the arguments. Each `send_email` call it handled
is appended to $OUTBOX as one JSON line, `{"arguments": …, "verdict": "sent" | "refused"}`.
Prints `sent: TO` or `refused: WHY` per call, then `reply: TEXT`. STREAM=1 streams.
"""

import json
import os

import jsonschema
from openai import OpenAI

EMAIL = {
    "type": "object",
    "properties": {
        "to": {"type": "string", "format": "email"},
        "subject": {"type": "string", "maxLength": 80},
        "body": {"type": "string", "minLength": 1},
        "priority": {"type": "string", "enum": ["low", "normal", "high"]},
        "cc": {"type": "array", "items": {"type": "string", "format": "email"}, "maxItems": 3},
        "send_at": {"type": "integer", "minimum": 0},
    },
    "required": ["to", "body"],
    "additionalProperties": False,
}
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}, "required": ["city"]}
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}},
    {"type": "function", "function": {"name": "send_email", "parameters": EMAIL}},
]


def log(arguments, verdict):
    with open(os.environ["OUTBOX"], "a", encoding="utf-8") as f:
        f.write(json.dumps({"arguments": arguments, "verdict": verdict}) + "\n")


def send_email(args):
    if os.environ.get("FRAGILE"):
        domain = args["to"].split("@")[1]
        log(args, "sent")
        print("sent:", args["to"], "via", domain)
        return json.dumps({"sent": True, "to": args["to"]})
    problem = next(jsonschema.Draft202012Validator(EMAIL).iter_errors(args), None)
    if problem is not None:
        log(args, "refused")
        print("refused:", problem.message)
        return f"error: {problem.message}"
    log(args, "sent")
    print("sent:", args["to"])
    return json.dumps({"sent": True, "to": args["to"]})


def run_tool(name, args):
    if name == "send_email":
        return send_email(args)
    return json.dumps({"city": args.get("city"), "temp_c": 18, "sky": "sunny"})


def ask(client, messages):
    """The model's text and tool calls (`id`, `name`, `arguments` as text)."""
    if not os.environ.get("STREAM"):
        m = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS).choices[0].message
        calls = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments} for c in m.tool_calls or []]
        return m.content or "", calls
    text, calls = "", {}
    for chunk in client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS, stream=True):
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        text += delta.content or ""
        for d in delta.tool_calls or []:
            c = calls.setdefault(d.index, {"id": "", "name": "", "arguments": ""})
            c["id"] += d.id or ""
            c["name"] += (d.function and d.function.name) or ""
            c["arguments"] += (d.function and d.function.arguments) or ""
    return text, list(calls.values())


def main():
    client = OpenAI()
    messages = [{"role": "user", "content": "What's the weather in Paris? Mail it to ops@example.com"}]
    for _ in range(6):
        text, calls = ask(client, messages)
        if not calls:
            print("reply:", text)
            return
        messages.append({"role": "assistant", "tool_calls": [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls]})
        for c in calls:
            content = run_tool(c["name"], json.loads(c["arguments"]))
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": content})


main()
