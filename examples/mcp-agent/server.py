"""The mail assistant's MCP server (the official `mcp` SDK's MCPServer, over stdio): a
read-only tool and one with a side effect. `send_email` appends the mail to the outbox
file (OUTBOX, default `outbox.txt` in the working directory): that is what must not
happen again when a test replays.

Usage (as an MCP host starts it): python server.py
As a streamable HTTP server at http://127.0.0.1:PORT/mcp: python server.py --http PORT
"""

import os
import sys
from typing import TypedDict

from mcp.server import MCPServer

server = MCPServer("mail")


class Weather(TypedDict):
    city: str
    temp_c: int
    sky: str


class Sent(TypedDict):
    sent: bool
    to: str


@server.tool()
def get_weather(city: str, unit: str = "celsius") -> Weather:
    """Current weather for a city."""
    return {"city": city, "temp_c": 18, "sky": "sunny"}


@server.tool()
def send_email(to: str, body: str) -> Sent:
    """Send an email."""
    with open(os.environ.get("OUTBOX", "outbox.txt"), "a") as f:
        f.write(f"{to}: {body}\n")
    return {"sent": True, "to": to}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
