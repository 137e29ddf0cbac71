"""A program that ignores the proxy variables, run contained: chat_tools.py with its
client's base URL hard-coded to https://api.openai.com/v1 and no proxy (trust_env off),
then a tool's HTTPS web API at https://api.weather.test, then a server the test started
on the host's loopback at PORT, by the name other-host.test. Prints what came back, or
the error.

Refuses to run unless its network namespace has only loopback (/proc/net/dev), so it
never addresses a real host itself.

Usage: direct.py PORT
"""

import os
import socket
import sys

import httpx
from openai import OpenAI

import chat_tools


def only_loopback():
    with open("/proc/net/dev") as f:
        names = [line.split(":")[0].strip() for line in f.readlines()[2:]]
    return names == ["lo"]


def main():
    if not only_loopback():
        print("not in a network namespace of loopback only: refusing", file=sys.stderr)
        return 2
    port = int(sys.argv.pop(1))
    bundle = os.environ["SSL_CERT_FILE"]

    def direct():
        return httpx.Client(trust_env=False, verify=bundle, timeout=10)

    chat_tools.OpenAI = lambda: OpenAI(
        base_url="https://api.openai.com/v1", http_client=direct(), max_retries=0
    )
    code = chat_tools.main()
    try:
        r = direct().get("https://api.weather.test/forecast")
        print(f"weather: {r.status_code}")
    except httpx.HTTPError as e:
        print(f"weather: {type(e).__name__}")
    try:
        with socket.create_connection(("other-host.test", port), timeout=5):
            print("other host: reached")
    except OSError as e:
        print(f"other host: {e.strerror or e}")
    return code


if __name__ == "__main__":
    sys.exit(main())
