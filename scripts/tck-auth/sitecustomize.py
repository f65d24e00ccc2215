"""Credentials for the A2A TCK (scripts/a2a-tck.sh with TCK_AUTH=1).

The 1.0 TCK sends no credentials, so against an agent with operator
authentication on it could not reach the extended agent card, whose
tests then skip. Python imports this module at start when its folder is
on PYTHONPATH: it adds `Authorization: Bearer $TCK_BEARER` to every
request the TCK makes, over httpx (JSON-RPC, HTTP+JSON, the card) and
gRPC (metadata on every call of a channel from grpc.insecure_channel).
Nothing of the TCK is changed or copied.
"""
import collections
import os

_TOKEN = os.environ.get("TCK_BEARER")

if _TOKEN:
    import grpc
    import httpx

    _send = httpx.Client.send

    def _send_with_bearer(self, request, *args, **kwargs):
        request.headers.setdefault("Authorization", f"Bearer {_TOKEN}")
        return _send(self, request, *args, **kwargs)

    httpx.Client.send = _send_with_bearer

    class _Details(
        collections.namedtuple(
            "_Details",
            ("method", "timeout", "metadata", "credentials", "wait_for_ready", "compression"),
        ),
        grpc.ClientCallDetails,
    ):
        pass

    class _Bearer(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):
        def _with(self, d):
            metadata = list(d.metadata or []) + [("authorization", f"Bearer {_TOKEN}")]
            return _Details(
                d.method, d.timeout, metadata, d.credentials,
                getattr(d, "wait_for_ready", None), getattr(d, "compression", None),
            )

        def intercept_unary_unary(self, continuation, details, request):
            return continuation(self._with(details), request)

        def intercept_unary_stream(self, continuation, details, request):
            return continuation(self._with(details), request)

    _insecure_channel = grpc.insecure_channel

    def _channel_with_bearer(target, *args, **kwargs):
        return grpc.intercept_channel(_insecure_channel(target, *args, **kwargs), _Bearer())

    grpc.insecure_channel = _channel_with_bearer
