"""A multi-turn chat program on the official `openai` SDK: one user line in on stdin, one
`assistant: ...` line out, the conversation kept in memory until stdin closes."""

import sys

from openai import OpenAI


def main():
    client = OpenAI()
    messages = [{"role": "system", "content": "You are a friendly assistant."}]
    for line in sys.stdin:
        messages.append({"role": "user", "content": line.strip()})
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages)
        text = reply.choices[0].message.content
        messages.append({"role": "assistant", "content": text})
        print(f"assistant: {text}", flush=True)


if __name__ == "__main__":
    main()
