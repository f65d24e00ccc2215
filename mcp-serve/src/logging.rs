//! Logging for the built-in MCP servers: to stderr (their stdout is the
//! protocol channel in stdio mode), no colours, `RUST_LOG` or `info`.

/// Installs the stderr subscriber.
pub fn to_stderr() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
}
