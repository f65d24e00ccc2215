//! The whole approval flow with the real agent, the fake provider in each
//! wire format, and the real `mcp-resources` over stdio and over HTTP.

use crate::support;

use serde_json::{Value, json};
use server::llm::scripted::Rules;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;
use support::{Agent, client, tool, write_config};
use test_support::fake_llm::{FakeState, Format};

const SECRET: &str = "sk-flow-0123456789";

const RULES: &str = r#"
rules:
  - match: "(?i)^list"
    steps:
      - call: resources_list
      - reply: "Resources: {result}"
  - match: "(?i)^add (\\w+) (-?\\d+)"
    steps:
      - call: resources_add
        args: {name: "$1", value: "$2"}
      - reply: "Added: {result}"
  - match: "(?i)^remove (\\S+)"
    steps:
      - call: resources_remove
        args: {pattern: "$1"}
      - reply: "Removed: {result}"
default: "I can list, add and remove resources."
"#;

/// `mcp-resources --http 127.0.0.1:0`, and its URL from its log.
struct HttpResources {
    _process: support::Process,
    url: String,
}

impl HttpResources {
    fn start(db: &std::path::Path) -> HttpResources {
        let mut cmd = Command::new(test_support::process::workspace_bin("mcp-resources"));
        cmd.args(["--http", "127.0.0.1:0", "--db"]).arg(db);
        let process = support::Process::server(cmd, "mcp-resources --http");
        HttpResources {
            url: format!("http://{}", process.ready),
            _process: process,
        }
    }
}

struct Setup {
    dir: tempfile::TempDir,
    agent: Agent,
    fake: Arc<FakeState>,
    _http: Option<HttpResources>,
    env: Vec<(&'static str, String)>,
}

impl Setup {
    fn restart(&mut self) {
        let env: Vec<(&str, &str)> = self.env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let cfg = self.dir.path().join("agent.yaml");
        self.agent = Agent::start_with_env(&cfg, &env);
    }
}

async fn setup(format: Format, http: bool) -> Setup {
    let fake = FakeState::new(Rules::parse(RULES).unwrap());
    let base = test_support::fake_llm::spawn(fake.clone()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("resources.db");
    let (model, env) = support::model_and_env(format, &base, SECRET);
    let (mcp_yaml, http_server) = if http {
        let h = HttpResources::start(&db);
        (
            format!("mcp_servers:\n  - name: resources\n    url: {}\n", h.url),
            Some(h),
        )
    } else {
        (
            format!(
                "mcp_servers:\n  - name: resources\n    command: {}\n    args: [--db, {}]\n",
                test_support::process::workspace_bin("mcp-resources"),
                db.display()
            ),
            None,
        )
    };
    let cfg = write_config(
        dir.path(),
        &dir.path().join("data"),
        &format!("llm: {{model: {model}}}\n{mcp_yaml}"),
    );
    let env_refs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let agent = Agent::start_with_env(&cfg, &env_refs);
    Setup {
        dir,
        agent,
        fake,
        _http: http_server,
        env,
    }
}

async fn call(a: &Agent, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let http = client();
    let req = match method {
        "GET" => http.get(a.url(path)),
        _ => http.post(a.url(path)).json(&body.unwrap_or(json!({}))),
    };
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or_else(|_| json!({"raw": text})),
    )
}

/// Runs the seed's core scenarios: tools, a safe call, a destructive call
/// approved, one rejected, 409 while waiting, decided twice.
async fn scenario(s: &Setup) {
    let a = &s.agent;
    let label = format!("{:?}", s.fake.requests().first().map(|r| r.format));

    let (status, tools) = call(a, "GET", "/tools", None).await;
    assert_eq!(status, 200);
    let by_name = |n: &str| tool(&tools, n).cloned().unwrap();
    assert_eq!(by_name("resources_add")["destructiveHint"], true);
    assert_eq!(by_name("resources_remove")["destructiveHint"], true);
    assert_eq!(by_name("resources_list")["destructiveHint"], false);
    assert_eq!(by_name("resources_list")["server"], "resources");
    assert!(by_name("resources_add")["inputSchema"]["properties"]["value"].is_object());

    // A safe call runs at once.
    let (status, body) = call(
        a,
        "POST",
        "/conversations",
        Some(json!({"message": "list"})),
    )
    .await;
    assert_eq!(status, 201, "{label}: {body}");
    let id = body["conversation"]["id"].as_str().unwrap().to_string();
    assert!(
        body["result"]["response"]
            .as_str()
            .unwrap()
            .starts_with("Resources: {\"count\":0"),
        "{body}"
    );
    let tool_msg = body["conversation"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .cloned()
        .unwrap();
    assert_eq!(tool_msg["tool_call"]["name"], "resources_list");
    assert_eq!(tool_msg["tool_call"]["is_error"], false);

    // A destructive call waits for approval with the exact arguments.
    let msgs = format!("/conversations/{id}/messages");
    let (status, body) = call(a, "POST", &msgs, Some(json!({"message": "add apples 12"}))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["waiting_approval"], true);
    let approval = body["result"]["approval"].clone();
    assert_eq!(approval["tool_name"], "resources_add");
    assert_eq!(
        approval["tool_args"],
        json!({"name": "apples", "value": 12})
    );
    assert_eq!(approval["conversation_id"], id.as_str());
    assert_eq!(body["conversation"]["status"], "waiting_approval");
    let uuid = approval["uuid"].as_str().unwrap().to_string();
    let (_, got) = call(a, "GET", &format!("/conversations/{id}"), None).await;
    assert_eq!(
        got["conversation"]["pending_approval"]["uuid"],
        uuid.as_str()
    );

    // While waiting, a message is refused with the approval in the body.
    let (status, body) = call(a, "POST", &msgs, Some(json!({"message": "list"}))).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["pending_approval"]["uuid"], uuid.as_str());

    // Approve: the tool runs with the original arguments.
    let (status, body) = call(
        a,
        "POST",
        &format!("/approvals/{uuid}"),
        Some(json!({"approved": true})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let response = body["result"]["response"].as_str().unwrap();
    assert!(
        response.starts_with("Added: ")
            && response.contains("\"name\":\"apples\"")
            && response.contains("\"value\":12"),
        "{response}"
    );
    assert_eq!(body["conversation"]["status"], "active");
    assert!(body["conversation"].get("pending_approval").is_none());
    let (status, body) = call(
        a,
        "POST",
        &format!("/approvals/{uuid}"),
        Some(json!({"action": "approve"})),
    )
    .await;
    assert_eq!(status, 409, "decided twice: {body}");

    // Reject: the tool never runs, the model hears why.
    let (_, body) = call(a, "POST", &msgs, Some(json!({"message": "add pears 3"}))).await;
    let uuid2 = body["result"]["approval"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, body) = call(
        a,
        "POST",
        &format!("/approvals/{uuid2}"),
        Some(json!({"answer": "no", "reason": "no pears today"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body["result"]["response"]
            .as_str()
            .unwrap()
            .contains("no pears today"),
        "{body}"
    );

    let (_, body) = call(a, "POST", &msgs, Some(json!({"message": "list"}))).await;
    let response = body["result"]["response"].as_str().unwrap();
    assert!(
        response.contains("\"count\":1")
            && response.contains("apples")
            && !response.contains("pears"),
        "{response}"
    );

    // Every request passed the provider's validation, and tool results went
    // back in the native format.
    let reqs = s.fake.requests();
    assert!(
        reqs.iter().all(|r| r.status == 200),
        "{:#?}",
        reqs.iter().filter(|r| r.status != 200).collect::<Vec<_>>()
    );
    support::specs::assert_conform(&reqs);
    let last = &reqs.last().unwrap().body;
    let text = last.to_string();
    match reqs[0].format {
        Format::OpenAi => {
            assert!(text.contains("\"role\":\"tool\"") && text.contains("tool_call_id"))
        }
        Format::Anthropic => {
            assert!(text.contains("\"tool_result\"") && text.contains("tool_use_id"))
        }
        Format::Gemini => {
            assert!(text.contains("functionResponse") && text.contains("thoughtSignature"))
        }
    }
    assert!(!a.log().contains(SECRET));
}

#[tokio::test]
async fn openai_format_with_stdio_mcp() {
    scenario(&setup(Format::OpenAi, false).await).await;
}

#[tokio::test]
async fn anthropic_format_with_stdio_mcp() {
    scenario(&setup(Format::Anthropic, false).await).await;
}

#[tokio::test]
async fn gemini_format_with_stdio_mcp() {
    scenario(&setup(Format::Gemini, false).await).await;
}

#[tokio::test]
async fn openai_format_with_http_mcp() {
    scenario(&setup(Format::OpenAi, true).await).await;
}

#[tokio::test]
async fn an_approval_survives_kill_9_and_runs_once_after_restart() {
    let mut s = setup(Format::OpenAi, false).await;
    let (_, body) = call(
        &s.agent,
        "POST",
        "/conversations",
        Some(json!({"message": "add durable 7"})),
    )
    .await;
    let uuid = body["result"]["approval"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let id = body["conversation"]["id"].as_str().unwrap().to_string();
    s.agent.kill9_in_place();
    s.restart();
    let (_, got) = call(&s.agent, "GET", &format!("/conversations/{id}"), None).await;
    assert_eq!(got["conversation"]["status"], "waiting_approval");
    assert_eq!(
        got["conversation"]["pending_approval"]["uuid"],
        uuid.as_str()
    );
    let (status, body) = call(
        &s.agent,
        "POST",
        &format!("/approvals/{uuid}"),
        Some(json!({"approved": true})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (_, body) = call(
        &s.agent,
        "POST",
        &format!("/conversations/{id}/messages"),
        Some(json!({"message": "list durable"})),
    )
    .await;
    let response = body["result"]["response"].as_str().unwrap();
    assert!(
        response.contains("\"count\":1"),
        "ran exactly once: {response}"
    );
}

#[tokio::test]
async fn sixteen_concurrent_approvals_run_the_tool_once() {
    let s = setup(Format::Anthropic, false).await;
    let (_, body) = call(
        &s.agent,
        "POST",
        "/conversations",
        Some(json!({"message": "add racer 1"})),
    )
    .await;
    let uuid = body["result"]["approval"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let url = s.agent.url(&format!("/approvals/{uuid}"));
        tasks.push(tokio::spawn(async move {
            client()
                .post(url)
                .json(&json!({"approved": true}))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }));
    }
    let mut statuses = Vec::new();
    for t in tasks {
        statuses.push(t.await.unwrap());
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    assert!(
        statuses.iter().all(|s| *s == 200 || *s == 409),
        "{statuses:?}"
    );
    let (_, body) = call(
        &s.agent,
        "POST",
        "/conversations",
        Some(json!({"message": "list racer"})),
    )
    .await;
    assert!(
        body["result"]["response"]
            .as_str()
            .unwrap()
            .contains("\"count\":1"),
        "{body}"
    );
}

#[tokio::test]
async fn a_killed_stdio_server_is_restarted_for_the_next_call() {
    let s = setup(Format::OpenAi, false).await;
    let (_, body) = call(
        &s.agent,
        "POST",
        "/conversations",
        Some(json!({"message": "list"})),
    )
    .await;
    let id = body["conversation"]["id"].as_str().unwrap().to_string();
    // Kill the agent's own mcp-resources child, by its pid (its --db path
    // is unique to this test; nothing else is touched).
    let db = s.dir.path().join("resources.db");
    let db = db.to_str().unwrap();
    let children = s.agent.children();
    let mcp: Vec<u32> = children
        .iter()
        .filter(|(_, cmd)| cmd.contains("mcp-resources") && cmd.contains(db))
        .map(|(pid, _)| *pid)
        .collect();
    assert_eq!(mcp.len(), 1, "the agent's one MCP server: {children:?}");
    // rmcp says so at info when a connection's stream ends: counted
    // before, so the wait below sees this server's end and no other.
    const CLOSED: &str = "input stream terminated";
    let closed = s.agent.log().matches(CLOSED).count();
    test_support::process::kill9_pid(mcp[0]);
    support::until(Duration::from_secs(10), "the MCP server ended", || {
        test_support::process::has_ended(mcp[0])
    })
    .await;
    // The next call comes once the agent has seen its connection close
    // (else it would race the agent to it).
    support::until(
        Duration::from_secs(10),
        "the agent saw its MCP server's connection close",
        || s.agent.log().matches(CLOSED).count() > closed,
    )
    .await;
    let (status, body) = call(
        &s.agent,
        "POST",
        &format!("/conversations/{id}/messages"),
        Some(json!({"message": "list"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let response = body["result"]["response"].as_str().unwrap();
    assert!(
        response.starts_with("Resources: {\"count\":0"),
        "the server was started again: {response}"
    );
}

#[tokio::test]
async fn an_unreachable_http_server_does_not_stop_the_agent() {
    let fake = FakeState::new(Rules::parse(RULES).unwrap());
    let base = test_support::fake_llm::spawn(fake.clone()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let cfg = write_config(
        dir.path(),
        &dir.path().join("data"),
        &format!(
            "llm: {{model: openai-gpt-4o}}\nmcp_servers:\n  - name: gone\n    url: http://127.0.0.1:{port}/mcp\n"
        ),
    );
    let base_v1 = format!("{base}/v1");
    let a = Agent::start_with_env(
        &cfg,
        &[("OPENAI_API_KEY", SECRET), ("OPENAI_BASE_URL", &base_v1)],
    );
    let (status, tools) = call(&a, "GET", "/tools", None).await;
    assert_eq!(status, 200);
    assert_eq!(tools["servers"][0]["name"], "gone");
    assert_eq!(tools["servers"][0]["available"], false);
    assert!(
        tools["servers"][0]["problem"]
            .as_str()
            .unwrap()
            .contains("cannot connect"),
        "{tools}"
    );
    let (status, body) = call(
        &a,
        "POST",
        "/conversations",
        Some(json!({"message": "hello"})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert!(a.log().contains("MCP server unavailable"));
}

#[tokio::test]
async fn every_log_line_of_a_turn_carries_the_session_id() {
    let s = setup(Format::Gemini, false).await;
    let resp = client()
        .post(s.agent.url("/conversations"))
        .header("X-Session-ID", "trace-me-42")
        .json(&json!({"message": "list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 201);
    let log = s.agent.wait_for_log("tool call finished");
    let tool_lines: Vec<&str> = log.lines().filter(|l| l.contains("tool call")).collect();
    assert_eq!(tool_lines.len(), 2, "{log}");
    for l in tool_lines {
        assert!(
            l.contains("sid=trace-me-42") && l.contains("conversation="),
            "{l}"
        );
    }
}
