//! `POST /ag-ui`: the agent as an AG-UI 1.0 back end (CLIENTS.md §3, §4).
//! Every stream a test reads is checked event by event with the official
//! models (`@ag-ui/core` 1.0.0's `EventSchema`) and as a sequence with the
//! official client's `verifyEvents` (through `testdata/ag_ui_client.mjs
//! validate`), and one run is driven end to end
//! by `@ag-ui/client`'s `HttpAgent` through an interrupt and its resume.
//! The store is read too: who decided, through which channel, whether the
//! tool ran, and how often.

use crate::support;

use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use support::{Agent, client, resources_yaml, write_config};

const BOB: &str = "bob-requester-token-0123";
const ALICE: &str = "alice-approver-token-012";
const CAROL: &str = "carol-both-roles-token-0";

const ENV: [(&str, &str); 3] = [("BOB_T", BOB), ("ALICE_T", ALICE), ("CAROL_T", CAROL)];

const TOKENS: &str = r#"auth:
  mode: tokens
  separation_of_duties: true
  tokens:
    - {name: bob, token: "${BOB_T}", roles: [requester]}
    - {name: alice, token: "${ALICE_T}", roles: [approver]}
    - {name: carol, token: "${CAROL_T}", roles: [requester, approver]}
"#;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The scripted model and the real `mcp-resources`: "add NAME N" waits for
/// approval of `resources_add`, "list resources" does not.
fn config(dir: &Path, extra: &str) -> PathBuf {
    let yaml = format!("{}{extra}", resources_yaml("ag-ui-test", dir));
    write_config(dir, &dir.join("data"), &yaml)
}

/// A `RunAgentInput`.
fn input(thread: &str, messages: &[(&str, &str)], resume: Value) -> Value {
    let messages: Vec<Value> = messages
        .iter()
        .map(|(id, text)| json!({"id": id, "role": "user", "content": text}))
        .collect();
    let mut v = json!({
        "threadId": thread, "runId": uuid::Uuid::new_v4().to_string(),
        "state": {}, "tools": [], "context": [], "forwardedProps": {},
        "messages": messages,
    });
    if !resume.is_null() {
        v["resume"] = resume;
    }
    v
}

/// One run: the status and the events, each checked by `@ag-ui/core`.
async fn run(a: &Agent, token: Option<&str>, body: Value) -> (u16, Vec<Value>) {
    let mut req = client()
        .post(a.url("/ag-ui"))
        .header("Accept", "text/event-stream")
        .timeout(Duration::from_secs(60))
        .json(&body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    if status != 200 {
        return (
            status,
            vec![serde_json::from_str(&text).unwrap_or(json!(text))],
        );
    }
    let events: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| serde_json::from_str(d.trim()).expect("each data line is JSON"))
        .collect();
    validate(&events).await;
    assert_eq!(
        events.first().map(|e| &e["type"]),
        Some(&json!("RUN_STARTED")),
        "{text}"
    );
    (status, events)
}

/// Checks `events` with the official models; panics naming what is wrong.
async fn validate(events: &[Value]) {
    let node = root().join("testdata/ag-ui/node_modules/@ag-ui/core/package.json");
    assert!(
        node.exists(),
        "{} is missing: run scripts/setup.sh test (make test does)",
        node.display()
    );
    let body = serde_json::to_vec(events).unwrap();
    let out = tokio::task::spawn_blocking(move || {
        let mut child = Command::new("node")
            .arg(root().join("testdata/ag_ui_client.mjs"))
            .arg("validate")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(&body).unwrap();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).expect("the validator's JSON");
    assert_eq!(
        v["invalid"],
        json!([]),
        "events the official models refuse: {v}"
    );
    assert_eq!(
        v["sequence"],
        Value::Null,
        "a sequence the official client refuses: {v}"
    );
}

fn of_type<'a>(events: &'a [Value], t: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == t).collect()
}

fn finished(events: &[Value]) -> &Value {
    let last = events.last().unwrap();
    assert_eq!(last["type"], "RUN_FINISHED", "{events:?}");
    last
}

/// The one interrupt a run ended with.
fn interrupt(events: &[Value]) -> &Value {
    let f = finished(events);
    assert_eq!(f["outcome"]["type"], "interrupt", "{f}");
    let list = f["outcome"]["interrupts"].as_array().unwrap();
    assert_eq!(list.len(), 1, "{f}");
    &list[0]
}

fn conversation_of(events: &[Value]) -> String {
    finished(events)["result"]["conversationId"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn approval(a: &Agent, token: Option<&str>, cid: &str, uuid: &str) -> Value {
    let mut req = client().get(a.url(&format!("/conversations/{cid}")));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let c: Value = req.send().await.unwrap().json().await.unwrap();
    support::approval_outcome(&c, uuid)
}

/// How many `resources_add` calls of conversation `cid` have a result.
async fn ran(a: &Agent, token: Option<&str>, cid: &str) -> usize {
    let mut req = client().get(a.url(&format!("/conversations/{cid}")));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let c: Value = req.send().await.unwrap().json().await.unwrap();
    c["conversation"]["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| &m["tool_call"])
        .filter(|t| t["name"] == "resources_add" && t["approval"]["status"] == "executed")
        .count()
}

fn approve() -> Value {
    json!({"approved": true})
}

fn resume(uuid: &str, payload: Value) -> Value {
    json!([{"interruptId": uuid, "status": "resolved", "payload": payload}])
}

/// A run that pauses on an approval: its tool call streamed, then
/// `RUN_FINISHED` with the interrupt (uuid, `tool_call`, the call's id,
/// the exact arguments); the resume decides through `ag-ui`, streams the
/// result and the answer; replaying it decides nothing more; an interrupt
/// decided elsewhere meanwhile lets the resume stream the continuation.
#[tokio::test]
async fn an_interrupt_and_its_resume_run_the_tool_once() {
    let dir = tempfile::tempdir().unwrap();
    let a = Agent::serve(&config(dir.path(), "")).await;
    let history = [("u1", "add apples 5")];
    let (st, first) = run(&a, None, input("t-apples", &history, Value::Null)).await;
    assert_eq!(st, 200);
    let call = of_type(&first, "TOOL_CALL_START");
    assert_eq!(call.len(), 1, "{first:?}");
    assert_eq!(call[0]["toolCallName"], "resources_add");
    let args = of_type(&first, "TOOL_CALL_ARGS");
    assert_eq!(
        serde_json::from_str::<Value>(args[0]["delta"].as_str().unwrap()).unwrap(),
        json!({"name": "apples", "value": 5})
    );
    let i = interrupt(&first);
    assert_eq!(i["reason"], "tool_call");
    assert_eq!(i["toolCallId"], call[0]["toolCallId"]);
    assert_eq!(i["metadata"]["tool"], "resources_add");
    assert_eq!(
        i["metadata"]["arguments"],
        json!({"name": "apples", "value": 5})
    );
    assert_eq!(i["responseSchema"]["required"], json!(["approved"]));
    assert!(
        i["responseSchema"]["properties"]["editedArgs"].is_object(),
        "{i}"
    );
    assert!(
        i["message"].as_str().unwrap().contains("resources_add"),
        "{i}"
    );
    let uuid = i["id"].as_str().unwrap().to_string();
    let cid = conversation_of(&first);
    assert_eq!(approval(&a, None, &cid, &uuid).await["status"], "pending");

    let again = input("t-apples", &history, resume(&uuid, approve()));
    let (_, second) = run(&a, None, again.clone()).await;
    assert_eq!(
        finished(&second)["outcome"]["type"],
        "success",
        "{second:?}"
    );
    let result = of_type(&second, "TOOL_CALL_RESULT");
    assert_eq!(result.len(), 1, "{second:?}");
    assert_eq!(result[0]["toolCallId"], call[0]["toolCallId"]);
    assert!(
        of_type(&second, "TOOL_CALL_START").is_empty(),
        "the call is not streamed twice"
    );
    let text = of_type(&second, "TEXT_MESSAGE_CONTENT");
    assert!(
        text[0]["delta"]
            .as_str()
            .unwrap()
            .contains("resources_add answered"),
        "{second:?}"
    );
    let ap = approval(&a, None, &cid, &uuid).await;
    assert_eq!(ap["status"], "executed", "{ap}");
    assert_eq!(ap["decided_via"], "ag-ui", "{ap}");
    assert_eq!(ran(&a, None, &cid).await, 1);

    // The same resume again (a client whose stream was cut): nothing
    // decided again; the continuation is streamed as it stands.
    let (_, replay) = run(&a, None, again).await;
    assert_eq!(
        finished(&replay)["outcome"]["type"],
        "success",
        "{replay:?}"
    );
    assert_eq!(of_type(&replay, "TOOL_CALL_RESULT").len(), 1, "{replay:?}");
    assert!(of_type(&replay, "TOOL_CALL_START").is_empty(), "{replay:?}");
    assert_eq!(ran(&a, None, &cid).await, 1);
    let (_, plain) = run(&a, None, input("t-apples", &history, Value::Null)).await;
    assert_eq!(plain.len(), 2, "a plain re-run has nothing new: {plain:?}");

    // Decided elsewhere (REST) while the client was away: its resume
    // decides nothing and streams the continuation.
    let history = [("u1", "add quinces 2")];
    let (_, first) = run(&a, None, input("t-elsewhere", &history, Value::Null)).await;
    let uuid = interrupt(&first)["id"].as_str().unwrap().to_string();
    let cid = conversation_of(&first);
    let (st, body) =
        support::post_json(&a, &format!("/approvals/{uuid}"), json!({"approved": true})).await;
    assert_eq!(st, 200, "{body}");
    let (_, cont) = run(
        &a,
        None,
        input("t-elsewhere", &history, resume(&uuid, approve())),
    )
    .await;
    assert_eq!(finished(&cont)["outcome"]["type"], "success", "{cont:?}");
    assert_eq!(of_type(&cont, "TOOL_CALL_RESULT").len(), 1, "{cont:?}");
    assert!(
        !of_type(&cont, "TEXT_MESSAGE_CONTENT").is_empty(),
        "{cont:?}"
    );
    let ap = approval(&a, None, &cid, &uuid).await;
    assert_eq!(ap["decided_via"], "rest", "{ap}");
    assert_eq!(ran(&a, None, &cid).await, 1);
}

/// An edit runs the edited arguments; a rejection runs nothing; a run that
/// adds a message without resuming the open interrupt is `RUN_ERROR` and
/// decides nothing; a cancelled interrupt rejects.
#[tokio::test]
async fn edit_reject_cancel_and_a_resume_that_misses_the_interrupt() {
    let dir = tempfile::tempdir().unwrap();
    let a = Agent::serve(&config(dir.path(), "")).await;
    let (_, first) = run(
        &a,
        None,
        input("t-pears", &[("p1", "add pears 2")], Value::Null),
    )
    .await;
    let uuid = interrupt(&first)["id"].as_str().unwrap().to_string();
    let cid = conversation_of(&first);

    let (_, refused) = run(
        &a,
        None,
        input(
            "t-pears",
            &[("p1", "add pears 2"), ("p2", "list resources")],
            Value::Null,
        ),
    )
    .await;
    let err = refused.last().unwrap();
    assert_eq!(err["type"], "RUN_ERROR", "{refused:?}");
    assert_eq!(err["code"], "invalid_input");
    assert!(err["message"].as_str().unwrap().contains(&uuid), "{err}");
    assert_eq!(approval(&a, None, &cid, &uuid).await["status"], "pending");

    let edited = json!({"approved": true, "editedArgs": {"name": "pears", "value": 3}});
    let (_, done) = run(
        &a,
        None,
        input("t-pears", &[("p1", "add pears 2")], resume(&uuid, edited)),
    )
    .await;
    let result = of_type(&done, "TOOL_CALL_RESULT");
    assert!(
        result[0]["content"]
            .as_str()
            .unwrap()
            .contains("\"value\":3"),
        "{done:?}"
    );
    assert_eq!(approval(&a, None, &cid, &uuid).await["status"], "executed");

    // The message held back earlier is new now, and runs.
    let (_, listed) = run(
        &a,
        None,
        input(
            "t-pears",
            &[("p1", "add pears 2"), ("p2", "list resources")],
            Value::Null,
        ),
    )
    .await;
    assert_eq!(
        finished(&listed)["outcome"]["type"],
        "success",
        "{listed:?}"
    );
    assert_eq!(
        of_type(&listed, "TOOL_CALL_START")[0]["toolCallName"],
        "resources_list"
    );

    for (thread, payload, status) in [
        (
            "t-plums",
            json!({"approved": false, "reason": "not plums"}),
            "resolved",
        ),
        ("t-figs", Value::Null, "cancelled"),
    ] {
        let (_, first) = run(
            &a,
            None,
            input(thread, &[("x1", "add plums 1")], Value::Null),
        )
        .await;
        let uuid = interrupt(&first)["id"].as_str().unwrap().to_string();
        let cid = conversation_of(&first);
        let entry = json!([{"interruptId": uuid, "status": status, "payload": payload}]);
        let (_, done) = run(&a, None, input(thread, &[("x1", "add plums 1")], entry)).await;
        assert_eq!(finished(&done)["outcome"]["type"], "success", "{done:?}");
        let ap = approval(&a, None, &cid, &uuid).await;
        assert_eq!(ap["status"], "rejected", "{ap}");
        assert_eq!(ap["decided_via"], "ag-ui", "{ap}");
        assert_eq!(ran(&a, None, &cid).await, 0);
    }
}

/// Sign-in: another principal's thread is "not found" (nothing leaked);
/// separation of duties holds (the requester's own resume is refused and
/// decides nothing); an approver may not add messages; no bearer is 401.
#[tokio::test]
async fn principals_threads_and_separation_of_duties() {
    let dir = tempfile::tempdir().unwrap();
    let a = Agent::serve_with_env(&config(dir.path(), TOKENS), &ENV).await;
    let (_, first) = run(
        &a,
        Some(BOB),
        input("t-bob", &[("b1", "add kiwis 4")], Value::Null),
    )
    .await;
    let uuid = interrupt(&first)["id"].as_str().unwrap().to_string();
    let cid = conversation_of(&first);

    let (_, own) = run(
        &a,
        Some(BOB),
        input("t-bob", &[("b1", "add kiwis 4")], resume(&uuid, approve())),
    )
    .await;
    assert_eq!(own.last().unwrap()["type"], "RUN_ERROR", "{own:?}");
    assert_eq!(own.last().unwrap()["code"], "forbidden", "{own:?}");
    assert_eq!(
        approval(&a, Some(CAROL), &cid, &uuid).await["status"],
        "pending"
    );

    let (_, other) = run(
        &a,
        Some(CAROL),
        input("t-bob", &[("c1", "list resources")], Value::Null),
    )
    .await;
    let err = other.last().unwrap();
    assert_eq!(err["code"], "not_found", "{other:?}");
    assert!(!err.to_string().contains("kiwis"), "{err}");

    let (_, approver) = run(
        &a,
        Some(ALICE),
        input("t-alice", &[("a1", "list resources")], Value::Null),
    )
    .await;
    assert_eq!(
        approver.last().unwrap()["code"],
        "forbidden",
        "{approver:?}"
    );

    let (st, _) = run(
        &a,
        None,
        input("t-none", &[("n1", "list resources")], Value::Null),
    )
    .await;
    assert_eq!(st, 401);
    assert_eq!(
        approval(&a, Some(CAROL), &cid, &uuid).await["status"],
        "pending"
    );
}

/// Bad bodies are a 400 naming the problem before any stream; a resume on
/// a thread that has no conversation and a new thread without a message
/// are `RUN_ERROR`.
#[tokio::test]
async fn bad_input_is_refused_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let a = Agent::serve(&config(dir.path(), "")).await;
    for (body, says) in [
        (json!({"runId": "r", "messages": []}), "threadId"),
        (
            json!({"threadId": "t", "runId": "r", "messages": "hi"}),
            "messages",
        ),
        (
            json!({"threadId": "", "runId": "r", "messages": []}),
            "threadId",
        ),
        (
            json!({"threadId": "t", "runId": "r", "messages": [], "resume": [{"interruptId": "x", "status": "maybe"}]}),
            "status",
        ),
    ] {
        let (st, v) = run(&a, None, body.clone()).await;
        assert_eq!(st, 400, "{body}: {v:?}");
        assert!(v[0].to_string().contains(says), "{body}: {v:?}");
    }
    let (_, v) = run(&a, None, input("t-new", &[], resume("x", approve()))).await;
    assert_eq!(v.last().unwrap()["code"], "invalid_input", "{v:?}");
    let (_, v) = run(&a, None, input("t-empty", &[], Value::Null)).await;
    assert_eq!(v.last().unwrap()["code"], "invalid_input", "{v:?}");
    // A browser's cross-site post: refused before anything runs.
    let r = client()
        .post(a.url("/ag-ui"))
        .header("Origin", "http://evil.example")
        .json(&input("t-evil", &[("e1", "add evil 1")], Value::Null))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    // Client-side tools: said once, and the run goes on without them.
    let mut body = input("t-tools", &[("t1", "list resources")], Value::Null);
    body["tools"] = json!([{"name": "confirm", "description": "ask the user", "parameters": {}}]);
    let (_, v) = run(&a, None, body).await;
    let custom = of_type(&v, "CUSTOM");
    assert_eq!(custom.len(), 1, "{v:?}");
    assert_eq!(custom[0]["value"]["tools"], json!(["confirm"]));
    assert_eq!(finished(&v)["outcome"]["type"], "success", "{v:?}");
}

/// `@ag-ui/client`'s `HttpAgent` (1.0.0): a run that ends in the interrupt,
/// then its resume; every event validated by the client's own pipeline
/// and by `@ag-ui/core`'s models.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_http_agent_runs_through_an_interrupt() {
    let dir = tempfile::tempdir().unwrap();
    let a = Agent::serve(&config(dir.path(), "")).await;
    let url = a.url("/ag-ui");
    let out = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .arg(root().join("testdata/ag_ui_client.mjs"))
            .args([
                "drive",
                &url,
                "t-http-agent",
                "add lemons 7",
                r#"{"approved": true}"#,
            ])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{v}");
    assert_eq!(runs[0]["outcome"]["type"], "interrupt", "{v}");
    assert_eq!(runs[1]["outcome"]["type"], "success", "{v}");
    let uuid = runs[0]["outcome"]["interrupts"][0]["id"].as_str().unwrap();
    let events = runs[1]["events"].as_array().unwrap();
    let cid = conversation_of(events);
    let ap = approval(&a, None, &cid, uuid).await;
    assert_eq!(ap["status"], "executed", "{ap}");
    assert_eq!(ap["decided_via"], "ag-ui", "{ap}");
    // The client's messages now hold the call and its result.
    assert!(
        v["messages"].to_string().contains("resources_add answered"),
        "{v}"
    );
}

/// `kill -9` between the interrupt and its resume: after the restart the
/// resume finds the same approval, and the tool runs once.
#[tokio::test]
async fn an_interrupt_survives_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "");
    let mut a = Agent::start(&cfg);
    let history = [("k1", "add cherries 9")];
    let (_, first) = run(&a, None, input("t-kill", &history, Value::Null)).await;
    let uuid = interrupt(&first)["id"].as_str().unwrap().to_string();
    let cid = conversation_of(&first);
    a.kill9_in_place();
    drop(a);
    let a = Agent::start(&cfg);
    let (_, done) = run(
        &a,
        None,
        input("t-kill", &history, resume(&uuid, approve())),
    )
    .await;
    assert_eq!(finished(&done)["outcome"]["type"], "success", "{done:?}");
    assert_eq!(approval(&a, None, &cid, &uuid).await["status"], "executed");
    assert_eq!(ran(&a, None, &cid).await, 1);
}

/// A question from one of the agent's own tools (QUESTIONS.md; the MCP
/// Python SDK's question server, modern era (2026-07-28) over stdio) is an
/// `input_required` interrupt with its form's schema; the resume's payload
/// answers it through `ag-ui` and the tool goes on once.
#[tokio::test]
async fn a_tools_question_is_an_input_required_interrupt() {
    let dir = tempfile::tempdir().unwrap();
    let py = root().join(".tools/mcp-python/bin/python");
    assert!(
        py.exists(),
        "{} is missing: run scripts/setup.sh test",
        py.display()
    );
    let rules = dir.path().join("rules.yaml");
    std::fs::write(
        &rules,
        "rules:\n  - match: \"^deploy (\\\\S+)\"\n    steps:\n      - call: ask_env\n        args: {service: \"$1\"}\n      - reply: \"tool said: {result}\"\n",
    )
    .unwrap();
    let yaml = format!(
        "llm: {{model: \"scripted:{}\"}}\nmcp_servers:\n  - name: q\n    command: \"{}\"\n    args: [\"{}\", \"--era\", \"modern\"]\n    env: {{QUESTION_COUNT_LOG: \"{}\"}}\n",
        rules.display(),
        py.display(),
        root().join("testdata/question_mcp_server.py").display(),
        dir.path().join("count.log").display()
    );
    let a = Agent::serve(&write_config(dir.path(), &dir.path().join("data"), &yaml)).await;
    let history = [("q1", "deploy web")];
    // The Python server takes a moment to start: wait for its tools.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while support::tool(&support::get_json(&a, "/tools").await, "ask_env").is_none() {
        assert!(std::time::Instant::now() < deadline, "ask_env never listed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, first) = run(&a, None, input("t-question", &history, Value::Null)).await;
    let i = interrupt(&first);
    assert_eq!(i["reason"], "input_required", "{i}");
    assert_eq!(i["message"], "Which environment for web?");
    assert!(
        i["responseSchema"]["properties"]["env"]["enum"].is_array(),
        "{i}"
    );
    let uuid = i["id"].as_str().unwrap().to_string();

    // A payload that does not fit the schema: RUN_ERROR naming the field.
    let bad = resume(
        &uuid,
        json!({"env": "production", "replicas": 11, "confirm": true}),
    );
    let (_, refused) = run(&a, None, input("t-question", &history, bad)).await;
    let err = refused.last().unwrap();
    assert_eq!(err["type"], "RUN_ERROR", "{refused:?}");
    assert!(
        err["message"].as_str().unwrap().contains("replicas"),
        "{err}"
    );

    let good = resume(
        &uuid,
        json!({"env": "production", "replicas": 3, "confirm": true}),
    );
    let (_, done) = run(&a, None, input("t-question", &history, good)).await;
    assert_eq!(finished(&done)["outcome"]["type"], "success", "{done:?}");
    let text = of_type(&done, "TEXT_MESSAGE_CONTENT");
    assert_eq!(
        text.last().unwrap()["delta"],
        "tool said: deploying web to production (replicas=3)",
        "{done:?}"
    );
    let q = support::get_json(&a, &format!("/questions/{uuid}")).await;
    assert_eq!(q["status"], "answered", "{q}");
    assert_eq!(q["answered_via"], "ag-ui", "{q}");
    let log = std::fs::read_to_string(dir.path().join("count.log")).unwrap_or_default();
    assert_eq!(log.lines().collect::<Vec<_>>(), vec!["ask_env accept"]);
}

/// A → B → C over A2A: C's approval reaches A's AG-UI client as a
/// `tool_call` interrupt whose `metadata.chain` names the agents it came
/// through; the resume at A decides it and C runs the tool once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_agents_approval_carries_its_chain() {
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let rules = dirs[0].path().join("rules.yaml");
    std::fs::write(&rules, support::CHAIN_RULES).unwrap();
    let model = format!("llm: {{model: \"scripted:{}\"}}\n", rules.display());
    let serve = |i: usize, yaml: String| {
        let d = dirs[i].path().to_path_buf();
        async move { Agent::serve(&write_config(&d, &d.join("data"), &yaml)).await }
    };
    let c = serve(
        0,
        format!(
            "name: agent-c\nprompt: You are agent C.\n{model}mcp_servers:\n  - name: resources\n    command: {}\n    args: [--db, {}]\n",
            test_support::process::workspace_bin("mcp-resources"),
            dirs[0].path().join("r.db").display()
        ),
    )
    .await;
    let b = serve(
        1,
        format!("name: agent-b\nprompt: You are agent B.\n{model}a2a:\n  - {{name: c, url: \"{}/a2a\"}}\n", c.base),
    )
    .await;
    let a = serve(
        2,
        format!(
            "name: agent-a\nprompt: You are agent A.\n{model}a2a:\n  - {{name: b, url: \"{}\"}}\n",
            b.base
        ),
    )
    .await;
    let history = [("c1", "add plums 3")];
    let (_, first) = run(&a, None, input("t-chain", &history, Value::Null)).await;
    let i = interrupt(&first);
    assert_eq!(i["reason"], "tool_call", "{i}");
    let chain = i["metadata"]["chain"].as_array().expect("metadata.chain");
    assert!(chain.len() >= 2, "{i}");
    assert!(
        i["metadata"]["arguments"].to_string().contains("plums"),
        "{i}"
    );
    // The sub-agent's invocation, started and suspended on the interrupt.
    let sub = i["subagentRunId"].as_str().expect("subagentRunId");
    let started = of_type(&first, "SUBAGENT_STARTED");
    assert_eq!(started.len(), 1, "{first:?}");
    assert_eq!(started[0]["subagentRunId"], sub);
    assert_eq!(started[0]["parentToolCallId"], i["toolCallId"]);
    let suspended = of_type(&first, "SUBAGENT_FINISHED");
    assert_eq!(suspended[0]["outcome"]["type"], "suspended", "{first:?}");
    assert_eq!(suspended[0]["outcome"]["interruptIds"], json!([i["id"]]));
    let uuid = i["id"].as_str().unwrap().to_string();
    let (_, done) = run(
        &a,
        None,
        input("t-chain", &history, resume(&uuid, approve())),
    )
    .await;
    assert_eq!(finished(&done)["outcome"]["type"], "success", "{done:?}");
    let text = of_type(&done, "TEXT_MESSAGE_CONTENT");
    assert!(
        text.last().unwrap()["delta"]
            .as_str()
            .unwrap()
            .contains("A relayed"),
        "{done:?}"
    );
    let cid = conversation_of(&done);
    let ap = approval(&a, None, &cid, &uuid).await;
    assert_eq!(ap["decided_via"], "ag-ui", "{ap}");
    let stored = mcp_resources::db::ResourceDb::open(&dirs[0].path().join("r.db"))
        .unwrap()
        .list(None)
        .unwrap();
    assert_eq!(stored.len(), 1, "C ran the tool once");
}
