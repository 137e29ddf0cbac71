"""A remote weather agent on the official A2A SDK (a2a-sdk 1.x, JSON-RPC binding): given a
message that names a city, its task streams as a real agent's does (submitted, working,
an artifact with the weather as JSON, completed). It asks for a bearer token on every
request, its card included.

Usage: python weather_agent.py [PORT]   (0 or none: a free port; prints `port N`)
Env: WEATHER_AGENT_TOKEN (the bearer token, default `example-agent-token`),
     WEATHER_AGENT_DELAY (seconds between streamed events, default 0.05).
"""

import asyncio
import json
import os
import re
import socket
import sys

import uvicorn
from a2a.helpers import new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    Role,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from starlette.applications import Starlette
from starlette.responses import JSONResponse

TOKEN = os.environ.get("WEATHER_AGENT_TOKEN", "example-agent-token")
DELAY = float(os.environ.get("WEATHER_AGENT_DELAY", "0.05"))
WEATHER = {"Paris": (18, "sunny"), "Tokyo": (22, "cloudy"), "Oslo": (-5, "snowing")}


def forecast(text: str) -> str:
    """The weather of the first known city the text names, as JSON."""
    for word in re.findall(r"[A-Z][a-z]+", text):
        if word in WEATHER:
            temp_c, sky = WEATHER[word]
            return json.dumps({"city": word, "sky": sky, "temp_c": temp_c})
    return json.dumps({"error": f"no city I know in {text!r}"})


class WeatherExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task or new_task_from_user_message(context.message)
        if context.current_task is None:
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work(new_text_message(
            "Looking at the sky...", context_id=task.context_id, task_id=task.id, role=Role.ROLE_AGENT))
        await asyncio.sleep(DELAY)
        await updater.add_artifact([new_text_part(forecast(context.get_user_input()))], name="forecast")
        await asyncio.sleep(DELAY)
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


class BearerAuth:
    """401 unless the bearer token matches (pure ASGI: streams are not buffered)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            auth = dict(scope["headers"]).get(b"authorization", b"").decode()
            if auth != f"Bearer {TOKEN}":
                resp = JSONResponse({"error": "unauthorized"}, status_code=401,
                                    headers={"WWW-Authenticate": "Bearer"})
                return await resp(scope, receive, send)
        return await self.app(scope, receive, send)


def card(url: str) -> AgentCard:
    return AgentCard(
        name="Weather Agent",
        description="Tells the weather of a city.",
        version="1.0.0",
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        security_schemes={"bearer": SecurityScheme(
            http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer"))},
        security_requirements=[SecurityRequirement(schemes={"bearer": StringList(list=[])})],
        default_input_modes=["text/plain"],
        default_output_modes=["application/json"],
        skills=[AgentSkill(id="weather", name="Weather", description="The weather of a city",
                           tags=["weather"], examples=["weather in Paris"])],
    )


def main() -> None:
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    port = sock.getsockname()[1]
    agent_card = card(f"http://127.0.0.1:{port}/")
    handler = DefaultRequestHandler(
        agent_executor=WeatherExecutor(), task_store=InMemoryTaskStore(), agent_card=agent_card)
    app = Starlette(routes=create_agent_card_routes(agent_card) + create_jsonrpc_routes(handler, rpc_url="/"))
    app.add_middleware(BearerAuth)
    print(f"port {port}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    main()
