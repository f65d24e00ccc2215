#!/usr/bin/env python3
"""Drives one of our agents with the official Python SDK's 1.x client.

    client.py AGENT_BASE_URL [--transport jsonrpc|http_json|grpc]

Uses the SDK's own card resolution and transport (not raw HTTP), JSON-RPC
unless --transport picks the card's HTTP+JSON (REST) or gRPC interface:
a blocking send that completes, one that needs approval, the continuation
that approves it, a cancel, a get, and a streaming send. Prints one JSON
object per step, states as the SDK names them (TASK_STATE_*); exits
non-zero with the SDK's error if a call fails. With --transport the
first line is {"step": "transport", "binding": B}, B being the binding of
the transport the SDK actually built ("JSONRPC", "HTTP+JSON", "GRPC"). Used by
server/tests/it/a2a_interop.rs against the agent on testdata/e2e-rules.yaml.
"""
import asyncio
import json
import sys
import uuid

import grpc
import httpx
from a2a.client import ClientConfig, create_client
from a2a.client.transports.grpc import GrpcTransport
from a2a.client.transports.jsonrpc import JsonRpcTransport
from a2a.client.transports.rest import RestTransport
from a2a.compat.v0_3.jsonrpc_transport import CompatJsonRpcTransport
from a2a.compat.v0_3.rest_transport import CompatRestTransport
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)


BINDINGS = {"jsonrpc": "JSONRPC", "http_json": "HTTP+JSON", "grpc": "GRPC"}


def binding_of(client):
    """The binding of the transport the SDK built (unwrapping a tenant)."""
    transport = client._transport
    transport = getattr(transport, "_base", transport)  # TenantTransportDecorator
    if isinstance(transport, GrpcTransport):
        return "GRPC"
    if isinstance(transport, (RestTransport, CompatRestTransport)):
        return "HTTP+JSON"
    if isinstance(transport, (JsonRpcTransport, CompatJsonRpcTransport)):
        return "JSONRPC"
    return type(transport).__name__


def say(step, **fields):
    print(json.dumps({"step": step, **fields}), flush=True)


def message(text, task_id=None):
    m = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)])
    if task_id:
        m.task_id = task_id
    return SendMessageRequest(message=m)


def text_of(task):
    """The answer: artifacts first, else the status message."""
    parts = [p.text for a in task.artifacts for p in a.parts if p.text]
    if not parts and task.status.HasField("message"):
        parts = [p.text for p in task.status.message.parts if p.text]
    return "\n".join(parts)


async def last_task(client, request):
    """Sends and returns the final task the SDK aggregated."""
    task = None
    async for event in client.send_message(request):
        if event.HasField("task"):
            task = event.task
    if task is None:
        raise RuntimeError("no task in the answer")
    return task


def grpc_channel(target):
    """A channel to a card's gRPC interface: `https://` with TLS, `http://`
    (or a bare host:port) without."""
    if target.startswith("https://"):
        return grpc.aio.secure_channel(target.removeprefix("https://").rstrip("/"),
                                       grpc.ssl_channel_credentials())
    return grpc.aio.insecure_channel(target.removeprefix("http://").rstrip("/"))


async def main(base, transport=None):
    bindings = [BINDINGS[transport]] if transport else []
    async with httpx.AsyncClient(timeout=30) as http:

        def config(streaming):
            return ClientConfig(
                streaming=streaming,
                httpx_client=http,
                supported_protocol_bindings=list(bindings),
                # The card's gRPC interface carries its scheme: TLS for
                # https, plain HTTP/2 for http (gRPC targets are host:port).
                grpc_channel_factory=grpc_channel,
            )

        blocking = await create_client(base, config(False))
        if transport:
            say("transport", binding=binding_of(blocking))
        done = await last_task(blocking, message("list resources"))
        say("send", state=TaskState.Name(done.status.state), text=text_of(done))

        waiting = await last_task(blocking, message("add apples 5"))
        say("destructive", state=TaskState.Name(waiting.status.state), task=waiting.id)

        approved = await last_task(blocking, message("approve", waiting.id))
        say("approve", state=TaskState.Name(approved.status.state), text=text_of(approved))

        other = await last_task(blocking, message("add pears 2"))
        cancelled = await blocking.cancel_task(CancelTaskRequest(id=other.id))
        say("cancel", state=TaskState.Name(cancelled.status.state))

        got = await blocking.get_task(GetTaskRequest(id=other.id))
        say("get", state=TaskState.Name(got.status.state), history=len(got.history))

        streaming = await create_client(base, config(True))
        kinds = []
        async for event in streaming.send_message(message("list resources")):
            kind = event.WhichOneof("payload") or next(
                (f for f in ("task", "message", "status_update", "artifact_update") if event.HasField(f)), "?"
            )
            state = ""
            if event.HasField("task"):
                state = TaskState.Name(event.task.status.state)
            elif event.HasField("status_update"):
                state = TaskState.Name(event.status_update.status.state)
            kinds.append([kind, state])
        say("stream", events=kinds)


def parse_args(argv):
    """AGENT_BASE_URL [--transport jsonrpc|http_json|grpc]"""
    args, transport = [], None
    while argv:
        a = argv.pop(0)
        if a == "--transport" and argv:
            transport = argv.pop(0)
        elif a.startswith("--transport="):
            transport = a.split("=", 1)[1]
        else:
            args.append(a)
    if len(args) != 1 or (transport is not None and transport not in BINDINGS):
        sys.exit("usage: client.py AGENT_BASE_URL [--transport jsonrpc|http_json|grpc]")
    return args[0], transport


if __name__ == "__main__":
    base, transport = parse_args(sys.argv[1:])
    try:
        asyncio.run(main(base, transport))
    except Exception as e:  # the SDK's error, readable for the Rust test
        print(json.dumps({"step": "error", "error": f"{type(e).__name__}: {e}"}), flush=True)
        sys.exit(1)
