#!/usr/bin/env python3
"""An MCP server that asks the user questions (elicitation), built on the
official Python SDK (`mcp` 2.3.0), in both protocol eras:

- 2026-07-28 (stateless, `server/discover`): a tool answers
  `resultType: "input_required"` with `inputRequests` and a sealed
  `requestState`; the client retries the same `tools/call` with
  `inputResponses` + `requestState` (MRTR).
- 2025-11-25 and older (`initialize` handshake): the server sends
  `elicitation/create` on the live session during the tool call.

Needs the SDK: run it with a Python that has `mcp==2.3.0` installed.

    question_mcp_server.py                  stdio
    question_mcp_server.py --http           Streamable HTTP on 127.0.0.1, a free
                                            port, logs exactly one line
                                            "listening on http://127.0.0.1:P/mcp"
    --era both|modern|legacy                both (default): the SDK's dual era
                                            (stdio: the client's first request
                                            picks the era; HTTP: the
                                            MCP-Protocol-Version header does).
                                            legacy: 2026-07-28 refused with
                                            -32022 naming only handshake
                                            versions, so a client falls back to
                                            initialize. modern: initialize
                                            refused with -32022 naming
                                            2026-07-28.

Tools (all `readOnlyHint: true`):
  ask_env {service}  form: env (enum staging|production, default staging),
                     replicas (integer 1..10, optional), confirm (boolean,
                     required) -> "deploying <service> to <env> (replicas=<n|1>)"
                     or "declined" / "cancelled"
  ask_url {}         URL mode (https://billing.example.test/oauth?state=xyz)
                     -> "url accepted" / "declined" / "cancelled"
  ask_twice {}       two forms in sequence (name, then age) -> "name=<n> age=<a>";
                     at 2026-07-28 two input_required rounds, the first answer
                     riding in requestState
  count {}           how many ask_* calls this process finished

OAuth (HTTP only): --issuer URL makes it a protected resource (the SDK's
AuthSettings): requests without a valid bearer get 401 with
`WWW-Authenticate: Bearer ... resource_metadata=...` (RFC 9728), tokens are
JWTs from that issuer (checked with PyJWT against its JWKS) for the audience
http://127.0.0.1:PORT/mcp with the scope `api`. --port P listens on P (so
the audience can be known before the server starts). Every accepted token is
appended to $QUESTION_TOKEN_LOG (if set), one line per request, so a test
can count the distinct tokens and look for them elsewhere.

Every finished ask_* call appends "<tool> <action>" to $QUESTION_COUNT_LOG (if
set), so a test can prove a call was completed exactly once across restarts.
requestState is sealed (AES-256-GCM, the SDK's RequestStateBoundary) under a
key from $QUESTION_STATE_KEY (a built-in default otherwise; shorter than 32
bytes is stretched with SHA-256), so a retry reaching a restarted server, or
sent by a restarted client that never saw the first round, still completes.
$QUESTION_STATE_TTL sets its lifetime in seconds (default 600).
"""
import argparse
import hashlib
import json
import os
import socket
import sys
import uuid

import anyio
from mcp.server.mcpserver import Context, MCPServer, RequestStateSecurity
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types import (
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PROTOCOL_VERSION_META_KEY,
    UNSUPPORTED_PROTOCOL_VERSION,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    InputRequiredResult,
    ToolAnnotations,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

NAME = "question-server"
DEFAULT_STATE_KEY = "stop-and-go question_mcp_server.py request-state key v1"
READ_ONLY = ToolAnnotations(read_only_hint=True)

ENV_SCHEMA = {
    "type": "object",
    "properties": {
        "env": {
            "type": "string",
            "title": "Environment",
            "enum": ["staging", "production"],
            "default": "staging",
        },
        "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
        "confirm": {"type": "boolean"},
    },
    "required": ["confirm"],
}
NAME_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "title": "Name"}},
    "required": ["name"],
}
AGE_SCHEMA = {
    "type": "object",
    "properties": {"age": {"type": "integer", "title": "Age", "minimum": 0}},
    "required": ["age"],
}
BILLING_URL = "https://billing.example.test/oauth?state=xyz"
NOT_ACCEPTED = {"decline": "declined", "cancel": "cancelled"}

finished_calls = 0


def finished(tool, action):
    """One ask_* call is over with the user's answer: count it, log it."""
    global finished_calls
    finished_calls += 1
    path = os.environ.get("QUESTION_COUNT_LOG")
    if path:
        with open(path, "a") as f:
            f.write(f"{tool} {action}\n")


class _InputRequired(Exception):
    """Raised by `Asker.ask` at 2026-07-28 when the answer is not in yet."""

    def __init__(self, result):
        self.result = result


class Asker:
    """The questions of one tool call, asked in order, in the call's era.

    2026-07-28: an answer comes from the retry's `inputResponses` (only for the
    question the previous round asked) or from the `requestState` carried
    over from earlier rounds; a question without one ends the round with an
    `InputRequiredResult`. The state is plain JSON here: the SDK's
    RequestStateBoundary seals it on the way out and unseals (verifying
    key, expiry, tool name, arguments and audience) on the way in.
    Older revisions: `elicitation/create` on the session, awaited in place.
    """

    def __init__(self, ctx):
        self.ctx = ctx
        self.modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        state = {}
        if self.modern and ctx.request_state:
            try:
                state = json.loads(ctx.request_state)
            except ValueError:
                state = {}
        self.answers = dict(state.get("answers") or {})
        self.asked = state.get("asked")

    def _require(self, mode):
        caps = self.ctx.client_capabilities
        elicitation = caps.elicitation if caps is not None else None
        if mode == "url":
            ok = elicitation is not None and elicitation.url is not None
        else:  # a bare `elicitation: {}` means form
            ok = elicitation is not None and (elicitation.form is not None or elicitation.url is None)
        if not ok:
            raise MCPError(
                code=MISSING_REQUIRED_CLIENT_CAPABILITY,
                message=f"Client did not declare the {mode} elicitation capability",
                data={"requiredCapabilities": {"elicitation": {mode: {}}}},
            )

    async def ask(self, key, params):
        if not self.modern:
            self._require(params.mode)
            return await self.ctx.session.send_request(
                ElicitRequest(params=params),
                ElicitResult,
                metadata=ServerMessageMetadata(related_request_id=self.ctx.request_id),
            )
        if key in self.answers:
            return ElicitResult.model_validate(self.answers[key])
        answer = (self.ctx.input_responses or {}).get(key)
        if isinstance(answer, ElicitResult) and self.asked == key:
            self.answers[key] = answer.model_dump(mode="json", by_alias=True, exclude_none=True)
            return answer
        self._require(params.mode)
        state = json.dumps({"asked": key, "answers": self.answers}, separators=(",", ":"))
        raise _InputRequired(InputRequiredResult(input_requests={key: ElicitRequest(params=params)}, request_state=state))


class JwtVerifier:
    """Checks a bearer JWT from `issuer` (signature by its JWKS, `iss`,
    `aud`, `exp`) and logs every accepted token."""

    def __init__(self, issuer, audience):
        import jwt
        import urllib.request

        with urllib.request.urlopen(f"{issuer}/.well-known/openid-configuration", timeout=10) as r:
            jwks_uri = json.load(r)["jwks_uri"]
        self.jwt = jwt
        self.jwks = jwt.PyJWKClient(jwks_uri)
        self.issuer = issuer
        self.audience = audience

    async def verify_token(self, token):
        from mcp.server.auth.provider import AccessToken

        try:
            key = await anyio.to_thread.run_sync(self.jwks.get_signing_key_from_jwt, token)
            claims = self.jwt.decode(
                token, key.key, algorithms=["RS256", "ES256"], audience=self.audience, issuer=self.issuer
            )
        except Exception as e:  # any invalid token is a 401
            print(f"token refused: {type(e).__name__}", file=sys.stderr, flush=True)
            return None
        log = os.environ.get("QUESTION_TOKEN_LOG")
        if log:
            with open(log, "a") as f:
                f.write(token + "\n")
        return AccessToken(
            token=token,
            client_id=str(claims.get("client_id", "")),
            scopes=str(claims.get("scope", "")).split(),
            expires_at=claims.get("exp"),
            resource=self.audience,
        )


def build_server(era, issuer=None, port=None):
    key = os.environ.get("QUESTION_STATE_KEY") or DEFAULT_STATE_KEY
    if len(key.encode()) < 32:
        key = hashlib.sha256(key.encode()).hexdigest()
    security = RequestStateSecurity(keys=[key], ttl=float(os.environ.get("QUESTION_STATE_TTL", "600")))
    protected = {}
    if issuer:
        from mcp.server.auth.settings import AuthSettings

        resource = f"http://127.0.0.1:{port}/mcp"
        protected = {
            "auth": AuthSettings(
                issuer_url=issuer,
                resource_server_url=resource,
                required_scopes=["api"],
                validate_token_resource=False,
            ),
            "token_verifier": JwtVerifier(issuer, resource),
        }
    mcp = MCPServer(NAME, version="1.0.0", log_level="WARNING", request_state_security=security, **protected)
    if era != "both":
        # Outermost, so a refused era never reaches the requestState check.
        mcp.middleware.insert(0, era_guard(era))

    @mcp.tool(annotations=READ_ONLY, structured_output=False)
    async def ask_env(service: str, ctx: Context) -> str | InputRequiredResult:
        """Asks which environment to deploy a service to (a form)."""
        try:
            answer = await Asker(ctx).ask(
                "env", ElicitRequestFormParams(message=f"Which environment for {service}?", requested_schema=ENV_SCHEMA)
            )
        except _InputRequired as e:
            return e.result
        finished("ask_env", answer.action)
        if answer.action != "accept":
            return NOT_ACCEPTED[answer.action]
        content = answer.content or {}
        replicas = content.get("replicas")
        return f"deploying {service} to {content.get('env') or 'staging'} (replicas={1 if replicas is None else int(replicas)})"

    @mcp.tool(annotations=READ_ONLY, structured_output=False)
    async def ask_url(ctx: Context) -> str | InputRequiredResult:
        """Sends the user to a sign-in page (URL-mode elicitation)."""
        asker = Asker(ctx)
        # elicitationId: required at 2025-11-25, gone at 2026-07-28.
        elicitation_id = None if asker.modern else f"billing-{uuid.uuid4().hex}"
        params = ElicitRequestURLParams(
            message="Sign in to the billing system", url=BILLING_URL, elicitation_id=elicitation_id
        )
        try:
            answer = await asker.ask("signin", params)
        except _InputRequired as e:
            return e.result
        finished("ask_url", answer.action)
        return "url accepted" if answer.action == "accept" else NOT_ACCEPTED[answer.action]

    @mcp.tool(annotations=READ_ONLY, structured_output=False)
    async def ask_twice(ctx: Context) -> str | InputRequiredResult:
        """Asks for a name, then for an age (two forms in sequence)."""
        asker = Asker(ctx)
        try:
            name = await asker.ask("name", ElicitRequestFormParams(message="What is your name?", requested_schema=NAME_SCHEMA))
            if name.action != "accept":
                finished("ask_twice", name.action)
                return NOT_ACCEPTED[name.action]
            age = await asker.ask("age", ElicitRequestFormParams(message="How old are you?", requested_schema=AGE_SCHEMA))
        except _InputRequired as e:
            return e.result
        finished("ask_twice", age.action)
        if age.action != "accept":
            return NOT_ACCEPTED[age.action]
        return f"name={(name.content or {}).get('name')} age={(age.content or {}).get('age')}"

    @mcp.tool(annotations=READ_ONLY, structured_output=False)
    def count() -> str:
        """How many ask_* calls this server process has finished."""
        return str(finished_calls)

    return mcp


def era_guard(era):
    """Middleware refusing the other era with -32022 (unsupported protocol version)."""

    async def guard(ctx, call_next):
        if ctx.request_id is None:  # notifications pass
            return await call_next(ctx)
        params = ctx.params or {}
        meta = params.get("_meta")
        enveloped = isinstance(meta, dict) and PROTOCOL_VERSION_META_KEY in meta
        if era == "legacy":
            modern = ctx.method != "initialize" and (enveloped or ctx.protocol_version in MODERN_PROTOCOL_VERSIONS)
            if modern:
                requested = meta.get(PROTOCOL_VERSION_META_KEY) if enveloped else ctx.protocol_version
                raise MCPError(
                    code=UNSUPPORTED_PROTOCOL_VERSION,
                    message="Unsupported protocol version",
                    data={"supported": list(HANDSHAKE_PROTOCOL_VERSIONS), "requested": str(requested)},
                )
        elif ctx.method == "initialize" or ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            requested = params.get("protocolVersion") if ctx.method == "initialize" else ctx.protocol_version
            raise MCPError(
                code=UNSUPPORTED_PROTOCOL_VERSION,
                message="Unsupported protocol version",
                data={"supported": list(MODERN_PROTOCOL_VERSIONS), "requested": str(requested)},
            )
        return await call_next(ctx)

    return guard


async def run_stdio(mcp, era):
    if era != "legacy":
        # The SDK's dual-era loop: the first request (discover vs initialize) picks the era.
        await mcp.run_stdio_async()
        return
    # Handshake-only loop: an enveloped probe must not lock the connection into
    # the 2026 era (the dual-era loop would, and then refuse the fallback initialize).
    server = mcp._lowlevel_server
    async with stdio_server() as (read, write), server.lifespan(server) as state:
        await serve_loop(server, read, write, lifespan_state=state, init_options=server.create_initialization_options())


async def run_http(mcp, port=0):
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    port = sock.getsockname()[1]
    # Stateful sessions (the 2025 era needs a back-channel for elicitation/create);
    # the 2026 era is routed by the MCP-Protocol-Version header to the stateless entry.
    app = mcp.streamable_http_app(host="127.0.0.1")
    config = uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    done = anyio.Event()

    async def serve():
        try:
            await server.serve(sockets=[sock])
        finally:
            done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve)
        while not server.started and not done.is_set():
            await anyio.sleep(0.01)
        if server.started:
            print(f"listening on http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)


def main():
    parser = argparse.ArgumentParser(description="MCP elicitation test server (both protocol eras)")
    parser.add_argument("--http", action="store_true", help="Streamable HTTP on 127.0.0.1, a free port")
    parser.add_argument("--era", choices=["both", "modern", "legacy"], default="both")
    parser.add_argument("--issuer", help="require OAuth bearer JWTs from this issuer (HTTP only)")
    parser.add_argument("--port", type=int, default=0, help="HTTP port (default: a free one)")
    args = parser.parse_args()
    if args.issuer and not (args.http and args.port):
        parser.error("--issuer needs --http and --port")
    mcp = build_server(args.era, args.issuer, args.port)
    if args.http:
        anyio.run(run_http, mcp, args.port)
    else:
        anyio.run(run_stdio, mcp, args.era)


if __name__ == "__main__":
    main()
