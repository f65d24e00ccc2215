//! Questions (QUESTIONS.md), bench part 11: the round trip of a question a
//! tool asks (the tool asks, the row is stored, the answer is posted, the
//! tool is resumed and the turn ends) beside an approval's (the gate asks,
//! the row is stored, the decision is posted, the tool runs and the turn
//! ends), on one agent, one MCP server (the question server on the
//! official Python SDK, at 2026-07-28 over stdio) and the scripted model,
//! so both rows pay for the same model, server and store.

use super::{Agent, pct};
use serde_json::{Value, json};
use std::time::Instant;

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

async fn post(http: &reqwest::Client, url: String, body: Value) -> Value {
    http.post(url)
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

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
}
