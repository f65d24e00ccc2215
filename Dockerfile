# Stop & Go agent: a release build of the server, the WebAssembly UI and the
# built-in MCP servers, on a slim Debian runtime.
#
#   docker build -t stopgo .
#   docker run -p 8080:8080 -e GEMINI_API_KEY stopgo
#   docker run -p 8080:8080 stopgo --config /app/config/demo.yaml   # no key: the scripted demo
#
# Versions follow TOOLCHAIN.md: cargo-leptos 0.3.10 (0.3.11 needs a newer
# rustc), wasm-bindgen-cli equal to the crate pinned in Cargo.toml, and
# wasm-opt from npm's binaryen (Debian's is too old and breaks hydration).

FROM rust:1.95-bookworm AS build
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
 && cargo build --release -p server --bins

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates tini \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --create-home --home-dir /app stopgo
WORKDIR /app
COPY --from=build /src/target/release/agent /usr/local/bin/agent
COPY --from=build /src/target/release/mcp-resources /usr/local/bin/mcp-resources
# config/agent.yaml and demo.yaml start `target/release/mcp-resources`
# (relative to the working directory), as `make run` does.
RUN mkdir -p /app/target/release && ln -s /usr/local/bin/mcp-resources /app/target/release/mcp-resources
COPY --from=build /src/target/site /app/site
COPY --from=build /src/config /app/config
ENV LEPTOS_SITE_ROOT=/app/site \
    RUST_LOG=info
RUN mkdir -p /app/data && chown stopgo /app/data
USER stopgo
VOLUME ["/app/data"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s \
  CMD ["/bin/bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/8080 && printf 'GET /health HTTP/1.0\\r\\n\\r\\n' >&3 && grep -q '\"ok\"' <&3"]
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/agent"]
CMD ["--config", "/app/config/agent.yaml"]
