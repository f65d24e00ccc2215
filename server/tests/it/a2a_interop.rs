//! Interop with the official A2A Python SDK (`a2a-sdk` from PyPI, 1.3.0 for
//! A2A 1.0 and 0.3.26 for 0.3; `scripts/setup.sh test` installs both under
//! `.tools/`): the SDK's own client against our server (blocking send,
//! approval and continuation, cancel, get, streaming) over JSON-RPC,
//! HTTP+JSON and gRPC, and an agent built with the SDK as a sub-agent
//! behind our client.

use crate::support;

use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Command;
use support::{Agent, client, write_config};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The virtualenv's python for SDK `v` ("1" or "03").
fn python(v: &str) -> PathBuf {
    let p = root().join(format!(".tools/a2a-sdk-{v}/bin/python"));
    assert!(
        p.is_file(),
        "{} is missing: run scripts/setup.sh test (it installs the A2A Python SDKs)",
        p.display()
    );
    p
}

/// The agent, served in this process (on the multi-threaded runtime the
/// test blocks on, so it answers while the SDK's client runs).
async fn resources_agent(dir: &std::path::Path) -> Agent {
    let yaml = format!(
        "name: interop-agent\nllm: {{model: \"scripted:{}\"}}\nmcp_servers:\n  - name: resources\n    command: {}\n    args: [--db, {}]\n",
        root().join("testdata/e2e-rules.yaml").display(),
        test_support::process::workspace_bin("mcp-resources"),
        dir.join("resources.db").display()
    );
    Agent::serve(&write_config(dir, &dir.join("data"), &yaml)).await
}

/// Runs an SDK client script; its steps by name.
fn run_client(v: &str, script: &str, base: &str) -> Vec<Value> {
    run_client_with(v, script, base, &[])
}

fn run_client_with(v: &str, script: &str, base: &str, args: &[&str]) -> Vec<Value> {
    let out = Command::new(python(v))
        .arg(root().join("testdata/a2a_interop").join(script))
        .arg(base)
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{script} failed:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn step<'a>(steps: &'a [Value], name: &str) -> &'a Value {
    steps
        .iter()
        .find(|s| s["step"] == name)
        .unwrap_or_else(|| panic!("no step {name}: {steps:?}"))
}

#[test]
fn the_python_sdk_1_0_client_drives_our_server() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let a = rt.block_on(resources_agent(dir.path()));
    let steps = run_client("1", "client.py", &a.base);
    sdk_1_0_steps(&steps);
}

/// The same steps with the SDK's HTTP+JSON (REST) transport.
#[test]
fn the_python_sdk_1_0_client_drives_our_server_over_http_json() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let a = rt.block_on(resources_agent(dir.path()));
    let steps = run_client_with("1", "client.py", &a.base, &["--transport", "http_json"]);
    let binding = step(&steps, "transport")["binding"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        binding.contains("HTTP+JSON") || binding.to_ascii_lowercase().contains("rest"),
        "{binding}"
    );
    sdk_1_0_steps(&steps);
}

/// The same steps with the SDK's gRPC transport: the card's `GRPC`
/// interface (`host:port`), HTTP/2 on the agent's own port.
#[test]
fn the_python_sdk_1_0_client_drives_our_server_over_grpc() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let a = rt.block_on(resources_agent(dir.path()));
    let steps = run_client_with("1", "client.py", &a.base, &["--transport", "grpc"]);
    assert_eq!(step(&steps, "transport")["binding"], "GRPC");
    sdk_1_0_steps(&steps);
}

fn sdk_1_0_steps(steps: &[Value]) {
    let steps = steps.to_vec();
    assert_eq!(step(&steps, "send")["state"], "TASK_STATE_COMPLETED");
    assert!(
        step(&steps, "send")["text"]
            .as_str()
            .unwrap()
            .starts_with("Here is what I found")
    );
    assert_eq!(
        step(&steps, "destructive")["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );
    assert_eq!(step(&steps, "approve")["state"], "TASK_STATE_COMPLETED");
    assert!(
        step(&steps, "approve")["text"]
            .as_str()
            .unwrap()
            .contains("\"apples\"")
    );
    assert_eq!(step(&steps, "cancel")["state"], "TASK_STATE_CANCELED");
    assert_eq!(step(&steps, "get")["state"], "TASK_STATE_CANCELED");
    let events = step(&steps, "stream")["events"].as_array().unwrap().clone();
    assert_eq!(
        events.first().unwrap(),
        &json!(["task", "TASK_STATE_WORKING"])
    );
    assert_eq!(
        events.last().unwrap(),
        &json!(["status_update", "TASK_STATE_COMPLETED"])
    );
    assert!(events.iter().any(|e| e[0] == "artifact_update"));
}

#[test]
fn the_python_sdk_0_3_client_drives_our_server() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let a = rt.block_on(resources_agent(dir.path()));
    let steps = run_client("03", "client03.py", &a.base);
    assert_eq!(step(&steps, "send")["state"], "completed");
    assert_eq!(step(&steps, "destructive")["state"], "input-required");
    assert_eq!(step(&steps, "approve")["state"], "completed");
    assert_eq!(step(&steps, "cancel")["state"], "canceled");
    assert_eq!(step(&steps, "get")["state"], "canceled");
    let events = step(&steps, "stream")["events"].as_array().unwrap().clone();
    assert_eq!(
        events.last().unwrap(),
        &json!(["status-update", "completed"])
    );
    assert!(events.iter().any(|e| e[0] == "artifact-update"));
}

/// The 1.x SDK's gRPC server as our sub-agent (its card offers only gRPC):
/// an answer, then an approval the SDK agent asks for, proxied across the
/// gRPC hop and decided here; the decision reaches it as the continuation's
/// data part.
#[tokio::test]
async fn a_python_sdk_grpc_agent_works_as_our_sub_agent_with_an_approval_across_it() {
    let free = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    };
    let (port, grpc_port) = (free(), free());
    let mut cmd = Command::new(python("1"));
    cmd.arg(root().join("testdata/a2a_interop/agent.py"))
        .arg(port.to_string())
        .args(["--grpc", &grpc_port.to_string()]);
    let mut py = test_support::process::Process::start(
        cmd,
        "listening on",
        "the Python SDK gRPC agent",
        std::time::Duration::from_secs(30),
    );
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.yaml");
    std::fs::write(
        &rules,
        "rules:\n  - match: \"(?s)^(.*)$\"\n    steps:\n      - call: a2a_py\n        args: {message: \"$1\"}\n      - reply: \"py said: {result}\"\n",
    )
    .unwrap();
    let yaml = format!(
        "llm: {{model: \"scripted:{}\"}}\na2a:\n  - {{name: py, url: \"http://127.0.0.1:{port}\"}}\n",
        rules.display()
    );
    let a = Agent::serve(&write_config(dir.path(), &dir.path().join("data"), &yaml)).await;
    let (status, body) =
        support::post_json(&a, "/conversations", json!({"message": "hello there"})).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        body["result"]["response"], "py said: py-agent got: hello there",
        "{body}"
    );

    let (_, body) =
        support::post_json(&a, "/conversations", json!({"message": "delete apples"})).await;
    let uuid = support::waiting_uuid(&body);
    let approval = &body["result"]["approval"];
    assert_eq!(approval["remote_agent_name"], "py", "{body}");
    assert_eq!(approval["tool_args"], json!({"name": "apples"}), "{body}");
    let (status, body) =
        support::post_json(&a, &format!("/approvals/{uuid}"), json!({"approved": true})).await;
    py.kill9();
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["result"]["response"], "py said: py-agent deleted apples",
        "{body}"
    );
}

/// Our client delegating to agents built with the SDK, in both versions,
/// and to the 1.x SDK's HTTP+JSON server (its card offers only that
/// binding, so JSON-RPC would find nothing there).
#[tokio::test]
async fn python_sdk_agents_work_as_our_sub_agents() {
    for (v, binding) in [("1", "jsonrpc"), ("03", "jsonrpc"), ("1", "rest")] {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut cmd = Command::new(python(v));
        cmd.arg(root().join("testdata/a2a_interop/agent.py"))
            .arg(port.to_string());
        if binding == "rest" {
            cmd.arg("--rest");
        }
        let mut py = test_support::process::Process::start(
            cmd,
            "listening on",
            "the Python SDK agent",
            std::time::Duration::from_secs(30),
        );
        let dir = tempfile::tempdir().unwrap();
        let rules = dir.path().join("rules.yaml");
        std::fs::write(
            &rules,
            "rules:\n  - match: \"(?s)^(.*)$\"\n    steps:\n      - call: a2a_py\n        args: {message: \"$1\"}\n      - reply: \"py said: {result}\"\n",
        )
        .unwrap();
        let yaml = format!(
            "llm: {{model: \"scripted:{}\"}}\na2a:\n  - {{name: py, url: \"http://127.0.0.1:{port}\"}}\n",
            rules.display()
        );
        let a = Agent::serve(&write_config(dir.path(), &dir.path().join("data"), &yaml)).await;
        let body: Value = client()
            .post(a.url("/conversations"))
            .json(&json!({"message": "hello there"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        py.kill9();
        assert_eq!(
            body["result"]["response"], "py said: py-agent got: hello there",
            "SDK {v} over {binding}: {body}"
        );
    }
}
