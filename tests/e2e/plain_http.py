"""Plain HTTP endpoints through the real openai SDK: models.list and embeddings.create.

The SDK asks for embeddings as base64 by default and decodes them itself; the second
call asks for floats explicitly. Both must carry the same numbers, on record and replay.
"""

import sys

from openai import OpenAI

MODEL = "text-embedding-3-small"
INPUTS = ["The weather in Paris", "Température à Tokyo"]


def main():
    client = OpenAI()
    models = sorted(model.id for model in client.models.list())
    print(f"models: {' '.join(models)}")

    default = client.embeddings.create(model=MODEL, input=INPUTS)
    floats = client.embeddings.create(model=MODEL, input=INPUTS, encoding_format="float")
    for packed, plain in zip(default.data, floats.data):
        if packed.embedding != plain.embedding:
            print(f"input {packed.index}: base64 and float embeddings differ", file=sys.stderr)
            return 1
        head = " ".join(f"{value:+.4f}" for value in plain.embedding[:4])
        print(f"embedding {plain.index}: dims={len(plain.embedding)} head={head}")
    print(f"usage: {default.usage.total_tokens}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
