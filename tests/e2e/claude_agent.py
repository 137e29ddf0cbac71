"""One question to the Claude Agent SDK's `query`, which runs the Claude Code CLI bundled in
the SDK's wheel: the CLI talks to ANTHROPIC_BASE_URL (set by agentproxy), streamed, with
a new session id in `metadata.user_id` on every run and the date in its system prompt.

Each run gets a home directory of its own (so a new device id, too). The CLI's side
traffic (telemetry, error reports, update checks) is switched off, and anything it would
still send around the proxy is pointed at a closed loopback port: nothing leaves the
machine, whichever way the CLI tries.

Prints the assistant's text and the result. Usage: claude_agent.py [QUESTION]
"""

import sys
import tempfile

import anyio
from claude_agent_sdk import AssistantMessage, ClaudeAgentOptions, ResultMessage, TextBlock, query

ISOLATED = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "HTTP_PROXY": "http://127.0.0.1:9",
    "NO_PROXY": "127.0.0.1,localhost",
}


async def main():
    question = sys.argv[1] if len(sys.argv) > 1 else "What's the weather in Paris?"
    with tempfile.TemporaryDirectory() as home:
        options = ClaudeAgentOptions(max_turns=1, allowed_tools=[], env={"HOME": home, **ISOLATED})
        async for message in query(prompt=question, options=options):
            if isinstance(message, AssistantMessage):
                for block in message.content:
                    if isinstance(block, TextBlock):
                        print(f"assistant: {block.text}")
            elif isinstance(message, ResultMessage):
                print(f"result: {'error' if message.is_error else 'ok'}: {message.result}")


if __name__ == "__main__":
    anyio.run(main)
