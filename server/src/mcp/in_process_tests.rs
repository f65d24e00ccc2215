//! The MCP client core ([`super::server::McpServer`]) against an `rmcp`
//! server handler on the other end of a `tokio::io::duplex`, as `rmcp`'s
//! own tests do: the handshake, the tool list with its annotations, calls,
//! a tool's errors, a server that dies mid-call, the result limit and the
//! timeouts, in milliseconds and without a process. The answers pass
//! through the same pipe a child's stdout does ([`super::pipe`]); the
//! process itself is tested in `tests/it` (`mcp_*`, `third_party_mcp`).

use super::server::McpServer;
use crate::domain::tools::{CallContext, ToolError};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A call's limit in these tests: long enough for a loaded machine to
/// answer a quick tool, short enough to wait for.
const CALL: Duration = Duration::from_millis(1500);
const CONNECT: Duration = Duration::from_secs(5);

/// The in-process server: a few tools, each showing one behaviour.
#[derive(Clone)]
struct Fixture {
    /// Ends this server's session, as a crash would.
    die: CancellationToken,
    /// Calls received, over every session.
    calls: Arc<AtomicUsize>,
}

fn schema() -> Arc<serde_json::Map<String, Value>> {
    match json!({"type": "object", "properties": {"text": {"type": "string"}}}) {
        Value::Object(m) => Arc::new(m),
        _ => Arc::default(),
    }
}

impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // Two pages: the client follows `nextCursor`.
        if request.and_then(|r| r.cursor).is_some() {
            return Ok(ListToolsResult::with_all_items(vec![Tool::new(
                "unannotated",
                "no hints",
                schema(),
            )]));
        }
        let mut first = ListToolsResult::with_all_items(vec![
            Tool::new("echo", "says it back", schema())
                .annotate(ToolAnnotations::new().read_only(true)),
            Tool::new("delete", "removes", schema())
                .annotate(ToolAnnotations::new().destructive(true)),
            Tool::new("append", "adds", schema())
                .annotate(ToolAnnotations::new().read_only(false).destructive(false)),
        ]);
        first.next_cursor = Some("page-2".into());
        Ok(first)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let text = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("text"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let result = match request.name.as_ref() {
            "echo" => CallToolResult::success(vec![ContentBlock::text(text)]),
            "refuse" => CallToolResult::error(vec![ContentBlock::text("no such file")]),
            "invalid" => return Err(ErrorData::invalid_params("`text` is required", None)),
            "big" => CallToolResult::success(vec![ContentBlock::text("x".repeat(9_000_000))]),
            "slow" => {
                tokio::time::sleep(Duration::from_secs(30)).await;
                CallToolResult::success(vec![ContentBlock::text("late")])
            }
            "crash" => {
                self.die.cancel();
                std::future::pending::<()>().await;
                CallToolResult::success(vec![ContentBlock::text("never")])
            }
            other => {
                return Err(ErrorData::invalid_params(
                    format!("unknown tool `{other}`"),
                    None,
                ));
            }
        };
        Ok(result.into())
    }
}

/// A client of a fresh in-process [`Fixture`] per connection; the count
/// of calls the servers received.
fn client() -> (Arc<McpServer>, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let dial = Arc::new(move || {
        let (ours, mut theirs) = tokio::io::duplex(64 * 1024);
        let (mut relay, served) = tokio::io::duplex(64 * 1024);
        let fixture = Fixture {
            die: CancellationToken::new(),
            calls: counted.clone(),
        };
        let die = fixture.die.clone();
        tokio::spawn(async move {
            if let Ok(running) = fixture.serve(served).await {
                let _ = running.waiting().await;
            }
        });
        // The client's end closes when the server dies, as a child's
        // stdout does when it is killed.
        tokio::spawn(async move {
            tokio::select! {
                _ = tokio::io::copy_bidirectional(&mut theirs, &mut relay) => {}
                _ = die.cancelled() => {}
            }
        });
        ours
    });
    let (server, _listed) = McpServer::in_process(config(), dial, CALL, CONNECT);
    (server, calls)
}

fn config() -> crate::config::McpServerConfig {
    serde_json::from_value(json!({"name": "inproc", "command": "in-process"}))
        .unwrap_or_else(|e| panic!("the test config reads: {e}"))
}

async fn call(server: &McpServer, tool: &str, args: Value) -> Result<(String, bool), ToolError> {
    let out = server.call(tool, args, &CallContext::default()).await?;
    Ok((out.text, out.is_error))
}

#[tokio::test]
async fn the_handshake_lists_every_page_with_its_annotations() {
    let (server, _) = client();
    server.connect().await.unwrap();
    assert_eq!(server.problem(), None);
    assert_eq!(server.revision().as_deref(), Some("2026-07-28"));
    let tools = server.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["echo", "delete", "append", "unannotated"]);
    let by = |n: &str| tools.iter().find(|t| t.name == n).unwrap();
    assert!(
        !by("echo").destructive,
        "readOnlyHint: true is not destructive"
    );
    assert!(by("delete").destructive);
    assert!(
        !by("append").destructive,
        "destructiveHint: false is followed"
    );
    assert!(
        by("unannotated").destructive,
        "no hints: the config's default (approve)"
    );
    assert!(by("echo").hinted && by("append").hinted && !by("unannotated").hinted);
    assert_eq!(
        by("echo").annotations.as_ref().unwrap()["readOnlyHint"],
        true
    );
    assert!(tools.iter().all(|t| t.available && t.server == "inproc"));
    assert!(!by("echo").digest.is_empty());
}

#[tokio::test]
async fn a_call_connects_by_itself_and_answers() {
    let (server, calls) = client();
    let (text, is_error) = call(&server, "echo", json!({"text": "hello"}))
        .await
        .unwrap();
    assert_eq!((text.as_str(), is_error), ("hello", false));
    // Arguments that are not an object never reach the server.
    let (text, is_error) = call(&server, "echo", json!([1])).await.unwrap();
    assert!(is_error && text.contains("must be a JSON object"), "{text}");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_tool_error_reaches_the_model_either_way() {
    let (server, _) = client();
    // `isError: true` in the result.
    let (text, is_error) = call(&server, "refuse", json!({})).await.unwrap();
    assert_eq!((text.as_str(), is_error), ("no such file", true));
    // A JSON-RPC error: the code and message, as an error result.
    let (text, is_error) = call(&server, "invalid", json!({})).await.unwrap();
    assert!(is_error);
    assert_eq!(
        text,
        "the tool answered with an error (-32602): `text` is required"
    );
    let (text, is_error) = call(&server, "nope", json!({})).await.unwrap();
    assert!(is_error && text.contains("unknown tool `nope`"), "{text}");
    // The connection stays up through all of it.
    assert_eq!(server.problem(), None);
}

#[tokio::test]
async fn a_server_that_dies_mid_call_fails_the_call_and_the_next_starts_it_again() {
    let (server, calls) = client();
    server.connect().await.unwrap();
    let started = std::time::Instant::now();
    let err = call(&server, "crash", json!({})).await.unwrap_err();
    assert!(
        started.elapsed() < CALL,
        "the call fails at once, not at its timeout"
    );
    match &err {
        ToolError::Unavailable { server, reason } => {
            assert_eq!(server, "inproc");
            assert!(reason.contains("stopped during the call"), "{reason}");
        }
        other => panic!("expected unavailable, got {other:?}"),
    }
    // Never retried by itself: the server saw the call once.
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let (text, _) = call(&server, "echo", json!({"text": "again"}))
        .await
        .unwrap();
    assert_eq!(text, "again");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_result_over_the_limit_fails_and_the_server_stays_connected() {
    let (server, _) = client();
    let err = call(&server, "big", json!({})).await.unwrap_err();
    match &err {
        ToolError::ResultTooLarge { tool, message } => {
            assert_eq!(tool, "big");
            assert_eq!(message, "the tool's result is 9 MB, over the 8 MB limit");
        }
        other => panic!("expected too large, got {other:?}"),
    }
    let (text, _) = call(&server, "echo", json!({"text": "still here"}))
        .await
        .unwrap();
    assert_eq!(text, "still here");
}

#[tokio::test]
async fn a_slow_tool_times_out() {
    let (server, _) = client();
    server.connect().await.unwrap();
    let started = std::time::Instant::now();
    let err = call(&server, "slow", json!({})).await.unwrap_err();
    assert!(started.elapsed() >= CALL && started.elapsed() < CALL * 4);
    match err {
        ToolError::Timeout { tool, timeout } => {
            assert_eq!((tool.as_str(), timeout), ("slow", CALL));
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    let (text, _) = call(&server, "echo", json!({"text": "next"}))
        .await
        .unwrap();
    assert_eq!(text, "next");
}

#[tokio::test]
async fn a_server_that_never_answers_the_handshake_is_unavailable_in_time() {
    // The other end is held open but nobody reads or answers it.
    let held = Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = held.clone();
    let dial = Arc::new(move || {
        let (ours, theirs) = tokio::io::duplex(64 * 1024);
        keep.lock().unwrap_or_else(|p| p.into_inner()).push(theirs);
        ours
    });
    let connect = Duration::from_millis(300);
    let (server, _) = McpServer::in_process(config(), dial, CALL, connect);
    let started = std::time::Instant::now();
    let err = call(&server, "echo", json!({})).await.unwrap_err();
    assert!(started.elapsed() < CALL);
    match err {
        ToolError::Unavailable { reason, .. } => {
            assert!(
                reason.contains("no answer to the MCP handshake"),
                "{reason}"
            )
        }
        other => panic!("expected unavailable, got {other:?}"),
    }
    assert!(server.problem().is_some());
    drop(held);
}
