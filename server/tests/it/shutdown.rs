//! Shutdown drains (ARCHITECTURE.md invariant 11): every task the agent
//! spawns has an owner that `run` stops and waits for, so a SIGTERM (or a
//! test stopping an in-process agent) leaves no turn, watcher or worker
//! running. A turn stopped in the middle of a tool call leaves what a crash
//! there leaves, and the crash rules settle it at the next start: the call
//! was running, so its approval is `in_doubt`, its result says the outcome
//! is unknown, and it never runs again.
//!
//! The turn: `delete x` asks to run the seed server's destructive
//! `seed_delete` (testdata/seed_mcp_server.py), which takes a minute to
//! answer once approved; each call it starts is one line of its call log.

use crate::support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::{Agent, client, get_json, post_json, write_config};

const RULES: &str = r#"
rules:
  - match: "^delete (\\S+)"
    steps:
      - call: seed_delete
        args: {id: "$1"}
      - reply: "deleted: {result}"
"#;

/// An agent in `dir` whose `seed_delete` runs for a minute.
fn config(dir: &Path) -> PathBuf {
    let rules = dir.join("rules.yaml");
    std::fs::write(&rules, RULES).unwrap();
    let seed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/seed_mcp_server.py");
    write_config(
        dir,
        &dir.join("data"),
        &format!(
            "llm: {{model: \"scripted:{}\"}}\nmcp_servers:\n  - name: seed\n    command: python3\n    args: [\"{}\"]\n    env: {{SEED_DELETE_SECONDS: \"60\", SEED_CALL_LOG: \"{}\"}}\n",
            rules.display(),
            seed.display(),
            calls_log(dir).display()
        ),
    )
}

fn calls_log(dir: &Path) -> PathBuf {
    dir.join("calls.log")
}

/// The tools the seed server started, in order.
fn calls(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(calls_log(dir))
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

/// Asks for `seed_delete`, approves it (the decision's request waits on
/// the turn: it is the returned task) and waits until the tool runs.
async fn start_the_slow_call(a: &Agent, dir: &Path) -> (String, tokio::task::JoinHandle<()>) {
    let (status, body) = post_json(a, "/conversations", json!({"message": "delete x"})).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["result"]["waiting_approval"], true, "{body}");
    let cid = body["conversation"]["id"].as_str().unwrap().to_string();
    let uuid = support::waiting_uuid(&body);
    let decide = client()
        .post(a.url(&format!("/approvals/{uuid}")))
        .json(&json!({"approved": true}))
        .send();
    let request = tokio::spawn(async move {
        // Answered with an error once the turn is stopped, or cut.
        if let Ok(r) = decide.await {
            assert_ne!(r.status().as_u16(), 200, "the call cannot have finished");
        }
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    while calls(dir).is_empty() {
        assert!(Instant::now() < deadline, "seed_delete never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (cid, request)
}

/// The conversation once the crash rules settled it (at the start on
/// SQLite; on PostgreSQL once the stopped turn's lease ran out): its call's
/// approval no longer `executing`, its turn not running.
async fn settled(a: &Agent, cid: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let c = get_json(a, &format!("/conversations/{cid}")).await["conversation"].clone();
        let executing = c["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["tool_call"]["approval"]["status"] == "executing");
        if !executing && c["running"] != true {
            return c;
        }
        assert!(Instant::now() < deadline, "never settled: {c}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The settled conversation is what a crash during the call leaves: the
/// call's outcome unknown, its approval `in_doubt`, the tool run once.
async fn assert_settled_as_a_crash(a: &Agent, cid: &str, dir: &Path) {
    let c = settled(a, cid).await;
    assert_eq!(c["status"], "active", "{c}");
    let call = c["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .map(|m| m["tool_call"].clone())
        .unwrap_or_else(|| panic!("no tool message: {c}"));
    assert_eq!(call["approval"]["status"], "in_doubt", "{call}");
    assert!(
        call["result"]
            .as_str()
            .is_some_and(|r| r.contains("Outcome unknown")),
        "recorded as in doubt: {call}"
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(calls(dir), vec!["seed_delete"], "never run again");
}

#[tokio::test]
async fn sigterm_during_a_tool_call_exits_0_and_the_restart_settles_the_turn_as_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let mut a = Agent::start(&cfg);
    let (cid, request) = start_the_slow_call(&a, dir.path()).await;

    let asked = Instant::now();
    let status = a.terminate_in_place();
    let took = asked.elapsed();
    assert!(status.success(), "exit status {status:?}\n{}", a.log());
    // The request gets its grace (5 s), then the turn is stopped: far
    // sooner than the tool's minute.
    assert!(took < Duration::from_secs(12), "took {took:?}\n{}", a.log());
    let log = a.log();
    assert!(log.contains("stopping the turns they wait on"), "{log}");
    assert!(log.contains("stopped every task"), "{log}");
    assert!(!log.contains("tasks still running"), "{log}");
    tokio::time::timeout(Duration::from_secs(5), request)
        .await
        .expect("the decision's request was left hanging")
        .unwrap();

    let a = Agent::start(&cfg);
    assert_settled_as_a_crash(&a, &cid, dir.path()).await;
}

#[tokio::test]
async fn an_in_process_agent_stopped_mid_turn_leaves_no_task_behind() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let a = Agent::serve(&cfg).await;
    let (cid, request) = start_the_slow_call(&a, dir.path()).await;
    // An event stream is open too.
    let sse = client().get(a.url("/events")).send().await.unwrap();
    assert_eq!(sse.status(), 200);
    let running: Vec<&str> = a.tasks().running().into_iter().map(|(n, _)| n).collect();
    for busy in [
        "turn",
        "expiry",
        "notifications",
        "push watcher",
        "mcp server pipe",
    ] {
        assert!(
            running.contains(&busy),
            "{busy} is not running: {running:?}"
        );
    }

    let stopping = Instant::now();
    let tasks = a.stop().await;
    assert!(
        stopping.elapsed() < Duration::from_secs(12),
        "took {:?}",
        stopping.elapsed()
    );
    assert!(tasks.is_stopping());
    assert_eq!(tasks.len(), 0, "left running: {:?}", tasks.running());
    assert!(tasks.running().is_empty(), "{:?}", tasks.running());
    drop(sse);
    tokio::time::timeout(Duration::from_secs(5), request)
        .await
        .expect("the decision's request was left hanging")
        .unwrap();

    // Served again on the same data: settled as after a crash.
    let a = Agent::serve(&cfg).await;
    assert_settled_as_a_crash(&a, &cid, dir.path()).await;
    let tasks = a.stop().await;
    assert_eq!(tasks.len(), 0, "left running: {:?}", tasks.running());
}
