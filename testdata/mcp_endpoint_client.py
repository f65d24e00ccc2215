#!/usr/bin/env python3
"""The official MCP Python SDK (`mcp` 2.3.0, in .tools/mcp-python) as a
client of an agent's own `POST /mcp` (server/tests/it/mcp_endpoint.rs).

    mcp_endpoint_client.py URL TOOL JSON_ARGS [--legacy]
                           [--answer accept|decline|cancel|none]
                           [--content JSON] [--token T]

(default)      mode="auto": the server/discover probe, 2026-07-28 when the
               server offers it; every input_required round goes to the
               elicitation callback and the SDK retries the call by itself
               (inputResponses + requestState).
--legacy       mode="legacy": initialize (2025-11-25) and a session; the
               server's elicitation/create arrives during the call.
--answer none  no elicitation callback: the client declares no elicitation
               capability, so the server must answer the waiting result.
--content      what an accepted form elicitation answers
               (default {"decision": "approve"}).

Prints one JSON line: {protocolVersion, asked: [elicitation params...],
result: CallToolResult}, or {error: {code, message}} when the call is
refused with a JSON-RPC error.
"""
import argparse
import json

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import ElicitRequestFormParams, ElicitResult


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("tool")
    p.add_argument("args")
    p.add_argument("--legacy", action="store_true")
    p.add_argument("--answer", default="accept", choices=["accept", "decline", "cancel", "none"])
    p.add_argument("--content", default='{"decision": "approve"}')
    p.add_argument("--token")
    a = p.parse_args()
    asked = []

    async def on_elicit(context, params):
        asked.append(params.model_dump(mode="json", by_alias=True, exclude_none=True))
        if a.answer != "accept":
            return ElicitResult(action=a.answer)
        if isinstance(params, ElicitRequestFormParams):
            return ElicitResult(action="accept", content=json.loads(a.content))
        return ElicitResult(action="accept")  # URL mode: consent only

    headers = {"Authorization": f"Bearer {a.token}"} if a.token else None
    transport = streamable_http_client(a.url, http_client=create_mcp_http_client(headers=headers))
    kwargs = {} if a.answer == "none" else {"elicitation_callback": on_elicit}
    async with Client(transport, mode="legacy" if a.legacy else "auto", **kwargs) as client:
        try:
            result = await client.call_tool(a.tool, json.loads(a.args), read_timeout_seconds=60)
        except Exception as e:  # a JSON-RPC error: say it, as data
            err = getattr(e, "error", None)
            print(json.dumps({
                "protocolVersion": client.protocol_version,
                "asked": asked,
                "error": {
                    "code": getattr(err, "code", None),
                    "message": getattr(err, "message", None) or str(e),
                },
            }))
            return
        print(json.dumps({
            "protocolVersion": client.protocol_version,
            "asked": asked,
            "result": result.model_dump(mode="json", by_alias=True, exclude_none=True),
        }))


anyio.run(main)
