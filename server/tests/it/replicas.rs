//! Three agent processes on one PostgreSQL (REPLICAS.md): a client that
//! sends each request to the next replica in turn, one shared
//! `mcp-resources` over HTTP (so executions are counted), the fake Gemini
//! provider. Needs `STOPGO_TEST_DATABASE_URL` (`make unit` starts a
//! throwaway cluster).

use crate::support;

use serde_json::{Value, json};
use server::llm::scripted::Rules;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::Agent;
use test_support::fake_llm::FakeState;

const RULES: &str = r#"
rules:
  - match: "(?i)\\badd\\s+(\\w+)\\s+(-?\\d+)"
    steps:
      - call: resources_add
        args: {name: "$1", value: "$2"}
      - reply: "resources_add answered: {result}"
  - match: "(?i)\\blist\\b"
    steps:
      - call: resources_list
      - reply: "Here is what I found: {result}"
default: "hello from the fake model"
"#;

struct Replicas {
    _dir: tempfile::TempDir,
    fake: Arc<FakeState>,
    agents: Vec<Option<Agent>>,
    _resources: support::Process,
    db: std::path::PathBuf,
}

impl Replicas {
    async fn start(n: usize) -> Replicas {
        let fake = FakeState::new(Rules::parse(RULES).unwrap());
        let llm = test_support::fake_llm::spawn(fake.clone()).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("resources.db");
        let mut cmd = Command::new(test_support::process::workspace_bin("mcp-resources"));
        cmd.args(["--db", db.to_str().unwrap(), "--http", "127.0.0.1:0"])
            .env("RUST_LOG", "info");
        let resources = support::Process::server(cmd, "mcp-resources");
        let addr = resources.ready.clone();
        let url = test_support::postgres::fresh_database("r");
        let yaml = format!(
            "name: replica\nllm: {{model: gemini-2.5-flash}}\nmcp_servers:\n  - name: resources\n    url: http://{addr}\n\
             store:\n  backend: postgres\n  url: \"{url}\"\n  lease_seconds: 3\n"
        );
        let mut agents = Vec::new();
        for i in 0..n {
            let d = dir.path().join(format!("r{i}"));
            std::fs::create_dir_all(&d).unwrap();
            let cfg = support::write_config(&d, &d.join("data"), &yaml);
            agents.push(Some(Agent::start_with_env(
                &cfg,
                &[("GEMINI_API_KEY", "test-key"), ("GEMINI_BASE_URL", &llm)],
            )));
        }
        Replicas {
            _dir: dir,
            fake,
            agents,
            _resources: resources,
            db,
        }
    }

    fn at(&self, i: usize) -> &Agent {
        self.agents[i % self.agents.len()]
            .as_ref()
            .expect("that replica was killed")
    }

    /// How many resources the shared server holds (each add is one).
    fn resources(&self) -> usize {
        mcp_resources::db::ResourceDb::open(&self.db)
            .unwrap()
            .list(None)
            .unwrap()
            .len()
    }
}

async fn post(a: &Agent, path: &str, body: Value) -> (u16, Value) {
    support::post_json(a, path, body).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_replicas_share_conversations_approvals_and_events() {
    let r = Replicas::start(3).await;

    // Created on 1, read on 2, approved on 3, executed once.
    let (status, asked) = post(r.at(0), "/conversations", json!({"message": "add pears 4"})).await;
    assert_eq!(status, 201, "{asked}");
    let id = asked["conversation"]["id"].as_str().unwrap().to_string();
    let uuid = support::waiting_uuid(&asked);
    let read = support::get_json(r.at(1), &format!("/conversations/{id}")).await;
    assert_eq!(read["conversation"]["status"], "waiting_approval", "{read}");
    assert_eq!(
        read["conversation"]["pending_approval"]["uuid"],
        uuid.as_str()
    );
    // A new message on a conversation that waits: the same 409 on any replica.
    let (status, _) = post(
        r.at(2),
        &format!("/conversations/{id}/messages"),
        json!({"message": "hi"}),
    )
    .await;
    assert_eq!(status, 409);
    let (status, decided) = post(
        r.at(2),
        &format!("/approvals/{uuid}"),
        json!({"approved": true}),
    )
    .await;
    assert_eq!(status, 200, "{decided}");
    assert!(
        decided["result"]["response"]
            .as_str()
            .unwrap()
            .contains("resources_add answered"),
        "{decided}"
    );
    assert_eq!(r.resources(), 1);
    // Decided once: a second decision on another replica is a 409.
    let (status, _) = post(
        r.at(0),
        &format!("/approvals/{uuid}"),
        json!({"approved": true}),
    )
    .await;
    assert_eq!(status, 409);

    // 16 concurrent approvals of one uuid spread over the three: one run.
    let (_, asked) = post(r.at(1), "/conversations", json!({"message": "add plums 7"})).await;
    let uuid = support::waiting_uuid(&asked);
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let base = r.at(i).base.clone();
            let uuid = uuid.clone();
            tokio::spawn(async move {
                support::client()
                    .post(format!("{base}/approvals/{uuid}"))
                    .json(&json!({"approved": true}))
                    .send()
                    .await
                    .unwrap()
                    .status()
                    .as_u16()
            })
        })
        .collect();
    let mut codes = Vec::new();
    for t in tasks {
        codes.push(t.await.unwrap());
    }
    assert_eq!(codes.iter().filter(|c| **c == 200).count(), 1, "{codes:?}");
    assert!(codes.iter().all(|c| *c == 200 || *c == 409), "{codes:?}");
    assert_eq!(r.resources(), 2, "executed exactly once");

    // An SSE subscriber on 2 sees every event of a turn running on 1, in
    // order, and resumes elsewhere with Last-Event-ID.
    let sse = support::client()
        .get(r.at(1).url("/events"))
        .send()
        .await
        .unwrap();
    let mut stream = sse;
    let (_, asked) = post(r.at(0), "/conversations", json!({"message": "add figs 3"})).await;
    let id = asked["conversation"]["id"].as_str().unwrap().to_string();
    let uuid = support::waiting_uuid(&asked);
    post(
        r.at(0),
        &format!("/approvals/{uuid}"),
        json!({"approved": true}),
    )
    .await;
    let events = read_events(&mut stream, &id).await;
    let kinds: Vec<&str> = events.iter().map(|(_, k)| k.as_str()).collect();
    for want in [
        "message_added",
        "approval_requested",
        "approval_decided",
        "tool_call_started",
        "tool_call_finished",
    ] {
        assert!(kinds.contains(&want), "{want} missing from {kinds:?}");
    }
    let ids: Vec<u64> = events
        .iter()
        .map(|(i, _)| i.trim_start_matches("p-").parse().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "in order: {ids:?}");
    let resumed = support::client()
        .get(r.at(2).url("/events"))
        .header("Last-Event-ID", &events[0].0)
        .send()
        .await
        .unwrap();
    let mut stream = resumed;
    let again = read_events(&mut stream, &id).await;
    assert_eq!(
        again.first().map(|e| e.0.clone()),
        events.get(1).map(|e| e.0.clone()),
        "resumed right after the last id seen"
    );

    // A turn running on 1 is busy for 2 as well.
    r.fake.set_latency(Duration::from_millis(1500));
    let (_, c) = post(r.at(0), "/conversations", json!({})).await;
    let id = c["conversation"]["id"].as_str().unwrap().to_string();
    let slow = {
        let base = r.at(0).base.clone();
        let id = id.clone();
        tokio::spawn(async move {
            support::client()
                .post(format!("{base}/conversations/{id}/messages"))
                .json(&json!({"message": "list"}))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        })
    };
    // 409 is the answer once 0's turn holds the conversation: the store
    // says a turn runs (the task is `working` as 1 reads it), which 0
    // writes under the conversation's lease and clears before giving it
    // back; the model then still takes its 1.5 s, twice.
    until_working(r.at(1), &id).await;
    let (status, busy) = post(
        r.at(1),
        &format!("/conversations/{id}/messages"),
        json!({"message": "list"}),
    )
    .await;
    assert_eq!(status, 409, "{busy}");
    assert_eq!(slow.await.unwrap(), 200);
    r.fake.set_latency(Duration::ZERO);

    // Every replica appended to one audit chain, and it verifies.
    let out = Command::new(env!("CARGO_BIN_EXE_agent"))
        .args(["audit", "verify", "--config"])
        .arg(&r.at(1).config_path)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("audit trail intact"), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replica_killed_mid_turn_is_settled_by_another_after_its_lease() {
    let mut r = Replicas::start(2).await;
    // Approved on 0 while the model is slow: the call runs, then 0 dies
    // waiting for the model's next step.
    let (_, asked) = post(r.at(0), "/conversations", json!({"message": "add kiwis 2"})).await;
    let id = asked["conversation"]["id"].as_str().unwrap().to_string();
    let uuid = support::waiting_uuid(&asked);
    r.fake.set_latency(Duration::from_secs(30));
    let decide = {
        let base = r.at(0).base.clone();
        let uuid = uuid.clone();
        tokio::spawn(async move {
            let _ = support::client()
                .post(format!("{base}/approvals/{uuid}"))
                .json(&json!({"approved": true}))
                .timeout(Duration::from_secs(60))
                .send()
                .await;
        })
    };
    // Killed once the call's result is committed and the turn waits on
    // the model (killed between the call and its commit, the approval
    // would rightly be in_doubt: the store suite covers that rule).
    let deadline = Instant::now() + Duration::from_secs(10);
    while approval_of(r.at(1), &id, &uuid).await["status"] != "executed" {
        assert!(Instant::now() < deadline, "the approved call never ran");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    r.agents[0].take().unwrap().kill9();
    decide.abort();
    r.fake.set_latency(Duration::ZERO);
    // Replica 1's sweeper takes the turn over once the lease (3 s) expires.
    let deadline = Instant::now() + Duration::from_secs(15);
    let settled = loop {
        let c = support::get_json(r.at(1), &format!("/conversations/{id}")).await["conversation"]
            .clone();
        let last = c["messages"].as_array().unwrap().last().unwrap().clone();
        if last["content"]
            .as_str()
            .is_some_and(|t| t.contains("interrupted"))
        {
            break c;
        }
        assert!(Instant::now() < deadline, "never settled: {c}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(r.resources(), 1, "the call ran once, and not again");
    let approval = approval_of(r.at(1), &id, &uuid).await;
    assert_eq!(approval["status"], "executed", "{approval}");
    assert!(settled["pending_approval"].is_null());
    // The conversation is usable again from the survivor.
    let (status, next) = post(
        r.at(1),
        &format!("/conversations/{id}/messages"),
        json!({"message": "list"}),
    )
    .await;
    assert_eq!(status, 200, "{next}");
    assert!(
        r.at(1)
            .log()
            .contains("took over a turn whose replica stopped"),
        "{}",
        r.at(1).log()
    );
}

/// Reads SSE events until `conversation`'s turn has run its tool and
/// stopped: (id, kind) of that conversation's events, in arrival order.
async fn read_events(resp: &mut reqwest::Response, conversation: &str) -> Vec<(String, String)> {
    let mut buf = String::new();
    let mut out: Vec<(String, String)> = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let chunk = tokio::time::timeout_at(deadline, resp.chunk())
            .await
            .unwrap_or_else(|_| panic!("the events arrive; so far {out:?}"))
            .unwrap()
            .expect("the stream stays open");
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buf.find("\n\n") {
            let block: String = buf.drain(..end + 2).collect();
            let mut id = String::new();
            let mut data = String::new();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id:") {
                    id = v.trim().to_string();
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.trim());
                }
            }
            let Ok(e) = serde_json::from_str::<Value>(&data) else {
                continue;
            };
            if e["conversation_id"] != conversation {
                continue;
            }
            let kind = e["kind"].as_str().unwrap_or("").to_string();
            out.push((id, kind.clone()));
            let ran = out.iter().any(|(_, k)| k == "tool_call_finished");
            if ran && kind == "status_changed" && e["running"] == false {
                return out;
            }
        }
    }
}

/// `method` with `params` over A2A 1.0's JSON-RPC on `a`: the answer.
async fn a2a_v1(a: &Agent, method: &str, params: Value) -> Value {
    support::client()
        .post(a.url("/a2a"))
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// `CancelTask` over A2A 1.0.
async fn cancel_task(a: &Agent, id: &str) -> Value {
    a2a_v1(a, "CancelTask", json!({"id": id})).await
}

/// `GetTask` over A2A 1.0 on `a`: the task's state.
async fn task_state(a: &Agent, id: &str) -> String {
    let got = a2a_v1(a, "GetTask", json!({"id": id})).await;
    got["result"]["status"]["state"]
        .as_str()
        .unwrap_or_else(|| panic!("GetTask {id}: {got}"))
        .to_string()
}

/// Waits until `a` reads conversation `id`'s turn as running (its task
/// `working`): the store's flag, set under the conversation's lease.
async fn until_working(a: &Agent, id: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while task_state(a, id).await != "TASK_STATE_WORKING" {
        assert!(Instant::now() < deadline, "the turn on {id} never ran");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Starts a turn on `a` that waits on the (slow) model; its request.
async fn slow_turn(r: &Replicas, a: usize) -> (String, tokio::task::JoinHandle<u16>) {
    let (_, c) = post(r.at(a), "/conversations", json!({})).await;
    let id = c["conversation"]["id"].as_str().unwrap().to_string();
    let base = r.at(a).base.clone();
    let turn = {
        let id = id.clone();
        tokio::spawn(async move {
            support::client()
                .post(format!("{base}/conversations/{id}/messages"))
                .json(&json!({"message": "list"}))
                .timeout(Duration::from_secs(60))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        })
    };
    // Running once its message is stored (the model is asked right after).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let c = support::get_json(r.at(a), &format!("/conversations/{id}")).await;
        if c["conversation"]["messages"]
            .as_array()
            .is_some_and(|m| !m.is_empty())
        {
            break;
        }
        assert!(Instant::now() < deadline, "the turn never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    (id, turn)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cancel_on_any_replica_stops_a_running_turn() {
    let r = Replicas::start(2).await;
    r.fake.set_latency(Duration::from_secs(30));
    for (runs_on, cancel_on) in [(0, 1), (0, 0)] {
        let (id, turn) = slow_turn(&r, runs_on).await;
        let started = Instant::now();
        let cancelled = cancel_task(r.at(cancel_on), &id).await;
        assert_eq!(
            cancelled["result"]["status"]["state"], "TASK_STATE_CANCELED",
            "{cancelled}"
        );
        // Within a heartbeat (1 s here) and a bit, not the model's 30 s.
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(
            turn.await.unwrap(),
            409,
            "the turn's caller hears it was cancelled"
        );
        let c = support::get_json(r.at(1 - cancel_on), &format!("/conversations/{id}")).await;
        assert_eq!(c["conversation"]["status"], "cancelled", "{c}");
        // The conversation opens again with a new message.
        r.fake.set_latency(Duration::ZERO);
        let (status, _) = post(
            r.at(runs_on),
            &format!("/conversations/{id}/messages"),
            json!({"message": "hello"}),
        )
        .await;
        assert_eq!(status, 200);
        r.fake.set_latency(Duration::from_secs(30));
    }
    r.fake.set_latency(Duration::ZERO);
}

/// The approval `uuid` as conversation `id`'s messages show it.
async fn approval_of(a: &Agent, id: &str, uuid: &str) -> Value {
    let c = support::get_json(a, &format!("/conversations/{id}")).await;
    c["conversation"]["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|m| {
            (m["tool_call"]["approval"]["uuid"] == uuid).then(|| m["tool_call"]["approval"].clone())
        })
        .unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a2a_subscribe_on_one_replica_follows_a_task_running_on_another() {
    let r = Replicas::start(3).await;
    r.fake.set_latency(Duration::from_millis(1500));
    let (id, turn) = slow_turn(&r, 0).await;
    // GetTask on another replica: working, not failed.
    let got: Value = support::client()
        .post(r.at(1).url("/a2a"))
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": id}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        got["result"]["status"]["state"], "TASK_STATE_WORKING",
        "{got}"
    );
    let listed: Value = support::client()
        .post(r.at(1).url("/a2a"))
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "ListTasks",
            "params": {"status": "TASK_STATE_WORKING"}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> = listed["result"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["id"].as_str())
        .collect();
    assert_eq!(ids, [id.as_str()], "{listed}");
    let resp = support::client()
        .post(r.at(2).url("/a2a"))
        .header("A2A-Version", "1.0")
        .timeout(Duration::from_secs(20))
        .json(
            &json!({"jsonrpc": "2.0", "id": 9, "method": "SubscribeToTask", "params": {"id": id}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let text = tokio::time::timeout(Duration::from_secs(15), resp.text())
        .await
        .expect("the stream ends at the terminal state")
        .unwrap();
    let events: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert_eq!(
        events[0]["result"]["task"]["status"]["state"], "TASK_STATE_WORKING",
        "{text}"
    );
    assert_eq!(
        events.last().unwrap()["result"]["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED",
        "{text}"
    );
    assert_eq!(turn.await.unwrap(), 200);
    r.fake.set_latency(Duration::ZERO);
}

/// REACH.md §3: a grant made on one replica spares the next identical call
/// on another at once, and a revocation on that one makes the first ask
/// again (its in-memory index still holds the grant; the store says no).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_grant_made_on_one_replica_holds_on_another_until_revoked() {
    let r = Replicas::start(2).await;
    let (status, body) = post(
        r.at(0),
        "/conversations",
        json!({"message": "add apples 5"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let id = body["conversation"]["id"].as_str().unwrap().to_string();
    let uuid = support::waiting_uuid(&body);
    let (status, body) = post(
        r.at(0),
        &format!("/approvals/{uuid}"),
        json!({"approved": true, "grant": {"match": ["/name"]}}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let before = r.resources();
    let (status, body) = post(
        r.at(1),
        &format!("/conversations/{id}/messages"),
        json!({"message": "add apples 6"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["result"]["waiting_approval"], false,
        "granted on replica 0, used on 1: {body}"
    );
    assert_eq!(r.resources(), before + 1, "the call ran once");
    let grants = support::get_json(r.at(0), "/grants").await;
    let gid = grants["grants"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(grants["grants"][0]["uses"], 1, "{grants}");
    // Revoked on replica 1: replica 0, which made it, asks again.
    let resp = support::client()
        .delete(r.at(1).url(&format!("/grants/{gid}")))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let (status, body) = post(
        r.at(0),
        &format!("/conversations/{id}/messages"),
        json!({"message": "add apples 7"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["result"]["waiting_approval"], true,
        "revoked on replica 1: {body}"
    );
    assert_eq!(r.resources(), before + 1);
}
