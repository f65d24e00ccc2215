#!/usr/bin/env bash
# Runs the official A2A TCK (a2aproject/a2a-tck, never vendored here)
# against this agent in conformance mode (`agent --a2a-conformance`, in a
# build with the cargo feature a2a-tck; the script builds it).
#
#   scripts/a2a-tck.sh 1.0 /path/to/a2a-tck-1.0-dev    # jsonrpc, --level must
#   TCK_TRANSPORT=http_json TCK_LEVEL=should scripts/a2a-tck.sh 1.0 /path/to/a2a-tck-1.0-dev
#   scripts/a2a-tck.sh 0.3 /path/to/a2a-tck-0.3.0.beta4 # --category "${TCK_CATEGORY:-mandatory}"
#   TCK_CATEGORY=all scripts/a2a-tck.sh 0.3 /path/to/a2a-tck-0.3.0.beta4
#
# The TCK's push webhook receiver listens on localhost, so conformance runs
# allow pushes to loopback (a2a_push_allow_private; off by default).
#
# TCK_AUTH=1 (1.0) turns operator authentication on (mode tokens, one
# admin token) so the agent serves its extended card, and gives the TCK
# that token: scripts/tck-auth/sitecustomize.py adds it to every request
# (the TCK has no setting for credentials). The extended card's tests run
# then; CORE-CAP-003 (no extended card) runs only without it.
#
# The checkout needs a Python >= 3.11 virtualenv with its dependencies:
#   python3 -m venv .venv && .venv/bin/pip install -e .
# The 1.0 TCK rejects the 0.3 fields of our dual-stack card, so 1.0 runs
# with `a2a_card: v1`; the 0.3 TCK needs them, so 0.3 runs with `dual`.
set -euo pipefail
VERSION="${1:?usage: scripts/a2a-tck.sh 1.0|0.3 TCK_CHECKOUT}"
TCK="$(cd "${2:?usage: scripts/a2a-tck.sh 1.0|0.3 TCK_CHECKOUT}" && pwd)"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
# Conformance mode is compiled only with the cargo feature a2a-tck, into a
# target directory of its own so the shipped release build stays as it is.
if [ -z "${AGENT_BIN:-}" ]; then
  (cd "$ROOT" && cargo build --release -p server --bin agent --features a2a-tck --target-dir target/tck)
fi
AGENT="${AGENT_BIN:-$ROOT/target/tck/release/agent}"
PORT="${TCK_PORT:-9999}"
WORK="$(mktemp -d)"
trap 'kill "$PID" 2>/dev/null || true; rm -rf "$WORK"' EXIT

CARD=v1
[[ "$VERSION" == "0.3" ]] && CARD=dual
cat > "$WORK/agent.yaml" <<YAML
name: stopgo-conformance
description: Stop & Go in A2A conformance mode
host: 127.0.0.1
port: $PORT
data_dir: $WORK/data
a2a_card: $CARD
a2a_push_allow_private: true
public_url: http://127.0.0.1:$PORT
llm:
  model: "scripted:$ROOT/testdata/e2e-rules.yaml"
YAML
# TCK_REQUIRED_EXTENSION=1 declares the TCK's required extension, so
# CORE-CAP-004 runs; every other send then lacks it, so run that alone:
#   TCK_REQUIRED_EXTENSION=1 TCK_ARGS="-- -k TestCapabilityExtensionRequired" ...
if [[ "${TCK_REQUIRED_EXTENSION:-}" == 1 ]]; then
  cat >> "$WORK/agent.yaml" <<YAML
a2a_extensions:
  - {uri: "urn:a2a:tck:required-extension", required: true, description: "The A2A TCK's required extension"}
YAML
fi
if [[ "${TCK_AUTH:-}" == 1 ]]; then
  export TCK_BEARER="tck-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  export PYTHONPATH="$ROOT/scripts/tck-auth${PYTHONPATH:+:$PYTHONPATH}"
  cat >> "$WORK/agent.yaml" <<YAML
auth:
  mode: tokens
  tokens:
    - {name: tck, token: "\${TCK_BEARER}", roles: [admin]}
YAML
fi
"$AGENT" --config "$WORK/agent.yaml" --a2a-conformance > "$WORK/agent.log" 2>&1 &
PID=$!
for _ in $(seq 50); do
  curl -sf "http://127.0.0.1:$PORT/health" > /dev/null && break
  sleep 0.2
done
cd "$TCK"
if [[ "$VERSION" == "1.0" ]]; then
  .venv/bin/python run_tck.py --sut-host "http://127.0.0.1:$PORT" --transport "${TCK_TRANSPORT:-jsonrpc}" --level "${TCK_LEVEL:-must}" ${TCK_ARGS:-}
else
  .venv/bin/python run_tck.py --sut-url "http://127.0.0.1:$PORT/a2a" --category "${TCK_CATEGORY:-mandatory}"
fi
