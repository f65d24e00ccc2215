#!/usr/bin/env python3
"""Checks an agent card's signature with the official Python SDK's verifier.

    verify_card.py CARD_URL JWKS_URL [--tamper]

Reads the card and the JWKS, parses the card into the SDK's AgentCard
(unknown fields ignored, as the SDK's clients do) and runs
a2a.utils.signing.create_signature_verifier with the JWKS's keys (by kid)
and ES256/EdDSA. With --tamper the card's description is changed first.
Prints {"verified": true} or {"verified": false, "error": "..."}. Used by
server/tests/it/a2a_signing.rs.
"""
import json
import sys

import httpx
from google.protobuf.json_format import ParseDict
from jwt import PyJWK

from a2a.types import AgentCard
from a2a.utils.signing import SignatureVerificationError, create_signature_verifier


def main(card_url, jwks_url, tamper):
    card_json = httpx.get(card_url, timeout=10).json()
    jwks = httpx.get(jwks_url, timeout=10).json()
    keys = {k.get("kid"): k for k in jwks["keys"]}

    def key_provider(kid, jku):
        return PyJWK(keys[kid])

    card = ParseDict(card_json, AgentCard(), ignore_unknown_fields=True)
    if tamper:
        card.description = card.description + " (changed)"
    verify = create_signature_verifier(key_provider, ["ES256", "EdDSA"])
    try:
        verify(card)
        print(json.dumps({"verified": True, "signatures": len(card.signatures)}))
    except SignatureVerificationError as e:
        print(json.dumps({"verified": False, "error": f"{type(e).__name__}: {e}"}))


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--tamper"]
    if len(args) != 2:
        sys.exit("usage: verify_card.py CARD_URL JWKS_URL [--tamper]")
    main(args[0], args[1], "--tamper" in sys.argv[1:])
