#!/usr/bin/env python3
"""The client command for the official MCP conformance suite
(`conformance client --command ...`): the whole agent is the client under
test. The suite appends the scenario server's URL and sets
MCP_CONFORMANCE_SCENARIO (and MCP_CONFORMANCE_CONTEXT, JSON, for the
client-credentials scenarios); this script writes an agent.yaml with that
server, starts the agent binary ($STOPGO_AGENT_BIN) on a free loopback
port, drives it over its REST API as a user would, and stops it.

    initialize                           the agent connects and lists tools
    tools_call                           a turn calls add_numbers {a: 5, b: 3}
    elicitation-sep1034-client-defaults  a turn calls the tool; its question
                                         is answered "accept" with no fields
                                         (the agent fills in the defaults)
    sse-retry                            a turn calls test_reconnection
    auth/client-credentials-basic        mcp_servers[].auth from the context

Only the standard library. Exit status 0 when the drive worked (the suite
judges the protocol); anything else prints why to stderr.
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

CALLS = {
    "tools_call": ("add_numbers", {"a": 5, "b": 3}),
    "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {}),
    "sse-retry": ("test_reconnection", {}),
}


def request(base, method, path, body=None, timeout=60):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def issuer_of(url):
    """The authorization server the scenario's server names, as an operator
    would look it up once before writing `issuer:` (the agent posts its
    secret only to the issuer its config names): the resource metadata
    that the server's 401 points to (RFC 9728), else its well-known URL."""
    from urllib.parse import urlsplit
    meta = None
    try:
        req = urllib.request.Request(url, data=b"{}", method="POST")
        req.add_header("Content-Type", "application/json")
        urllib.request.urlopen(req, timeout=10).close()
    except urllib.error.HTTPError as e:
        header = e.headers.get("WWW-Authenticate", "")
        if 'resource_metadata="' in header:
            meta = header.split('resource_metadata="', 1)[1].split('"', 1)[0]
    if meta is None:
        u = urlsplit(url)
        meta = f"{u.scheme}://{u.netloc}/.well-known/oauth-protected-resource{u.path}"
    with urllib.request.urlopen(meta, timeout=10) as r:
        return json.load(r)["authorization_servers"][0]


def config(work, url, scenario, context):
    rules = os.path.join(work, "rules.yaml")
    with open(rules, "w") as f:
        f.write("rules:\n")
        if scenario in CALLS:
            tool, args = CALLS[scenario]
            f.write(
                f"  - match: \"^go\"\n    steps:\n      - call: {tool}\n"
                f"        args: {json.dumps(args)}\n      - reply: \"done: {{result}}\"\n"
            )
        f.write("  - steps:\n      - reply: \"nothing to do\"\n")
    server = f"  - name: t\n    url: \"{url}\"\n"
    if scenario.startswith("auth/client-credentials"):
        os.environ["CONFORMANCE_SECRET"] = context.get("client_secret", "")
        server += (
            f"    auth: {{type: client_credentials, client_id: \"{context.get('client_id', '')}\", "
            f"client_secret: \"${{CONFORMANCE_SECRET}}\", issuer: \"{issuer_of(url)}\"}}\n"
        )
    path = os.path.join(work, "agent.yaml")
    with open(path, "w") as f:
        f.write(
            f"host: 127.0.0.1\nport: 0\ndata_dir: {os.path.join(work, 'data')}\n"
            f"llm: {{model: \"scripted:{rules}\"}}\nunannotated_tools: allow\n"
            f"mcp_servers:\n{server}"
        )
    return path


def start(path):
    agent = subprocess.Popen(
        [os.environ["STOPGO_AGENT_BIN"], "--config", path],
        env={**os.environ, "RUST_LOG": "info"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    for line in agent.stdout:
        sys.stderr.write(line)
        if "listening on http://" in line:
            address = line.split("listening on http://", 1)[1].split()[0]
            # Keep the log flowing (a full pipe would stop the agent).
            threading.Thread(target=lambda: [sys.stderr.write(x) for x in agent.stdout], daemon=True).start()
            return agent, "http://" + address.rstrip("/")
    agent.kill()
    raise SystemExit("the agent exited before it listened")


def connected(base):
    """Waits until the agent reports the server up (tools listed)."""
    deadline = time.time() + 20
    while time.time() < deadline:
        _, tools = request(base, "GET", "/tools")
        server = (tools or {}).get("servers", [{}])[0]
        if server.get("available"):
            return server
        time.sleep(0.2)
    raise SystemExit(f"the agent did not connect: {server}")


def drive(base, scenario):
    connected(base)
    if scenario not in CALLS:
        return
    status, body = request(base, "POST", "/conversations", {"message": "go"})
    if status != 201:
        raise SystemExit(f"POST /conversations: {status} {body}")
    result = body.get("result", {})
    if result.get("waiting_input"):
        q = result["question"]
        status, body = request(base, "POST", f"/questions/{q['uuid']}", {"action": "accept", "content": {}})
        if status != 200:
            raise SystemExit(f"answer: {status} {body}")
    print(json.dumps(body.get("result", {}).get("response")), file=sys.stderr)


def main():
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    with tempfile.TemporaryDirectory(prefix="stopgo-conformance-") as work:
        agent, base = start(config(work, url, scenario, context))
        try:
            drive(base, scenario)
        finally:
            agent.terminate()
            try:
                agent.wait(timeout=10)
            except subprocess.TimeoutExpired:
                agent.kill()


if __name__ == "__main__":
    main()
