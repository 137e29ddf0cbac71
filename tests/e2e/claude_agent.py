"""One question to the Claude Agent SDK's `query`, which runs the Claude Code CLI bundled in
the SDK's wheel: the CLI talks to ANTHROPIC_BASE_URL (set by agentproxy), streamed, with
a new session id in `metadata.user_id` on every run and the date in its system prompt.

Each run gets a home directory of its own (so a new device id, too). The CLI's side
traffic (telemetry, error reports, update checks) is switched off, and anything it would
still send around the proxy is pointed at a closed loopback port: nothing leaves the
machine, whichever way the CLI tries.

With `--tool`, the agent has a tool: `get_weather` of an in-process MCP server made with
the SDK (`create_sdk_mcp_server`), which the CLI calls `mcp__weather__get_weather` and
loads through its `ToolSearch` tool before calling it.

Prints the assistant's text, each tool call as it runs, and the result.
Usage: claude_agent.py [--tool] [QUESTION]
"""

import json
import sys
import tempfile

import anyio
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ResultMessage,
    TextBlock,
    create_sdk_mcp_server,
    query,
    tool,
)

from weather import run_tool

ISOLATED = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "HTTP_PROXY": "http://127.0.0.1:9",
    "NO_PROXY": "127.0.0.1,localhost",
}


@tool("get_weather", "Current weather in a city.", {"city": str, "unit": str})
async def get_weather(args):
    arguments = json.dumps(args, sort_keys=True)
    print(f"tool call: get_weather {arguments}")
    return {"content": [{"type": "text", "text": run_tool("get_weather", arguments)}]}


def options(home, with_tool):
    env = {"HOME": home, **ISOLATED}
    if not with_tool:
        return ClaudeAgentOptions(max_turns=1, allowed_tools=[], env=env)
    server = create_sdk_mcp_server(name="weather", version="1.0.0", tools=[get_weather])
    return ClaudeAgentOptions(
        max_turns=4,
        mcp_servers={"weather": server},
        allowed_tools=["mcp__weather__get_weather"],
        env=env,
    )


async def main():
    args = sys.argv[1:]
    with_tool = "--tool" in args
    args = [a for a in args if a != "--tool"]
    question = args[0] if args else "What's the weather in Paris?"
    with tempfile.TemporaryDirectory() as home:
        async for message in query(prompt=question, options=options(home, with_tool)):
            if isinstance(message, AssistantMessage):
                for block in message.content:
                    if isinstance(block, TextBlock):
                        print(f"assistant: {block.text}")
            elif isinstance(message, ResultMessage):
                print(f"result: {'error' if message.is_error else 'ok'}: {message.result}")


if __name__ == "__main__":
    anyio.run(main)
