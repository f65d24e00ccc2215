//! Traces across agents, from the outside: three real agents (A → B → C,
//! C with the real `mcp-resources`) export to an OTLP/HTTP receiver (JSON
//! protocol); a destructive request at A waits for approval at C, proxied
//! to A and decided there. One trace holds the spans of all three agents,
//! each agent's approval-wait span covers the decision, and every span
//! carries the session id.

use crate::support;

use serde_json::json;
use support::otlp::{Receiver, Span};
use support::{Agent, post_json_as, write_config};

const SID: &str = "trace-session-1";

fn start(dir: &tempfile::TempDir, yaml: &str, otlp: &str) -> Agent {
    let cfg = write_config(dir.path(), &dir.path().join("data"), yaml);
    Agent::start_with_env(
        &cfg,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", otlp),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
    )
}

fn now_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

#[tokio::test]
async fn one_trace_crosses_three_agents_and_covers_the_approval() {
    let otlp = Receiver::start().await;
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let rules = dirs[0].path().join("rules.yaml");
    std::fs::write(&rules, support::CHAIN_RULES).unwrap();
    let model = format!("llm: {{model: \"scripted:{}\"}}\n", rules.display());
    let c = start(
        &dirs[0],
        &format!(
            "name: agent-c\nprompt: You are agent C.\n{model}mcp_servers:\n  - name: resources\n    command: {}\n    args: [--db, {}]\n",
            test_support::process::workspace_bin("mcp-resources"),
            dirs[0].path().join("r.db").display()
        ),
        &otlp.base,
    );
    let b = start(
        &dirs[1],
        &format!(
            "name: agent-b\nprompt: You are agent B.\n{model}a2a:\n  - {{name: c, url: \"{}/a2a\"}}\n",
            c.base
        ),
        &otlp.base,
    );
    let a = start(
        &dirs[2],
        &format!(
            "name: agent-a\nprompt: You are agent A.\n{model}a2a:\n  - {{name: b, url: \"{}\"}}\n",
            b.base
        ),
        &otlp.base,
    );

    let (status, body) = post_json_as(
        &a,
        Some(SID),
        "/conversations",
        json!({"message": "add plums 3"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let uuid = support::waiting_uuid(&body);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let decided_at = now_ns();
    let (status, body) = post_json_as(
        &a,
        Some(SID),
        &format!("/approvals/{uuid}"),
        json!({"approved": true}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body["result"]["response"]
            .as_str()
            .unwrap()
            .contains("C added"),
        "{body}"
    );

    let waits = |s: &[Span]| s.iter().filter(|x| x.name == "approval.wait").count();
    let spans = otlp
        .wait_for(|s| waits(s) >= 3 && s.iter().any(|x| x.name == "tool"))
        .await;
    // The first request at A is the root of the trace.
    let root = spans
        .iter()
        .find(|s| s.service == "agent-a" && s.name == "POST /conversations")
        .unwrap_or_else(|| panic!("no request span at A: {spans:#?}"));
    assert!(
        root.parent.is_empty() || root.parent.chars().all(|c| c == '0'),
        "{root:?}"
    );
    let mut trace: Vec<&Span> = spans
        .iter()
        .filter(|s| s.trace_id == root.trace_id)
        .collect();
    trace.sort_by_key(|s| s.start_ns);
    // The trace, in start order (shown with --nocapture).
    for s in &trace {
        eprintln!(
            "{:>8} ms  {:<8} {}",
            (s.start_ns - root.start_ns) / 1_000_000,
            s.service,
            s.name
        );
    }
    for service in ["agent-a", "agent-b", "agent-c"] {
        assert!(
            trace
                .iter()
                .any(|s| s.service == service && s.name == "turn"),
            "no turn of {service} in the trace: {trace:#?}"
        );
        let wait = trace
            .iter()
            .find(|s| s.service == service && s.name == "approval.wait")
            .unwrap_or_else(|| panic!("no approval wait of {service} in the trace: {trace:#?}"));
        assert!(
            wait.start_ns < decided_at && wait.end_ns >= decided_at,
            "{service}'s wait does not cover the decision: {wait:?} vs {decided_at}"
        );
        assert_eq!(
            wait.attr("decision").as_deref(),
            Some("approved"),
            "{wait:?}"
        );
        assert!(wait.attr("decided_by").is_some(), "{wait:?}");
    }
    // C's tool ran after the decision, in the same trace.
    let tool = trace
        .iter()
        .find(|s| {
            s.service == "agent-c"
                && s.name == "tool"
                && s.attr("tool").as_deref() == Some("resources_add")
        })
        .unwrap_or_else(|| panic!("no resources_add span at C in the trace: {trace:#?}"));
    assert_eq!(tool.attr("outcome").as_deref(), Some("ok"));
    assert!(tool.start_ns >= decided_at);
    assert!(
        trace
            .iter()
            .any(|s| s.service == "agent-a" && s.name == "a2a.delegate")
    );
    assert!(
        trace
            .iter()
            .any(|s| s.service == "agent-b" && s.name == "a2a.delegate")
    );
    // Each model call says which provider and model, and what it cost.
    let llm = trace
        .iter()
        .find(|s| s.service == "agent-c" && s.name == "llm")
        .unwrap_or_else(|| panic!("no llm span at C in the trace: {trace:#?}"));
    assert_eq!(llm.attr("provider").as_deref(), Some("scripted"), "{llm:?}");
    assert_eq!(llm.attr("gen_ai.system").as_deref(), Some("scripted"));
    assert!(llm.attr("model").is_some_and(|m| m.ends_with("rules.yaml")));
    let tokens = |k: &str| -> u64 {
        llm.attr(k)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{k} missing on {llm:?}"))
    };
    assert!(tokens("input_tokens") > 10, "{llm:?}");
    assert!(tokens("output_tokens") > 0, "{llm:?}");
    assert_eq!(tokens("gen_ai.usage.input_tokens"), tokens("input_tokens"));
    assert_eq!(
        tokens("gen_ai.usage.output_tokens"),
        tokens("output_tokens")
    );
    // Every span, in this trace or not, says whose session it was.
    for s in &spans {
        assert_eq!(s.attr("sid").as_deref(), Some(SID), "{s:?}");
    }
    drop((a, b, c));
}

/// A collector that cannot be reached costs a log line, not a failed turn.
#[tokio::test]
async fn an_unreachable_collector_does_not_fail_turns() {
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.yaml");
    std::fs::write(&rules, "rules: []\ndefault: hello\n").unwrap();
    let agent = start(
        &dir,
        &format!("llm: {{model: \"scripted:{}\"}}\n", rules.display()),
        &format!("http://{dead}"),
    );
    for _ in 0..3 {
        let (status, body) = post_json_as(
            &agent,
            Some(SID),
            "/conversations",
            json!({"message": "hi"}),
        )
        .await;
        assert_eq!(status, 201, "{body}");
    }
    let log = agent.wait_for_log("could not send spans");
    assert!(
        log.contains("could not send spans to the OTLP collector"),
        "{log}"
    );
    assert_eq!(log.matches("could not send spans").count(), 1, "{log}");
}

/// A tool call carries its trace context to an HTTP MCP server (MCP
/// SEP-414: `_meta.traceparent`), as the child of the `tool` span.
#[tokio::test]
async fn mcp_tool_calls_carry_the_trace_context() {
    let otlp = Receiver::start().await;
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("trace.log");
    let mut cmd = std::process::Command::new("python3");
    cmd.arg(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/seed_mcp_server.py"),
    )
    .arg("--http")
    .env("SEED_TRACE_LOG", &record);
    let mut seed = support::Process::server(cmd, "seed MCP server");
    let addr = seed.ready.clone();
    let rules = dir.path().join("rules.yaml");
    std::fs::write(
        &rules,
        "rules:\n  - match: peek\n    steps:\n      - call: seed_peek\n      - reply: \"{result}\"\n",
    )
    .unwrap();
    let agent = start(
        &dir,
        &format!(
            "llm: {{model: \"scripted:{}\"}}\nmcp_servers:\n  - {{name: seed, url: \"http://{addr}\"}}\n",
            rules.display()
        ),
        &otlp.base,
    );
    let (status, body) = post_json_as(
        &agent,
        Some(SID),
        "/conversations",
        json!({"message": "peek"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let spans = otlp.wait_for(|s| s.iter().any(|x| x.name == "tool")).await;
    let tool = spans
        .iter()
        .find(|s| s.name == "tool")
        .unwrap_or_else(|| panic!("{spans:#?}"));
    let sent = std::fs::read_to_string(&record).unwrap();
    let traceparent = sent.lines().next().unwrap_or_default();
    let parts: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(parts.len(), 4, "{traceparent}");
    assert_eq!(
        (parts[1], parts[2]),
        (tool.trace_id.as_str(), tool.span_id.as_str()),
        "the MCP call is a child of the tool span"
    );
    seed.kill9();
}
