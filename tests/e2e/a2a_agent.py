"""A remote agent on the official A2A SDK (a2a-sdk 1.x, JSON-RPC binding): a currency
converter whose task streams (submitted, working, an artifact, completed), behind a bearer
token, as tests/clients/e2e_a2a.rs and examples/a2a-agent record it.

Usage: python a2a_agent.py [PORT]        (PORT 0 or absent: pick a free port)
Prints `port N` on stdout once listening. Env:
  A2A_TOKEN       bearer token required on every request (default secret-e2e-token)
  A2A_PUBLIC_URL  URL advertised in the agent card (default http://127.0.0.1:N/)
  A2A_STEP_DELAY  seconds to sleep between streamed events (default 0.05)
"""

import asyncio
import os
import re
import socket
import sys

import uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse

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

TOKEN = os.environ.get('A2A_TOKEN', 'secret-e2e-token')
DELAY = float(os.environ.get('A2A_STEP_DELAY', '0.05'))
RATES = {('USD', 'EUR'): 0.92, ('EUR', 'USD'): 1.087}


def convert(text: str) -> str:
    m = re.search(r'convert\s+([\d.]+)\s+([A-Za-z]{3})\s+to\s+([A-Za-z]{3})', text, re.I)
    if not m:
        return f'cannot parse: {text!r}'
    amount, src, dst = float(m.group(1)), m.group(2).upper(), m.group(3).upper()
    rate = RATES.get((src, dst), 1.0)
    return f'{m.group(1)} {src} is {amount * rate:.2f} {dst}'


class CurrencyExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is None:  # SDK requires a Task event before status/artifact events
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work(
            new_text_message('Looking up exchange rates...', context_id=task.context_id,
                             task_id=task.id, role=Role.ROLE_AGENT))
        await asyncio.sleep(DELAY)
        answer = convert(context.get_user_input())
        await updater.add_artifact([new_text_part(answer)], name='conversion_result')
        await asyncio.sleep(DELAY)
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


class BearerAuth:
    """Pure ASGI middleware (does not buffer SSE): 401 unless the bearer token matches."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope['type'] == 'http':
            auth = dict(scope['headers']).get(b'authorization', b'').decode()
            if auth != f'Bearer {TOKEN}':
                resp = JSONResponse({'error': 'unauthorized'}, status_code=401,
                                    headers={'WWW-Authenticate': 'Bearer'})
                return await resp(scope, receive, send)
        return await self.app(scope, receive, send)


def build_card(public_url: str) -> AgentCard:
    return AgentCard(
        name='Currency Agent',
        description='Converts currency amounts (fixed demo rates).',
        version='1.0.0',
        supported_interfaces=[AgentInterface(
            url=public_url, protocol_binding='JSONRPC', protocol_version='1.0')],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        security_schemes={'bearer': SecurityScheme(
            http_auth_security_scheme=HTTPAuthSecurityScheme(scheme='Bearer'))},
        security_requirements=[SecurityRequirement(schemes={'bearer': StringList(list=[])})],
        default_input_modes=['text/plain'],
        default_output_modes=['text/plain'],
        skills=[AgentSkill(id='convert_currency', name='Currency conversion',
                           description='convert 10 USD to EUR', tags=['currency'],
                           examples=['convert 10 USD to EUR'])],
    )


def main() -> None:
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(('127.0.0.1', port))
    port = sock.getsockname()[1]
    public_url = os.environ.get('A2A_PUBLIC_URL', f'http://127.0.0.1:{port}/')
    card = build_card(public_url)
    handler = DefaultRequestHandler(
        agent_executor=CurrencyExecutor(), task_store=InMemoryTaskStore(), agent_card=card)
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(handler, rpc_url='/')
    app = Starlette(routes=routes)
    app.add_middleware(BearerAuth)
    print(f'port {port}', flush=True)
    config = uvicorn.Config(app, log_level='warning')
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == '__main__':
    main()
