"""An MCP host on the official SDK's streamable HTTP client (`mcp.Client(url)`), whose
server URL is the one agentproxy injects: AGENTPROXY_MCP_MAIL_URL. MCP_MODE=legacy speaks
the 2025-11-25 form (initialize, Mcp-Session-Id, SSE answers, the GET stream, DELETE);
the default, the stateless 2026-07-28 form (server/discover, JSON answers)."""

import asyncio
import json
import os

from mcp import Client


async def main():
    url = os.environ["AGENTPROXY_MCP_MAIL_URL"]
    async with Client(url, mode=os.environ.get("MCP_MODE", "auto")) as client:
        tools = await client.list_tools()
        print("tools:", sorted(t.name for t in tools.tools))
        weather = await client.call_tool("get_weather", {"city": os.environ.get("CITY", "Paris")})
        print("weather:", json.dumps(weather.structured_content, sort_keys=True))
        sent = await client.call_tool("send_email", {"to": "ops@example.com", "body": "sunny"})
        print("sent:", json.dumps(sent.structured_content, sort_keys=True), "error:", sent.is_error)


asyncio.run(main())
