"""An MCP server (the official SDK's MCPServer, stdio) with a read-only tool and one with
a side effect: send_email appends a line to the outbox file named on the command line."""

import sys

from mcp.server import MCPServer

OUTBOX = sys.argv[1]
server = MCPServer("mail")


@server.tool()
def get_weather(city: str) -> dict:
    """Current weather for a city."""
    return {"city": city, "temp_c": 18, "sky": "sunny"}


@server.tool()
def send_email(to: str, body: str) -> str:
    """Send an email (here: append it to the outbox)."""
    with open(OUTBOX, "a") as f:
        f.write(f"{to}: {body}\n")
    return f"sent to {to}"


if __name__ == "__main__":
    server.run("stdio")
