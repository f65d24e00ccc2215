#!/usr/bin/env python3
"""A minimal A2A agent on the official Python SDK (a2a-sdk 1.x or 0.3.x).

    agent.py PORT [--rest]

Serves an agent card and JSON-RPC (1.0, plus the SDK's 0.3 compatibility)
on 127.0.0.1:PORT and completes every task with the artifact
"py-agent got: <text>". Used as a sub-agent behind our client in
server/tests/a2a_interop.rs and as the Python baseline of `make bench`.
Prints "listening on http://127.0.0.1:PORT" to stderr when ready.

With --rest (SDK 1.x only) it serves the SDK's HTTP+JSON (REST) binding
instead of JSON-RPC; the card (still at /.well-known/agent-card.json)
lists the one interface {url: "http://127.0.0.1:PORT",
protocolBinding: "HTTP+JSON", protocolVersion: "1.0"}, and the SDK's
create_rest_routes serves, under that URL (requests need the header
"A2A-Version: 1.0", a missing one counts as 0.3 and is refused):

    POST   /message:send                          SendMessageRequest -> SendMessageResponse
    POST   /message:stream                        SendMessageRequest -> SSE of StreamResponse
    GET    /tasks/{id}                            ?historyLength=N -> Task
    GET    /tasks                                 ?pageSize=..&contextId=.. -> ListTasksResponse
    POST   /tasks/{id}:cancel                     -> Task
    GET|POST /tasks/{id}:subscribe                -> SSE of StreamResponse
    POST   /tasks/{id}/pushNotificationConfigs    TaskPushNotificationConfig
    GET    /tasks/{id}/pushNotificationConfigs    -> ListTaskPushNotificationConfigsResponse
    GET|DELETE /tasks/{id}/pushNotificationConfigs/{push_id}
    GET    /extendedAgentCard

and the same under /{tenant}/... .
"""
import logging
import sys
from importlib.metadata import version

import uvicorn

from a2a.server.agent_execution.agent_executor import AgentExecutor
from a2a.server.agent_execution.context import RequestContext
from a2a.server.events.event_queue import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks.inmemory_task_store import InMemoryTaskStore
from a2a.server.tasks.task_updater import TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentSkill, Part

V1 = not version("a2a-sdk").startswith("0.")


def text_part(text):
    """A text part in the SDK's own type (protobuf in 1.x, pydantic in 0.3)."""
    if V1:
        return Part(text=text)
    from a2a.types import TextPart

    return Part(root=TextPart(text=text))


class EchoExecutor(AgentExecutor):
    """Completes each task at once with an artifact echoing the text."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        text = context.get_user_input() if context.message else ""
        await updater.add_artifact(parts=[text_part(f"py-agent got: {text}")], name="answer")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel()


def app_v1(port, rest=False):
    from starlette.applications import Starlette
    from a2a.server.routes import (
        create_agent_card_routes,
        create_jsonrpc_routes,
        create_rest_routes,
    )
    from a2a.types import AgentInterface

    if rest:  # the REST routes hang off the root: {url}/message:send
        interface = AgentInterface(
            url=f"http://127.0.0.1:{port}", protocol_binding="HTTP+JSON", protocol_version="1.0"
        )
    else:
        interface = AgentInterface(
            url=f"http://127.0.0.1:{port}/", protocol_binding="JSONRPC", protocol_version="1.0"
        )
    card = AgentCard(
        name="py-agent",
        description="Echo agent on the official A2A Python SDK",
        version="1.0.0",
        supported_interfaces=[interface],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="Echoes the message", tags=["echo"])],
    )
    handler = DefaultRequestHandler(
        agent_executor=EchoExecutor(), task_store=InMemoryTaskStore(), agent_card=card
    )
    if rest:
        # The card routes first: the REST routes end with a catch-all
        # Mount("/{tenant}") that would otherwise take the card's path.
        routes = create_agent_card_routes(card) + create_rest_routes(handler)
    else:
        routes = create_agent_card_routes(card) + create_jsonrpc_routes(
            handler, rpc_url="/", enable_v0_3_compat=True
        )
    return Starlette(routes=routes)


def app_v03(port):
    from a2a.server.apps import A2AStarletteApplication

    card = AgentCard(
        name="py-agent",
        description="Echo agent on the official A2A Python SDK (0.3)",
        url=f"http://127.0.0.1:{port}/",
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="Echoes the message", tags=["echo"])],
    )
    handler = DefaultRequestHandler(agent_executor=EchoExecutor(), task_store=InMemoryTaskStore())
    return A2AStarletteApplication(agent_card=card, http_handler=handler).build(rpc_url="/")


def main() -> None:
    args = sys.argv[1:]
    rest = "--rest" in args
    args = [a for a in args if a != "--rest"]
    if len(args) != 1 or not args[0].isdigit():
        sys.exit("usage: agent.py PORT [--rest]")
    if rest and not V1:
        sys.exit(f"agent.py: --rest needs a2a-sdk 1.x (this is {version('a2a-sdk')})")
    port = int(args[0])
    app = app_v1(port, rest) if V1 else app_v03(port)
    logging.basicConfig(level=logging.WARNING)

    class Ready(uvicorn.Server):
        async def startup(self, sockets=None):
            await super().startup(sockets)
            print(f"listening on http://127.0.0.1:{port}", file=sys.stderr, flush=True)

    Ready(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")).run()


if __name__ == "__main__":
    main()
