//! Top-level tool hints from Streamable HTTP servers.
//!
//! For stdio servers [`super::hints`] rewrites `tools/list` on the pipe
//! before `rmcp` decodes it. Over HTTP `rmcp` decodes inside its transport,
//! and its `Tool` type drops unknown fields, so a seed-style
//! `"destructiveHint": true` on the tool itself would be lost; with
//! `unannotated_tools: allow` that tool would then run without approval.
//! So after each listing we read `tools/list` once more ourselves, on a
//! short-lived session of our own, and keep the top-level hints. A server
//! that sends none costs three small requests per listing; a failure here is
//! logged and changes nothing (the `rmcp` listing stands).

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::time::Duration;

/// Longest the whole probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);
/// Pages we follow at most (a server that loops on cursors stops here).
const MAX_PAGES: usize = 100;

/// Tool name → its top-level hints (`{"destructiveHint": true, …}`).
pub(crate) type TopLevelHints = HashMap<String, Map<String, Value>>;

/// Lists the tools of the server at `url` and returns the top-level hints
/// of those that have any.
pub(crate) async fn probe(
    url: &str,
    headers: &HashMap<HeaderName, HeaderValue>,
) -> Result<TopLevelHints, String> {
    tokio::time::timeout(PROBE_TIMEOUT, probe_inner(url, headers))
        .await
        .map_err(|_| "no answer in time".to_string())?
}

async fn probe_inner(
    url: &str,
    headers: &HashMap<HeaderName, HeaderValue>,
) -> Result<TopLevelHints, String> {
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        .build()
        .map_err(|e| e.to_string())?;
    let mut base = HeaderMap::new();
    for (k, v) in headers {
        base.insert(k.clone(), v.clone());
    }
    base.insert(
        reqwest::header::ACCEPT,
        HeaderValue::from_static("application/json, text/event-stream"),
    );
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "stop-and-go-agent-hints", "version": env!("CARGO_PKG_VERSION")}
    }});
    let resp = client
        .post(url)
        .headers(base.clone())
        .json(&init)
        .send()
        .await
        .map_err(|e| e.without_url().to_string())?;
    let session = resp.headers().get("mcp-session-id").cloned();
    let init_result = read_result(resp, 1).await?;
    let version = init_result
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or("2025-06-18")
        .to_string();
    if let Some(s) = &session {
        base.insert("mcp-session-id", s.clone());
    }
    if let Ok(v) = HeaderValue::from_str(&version) {
        base.insert("mcp-protocol-version", v);
    }
    // The notification's answer (202) carries nothing we need.
    let _ = client
        .post(url)
        .headers(base.clone())
        .json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .send()
        .await;

    let mut hints = TopLevelHints::new();
    let mut cursor: Option<String> = None;
    for page in 0..MAX_PAGES {
        let id = 2 + page as u64;
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let resp = client
            .post(url)
            .headers(base.clone())
            .json(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params}))
            .send()
            .await
            .map_err(|e| e.without_url().to_string())?;
        let result = read_result(resp, id).await?;
        collect(&result, &mut hints);
        cursor = result
            .get("nextCursor")
            .and_then(Value::as_str)
            .map(str::to_string);
        if cursor.is_none() {
            break;
        }
    }
    if session.is_some() {
        let _ = client.delete(url).headers(base).send().await;
    }
    Ok(hints)
}

/// The `result` of the JSON-RPC answer with `id`, from a JSON or an SSE body.
async fn read_result(resp: reqwest::Response, id: u64) -> Result<Value, String> {
    let status = resp.status();
    if !status.is_success() {
        return Err(format!("HTTP {status}"));
    }
    let text = resp.text().await.map_err(|e| e.without_url().to_string())?;
    let candidates: Vec<Value> = match serde_json::from_str::<Value>(&text) {
        Ok(v) => vec![v],
        Err(_) => text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect(),
    };
    let answer = candidates
        .into_iter()
        .find(|m| m.get("id").and_then(Value::as_u64) == Some(id))
        .ok_or_else(|| "no JSON-RPC answer in the response".to_string())?;
    if let Some(e) = answer.get("error") {
        return Err(format!("JSON-RPC error {e}"));
    }
    answer
        .get("result")
        .cloned()
        .ok_or_else(|| "JSON-RPC answer without a result".to_string())
}

/// Adds the top-level hints of each tool in a `tools/list` result.
fn collect(result: &Value, into: &mut TopLevelHints) {
    let Some(tools) = result.get("tools").and_then(Value::as_array) else {
        return;
    };
    for tool in tools.iter().filter_map(Value::as_object) {
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            continue;
        };
        let found: Map<String, Value> = super::hints::HINTS
            .iter()
            .filter_map(|h| tool.get(*h).map(|v| (h.to_string(), v.clone())))
            .filter(|(_, v)| v.is_boolean())
            .collect();
        if !found.is_empty() {
            into.insert(name.to_string(), found);
        }
    }
}

/// Fills the hints `tool.annotations` does not state from `top`;
/// `annotations` wins where both speak.
pub(crate) fn apply(tool: &mut rmcp::model::Tool, top: Option<&Map<String, Value>>) {
    let Some(top) = top else { return };
    let a = tool.annotations.get_or_insert_with(Default::default);
    let get = |k: &str| top.get(k).and_then(Value::as_bool);
    a.read_only_hint = a.read_only_hint.or(get("readOnlyHint"));
    a.destructive_hint = a.destructive_hint.or(get("destructiveHint"));
    a.idempotent_hint = a.idempotent_hint.or(get("idempotentHint"));
    a.open_world_hint = a.open_world_hint.or(get("openWorldHint"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collects_only_boolean_top_level_hints() {
        let mut h = TopLevelHints::new();
        collect(
            &json!({"tools": [
                {"name": "a", "destructiveHint": true, "inputSchema": {}},
                {"name": "b", "inputSchema": {}},
                {"name": "c", "readOnlyHint": "yes", "inputSchema": {}}
            ]}),
            &mut h,
        );
        assert_eq!(h.len(), 1);
        assert_eq!(h["a"]["destructiveHint"], true);
    }

    #[test]
    fn annotations_win_over_top_level_hints() {
        let mut t: rmcp::model::Tool = serde_json::from_value(json!({
            "name": "t", "inputSchema": {"type": "object"},
            "annotations": {"destructiveHint": false}
        }))
        .unwrap();
        let top = json!({"destructiveHint": true, "readOnlyHint": false});
        apply(&mut t, top.as_object());
        let a = t.annotations.unwrap();
        assert_eq!(a.destructive_hint, Some(false));
        assert_eq!(a.read_only_hint, Some(false));
    }
}
