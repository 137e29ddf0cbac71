"""chat_tools.py with the client's base URL hard-coded to https://api.openai.com/v1, as
many apps do: it reaches the proxy only as its HTTPS forward proxy (HTTPS_PROXY, and the
session's certificate authority in SSL_CERT_FILE), which intercepts the provider's host.

Refuses to run without HTTPS_PROXY, so it never addresses the real host itself.
"""

import os
import sys

from openai import OpenAI

import chat_tools

if __name__ == "__main__":
    if not os.environ.get("HTTPS_PROXY"):
        print("HTTPS_PROXY is not set: refusing to reach api.openai.com", file=sys.stderr)
        sys.exit(2)
    chat_tools.OpenAI = lambda: OpenAI(base_url="https://api.openai.com/v1")
    sys.exit(chat_tools.main())
