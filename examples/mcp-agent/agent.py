"""A mail assistant on the OpenAI Agents SDK whose tools come from an MCP server over
stdio (`MCPServerStdio`). The server command goes through agentproxy's stand-in:

    agentproxy mcp --name mail -- python server.py

Under `agentproxy record` the stand-in starts the server and records its traffic with the
model's; under `agentproxy replay` (or a replaying `agentproxy test`) it answers from the
cassette and the server never starts, so no mail is sent again. Outside agentproxy it
just runs the server. The host passes the SDK's default environment to the server, which
does not include AGENTPROXY_URL: the stand-in finds its session anyway.

Each line on stdin is one request; it prints the tool calls and one `reply:` line.
MAIL_SERVER (a JSON list) replaces the server command after `--`, as the tests do with
one that fails if it is ever started. With MAIL_MCP_URL set, the agent reaches the server
over streamable HTTP there instead (`MCPServerStreamableHttp`); under agentproxy, that is
$AGENTPROXY_MCP_MAIL_URL, for `--mcp mail=URL`.
Usage: echo "Mail the weather in Paris to ops@example.com" | python agent.py
"""

import asyncio
import json
import os
import sys

from agents import Agent, Runner, set_default_openai_api
from agents.mcp import MCPServerStdio, MCPServerStreamableHttp

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = json.loads(os.environ.get("MAIL_SERVER", "null")) or [sys.executable, os.path.join(HERE, "server.py")]


async def main():
    set_default_openai_api("responses")
    if os.environ.get("MAIL_MCP_URL"):
        mail = MCPServerStreamableHttp(params={"url": os.environ["MAIL_MCP_URL"]}, name="mail")
    else:
        params = {"command": "agentproxy", "args": ["mcp", "--name", "mail", "--", *SERVER]}
        mail = MCPServerStdio(params=params, name="mail", cache_tools_list=True)
    async with mail:
        agent = Agent(
            name="Mail assistant",
            instructions="You are a mail assistant. Use the tools.",
            model="gpt-4o-mini",
            mcp_servers=[mail],
        )
        for line in sys.stdin:
            result = await Runner.run(agent, line.strip())
            for item in result.new_items:
                if item.type == "tool_call_item":
                    arguments = json.loads(item.raw_item.arguments)
                    print(f"tool call: {item.raw_item.name} {json.dumps(arguments, sort_keys=True, ensure_ascii=False)}")
                elif item.type == "tool_call_output_item":
                    print(f"tool output: {item.output}")
            print(f"reply: {result.final_output}", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
