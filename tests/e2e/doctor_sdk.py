"""`agentproxy doctor` with the real openai SDK: a client configured from OPENAI_API_BASE
(as langchain-openai does) sends a chat completion, a streamed one and a Responses call,
and prints what it got back."""

import os

from openai import OpenAI

client = OpenAI(base_url=os.environ["OPENAI_API_BASE"])
chat = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
print("chat:", chat.choices[0].message.content)
stream = client.chat.completions.create(
    model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], stream=True, stream_options={"include_usage": True}
)
print("stream:", "".join(c.choices[0].delta.content or "" for c in stream if c.choices))
response = client.responses.create(model="gpt-4o-mini", input="hi")
print("responses:", response.output_text)
