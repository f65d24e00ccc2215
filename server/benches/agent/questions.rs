//! Questions (QUESTIONS.md), bench part 11: the round trip of a question a
//! tool asks (the tool asks, the row is stored, the answer is posted, the
//! tool is resumed and the turn ends) beside an approval's (the gate asks,
//! the row is stored, the decision is posted, the tool runs and the turn
//! ends), on one agent, one MCP server (the question server on the
//! official Python SDK, at 2026-07-28 over stdio) and the scripted model,
//! so both rows pay for the same model, server and store.

use super::{Agent, pct, post_json as post};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig,
    ElicitationCapability, FormElicitationCapability, Implementation, ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use serde_json::json;
use std::time::{Duration, Instant};

/// A client of the question server that declares elicitation (its tools
/// refuse clients that do not).
#[derive(Clone)]
struct Asking;

impl rmcp::ClientHandler for Asking {
    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::default();
        caps.elicitation =
            Some(ElicitationCapability::default().with_form(FormElicitationCapability::default()));
        ClientConfig::new(caps, Implementation::new("bench", "0"))
    }
}

/// The server's own share, measured directly over stdio at 2026-07-28:
/// p50 of one plain call (`count`) and of a question's two calls
/// (`ask_env` answered `input_required`, then its retry with the answer).
async fn server_floor(python: &std::path::Path, script: &std::path::Path, n: usize) -> (f64, f64) {
    let mut cmd = tokio::process::Command::new(python);
    cmd.arg(script).stderr(std::process::Stdio::null());
    let transport = rmcp::transport::TokioChildProcess::new(cmd).unwrap();
    let mode = ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    };
    let client = Asking.serve_with_lifecycle(transport, mode).await.unwrap();
    let (mut one, mut two) = (Vec::new(), Vec::new());
    for _ in 0..n + 5 {
        let t = Instant::now();
        client
            .peer()
            .call_tool_once(CallToolRequestParams::new("count"))
            .await
            .unwrap();
        one.push(t.elapsed());
        let args = json!({"service": "s"})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let t = Instant::now();
        let first = client
            .peer()
            .call_tool_once(CallToolRequestParams::new("ask_env").with_arguments(args.clone()))
            .await
            .unwrap();
        let CallToolResponse::InputRequired(round) = first else {
            panic!("ask_env did not ask")
        };
        let mut retry = CallToolRequestParams::new("ask_env").with_arguments(args);
        retry.input_responses = Some(
            [(
                "env".to_string(),
                json!({"action": "accept", "content": {"env": "staging", "confirm": true}}),
            )]
            .into_iter()
            .collect(),
        );
        retry.request_state = round.request_state;
        client.peer().call_tool_once(retry).await.unwrap();
        two.push(t.elapsed());
    }
    let _ = client.cancel().await;
    let p50 = |mut v: Vec<Duration>| {
        v.drain(..5);
        v.sort();
        pct(&v, 0.5)
    };
    (p50(one), p50(two))
}

const RULES: &str = r#"
rules:
  - match: "^deploy (\\S+)"
    steps:
      - call: ask_env
        args: {service: "$1"}
      - reply: "{result}"
  - match: "^count"
    steps:
      - call: count
      - reply: "{result}"
"#;

pub(super) async fn rows(
    http: &reqwest::Client,
    rows: &mut Vec<(String, String, String)>,
    quick: bool,
) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let python = root.join(".tools/mcp-python/bin/python");
    if !python.exists() {
        rows.push((
            "question round trip".into(),
            "skipped".into(),
            "needs scripts/setup.sh test".into(),
        ));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.yaml");
    std::fs::write(&rules, RULES).unwrap();
    let extra = format!(
        "mcp_servers:\n  - name: q\n    command: \"{}\"\n    args: [\"{}\"]\napprovals:\n  rules:\n    - {{name: ask-first, tool: count, action: approve}}\n",
        python.display(),
        root.join("testdata/question_mcp_server.py").display()
    );
    let agent = Agent::start_model(
        &format!("scripted:{}", rules.display()),
        "http://127.0.0.1:9",
        false,
        &extra,
        &[],
    );
    let n = if quick { 20 } else { 100 };
    let mut asked = Vec::new();
    let mut decided = Vec::new();
    for i in 0..n + 5 {
        // The question: asked and stored, then answered and resumed.
        let t = Instant::now();
        let r = post(
            http,
            format!("{}/conversations", agent.base),
            json!({"message": format!("deploy s{i}")}),
        )
        .await;
        let uuid = r["result"]["question"]["uuid"]
            .as_str()
            .unwrap_or_else(|| panic!("{r}"))
            .to_string();
        let r = post(
            http,
            format!("{}/questions/{uuid}", agent.base),
            json!({"action": "accept", "content": {"env": "staging", "confirm": true}}),
        )
        .await;
        assert!(
            r["result"]["response"]
                .as_str()
                .is_some_and(|s| s.starts_with("deploying")),
            "{r}"
        );
        let q = t.elapsed();
        // The approval: asked and stored, then decided and run.
        let t = Instant::now();
        let r = post(
            http,
            format!("{}/conversations", agent.base),
            json!({"message": "count"}),
        )
        .await;
        let uuid = r["result"]["approval"]["uuid"]
            .as_str()
            .unwrap_or_else(|| panic!("{r}"))
            .to_string();
        let r = post(
            http,
            format!("{}/approvals/{uuid}", agent.base),
            json!({"approved": true}),
        )
        .await;
        assert!(r["result"]["waiting_approval"] == false, "{r}");
        let a = t.elapsed();
        if i >= 5 {
            asked.push(q);
            decided.push(a);
        }
    }
    asked.sort();
    decided.sort();
    let (q50, a50) = (pct(&asked, 0.5), pct(&decided, 0.5));
    drop(agent);
    let script = root.join("testdata/question_mcp_server.py");
    let (one, two) = server_floor(&python, &script, n).await;
    rows.push((
        "question round trip p50 / p99 (ms), 2026-07-28 stdio".into(),
        format!("{q50:.2} / {:.2}", pct(&asked, 0.99)),
        "p50 ≤ 1.5x approval".into(),
    ));
    rows.push((
        "  approval round trip p50 / p99 (ms), same agent".into(),
        format!("{a50:.2} / {:.2}", pct(&decided, 0.99)),
        "".into(),
    ));
    rows.push((
        "  question / approval, p50".into(),
        format!("{:.2}x", q50 / a50),
        "≤ 1.5x".into(),
    ));
    rows.push((
        "  the server alone: one call / a question's two calls (ms)".into(),
        format!("{one:.2} / {two:.2}"),
        "".into(),
    ));
    rows.push((
        "  the same, without the server: question / approval (ms)".into(),
        format!(
            "{:.2} / {:.2} ({:.2}x)",
            q50 - two,
            a50 - one,
            (q50 - two) / (a50 - one)
        ),
        "≤ 1.5x".into(),
    ));
}
