#!/usr/bin/env bash
# `make build-all`: release binaries for several platforms plus the site, in
# dist/ with SHA-256 checksums (../shared/OPERATIONS.md §2).
#
#   dist/stopgo-<version>-linux-amd64/{agent,mcp-resources,mcp-filesystem}
#   dist/stopgo-<version>-linux-arm64/...   (cargo-zigbuild, glibc 2.31+)
#   dist/stopgo-<version>-site/             (the web UI, hashed and precompressed)
#   dist/SHA256SUMS
#
# The arm64 binaries are then run here under qemu-user-static with an arm64
# Debian sysroot: `--version` of each, and the agent answering /health.
# darwin is not built: linking it needs Apple's Security and CoreFoundation
# frameworks (reqwest's platform certificate verifier, chrono's local time
# zone), and no SDK here provides them (README, "Binaries").
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
say() { printf '==> %s\n' "$*"; }
BINS=(agent mcp-resources mcp-filesystem)
DIST="$ROOT/dist"
SYSROOT=/var/tmp/stopgo-arm64-sysroot

if ! command -v cargo-zigbuild >/dev/null 2>&1; then
  say "installing cargo-zigbuild and zig (PyPI)"
  python3 -m pip install --quiet cargo-zigbuild ziglang
  hash -r
fi
rustup target list --installed | grep -qx aarch64-unknown-linux-gnu || rustup target add aarch64-unknown-linux-gnu
if ! command -v qemu-aarch64-static >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then
  say "installing qemu-user-static and debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q qemu-user-static debootstrap
fi
if [[ ! -e "$SYSROOT/lib/ld-linux-aarch64.so.1" ]]; then
  say "an arm64 Debian sysroot for qemu (debootstrap --foreign, under a minute)"
  rm -rf "$SYSROOT"
  debootstrap --arch=arm64 --foreign --variant=minbase bookworm "$SYSROOT" >/dev/null
fi

rm -rf "$DIST" && mkdir -p "$DIST"
say "linux/amd64 (native) and the site: make build"
make --no-print-directory build
VERSION=$(target/release/agent --version | awk '{print $2}')
mkdir -p "$DIST/stopgo-$VERSION-linux-amd64"
for b in "${BINS[@]}"; do cp "target/release/$b" "$DIST/stopgo-$VERSION-linux-amd64/"; done
cp -r target/site "$DIST/stopgo-$VERSION-site"

say "linux/arm64 (cargo zigbuild, glibc 2.31)"
cargo zigbuild --release -p server -p mcp-resources -p mcp-filesystem --bins --target aarch64-unknown-linux-gnu.2.31
mkdir -p "$DIST/stopgo-$VERSION-linux-arm64"
for b in "${BINS[@]}"; do cp "target/aarch64-unknown-linux-gnu/release/$b" "$DIST/stopgo-$VERSION-linux-arm64/"; done

say "smoke test of the arm64 binaries under qemu"
ARM="$DIST/stopgo-$VERSION-linux-arm64"
run_arm() { qemu-aarch64-static -L "$SYSROOT" "$@"; }
for b in "${BINS[@]}"; do
  out=$(run_arm "$ARM/$b" --version)
  file "$ARM/$b" | grep -q 'ARM aarch64' || { echo "$b is not an arm64 binary" >&2; exit 1; }
  say "  $out (aarch64)"
done
work=$(mktemp -d)
trap 'kill "${pid:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT
printf 'host: 127.0.0.1\nport: 0\ndata_dir: %s/data\nllm: {model: "scripted:%s/config/demo-rules.yaml"}\n' "$work" "$ROOT" > "$work/agent.yaml"
run_arm "$ARM/agent" --config "$work/agent.yaml" > "$work/log" 2>&1 &
pid=$!
addr=""
for _ in $(seq 1 100); do
  addr=$(grep -o 'listening on http://[0-9.:]*' "$work/log" | head -1 | sed 's/listening on //') && [[ -n "$addr" ]] && break
  sleep 0.2
done
[[ -n "$addr" ]] || { cat "$work/log" >&2; echo "the arm64 agent did not start" >&2; exit 1; }
health=$(curl -fsS "$addr/health")
grep -q '"ok"' <<<"$health" || { echo "the arm64 agent's /health: $health" >&2; exit 1; }
say "  the arm64 agent answers $addr/health: $health"

(cd "$DIST" && find . -type f ! -name SHA256SUMS | sort | sed 's|^\./||' | xargs sha256sum > SHA256SUMS)
say "dist/: $(ls "$DIST" | tr '\n' ' ')"
