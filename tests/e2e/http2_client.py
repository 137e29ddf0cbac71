"""One chat completion over HTTP/2 to https://api.openai.com, with httpx (the openai SDK's
client) configured from the environment: through agentproxy's tunnel, whose TLS offers
HTTP/2 (ALPN) to the program. Prints the HTTP version and the reply.
"""

import os
import sys

import httpx

from weather import MODEL

if __name__ == "__main__":
    if not os.environ.get("HTTPS_PROXY"):
        print("HTTPS_PROXY is not set: refusing to reach api.openai.com", file=sys.stderr)
        sys.exit(2)
    with httpx.Client(http2=True, timeout=30) as client:
        r = client.post(
            "https://api.openai.com/v1/chat/completions",
            headers={"authorization": f"Bearer {os.environ['OPENAI_API_KEY']}"},
            json={"model": MODEL, "messages": [{"role": "user", "content": "Say hello."}]},
        )
        r.raise_for_status()
        print(f"{r.http_version}: {r.json()['choices'][0]['message']['content']}")
