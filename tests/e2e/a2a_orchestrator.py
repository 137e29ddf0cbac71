"""An orchestrator that delegates to a remote agent over A2A with the official SDK
(a2a-sdk 1.x) and asks the model about the answer: it fetches the card of the weather
agent (examples/a2a-agent/weather_agent.py) from AGENTPROXY_A2A_WEATHER_URL, sends a
message, sends it again as a stream, looks the streamed task up, then asks the model (the
OpenAI SDK, through OPENAI_BASE_URL) to say it. A2A_TOKEN is the agent's bearer token;
A2A_TEXT the message."""

import asyncio
import os
import sys
import uuid

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers import get_artifact_text
from a2a.types.a2a_pb2 import GetTaskRequest, Message, Part, Role, SendMessageRequest, TaskState
from openai import OpenAI

TOKEN = os.environ["A2A_TOKEN"]
TEXT = os.environ.get("A2A_TEXT", "weather in Paris")


def ask(text):
    return SendMessageRequest(message=Message(
        role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=text)]))


def state(s):
    return TaskState.Name(s)


def artifacts(task):
    return " | ".join(get_artifact_text(a) for a in task.artifacts)


async def delegate():
    base = os.environ["AGENTPROXY_A2A_WEATHER_URL"]
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as http:
        card = await A2ACardResolver(http, base).get_agent_card()
        print(f"card: {card.name} streaming={card.capabilities.streaming}")
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
        final = None
        async for resp in client.send_message(ask(TEXT)):
            final = resp
        if final.HasField("task"):
            print(f"send: {state(final.task.status.state)} {artifacts(final.task)!r}")
        else:
            print(f"send: message {' '.join(p.text for p in final.message.parts)!r}")
        streaming = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)
        task_id = None
        async for resp in streaming.send_message(ask(TEXT)):
            kind = resp.WhichOneof("payload")
            if kind == "task":
                task_id = resp.task.id
                print(f"stream: task {state(resp.task.status.state)}")
            elif kind == "status_update":
                print(f"stream: status {state(resp.status_update.status.state)}")
            elif kind == "artifact_update":
                print(f"stream: artifact {get_artifact_text(resp.artifact_update.artifact)!r}")
        got = await streaming.get_task(GetTaskRequest(id=task_id))
        print(f"get_task: {state(got.status.state)} {artifacts(got)!r}")
        return artifacts(got)


def main():
    answer = asyncio.run(delegate())
    model = OpenAI()
    reply = model.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": f"Say this to the user: {answer}"}],
    )
    print("model:", reply.choices[0].message.content)
    return 0


if __name__ == "__main__":
    sys.exit(main())
