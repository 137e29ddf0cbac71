"""A weather assistant that delegates to another agent over A2A.

The model (the OpenAI SDK's chat completions, through OPENAI_BASE_URL) is offered a
`get_weather` tool; the tool does not look the weather up itself: it asks the remote
weather agent (weather_agent.py) over A2A with the official SDK (a2a-sdk 1.x), fetching
its card, streaming its task, and hands the agent's answer back to the model. The agent's
URL is AGENTPROXY_A2A_WEATHER_URL (agentproxy gives it for `--a2a weather=URL` or a spec's
`a2a:`), else WEATHER_AGENT_URL; its bearer token WEATHER_AGENT_TOKEN.

Usage: python assistant.py "What's the weather in Paris?"   (or AGENTPROXY_INPUT)
"""

import asyncio
import json
import os
import sys
import uuid

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers import get_artifact_text
from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest
from openai import OpenAI

TOOLS = [{"type": "function", "function": {
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"]},
}}]


async def ask_agent(text: str) -> str:
    """The weather agent's answer to `text`: the artifacts of its streamed task."""
    url = os.environ.get("AGENTPROXY_A2A_WEATHER_URL") or os.environ.get("WEATHER_AGENT_URL", "http://127.0.0.1:9898")
    token = os.environ.get("WEATHER_AGENT_TOKEN", "example-agent-token")
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)
        request = SendMessageRequest(message=Message(
            role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=text)]))
        answer = []
        async for event in client.send_message(request):
            if event.WhichOneof("payload") == "artifact_update":
                answer.append(get_artifact_text(event.artifact_update.artifact))
            elif event.WhichOneof("payload") == "task":
                answer = [get_artifact_text(a) for a in event.task.artifacts] or answer
        return "".join(answer)


def main():
    model = OpenAI()
    question = os.environ.get("AGENTPROXY_INPUT") or " ".join(sys.argv[1:]) or "What's the weather in Paris?"
    messages = [{"role": "user", "content": question}]
    for _ in range(5):
        answer = model.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
        message = answer.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            print("assistant:", message.content)
            return
        for call in message.tool_calls:
            args = json.loads(call.function.arguments)
            said = asyncio.run(ask_agent(f"weather in {args['city']}, {args.get('unit', 'celsius')}"))
            print(f"tool: {call.function.name} {json.dumps(args, sort_keys=True)} -> {said}")
            messages.append({"role": "tool", "tool_call_id": call.id, "content": said})
    sys.exit("too many tool rounds")


if __name__ == "__main__":
    main()
