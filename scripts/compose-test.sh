#!/usr/bin/env bash
# `make compose-test`: the image and docker-compose.yaml, proven with podman.
#
# Starts the `chain` profile (orchestrator agent-a → resource agent agent-b,
# named the seed's way by its JSON-RPC endpoint) on the scripted model,
# sends a destructive request to agent-a, checks that it waits as a proxy
# approval and that nothing changed at agent-b, approves it at agent-a,
# checks the resource at agent-b, and finds the request's session id in
# both containers' logs. Then the default stack (agent + mcp-resources +
# mcp-filesystem over HTTP): both tool servers up. Then the `replicas`
# profile (PostgreSQL, two agents, haproxy): a conversation asked through
# the balancer is approved through it, runs once, and both replicas served
# the session. Also checks the image: non-root, a health check, a data
# volume, no compilers. Tears down on exit.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
IMAGE=${STOPGO_IMAGE:-localhost/stopgo:latest}
export STOPGO_IMAGE=$IMAGE AGENT_MODEL=scripted:chain-rules.yaml
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
export AGENT_PORT=$(free_port) AGENT_A_PORT=$(free_port) AGENT_B_PORT=$(free_port) REPLICAS_PORT=$(free_port)
export POSTGRES_PASSWORD=test-$RANDOM$RANDOM
PROJECT=stopgo-test-$$
compose() { podman-compose -p "$PROJECT" --profile chain --profile replicas "$@"; }
say() { printf '==> %s\n' "$*"; }
fail() { printf 'compose-test FAILED: %s\n' "$*" >&2; for c in agent-a agent-b agent mcp-resources mcp-filesystem postgres agent-1 agent-2 balancer; do echo "--- $c"; podman logs --tail 30 "${PROJECT}_${c}_1" 2>&1 || true; done; exit 1; }
# `down` can stop short (a missing image, a profile's service that never
# started): whatever is left of this project is removed by name too.
cleanup() {
  compose down -v >/dev/null 2>&1 || true
  podman ps -aq --filter "name=^${PROJECT}_" | xargs -r podman rm -f >/dev/null 2>&1 || true
  podman volume ls -q --filter "name=^${PROJECT}_" | xargs -r podman volume rm >/dev/null 2>&1 || true
}
trap cleanup EXIT
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))" "$1"; }

say "the image: non-root, health check, data volume, no compilers"
user=$(podman image inspect "$IMAGE" --format '{{.Config.User}}')
[[ "$user" == stopgo ]] || fail "the image runs as '$user', not stopgo"
podman image inspect "$IMAGE" --format '{{json .Config.Healthcheck}}' | grep -q /health || fail "no HEALTHCHECK"
podman image inspect "$IMAGE" --format '{{json .Config.Volumes}}' | grep -q /app/data || fail "no data volume"
tools=$(podman run --rm --no-healthcheck --entrypoint /bin/sh "$IMAGE" -c 'id -u; for t in cc gcc rustc cargo make apt-get; do command -v $t || true; done')
[[ "$(head -1 <<<"$tools")" != 0 ]] || fail "runs as root"
if grep -qE 'cc|rustc|cargo|make' <<<"$(tail -n +2 <<<"$tools")"; then fail "build tools in the image: $tools"; fi

say "the chain: agent-a (127.0.0.1:$AGENT_A_PORT) → agent-b (127.0.0.1:$AGENT_B_PORT)"
compose up -d agent-a agent-b >/dev/null
A=http://127.0.0.1:$AGENT_A_PORT B=http://127.0.0.1:$AGENT_B_PORT
for url in "$A" "$B"; do
  for _ in $(seq 1 60); do curl -fsS "$url/health" >/dev/null 2>&1 && break; sleep 1; done
  curl -fsS "$url/health" >/dev/null || fail "$url/health does not answer"
done
SID=compose-test-$RANDOM$RANDOM
post() { curl -sS --max-time 60 -X POST "$1" -H "X-Session-ID: $SID" -H 'Content-Type: application/json' -d "$2"; }
asked=$(post "$A/conversations" '{"message": "add pears 4"}')
[[ $(json 'd["result"]["waiting_approval"]' <<<"$asked") == True ]] || fail "no approval asked: $asked"
[[ $(json 'd["result"]["approval"]["chain"]' <<<"$asked") == "['resources']" ]] || fail "not a proxy approval: $asked"
uuid=$(json 'd["result"]["approval"]["uuid"]' <<<"$asked")
before=$(post "$B/conversations" '{"message": "list resources"}')
grep -q pears <<<"$before" && fail "agent-b changed before the approval: $before"
decided=$(post "$A/approvals/$uuid" '{"approved": true}')
grep -q 'resources_add answered' <<<"$decided" || fail "the approval did not run at agent-b: $decided"
after=$(post "$B/conversations" '{"message": "list resources"}' | json 'd["result"]["response"]')
grep -q '"name":"pears","updated_at":"[^"]*","value":4' <<<"$after" || fail "no pears=4 at agent-b: $after"
# Not `grep -q`: it exits at the first match, podman logs then dies of SIGPIPE
# and pipefail turns the match into a failure once the log is long enough.
in_log() { podman logs "${PROJECT}_$1_1" 2>&1 | grep -F "sid=$SID" >/dev/null; }
for c in agent-a agent-b; do
  # conmon writes the container's output to its log a moment later.
  for _ in $(seq 1 50); do in_log "$c" && break; sleep 0.2; done
  in_log "$c" || fail "sid=$SID is not in $c's log"
done
say "approved at agent-a, ran at agent-b, sid=$SID in both logs"

say "the default stack: agent + mcp-resources + mcp-filesystem over HTTP (127.0.0.1:$AGENT_PORT)"
compose up -d agent mcp-resources mcp-filesystem >/dev/null
S=http://127.0.0.1:$AGENT_PORT
for _ in $(seq 1 60); do curl -fsS "$S/health" >/dev/null 2>&1 && break; sleep 1; done
ok=""
for _ in $(seq 1 60); do
  servers=$(curl -fsS "$S/tools" 2>/dev/null || true)
  if [[ -n "$servers" ]] && [[ $(json 'sorted(s["name"] for s in d["servers"] if s["available"])' <<<"$servers") == "['files', 'resources']" ]]; then ok=1; break; fi
  sleep 1
done
[[ -n "$ok" ]] || fail "the MCP servers are not both up: $servers"
listed=$(post "$S/conversations" '{"message": "list resources"}')
grep -q 'Here is what I found' <<<"$listed" || fail "the agent could not use mcp-resources: $listed"
say "replicas: postgres + agent-1 + agent-2 behind haproxy (127.0.0.1:$REPLICAS_PORT)"
compose up -d postgres agent-1 agent-2 balancer >/dev/null
L=http://127.0.0.1:$REPLICAS_PORT
# Both replicas up (asked inside each container), then two of the
# balancer's health checks (every 2 s) so it routes to both.
healthy() { podman exec "${PROJECT}_$1_1" /bin/bash -c 'exec 3<>/dev/tcp/127.0.0.1/8080 && printf "GET /health HTTP/1.0\r\n\r\n" >&3 && grep -q ok <&3' >/dev/null 2>&1; }
for c in agent-1 agent-2; do
  for _ in $(seq 1 90); do healthy "$c" && break; sleep 1; done
  healthy "$c" || fail "$c does not answer /health"
done
sleep 5
curl -fsS "$L/health" >/dev/null || fail "the balancer does not answer"
SID=compose-replicas-$RANDOM$RANDOM
asked=$(post "$L/conversations" '{"message": "add quinces 9"}')
[[ $(json 'd["result"]["waiting_approval"]' <<<"$asked") == True ]] || fail "no approval asked through the balancer: $asked"
uuid=$(json 'd["result"]["approval"]["uuid"]' <<<"$asked")
id=$(json 'd["conversation"]["id"]' <<<"$asked")
seen=$(curl -fsS -H "X-Session-ID: $SID" "$L/conversations/$id" | json 'd["conversation"]["status"]')
[[ "$seen" == waiting_approval ]] || fail "the other replica does not see the conversation: $seen"
decided=$(post "$L/approvals/$uuid" '{"approved": true}')
grep -q 'resources_add answered' <<<"$decided" || fail "the approval did not run: $decided"
again=$(curl -sS -o /dev/null -w '%{http_code}' -X POST "$L/approvals/$uuid" -H "X-Session-ID: $SID" -H 'Content-Type: application/json' -d '{"approved": true}')
[[ "$again" == 409 ]] || fail "a second decision through the other replica answered $again, not 409"
listed=$(post "$L/conversations" '{"message": "list resources"}' | json 'd["result"]["response"]')
[[ $(grep -o '"name":"quinces"' <<<"$listed" | wc -l) == 1 ]] || fail "quinces not added exactly once: $listed"
for c in agent-1 agent-2; do
  for _ in $(seq 1 50); do in_log "$c" && break; sleep 0.2; done
  in_log "$c" || { podman logs "${PROJECT}_balancer_1" 2>&1 | tail -12; fail "sid=$SID is not in $c's log: the balancer did not use both replicas"; }
done
say "asked and approved through the balancer, both replicas served the session, ran once"

say "compose-test passed"
# The four checks above (the image, the chain, the default stack, the
# replicas), in the plain form the stage table counts.
echo "compose-test: 4 passed, 0 failed"
