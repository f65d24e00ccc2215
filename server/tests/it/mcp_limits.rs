//! A tool's result over the size limit (issue 40 item 5): it fails at
//! once with "the tool's result is N MB, over the 8 MB limit", over stdio
//! and over Streamable HTTP alike, instead of waiting out the call's 30 s
//! timeout (the test before the fix: 30 s, then a timeout); a large result within the limit still arrives whole, even sent
//! twice (as text and as structured content); and the server keeps working.
//! A result too large for one message (40 MB sent twice: an 80 MB stdio
//! line or SSE event, issue 53 item 10) names its size and the limit too,
//! where it read "the MCP server stopped during the call (Transport
//! closed)"; over HTTP it is tried with JSON bodies and with SSE events.

use crate::support;

use serde_json::{Value, json};
use std::process::Command;
use std::time::{Duration, Instant};
use support::{Agent, post_json, write_config};

const RULES: &str = r#"
rules:
  - match: "(?i)^huge (\\S+) (\\w+)"
    steps:
      - call: seed_huge
        args: {mb: "$1", structured: "$2"}
      - reply: "huge answered"
  - match: "(?i)^peek"
    steps:
      - call: seed_peek
      - reply: "peek: {result}"
default: "hello"
"#;

fn script() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/seed_mcp_server.py")
}

/// The result the model was given for the last call of `name`.
fn result_of(body: &Value, name: &str) -> String {
    body["conversation"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["tool_call"]["name"] == name)
        .map(|m| {
            m["tool_call"]["result"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .unwrap_or_else(|| panic!("no call of {name}"))
}

async fn check(a: &Agent, how: &str) {
    // 12 MB as text and as structured content: refused at once.
    for structured in ["true", "false"] {
        let started = Instant::now();
        let (s, body) = post_json(
            a,
            "/conversations",
            json!({ "message": format!("huge 12 {structured}") }),
        )
        .await;
        let took = started.elapsed();
        assert_eq!(s, 201, "{how}: {body}");
        let r = result_of(&body, "seed_huge");
        // Sent twice as one 24 MB JSON body, rmcp's HTTP client stops
        // reading at its fixed 16 MiB: the size is then a lower bound.
        let want = if how == "http" && structured == "true" {
            "the tool's result is more than 16.8 MB, over the 8 MB limit"
        } else {
            "the tool's result is 12 MB, over the 8 MB limit"
        };
        assert!(
            r.contains(want),
            "{how} structured={structured}: {}",
            &r[..r.len().min(300)]
        );
        assert!(took < Duration::from_secs(10), "{how}: took {took:?}");
    }
    // 40 MB sent twice (issue 53 item 10): over stdio one 80 MB line,
    // more than a message may hold, which closed the pipe ("the MCP server
    // stopped during the call (Transport closed)"); the size and the limit
    // are named as at 12 MB, still at once.
    for structured in ["true", "false"] {
        let started = Instant::now();
        let (s, body) = post_json(
            a,
            "/conversations",
            json!({ "message": format!("huge 40 {structured}") }),
        )
        .await;
        let took = started.elapsed();
        assert_eq!(s, 201, "{how}: {body}");
        let r = result_of(&body, "seed_huge");
        // Over HTTP a JSON body stops at rmcp's 16 MiB, an SSE event at
        // our 64 MiB (what fits in one is measured exactly).
        let want = match (how, structured) {
            ("http", _) => "the tool's result is more than 16.8 MB, over the 8 MB limit",
            ("sse", "true") => "the tool's result is more than 67.1 MB, over the 8 MB limit",
            _ => "the tool's result is 40 MB, over the 8 MB limit",
        };
        assert!(
            r.contains(want),
            "{how} 40 MB structured={structured}: {}",
            &r[..r.len().min(300)]
        );
        assert!(!r.contains("stopped"), "{how}: {r}");
        assert!(took < Duration::from_secs(10), "{how}: took {took:?}");
    }
    // 5 MB sent twice: within the limit, kept whole.
    let (s, body) = post_json(a, "/conversations", json!({"message": "huge 5 true"})).await;
    assert_eq!(s, 201);
    let r = result_of(&body, "seed_huge");
    assert_eq!(r.len(), 5_000_000, "{how}: {}", &r[..r.len().min(200)]);
    // And the server still answers.
    let (s, body) = post_json(a, "/conversations", json!({"message": "peek"})).await;
    assert_eq!(s, 201);
    assert_eq!(result_of(&body, "seed_peek"), "seed_peek ok", "{how}");
}

fn rules(dir: &std::path::Path) -> std::path::PathBuf {
    let p = dir.join("rules.yaml");
    std::fs::write(&p, RULES).unwrap();
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_over_the_limit_fails_at_once_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "llm: {{model: \"scripted:{}\"}}\nmcp_servers:\n  - name: seed\n    command: python3\n    args: [{}]\n    env: {{SEED_HUGE: \"1\"}}\n",
        rules(dir.path()).display(),
        script().display()
    );
    let cfg = write_config(dir.path(), &dir.path().join("data"), &yaml);
    let a = Agent::serve(&cfg).await;
    check(&a, "stdio").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_over_the_limit_fails_at_once_over_http() {
    over_http(false).await;
}

/// The answers as SSE events, as the SDKs' servers send them: the
/// event's cap, not the JSON body's, is what a large one meets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_over_the_limit_fails_at_once_over_http_sse() {
    over_http(true).await;
}

async fn over_http(sse: bool) {
    let mut cmd = Command::new("python3");
    if sse {
        cmd.env("SEED_SSE", "1");
    }
    cmd.env("SEED_HUGE", "1").arg(script()).arg("--http");
    let seed = support::Process::server(cmd, "the seed MCP server");
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "llm: {{model: \"scripted:{}\"}}\nmcp_servers:\n  - name: seed\n    url: http://{}\n",
        rules(dir.path()).display(),
        seed.ready
    );
    let cfg = write_config(dir.path(), &dir.path().join("data"), &yaml);
    let a = Agent::serve(&cfg).await;
    check(&a, if sse { "sse" } else { "http" }).await;
}
