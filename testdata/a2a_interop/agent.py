#!/usr/bin/env python3
"""A minimal A2A agent on the official Python SDK (a2a-sdk 1.x or 0.3.x).

    agent.py PORT [--rest | --grpc GRPC_PORT]

Serves an agent card and JSON-RPC (1.0, plus the SDK's 0.3 compatibility)
on 127.0.0.1:PORT and completes every task with the artifact
"py-agent got: <text>". Used as a sub-agent behind our client in
server/tests/it/a2a_interop.rs and as the Python baseline of `make bench`.
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

With --grpc GRPC_PORT (SDK 1.x only) it serves the SDK's gRPC binding
(GrpcHandler on a grpc.aio server) on 127.0.0.1:GRPC_PORT and only the
card on PORT, whose one interface is {url: "127.0.0.1:GRPC_PORT",
protocolBinding: "GRPC", protocolVersion: "1.0"}.

A message starting "delete NAME" does not complete: the task waits
(input-required) with a data part {tool: "py_delete", arguments: {name},
description}, the way our agents ask through a chain; the continuation's
data part {approved: true|false} completes it with "py-agent deleted
NAME" or "py-agent kept NAME".
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


def decision_of(message):
    """The `approved` of a continuation's data part (1.x), else None."""
    if not V1 or message is None:
        return None
    from google.protobuf.json_format import MessageToDict

    for p in message.parts:
        if p.HasField("data"):
            d = MessageToDict(p.data)
            if isinstance(d, dict) and "approved" in d:
                return bool(d["approved"])
    return None


class EchoExecutor(AgentExecutor):
    """Completes each task at once with an artifact echoing the text;
    "delete NAME" first waits for a decision (1.x)."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        text = context.get_user_input() if context.message else ""
        task = context.current_task
        if V1 and task is not None and task.history:
            first = next((h for h in task.history if h.parts), None)
            asked = " ".join(p.text for p in first.parts if p.text) if first else ""
            if asked.startswith("delete "):
                name = asked[len("delete "):].strip()
                verb = "deleted" if decision_of(context.message) else "kept"
                await updater.add_artifact(parts=[text_part(f"py-agent {verb} {name}")], name="answer")
                await updater.complete()
                return
        if V1 and text.startswith("delete "):
            from google.protobuf.struct_pb2 import Value
            from google.protobuf.json_format import ParseDict

            name = text[len("delete "):].strip()
            data = ParseDict(
                {"tool": "py_delete", "arguments": {"name": name}, "description": f"delete {name}"},
                Value(),
            )
            from a2a.helpers.proto_helpers import new_task
            from a2a.types import TaskState

            # The task first (a status update needs one), with the request.
            await event_queue.enqueue_event(
                new_task(
                    context.task_id,
                    context.context_id,
                    TaskState.TASK_STATE_SUBMITTED,
                    history=[context.message],
                )
            )
            ask = updater.new_agent_message(parts=[text_part(f"Approve deleting {name}?"), Part(data=data)])
            await updater.requires_input(message=ask)
            return
        await updater.add_artifact(parts=[text_part(f"py-agent got: {text}")], name="answer")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel()


def card_v1(interface):
    return AgentCard(
        name="py-agent",
        description="Echo agent on the official A2A Python SDK",
        version="1.0.0",
        supported_interfaces=[interface],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="Echoes the message", tags=["echo"])],
    )


async def serve_grpc(port, grpc_port, ready):
    """The SDK's gRPC binding on grpc_port, the card over HTTP on port."""
    import grpc
    from starlette.applications import Starlette
    from a2a.server.request_handlers import GrpcHandler
    from a2a.server.routes import create_agent_card_routes
    from a2a.types import AgentInterface, a2a_pb2_grpc

    interface = AgentInterface(
        url=f"127.0.0.1:{grpc_port}", protocol_binding="GRPC", protocol_version="1.0"
    )
    card = card_v1(interface)
    handler = DefaultRequestHandler(
        agent_executor=EchoExecutor(), task_store=InMemoryTaskStore(), agent_card=card
    )
    server = grpc.aio.server()
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), server)
    server.add_insecure_port(f"127.0.0.1:{grpc_port}")
    await server.start()
    app = Starlette(routes=create_agent_card_routes(card))
    await ready(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")).serve()


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
    card = card_v1(interface)
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
    grpc_port = None
    if "--grpc" in args:
        i = args.index("--grpc")
        grpc_port = int(args[i + 1]) if i + 1 < len(args) and args[i + 1].isdigit() else None
        args = args[:i] + args[i + 2:]
        if grpc_port is None:
            sys.exit("usage: agent.py PORT --grpc GRPC_PORT")
    if len(args) != 1 or not args[0].isdigit():
        sys.exit("usage: agent.py PORT [--rest | --grpc GRPC_PORT]")
    if (rest or grpc_port) and not V1:
        sys.exit(f"agent.py: --rest and --grpc need a2a-sdk 1.x (this is {version('a2a-sdk')})")
    port = int(args[0])
    logging.basicConfig(level=logging.WARNING)

    class Ready(uvicorn.Server):
        async def startup(self, sockets=None):
            await super().startup(sockets)
            print(f"listening on http://127.0.0.1:{port}", file=sys.stderr, flush=True)

    if grpc_port:
        import asyncio

        asyncio.run(serve_grpc(port, grpc_port, Ready))
        return
    app = app_v1(port, rest) if V1 else app_v03(port)
    Ready(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")).run()


if __name__ == "__main__":
    main()
