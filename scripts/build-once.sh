#!/usr/bin/env bash
# `make build` compiles each binary once (issue 40, item 9): run right after
# `make build`, the same two builds again must find everything fresh.
# Before the fix, `make build` ran a second `cargo build --bins` without
# cargo-leptos's LEPTOS_* environment, which rebuilt leptos_config and all
# that depends on it, so every build compiled the server twice (and the
# next one again).
set -euo pipefail
cd "$(dirname "$0")/.."
for bin in agent mcp-filesystem mcp-resources; do
  [[ -x target/release/$bin ]] || { echo "build-once: target/release/$bin is missing after make build" >&2; exit 1; }
done
[[ -d target/site/pkg ]] || { echo "build-once: target/site/pkg is missing after make build" >&2; exit 1; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
{ cargo leptos build --release --precompress && cargo build --release -p mcp-filesystem -p mcp-resources; } >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
if grep -E '^\s*Compiling ' "$log" >&2; then
  echo "build-once: a second build right after make build compiled the crates above again" >&2
  exit 1
fi
echo "build-once: every binary was built once"
