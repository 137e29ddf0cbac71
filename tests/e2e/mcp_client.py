"""An MCP host (the official SDK's stdio Client) that asks the model one question through
OPENAI_BASE_URL, then calls the server's tools. The server command comes from
MCP_SERVER_COMMAND (JSON list); WEATHER_CITY changes only the tool call's argument; with
MCP_PASS_ENV=1 the host passes its environment to
the server, otherwise the SDK's default (a bare environment)."""

import asyncio
import json
import os

from mcp import Client, StdioServerParameters
from openai import OpenAI

CITY = os.environ.get("CITY", "Paris")


async def main():
    reply = OpenAI().chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": f"Mail the weather in {CITY}"}])
    print("model:", reply.choices[0].message.content)
    command = json.loads(os.environ["MCP_SERVER_COMMAND"])
    env = dict(os.environ) if os.environ.get("MCP_PASS_ENV") == "1" else None
    params = StdioServerParameters(command=command[0], args=command[1:], env=env)
    async with Client(params) as client:
        tools = await client.list_tools()
        print("tools:", sorted(t.name for t in tools.tools))
        weather = await client.call_tool("get_weather", {"city": os.environ.get("WEATHER_CITY", CITY)})
        print("weather:", [json.loads(c.text) for c in weather.content if c.type == "text"])
        sent = await client.call_tool("send_email", {"to": "ops@example.com", "body": f"{CITY} is sunny"})
        print("sent:", [c.text for c in sent.content if c.type == "text"], "error:", sent.is_error)


asyncio.run(main())
