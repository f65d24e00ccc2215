//! The agent as an MCP server (CLIENTS.md §4), `BENCH_ONLY=mcp`, each
//! beside its REST twin on one agent (scripted model, `mcp-resources`
//! over stdio), alternating so both pay the same:
//!
//! - a call that needs no approval: `tools/call` at 2026-07-28 against
//!   `POST /conversations` with the same message;
//! - the approval round trip: the MRTR retry (`inputResponses` with the
//!   sealed `requestState`) until the tool's result is back, against
//!   `POST /approvals/:uuid` until its answer is back;
//! - AG-UI: from the interrupt's `RUN_FINISHED` (the end of the first
//!   run's stream) to the resumed run's first tool event, against the same
//!   REST approval round trip.

use super::{Agent, pct, post_json as rest};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// A 2026-07-28 `tools/call` of `tool`, as a client with form elicitation
/// sends it; the JSON-RPC result.
async fn mcp_call(http: &reqwest::Client, base: &str, tool: &str, params: Value) -> Value {
    let mut params = params;
    params["name"] = json!(tool);
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    });
    let body: Value = http
        .post(format!("{base}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    body["result"].clone()
}

/// The agent's tool name, as `tools/list` says.
async fn tool_name(http: &reqwest::Client, base: &str) -> String {
    let body: Value = http
        .post(format!("{base}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/list")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    body["result"]["tools"][0]["name"]
        .as_str()
        .expect("the agent lists its tool")
        .to_string()
}

/// One `POST /ag-ui` run, read to the end of its stream: the events, and
/// when the first tool event arrived.
async fn ag_ui_run(
    http: &reqwest::Client,
    base: &str,
    body: Value,
) -> (Vec<Value>, Option<Instant>) {
    let mut resp = http
        .post(format!("{base}/ag-ui"))
        .header("accept", "text/event-stream")
        .json(&body)
        .send()
        .await
        .unwrap();
    let (mut text, mut first_tool) = (String::new(), None);
    while let Some(chunk) = resp.chunk().await.unwrap() {
        text.push_str(&String::from_utf8_lossy(&chunk));
        if first_tool.is_none() && text.contains("\"type\":\"TOOL_CALL_") {
            first_tool = Some(Instant::now());
        }
    }
    let events = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect();
    (events, first_tool)
}

/// AG-UI's resume beside REST's decide, `n` of each, alternating.
async fn ag_ui_row(http: &reqwest::Client, base: &str, n: usize) -> (String, String, String) {
    let (mut by_ag_ui, mut by_rest) = (Vec::new(), Vec::new());
    for i in 0..n + 5 {
        let thread = format!("bench-{i}-{}", std::process::id());
        let messages = json!([{"id": "m1", "role": "user", "content": format!("add g{i} {i}")}]);
        let first = json!({"threadId": thread, "runId": "r1", "messages": messages});
        let (events, _) = ag_ui_run(http, base, first).await;
        let finished = events.last().expect("RUN_FINISHED");
        let t = Instant::now();
        let uuid = finished["outcome"]["interrupts"][0]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("an interrupt: {finished}"))
            .to_string();
        let resume = json!({"threadId": thread, "runId": "r2", "messages": messages,
            "resume": [{"interruptId": uuid, "status": "resolved", "payload": {"approved": true}}]});
        let (events, first_tool) = ag_ui_run(http, base, resume).await;
        let a = first_tool.unwrap_or_else(|| panic!("a tool event: {events:?}")) - t;
        let r = rest(
            http,
            format!("{base}/conversations"),
            json!({"message": format!("add h{i} {i}")}),
        )
        .await;
        let uuid = r["result"]["approval"]["uuid"]
            .as_str()
            .expect("an approval")
            .to_string();
        let t = Instant::now();
        let d = rest(
            http,
            format!("{base}/approvals/{uuid}"),
            json!({"approved": true}),
        )
        .await;
        let q = t.elapsed();
        assert!(d["result"]["response"].is_string(), "{d}");
        if i >= 5 {
            by_ag_ui.push(a);
            by_rest.push(q);
        }
    }
    ratio_row(
        "AG-UI interrupt's RUN_FINISHED -> resumed run's first tool event vs REST decide, p50",
        &mut by_ag_ui,
        &mut by_rest,
        "<= 1.2x",
    )
}

fn ratio_row(
    what: &str,
    mcp: &mut [Duration],
    rest: &mut [Duration],
    target: &str,
) -> (String, String, String) {
    mcp.sort();
    rest.sort();
    let (m, r) = (pct(mcp, 0.5), pct(rest, 0.5));
    (
        format!("{what} ({} each)", mcp.len()),
        format!("{m:.2} vs {r:.2} ms ({:.2}x)", m / r),
        target.into(),
    )
}

pub(crate) async fn rows(
    http: &reqwest::Client,
    rows: &mut Vec<(String, String, String)>,
    quick: bool,
) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let rules = root.join("testdata/e2e-rules.yaml");
    let agent = Agent::start_model(
        &format!("scripted:{}", rules.display()),
        "http://127.0.0.1:9",
        true,
        "",
        &[],
    );
    let base = agent.base.clone();
    let tool = tool_name(http, &base).await;
    let n = if quick { 30 } else { 200 };
    let (mut by_mcp, mut by_rest) = (Vec::new(), Vec::new());
    for i in 0..n + 10 {
        let t = Instant::now();
        let r = mcp_call(
            http,
            &base,
            &tool,
            json!({"arguments": {"message": "list resources"}}),
        )
        .await;
        let m = t.elapsed();
        assert_eq!(r["isError"], json!(false), "{r}");
        let t = Instant::now();
        let r = rest(
            http,
            format!("{base}/conversations"),
            json!({"message": "list resources"}),
        )
        .await;
        let q = t.elapsed();
        assert!(r["result"]["response"].is_string(), "{r}");
        if i >= 10 {
            by_mcp.push(m);
            by_rest.push(q);
        }
    }
    rows.push(ratio_row(
        "MCP tools/call, no approval, vs REST turn, p50",
        &mut by_mcp,
        &mut by_rest,
        "<= 1.2x",
    ));

    let (mut by_mcp, mut by_rest) = (Vec::new(), Vec::new());
    for i in 0..n + 5 {
        let round = mcp_call(
            http,
            &base,
            &tool,
            json!({"arguments": {"message": format!("add m{i} {i}")}}),
        )
        .await;
        assert_eq!(round["resultType"], json!("input_required"), "{round}");
        let key = round["inputRequests"]
            .as_object()
            .and_then(|m| m.keys().next().cloned())
            .expect("one input request");
        let params = json!({
            "arguments": {"message": format!("add m{i} {i}")},
            "inputResponses": {key: {"action": "accept", "content": {"decision": "approve"}}},
            "requestState": round["requestState"],
        });
        let t = Instant::now();
        let done = mcp_call(http, &base, &tool, params).await;
        let m = t.elapsed();
        assert_eq!(done["resultType"], json!("complete"), "{done}");
        let r = rest(
            http,
            format!("{base}/conversations"),
            json!({"message": format!("add r{i} {i}")}),
        )
        .await;
        let uuid = r["result"]["approval"]["uuid"]
            .as_str()
            .expect("an approval")
            .to_string();
        let t = Instant::now();
        let d = rest(
            http,
            format!("{base}/approvals/{uuid}"),
            json!({"approved": true}),
        )
        .await;
        let q = t.elapsed();
        assert!(d["result"]["response"].is_string(), "{d}");
        if i >= 5 {
            by_mcp.push(m);
            by_rest.push(q);
        }
    }
    rows.push(ratio_row(
        "MCP approval round trip (MRTR retry) vs REST decide, p50",
        &mut by_mcp,
        &mut by_rest,
        "<= 1.5x",
    ));
    rows.push(ag_ui_row(http, &base, n).await);
}
