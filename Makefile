# Stop & Go. The two commands: `make run` and `make test` (see README.md).
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
export PATH := $(CURDIR)/.tools/node_modules/.bin:$(HOME)/.cargo/bin:$(PATH)
# With no provider key in the environment, `make run` starts the demo agent
# (scripted model) instead; CONFIG=... always wins.
KEYS := $(GEMINI_API_KEY)$(ANTHROPIC_API_KEY)$(OPENAI_API_KEY)$(MISTRAL_API_KEY)$(OPENROUTER_API_KEY)
ifeq ($(origin CONFIG),undefined)
  ifeq ($(strip $(KEYS)),)
    CONFIG := config/demo.yaml
    DEMO_NOTE := No provider API key is set (GEMINI_API_KEY, ANTHROPIC_API_KEY, OPENAI_API_KEY, MISTRAL_API_KEY, OPENROUTER_API_KEY): starting the demo agent (config/demo.yaml, scripted model).
  else
    CONFIG := config/agent.yaml
  endif
endif

# The compose stacks' model: the scripted chain demo without a provider key.
ifeq ($(strip $(KEYS)),)
  export AGENT_MODEL ?= scripted:chain-rules.yaml
endif
PROFILE ?=
# Where compose-test's image and Playwright take the binaries from: `make
# build`'s by default; `make test` uses the debug build its Rust tests made
# (with the release site), so CI compiles the native tree once for tests.
BIN_DIR ?= target/release

.PHONY: run test build build-once build-all site setup setup-test setup-containers lint unit e2e bench fuzz clean \
        image image-prebuilt compose-up compose-down compose-test

## run: install what is missing, build, and start the agent with the web UI
run: build
	@$(if $(DEMO_NOTE),echo "$(DEMO_NOTE)",true)
	@mkdir -p data/workspace data/docs  # mcp-filesystem's roots (config/mcp-filesystem.yaml)
	./target/release/agent --config $(CONFIG)

## build: release binaries in target/release/ and the site in target/site/
build: setup
	cargo leptos build --release --precompress
	cargo build --release -p mcp-filesystem -p mcp-resources

## build-once: a build right after `make build` finds nothing to compile
build-once:
	scripts/build-once.sh

## build-all: linux/amd64 and linux/arm64 binaries plus the site in dist/ with checksums; arm64 smoke-tested under qemu
build-all: setup
	scripts/build-all.sh

## test: formatting, clippy (which also checks the release build), every Rust test, the release
## site, Playwright and the containers against the tests' debug binaries; each stage timed
## (a table at the end, logs in target/stages/)
test:
	BIN_DIR=target/debug scripts/stages.sh setup-test lint unit site e2e compose-test

## site: the release web UI alone in target/site/ (the wasm at its shipped size)
site: setup
	cargo leptos build --release --precompress --frontend-only

setup:
	scripts/setup.sh build

setup-test:
	scripts/setup.sh test

setup-containers:
	scripts/setup.sh containers

## image: the full multi-stage build of the Dockerfile with podman (tens of minutes on 2 cores)
image: setup-containers
	scripts/setup.sh builder
	# HTTPS from inside the build (crates.io, npm, rustup) needs the host's CA bundle.
	podman build --format docker -v /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro \
	  -t localhost/stopgo:latest .

## image-prebuilt: the runtime image from `make build`'s binaries and site (about a minute);
## BIN_DIR=target/debug takes the debug binaries and the site as they are (make test built them)
image-prebuilt: setup-containers $(if $(filter target/release,$(BIN_DIR)),build)
	podman build --format docker --target prebuilt --build-arg BIN_DIR=$(BIN_DIR) -t localhost/stopgo:latest .

## image-replicas: the PostgreSQL and haproxy images of the replicas profile (Debian packages)
image-replicas: setup-containers
	podman build --format docker --target postgres -t localhost/stopgo-postgres:latest .
	podman build --format docker --target balancer -t localhost/stopgo-balancer:latest .

## compose-up: the default stack on 127.0.0.1:8080 (PROFILE=chain: the A2A chain on :8081/:8082;
## PROFILE=replicas: two replicas on PostgreSQL behind haproxy on :8083)
compose-up: setup-containers
	podman image exists localhost/stopgo:latest || $(MAKE) image-prebuilt
	$(if $(filter replicas,$(PROFILE)),podman image exists localhost/stopgo-postgres:latest && podman image exists localhost/stopgo-balancer:latest || $(MAKE) image-replicas)
	podman-compose $(if $(PROFILE),--profile $(PROFILE)) up -d $(if $(filter chain,$(PROFILE)),agent-a agent-b)$(if $(filter replicas,$(PROFILE)),postgres mcp-resources agent-1 agent-2 balancer)

## compose-down: stops every service of every profile (volumes are kept)
compose-down:
	podman-compose --profile chain --profile replicas down

## compose-test: the chain and the default stack in containers, end to end
compose-test: image-prebuilt image-replicas
	scripts/compose-test.sh

## lint: formatting, the module graph (no import cycle in any crate, the agent's layers), the names in
## docs/architecture.md (scripts/check-docs.py), clippy;
## clippy checks the release profile, so this also proves the release build compiles
lint:
	scripts/check-layers.py
	scripts/check-docs.py
	cargo fmt --all --check
	cargo clippy --release --workspace --exclude frontend --all-targets --features server/a2a-tck -- -D warnings
	cargo clippy -p frontend -p app --target wasm32-unknown-unknown -- -D warnings

## unit: every Rust test on a throwaway PostgreSQL cluster (scripts/pg.sh) for the store suite and the
## replica tests, then the REST and A2A suites again with every agent on PostgreSQL
PG_SUITES = api_conversations|ag_ui|live_api|agent_flow|a2a_chain|a2a_rest|a2a_push|a2a_roles|a2a_conformance|a2a_interop|a2a_discovery|approval_rules|notifications|mcp_questions|slack_interactive|grants|a2a_signing|shutdown|receipts
# One feature set for the tests and the binaries they start (the MCP servers
# included): `--tests` takes in the dev-dependencies' features, so the
# native tree is compiled once and nextest then finds it all fresh.
RUST_TESTS = --workspace --exclude frontend --features server/a2a-tck
# Without incremental compilation: a test run builds each test binary once,
# and incremental caches of test binaries took tens of GB of disk.
unit: export CARGO_INCREMENTAL = 0
unit:
	PGDIR=$$(mktemp -d /tmp/stopgo-pg.XXXXXX); trap 'scripts/pg.sh stop "$$PGDIR"' EXIT; \
	export STOPGO_TEST_DATABASE_URL=$$(scripts/pg.sh start "$$PGDIR"); \
	cargo build $(RUST_TESTS) --lib --bins --tests && \
	cargo nextest run $(RUST_TESTS) --no-fail-fast && \
	STOPGO_TEST_BACKEND=postgres cargo nextest run $(RUST_TESTS) --no-fail-fast \
	  -E 'binary(it) & test(/^($(PG_SUITES))::/)'

e2e:
	cd end2end && STOPGO_BIN_DIR=$(CURDIR)/$(BIN_DIR) npx playwright test

## bench: print the benchmark table (release build; takes a few minutes)
bench: setup-test build
	PGDIR=$$(mktemp -d /tmp/stopgo-pg.XXXXXX); trap 'scripts/pg.sh stop "$$PGDIR"' EXIT; \
	export STOPGO_TEST_DATABASE_URL=$$(scripts/pg.sh start "$$PGDIR"); \
	export STOPGO_TEST_DATABASE_SOCKET_URL=$$(cat "$$PGDIR/socket_url"); \
	cargo bench -p server --bench agent

## fuzz: mcp-filesystem's resolver, tools and patch parser for FUZZ_SECONDS each (default 60)
fuzz:
	cargo test --release -p mcp-filesystem --test it -- fuzz_filesystem:: --ignored --nocapture --test-threads 1

clean:
	cargo clean
	rm -rf end2end/test-results end2end/playwright-report
