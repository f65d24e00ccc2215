//! A third-party MCP server from npm (`@modelcontextprotocol/server-everything`,
//! installed by `scripts/setup.sh test`) next to our own, behind the agent:
//! its tools and annotations are read, its zod-generated schemas pass the
//! Gemini validation, calls round-trip, and a server that dies mid-call is
//! reported and started again.

use crate::support;

use serde_json::{Value, json};
use server::llm::scripted::Rules;
use support::{Agent, client, get_json, tool, write_config};
use test_support::fake_llm::FakeState;

const RULES: &str = r#"
rules:
  - match: "(?i)^sum (\\d+) (\\d+)"
    steps:
      - call: get-sum
        args: {a: "$1", b: "$2"}
      - reply: "sum: {result}"
  - match: "(?i)^echo (.*)"
    steps:
      - call: echo
        args: {message: "$1"}
      - reply: "echo: {result}"
  - match: "(?i)^slow"
    steps:
      - call: trigger-long-running-operation
        args: {duration: 10, steps: 5}
      - reply: "slow: {result}"
default: "?"
"#;

fn everything() -> std::path::PathBuf {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/mcp-npm/node_modules/.bin/mcp-server-everything");
    assert!(
        p.exists(),
        "{} is missing: run `scripts/setup.sh test` (make test does)",
        p.display()
    );
    p
}

#[tokio::test]
async fn server_everything_works_beside_mcp_resources_with_gemini() {
    let fake = FakeState::new(Rules::parse(RULES).unwrap());
    let base = test_support::fake_llm::spawn(fake.clone()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "llm: {{model: gemini-2.5-flash}}\nmcp_servers:\n  - name: everything\n    command: {}\n  - name: resources\n    command: {}\n    args: [--db, {}]\n",
        everything().display(),
        test_support::process::workspace_bin("mcp-resources"),
        dir.path().join("r.db").display()
    );
    let cfg = write_config(dir.path(), &dir.path().join("data"), &yaml);
    let a = Agent::start_with_env(
        &cfg,
        &[
            ("GEMINI_API_KEY", "k-0123456789"),
            ("GEMINI_BASE_URL", &base),
        ],
    );

    let tools = get_json(&a, "/tools").await;
    let find = |n: &str| tool(&tools, n).cloned();
    let echo = find("echo").expect("server-everything's echo is listed");
    assert_eq!(echo["server"], "everything");
    assert_eq!(echo["destructiveHint"], false, "readOnlyHint: true");
    assert_eq!(find("resources_add").unwrap()["destructiveHint"], true);
    assert!(
        tools["servers"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["available"] == true),
        "{tools}"
    );

    for (message, expect) in [("sum 2 3", "5"), ("echo hello there", "hello there")] {
        let resp = client()
            .post(a.url("/conversations"))
            .json(&json!({"message": message}))
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        let body: Value = resp.json().await.unwrap();
        assert_eq!(status, 201, "{body}");
        let response = body["result"]["response"].as_str().unwrap();
        assert!(response.contains(expect), "{message}: {response}");
    }
    // The server dies in the middle of a call: the call fails with a clear
    // error in the conversation, and the next call starts the server again.
    let url = a.url("/conversations");
    let slow = tokio::spawn(async move {
        client()
            .post(url)
            .json(&json!({"message": "slow"}))
            .send()
            .await
            .unwrap()
            .json::<Value>()
            .await
            .unwrap()
    });
    a.wait_for_log("tool call started");
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    // This agent's own server-everything, by its pid (another test's, or
    // anything else of that name on the machine, is not touched).
    let children = a.children();
    let everything: Vec<u32> = children
        .iter()
        .filter(|(_, cmd)| cmd.contains("mcp-server-everything"))
        .map(|(pid, _)| *pid)
        .collect();
    assert_eq!(everything.len(), 1, "server-everything runs: {children:?}");
    test_support::process::kill9_pid(everything[0]);
    let body = slow.await.unwrap();
    let response = body["result"]["response"].as_str().unwrap();
    assert!(response.contains("stopped during the call"), "{response}");
    let tool = body["conversation"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .cloned()
        .unwrap();
    assert_eq!(tool["tool_call"]["is_error"], true);
    let resp = client()
        .post(a.url("/conversations"))
        .json(&json!({"message": "echo back again"}))
        .send()
        .await
        .unwrap();
    let body: Value = resp.json().await.unwrap();
    assert!(
        body["result"]["response"]
            .as_str()
            .unwrap()
            .contains("back again"),
        "restarted: {body}"
    );

    // Every request, with the third-party schemas, passed Gemini's validation.
    let reqs = fake.requests();
    assert!(
        reqs.iter().all(|r| r.status == 200),
        "{:#?}",
        reqs.iter()
            .filter(|r| r.status != 200)
            .map(|r| &r.body)
            .collect::<Vec<_>>()
    );
    support::specs::assert_conform(&reqs);
}
