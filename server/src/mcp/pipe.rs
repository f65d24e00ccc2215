//! The two byte streams of a stdio MCP server, and the pipe its answers
//! pass through before `rmcp` reads them.
//!
//! A stdio server is a child process started per connection: its stderr
//! is its log, its stdout is read line by line through the result limit
//! ([`super::frames`]) and the lifting of top-level tool hints
//! ([`super::hints`]). The same pipe serves an in-process server in the
//! tests (one end of a `tokio::io::duplex`), so the client core
//! ([`super::server`]) is tested over exactly the path a child's answers
//! take, without a process.

use crate::config::McpServerConfig;
use crate::domain::tasks::Tasks;
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, DuplexStream};

/// Where a stdio server's streams come from.
#[derive(Clone)]
pub(crate) enum Launch {
    /// A child process per connection (`command`, `args`, `env`).
    Process,
    /// An in-process server: each connection dials a fresh one and talks
    /// to it over the returned end of a duplex.
    #[cfg(test)]
    InProcess(std::sync::Arc<dyn Fn() -> DuplexStream + Send + Sync>),
}

/// What `rmcp` talks to: the server's answers (after the pipe) and the
/// server's input.
pub(crate) struct Streams {
    pub(crate) answers: DuplexStream,
    pub(crate) input: Box<dyn AsyncWrite + Send + Unpin>,
}

impl Launch {
    /// Starts the server for one connection. The error names the command.
    pub(crate) fn start(&self, config: &McpServerConfig, tasks: &Tasks) -> Result<Streams, String> {
        match self {
            Launch::Process => start_child(config, tasks),
            #[cfg(test)]
            Launch::InProcess(dial) => {
                let (output, input) = tokio::io::split(dial());
                Ok(Streams {
                    answers: pipe(output, (), &config.name, tasks),
                    input: Box::new(input),
                })
            }
        }
    }
}

/// Starts `command` with piped streams; its stderr goes to the log.
fn start_child(config: &McpServerConfig, tasks: &Tasks) -> Result<Streams, String> {
    let command = config.command.clone().unwrap_or_default();
    let mut cmd = tokio::process::Command::new(&command);
    cmd.args(&config.args)
        .envs(&config.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start `{command}`: {e}"))?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(format!("`{command}` started without its standard streams"));
    };
    let server = config.name.clone();
    tasks.spawn_background("mcp server log", async move {
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::debug!(target: "mcp_server", server = %server, "{line}");
        }
    });
    Ok(Streams {
        answers: pipe(stdout, child, &config.name, tasks),
        input: Box::new(stdin),
    })
}

/// The server's answers reach rmcp through a pipe that rewrites
/// seed-style top-level tool hints (see `hints`). This task owns `guard`
/// (the child): when the pipe or the server's output closes, the task
/// ends and the child is killed if it still runs. Each line is also
/// fitted to the result limit (see `frames`): a result over it reaches
/// rmcp as an error for its request.
fn pipe<R, G>(output: R, guard: G, server: &str, tasks: &Tasks) -> DuplexStream
where
    R: AsyncRead + Unpin + Send + 'static,
    G: Send + 'static,
{
    let (ours, mut theirs) = tokio::io::duplex(64 * 1024);
    let server = server.to_string();
    tasks.spawn_background("mcp server pipe", async move {
        let _guard = guard;
        let mut out = tokio::io::BufReader::with_capacity(256 * 1024, output);
        loop {
            let line = match super::frames::read_line(&mut out).await {
                Ok(Some(l)) => l,
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!(server = %server, "closing the MCP server's connection: {e}");
                    break;
                }
            };
            let Some(line) = super::frames::fit(line) else {
                tracing::warn!(server = %server, "dropped a message too large to read that answers no call");
                continue;
            };
            let fixed = match std::str::from_utf8(&line) {
                Ok(text) => super::hints::lift_top_level_hints(text)
                    .into_owned()
                    .into_bytes(),
                Err(_) => line,
            };
            if theirs.write_all(&fixed).await.is_err() || theirs.write_all(b"\n").await.is_err() {
                break;
            }
        }
    });
    ours
}
