//! A seed-style MCP server (hints at the top level of each tool, no
//! `annotations`) behind the agent, over stdio and over Streamable HTTP:
//! its hints decide what needs approval, and a `tools/list_changed`
//! notification brings new tools in without a restart.

use crate::support;

use serde_json::{Value, json};
use std::process::Command;
use std::time::{Duration, Instant};
use support::{Agent, client, get_json, tool, write_config};

fn script() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/seed_mcp_server.py")
}

/// The seed server over HTTP, killed on drop.
struct HttpSeed {
    _process: support::Process,
    url: String,
}

impl HttpSeed {
    fn start() -> HttpSeed {
        Self::start_with(&[])
    }

    fn start_with(env: &[(&str, &std::path::Path)]) -> HttpSeed {
        let mut cmd = Command::new("python3");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.arg(script()).arg("--http");
        let process = support::Process::server(cmd, "the seed MCP server");
        HttpSeed {
            url: format!("http://{}", process.ready),
            _process: process,
        }
    }
}

fn hint(tools: &Value, name: &str) -> Value {
    tool(tools, name).unwrap_or_else(|| panic!("{name} missing: {tools}"))["destructiveHint"]
        .clone()
}

#[tokio::test]
async fn top_level_hints_of_a_seed_server_decide_approval_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "mcp_servers:\n  - name: seed\n    command: python3\n    args: [{}]\n",
        script().display()
    );
    let cfg = write_config(dir.path(), &dir.path().join("data"), &yaml);
    let a = Agent::serve(&cfg).await;
    let tools = get_json(&a, "/tools").await;
    assert_eq!(hint(&tools, "seed_delete"), true);
    assert_eq!(
        hint(&tools, "seed_peek"),
        false,
        "a top-level destructiveHint: false is honoured"
    );
    assert_eq!(
        hint(&tools, "seed_read"),
        false,
        "a top-level readOnlyHint: true is honoured"
    );
    assert_eq!(
        hint(&tools, "seed_plain"),
        true,
        "no hints: unannotated_tools (approve)"
    );
}

#[tokio::test]
async fn top_level_hints_survive_streamable_http_even_when_unannotated_tools_are_allowed() {
    let seed = HttpSeed::start();
    let dir = tempfile::tempdir().unwrap();
    // With `allow`, a lost top-level destructiveHint would let seed_delete run
    // unapproved: the dangerous case.
    let yaml = format!(
        "unannotated_tools: allow\nmcp_servers:\n  - name: seed\n    url: {}\n",
        seed.url
    );
    let cfg = write_config(dir.path(), &dir.path().join("data"), &yaml);
    let a = Agent::serve(&cfg).await;
    let tools = get_json(&a, "/tools").await;
    assert_eq!(hint(&tools, "seed_delete"), true, "{tools}");
    assert_eq!(hint(&tools, "seed_peek"), false);
    assert_eq!(hint(&tools, "seed_read"), false);
    assert_eq!(
        hint(&tools, "seed_plain"),
        false,
        "no hints: unannotated_tools (allow)"
    );
}

#[tokio::test]
async fn a_list_changed_notification_refreshes_the_tools() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.yaml");
    std::fs::write(
        &rules,
        "rules:\n  - match: \"grow\"\n    steps:\n      - call: seed_grow\n      - reply: \"grew: {result}\"\ndefault: \"?\"\n",
    )
    .unwrap();
    let yaml = format!(
        "llm: {{model: \"scripted:{}\"}}\nmcp_servers:\n  - name: seed\n    command: python3\n    args: [{}]\n",
        rules.display(),
        script().display()
    );
    let cfg = write_config(dir.path(), &dir.path().join("data"), &yaml);
    let a = Agent::serve(&cfg).await;
    let before = get_json(&a, "/tools").await;
    assert!(tool(&before, "seed_grown_7").is_none(), "{before}");

    let resp: Value = client()
        .post(a.url("/conversations"))
        .json(&json!({"message": "grow"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(resp["result"]["response"], "grew: seed_grow ok", "{resp}");

    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let tools = get_json(&a, "/tools").await;
        if let Some(t) = tool(&tools, "seed_grown_7") {
            assert_eq!(
                t["destructiveHint"], true,
                "the new tool's hint is read too"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the new tool never appeared: {tools}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The caller's `Authorization: Bearer` reaches an HTTP MCP server (present
/// when sent, absent when not), and never with `forward_auth: false`; it is
/// neither logged nor stored.
#[tokio::test]
async fn the_callers_bearer_token_is_forwarded_to_http_servers_unless_opted_out() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("auth.log");
    let seed = HttpSeed::start_with(&[("SEED_AUTH_LOG", &record)]);
    let rules = dir.path().join("rules.yaml");
    std::fs::write(
        &rules,
        "rules:\n  - match: \"who\"\n    steps:\n      - call: seed_whoami\n      - reply: \"{result}\"\n",
    )
    .unwrap();
    let ask = |a: &Agent, token: Option<&'static str>| {
        let url = a.url("/conversations");
        async move {
            let mut req = client().post(url).json(&json!({"message": "who am i"}));
            if let Some(t) = token {
                req = req.bearer_auth(t);
            }
            let v: Value = req.send().await.unwrap().json().await.unwrap();
            v["result"]["response"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        }
    };
    let seen = || -> Vec<String> {
        std::fs::read_to_string(&record)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    };
    for forward in [true, false] {
        let sub = dir.path().join(format!("agent-{forward}"));
        std::fs::create_dir_all(&sub).unwrap();
        let yaml = format!(
            "llm: {{model: \"scripted:{}\"}}\nunannotated_tools: allow\nmcp_servers:\n  - name: seed\n    url: {}\n    forward_auth: {forward}\n",
            rules.display(),
            seed.url
        );
        let cfg = write_config(&sub, &sub.join("data"), &yaml);
        let a = Agent::start(&cfg);
        let before = seen().len();
        ask(&a, Some("user-token-77")).await;
        ask(&a, None).await;
        ask(&a, Some("other-token-1")).await;
        let got = seen()[before..].to_vec();
        let expected = if forward {
            vec!["Bearer user-token-77", "none", "Bearer other-token-1"]
        } else {
            vec!["none", "none", "none"]
        };
        assert_eq!(got, expected, "forward_auth: {forward}");
        assert!(!a.log().contains("user-token-77"), "never logged");
        for f in ["agent.db", "agent.db-wal"] {
            let bytes = std::fs::read(sub.join("data").join(f)).unwrap_or_default();
            assert!(
                !String::from_utf8_lossy(&bytes).contains("user-token-77"),
                "never stored ({f})"
            );
        }
    }
}
