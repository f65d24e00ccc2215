# Stop & Go agent: the agent, the built-in MCP servers and the web UI on a
# slim Debian runtime, as a non-root user, data on a volume.
#
#   podman build -t stopgo .                     # the full build (tens of minutes on 2 cores)
#   podman build --target prebuilt -t stopgo .   # from `make build`'s output on the host (a minute)
#   podman run -p 8080:8080 -e GEMINI_API_KEY stopgo
#   podman run -p 8080:8080 stopgo --config /app/config/demo.yaml   # no key: the scripted demo
#
# `make image` and `make image-prebuilt` run these (README, "Containers").
# Versions follow TOOLCHAIN.md: cargo-leptos 0.3.10 (0.3.11 needs a newer
# rustc), wasm-bindgen-cli equal to the crate pinned in Cargo.toml, and
# wasm-opt from npm's binaryen (Debian's is too old and breaks hydration).

FROM rust:1.95-bookworm AS build
# npm uses its own CA list unless told; this adds the system's (which a
# proxy's CA may have to be in: `make image` mounts the host's bundle).
ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
RUN apt-get update \
 && apt-get install -y --no-install-recommends nodejs npm \
 && rm -rf /var/lib/apt/lists/*
RUN rustup target add wasm32-unknown-unknown \
 && cargo install cargo-leptos --version 0.3.10 --locked --features no_downloads --debug \
 && cargo install wasm-bindgen-cli --version 0.2.130
RUN mkdir -p /tools && cd /tools && npm install --no-audit --no-fund binaryen@132.0.0
ENV PATH=/tools/node_modules/.bin:$PATH
WORKDIR /src
COPY . .
RUN cargo leptos build --release --precompress \
 && cargo build --release -p mcp-filesystem -p mcp-resources

# What both images share: no compilers, no package manager caches, a
# non-root user, the data volume, the health check. config/agent.yaml and
# demo.yaml start `target/release/mcp-resources` relative to the working
# directory, as `make run` does: the links make that path work here.
FROM debian:bookworm-slim AS runtime
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates tini \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb \
 && useradd --system --uid 10001 --create-home --home-dir /app stopgo \
 && mkdir -p /app/data /app/target/release \
 && chown stopgo /app/data \
 && ln -s /usr/local/bin/mcp-resources /app/target/release/mcp-resources \
 && ln -s /usr/local/bin/mcp-filesystem /app/target/release/mcp-filesystem
WORKDIR /app
ENV LEPTOS_SITE_ROOT=/app/site \
    RUST_LOG=info
VOLUME ["/app/data"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s \
  CMD ["/bin/bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/8080 && printf 'GET /health HTTP/1.0\\r\\n\\r\\n' >&3 && grep -q '\"ok\"' <&3"]
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/agent"]
CMD ["--config", "/app/config/agent.yaml"]

# `--target postgres` and `--target balancer`: the database and the load
# balancer of the `replicas` compose profile, from Debian's packages (no
# registry is reachable here; `make image-replicas` builds both).
FROM debian:bookworm-slim AS postgres
RUN apt-get update \
 && apt-get install -y --no-install-recommends postgresql-15 tini \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb \
 && mkdir -p /var/lib/postgresql/data \
 && chown postgres: /var/lib/postgresql/data \
 && chmod 700 /var/lib/postgresql/data
COPY scripts/postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint.sh
ENV PGDATA=/var/lib/postgresql/data
VOLUME ["/var/lib/postgresql/data"]
EXPOSE 5432
USER postgres
HEALTHCHECK --interval=5s --timeout=3s CMD ["/usr/bin/pg_isready", "-h", "127.0.0.1", "-U", "stopgo"]
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/postgres-entrypoint.sh"]

FROM debian:bookworm-slim AS balancer
RUN apt-get update \
 && apt-get install -y --no-install-recommends haproxy \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
COPY config/haproxy.cfg /etc/haproxy/haproxy.cfg
EXPOSE 8080
USER haproxy
ENTRYPOINT ["/usr/sbin/haproxy", "-W", "-db", "-f", "/etc/haproxy/haproxy.cfg"]

# `--target prebuilt`: the binaries and site `make build` left on the host.
FROM runtime AS prebuilt
# `make test` builds this from its debug binaries (--build-arg
# BIN_DIR=target/debug) with the release site: the image is what it tests.
ARG BIN_DIR=target/release
COPY ${BIN_DIR}/agent ${BIN_DIR}/mcp-resources ${BIN_DIR}/mcp-filesystem /usr/local/bin/
COPY target/site /app/site
COPY config /app/config
# agent.yaml and demo.yaml listen on this machine only (`make run`); in a
# container that is the container itself, so here they listen on every
# address, and the UI's banner says that nobody signs in.
RUN sed -i 's/^host: 127\.0\.0\.1 .*$/host: 0.0.0.0/' /app/config/agent.yaml /app/config/demo.yaml
USER stopgo

# The default: from the build stage above.
FROM runtime
COPY --from=build /src/target/release/agent /src/target/release/mcp-resources /src/target/release/mcp-filesystem /usr/local/bin/
COPY --from=build /src/target/site /app/site
COPY config /app/config
RUN sed -i 's/^host: 127\.0\.0\.1 .*$/host: 0.0.0.0/' /app/config/agent.yaml /app/config/demo.yaml
USER stopgo
