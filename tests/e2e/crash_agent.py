"""A mail agent for the crash tests (tests/clients/e2e_crash.rs): the openai SDK's chat completions
for the model, the official `mcp` SDK's stdio Client for the tools, whose server command
comes from MCP_SERVER_COMMAND (a JSON list, through `agentproxy mcp`).

Reads its task from stdin, then loops: ask the model, run the tools it calls at the MCP
server, send the results back, until it replies. Prints `tool: NAME RESULT` per call and
`reply: TEXT` at the end.

With CHECKPOINT=FILE it is resumable: after each round of tool results it saves the
conversation there (written to a temporary file, then renamed), and started again it goes
on from the saved conversation instead of starting over; the file is removed once the
agent has replied. Without it the agent is stateless: started again, it starts over.
"""

import asyncio
import json
import os
import sys

from mcp import Client, StdioServerParameters
from openai import OpenAI


def load(checkpoint, question):
    if checkpoint and os.path.exists(checkpoint):
        with open(checkpoint, encoding="utf-8") as f:
            messages = json.load(f)
        print(f"resumed: {len(messages)} messages")
        return messages
    return [{"role": "user", "content": question}]


def save(checkpoint, messages):
    if checkpoint:
        with open(checkpoint + ".tmp", "w", encoding="utf-8") as f:
            json.dump(messages, f)
        os.replace(checkpoint + ".tmp", checkpoint)


async def main():
    question = sys.stdin.readline().strip()
    checkpoint = os.environ.get("CHECKPOINT")
    messages = load(checkpoint, question)
    command = json.loads(os.environ["MCP_SERVER_COMMAND"])
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    model = OpenAI()
    async with Client(params) as mcp:
        listed = (await mcp.list_tools()).tools
        tools = [{"type": "function", "function": {"name": t.name, "description": t.description or "",
                                                   "parameters": t.input_schema}} for t in listed]
        for _ in range(8):
            m = model.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools).choices[0].message
            if not m.tool_calls:
                print("reply:", m.content)
                if checkpoint:
                    os.remove(checkpoint)
                return
            messages.append({"role": "assistant", "content": m.content, "tool_calls": [
                {"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
                for c in m.tool_calls]})
            for c in m.tool_calls:
                result = await mcp.call_tool(c.function.name, json.loads(c.function.arguments))
                text = "".join(item.text for item in result.content if item.type == "text")
                print("tool:", c.function.name, text)
                messages.append({"role": "tool", "tool_call_id": c.id, "content": text})
            save(checkpoint, messages)


asyncio.run(main())
