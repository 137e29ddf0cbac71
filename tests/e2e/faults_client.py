"""One model request through a real SDK, for the fault tests (tests/clients/e2e_faults.rs).

CLIENT picks the SDK and the call: `openai` (chat, whole), `openai-stream` (chat,
streamed), `anthropic` (Messages, whole), `anthropic-stream` (Messages, streamed). The
SDKs keep their default retries (two), without waiting long between them. Prints
`reply: TEXT`, or `error: ExceptionClass` and exits 1, as a program that gives up does.
"""

import os
import sys

CLIENT = os.environ["CLIENT"]
QUESTION = "Say hello"


def openai_reply(stream):
    from openai import OpenAI

    client = OpenAI()
    messages = [{"role": "user", "content": QUESTION}]
    if not stream:
        return client.chat.completions.create(model="gpt-4o-mini", messages=messages).choices[0].message.content
    chunks = client.chat.completions.create(model="gpt-4o-mini", messages=messages, stream=True)
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


def anthropic_reply(stream):
    import anthropic

    client = anthropic.Anthropic()
    args = dict(model="claude-sonnet-4-5", max_tokens=100, messages=[{"role": "user", "content": QUESTION}])
    if not stream:
        return client.messages.create(**args).content[0].text
    with client.messages.stream(**args) as s:
        return "".join(s.text_stream)


def main():
    sdk, _, mode = CLIENT.partition("-")
    ask = openai_reply if sdk == "openai" else anthropic_reply
    try:
        print("reply:", ask(mode == "stream"))
    except Exception as e:  # the program gives up, saying why
        print("error:", type(e).__name__)
        sys.exit(1)


main()
