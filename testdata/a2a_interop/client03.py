#!/usr/bin/env python3
"""Drives one of our agents with the official Python SDK's 0.3 client
(a2a-sdk 0.3.x): the same steps as client.py, over the 0.3 dialect our
dual-stack card offers (`url`, `protocolVersion: 0.3.0`).

    client03.py AGENT_BASE_URL

Prints one JSON object per step, states in the 0.3 form
(completed, input-required, …); exits non-zero on an SDK error.
"""
import asyncio
import json
import sys
import uuid

import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, TaskIdParams, TaskQueryParams, TextPart


def say(step, **fields):
    print(json.dumps({"step": step, **fields}), flush=True)


def message(text, task_id=None):
    return Message(
        message_id=str(uuid.uuid4()),
        role=Role.user,
        parts=[Part(root=TextPart(text=text))],
        task_id=task_id,
    )


def text_of(task):
    parts = [p.root.text for a in (task.artifacts or []) for p in a.parts if hasattr(p.root, "text")]
    if not parts and task.status.message:
        parts = [p.root.text for p in task.status.message.parts if hasattr(p.root, "text")]
    return "\n".join(parts)


async def last_task(client, msg):
    task = None
    async for event in client.send_message(msg):
        if isinstance(event, tuple):
            task = event[0]
    if task is None:
        raise RuntimeError("no task in the answer")
    return task


async def main(base):
    async with httpx.AsyncClient(timeout=30) as http:
        blocking = await ClientFactory.connect(base, ClientConfig(streaming=False, httpx_client=http))
        done = await last_task(blocking, message("list resources"))
        say("send", state=done.status.state.value, text=text_of(done))

        waiting = await last_task(blocking, message("add apples 5"))
        say("destructive", state=waiting.status.state.value, task=waiting.id)

        approved = await last_task(blocking, message("approve", waiting.id))
        say("approve", state=approved.status.state.value, text=text_of(approved))

        other = await last_task(blocking, message("add pears 2"))
        cancelled = await blocking.cancel_task(TaskIdParams(id=other.id))
        say("cancel", state=cancelled.status.state.value)

        got = await blocking.get_task(TaskQueryParams(id=other.id))
        say("get", state=got.status.state.value, history=len(got.history or []))

        streaming = await ClientFactory.connect(base, ClientConfig(streaming=True, httpx_client=http))
        kinds = []
        async for event in streaming.send_message(message("list resources")):
            if isinstance(event, tuple):
                task, update = event
                kinds.append([update.kind if update else "task", task.status.state.value])
            else:
                kinds.append(["message", ""])
        say("stream", events=kinds)


if __name__ == "__main__":
    try:
        asyncio.run(main(sys.argv[1]))
    except Exception as e:
        print(json.dumps({"step": "error", "error": f"{type(e).__name__}: {e}"}), flush=True)
        sys.exit(1)
