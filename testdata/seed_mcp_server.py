#!/usr/bin/env python3
"""A minimal stdio MCP server in the style of the seed's Go servers: tool
hints at the top level of each tool (`destructiveHint`, `readOnlyHint`), no
`annotations`. Used by server/tests/mcp_hints.rs."""
import json
import sys

TOOLS = [
    {"name": "seed_delete", "description": "Deletes a thing.", "destructiveHint": True,
     "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}}},
    {"name": "seed_peek", "description": "Looks at a thing.", "destructiveHint": False,
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "seed_read", "description": "Reads a thing.", "readOnlyHint": True,
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "seed_plain", "description": "No hints at all.",
     "inputSchema": {"type": "object", "properties": {}}},
]

for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if "id" not in msg:
        continue
    method = msg.get("method")
    if method == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "seed", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        name = msg.get("params", {}).get("name")
        result = {"content": [{"type": "text", "text": f"{name} ok"}], "isError": False}
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "method not found"}}), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
