//! Who may call each A2A method, on each binding (JSON-RPC, HTTP+JSON,
//! gRPC), against the real agent in auth mode `tokens`: one table, from
//! AUTH.md §2, of every method for a viewer, the task's own requester,
//! another requester, an approver and an admin. A refusal is the
//! binding's permission error (HTTP 403, gRPC `PERMISSION_DENIED`) naming
//! the caller, and what it would have changed is unchanged: a task not
//! cancelled, a task's push notification configs neither added to nor
//! deleted (setting or deleting them is the task's own requester's or an
//! admin's, as cancelling is; reading them is any viewer's).

use crate::support;

use serde_json::{Value, json};
use std::time::Duration;
use support::{Agent, client, resources_yaml, write_config};
use test_support::grpc::{self, SendMessageResponse, TaskIdRequest, say, unary};
use tonic::Code;
use tonic::transport::Channel;

const VIEWER: &str = "vera-viewer-token-012345";
const BOB: &str = "bob-requester-token-0123";
const CAROL: &str = "carol-requester-token-01";
const ALICE: &str = "alice-approver-token-012";
const OPS: &str = "ops-admin-token-012345678";

/// Each caller's name and token. Bob starts every task the table acts on.
const WHO: [(&str, &str); 5] = [
    ("vera", VIEWER),
    ("bob", BOB),
    ("carol", CAROL),
    ("alice", ALICE),
    ("ops", OPS),
];

/// Where push configs point (never reached: the test is about who may
/// make them).
const HOOK: &str = "http://127.0.0.1:9/hook";

/// The A2A methods; `*03` are JSON-RPC's 0.3 names of the same operation.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    SendMsg,
    Stream,
    GetTask,
    ListTasks,
    Cancel,
    Subscribe,
    SetPush,
    GetPush,
    ListPush,
    DeletePush,
    SetPush03,
    DeletePush03,
    Card,
}

use Op::*;

const ALL: [Op; 11] = [
    SendMsg, Stream, GetTask, ListTasks, Cancel, Subscribe, SetPush, GetPush, ListPush, DeletePush,
    Card,
];

/// AUTH.md §2 for a task bob started: viewers read everything; requesters
/// send, and cancel or set and delete the push configs of their own
/// tasks; an approver is a viewer who decides (a plain message is no
/// decision); an admin does everything.
fn allowed(op: Op, who: &str) -> bool {
    match op {
        GetTask | ListTasks | Subscribe | GetPush | ListPush | Card => true,
        SendMsg | Stream => matches!(who, "bob" | "carol" | "ops"),
        Cancel | SetPush | DeletePush | SetPush03 | DeletePush03 => matches!(who, "bob" | "ops"),
    }
}

/// What a call came to.
#[derive(Debug)]
enum Outcome {
    Allowed,
    /// The binding's permission error, with its message.
    Denied(String),
    Other(String),
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Allowed => write!(f, "allowed"),
            Outcome::Denied(m) => write!(f, "denied: {m}"),
            Outcome::Other(m) => write!(f, "neither allowed nor denied: {m}"),
        }
    }
}

/// One binding: calls `op` as `token` on `task` (whose config `config`
/// exists).
trait Binding {
    async fn call(&self, op: Op, token: &str, task: &str, config: &str) -> Outcome;
}

async fn serve(dir: &std::path::Path) -> Agent {
    let yaml = format!(
        r#"{base}a2a_push_allow_private: true
auth:
  mode: tokens
  tokens:
    - {{name: vera, token: "${{VIEWER_T}}", roles: [viewer]}}
    - {{name: bob, token: "${{BOB_T}}", roles: [requester]}}
    - {{name: carol, token: "${{CAROL_T}}", roles: [requester]}}
    - {{name: alice, token: "${{ALICE_T}}", roles: [approver]}}
    - {{name: ops, token: "${{OPS_T}}", roles: [admin]}}
"#,
        base = resources_yaml("roles-test", dir)
    );
    let env = [
        ("VIEWER_T", VIEWER),
        ("BOB_T", BOB),
        ("CAROL_T", CAROL),
        ("ALICE_T", ALICE),
        ("OPS_T", OPS),
    ];
    Agent::serve_with_env(&write_config(dir, &dir.join("data"), &yaml), &env).await
}

/// A JSON-RPC 1.0 call (0.3 when the method has a slash) as `token`.
async fn rpc(a: &Agent, token: &str, method: &str, params: Value) -> (u16, Value) {
    let v = if method.contains('/') { "0.3" } else { "1.0" };
    let r = client()
        .post(a.url("/a2a"))
        .header("A2A-Version", v)
        .bearer_auth(token)
        .timeout(Duration::from_secs(30))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

fn message(text: &str) -> Value {
    json!({"message": {
        "messageId": uuid::Uuid::new_v4().to_string(),
        "role": "ROLE_USER",
        "parts": [{"text": text}]
    }})
}

/// A task bob started that waits on an approval (so it can still be
/// cancelled and followed), with one push config `keep`.
async fn bobs_task(a: &Agent) -> String {
    let (s, r) = rpc(a, BOB, "SendMessage", message("add apples 5")).await;
    let task = &r["result"]["task"];
    assert_eq!(s, 200, "{r}");
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{r}");
    let id = task["id"].as_str().unwrap().to_string();
    let p = json!({"taskId": id, "id": "keep", "url": HOOK});
    let (s, r) = rpc(a, BOB, "CreateTaskPushNotificationConfig", p).await;
    assert_eq!(s, 200, "{r}");
    id
}

/// What a refused call must leave as it was: the task's push configs
/// (ids, sorted) and state, and how many tasks there are, as an admin
/// reads them.
async fn snapshot(a: &Agent, task: &str) -> (Vec<String>, Value, Value) {
    let (_, r) = rpc(
        a,
        OPS,
        "ListTaskPushNotificationConfigs",
        json!({"taskId": task}),
    )
    .await;
    let mut ids: Vec<String> = r["result"]["configs"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    let (_, t) = rpc(a, OPS, "GetTask", json!({"id": task})).await;
    let (_, all) = rpc(a, OPS, "ListTasks", json!({"pageSize": 1})).await;
    let state = t["result"]["status"]["state"].clone();
    (ids, state, all["result"]["totalSize"].clone())
}

/// Runs the table on one binding: each method as each caller, on a task
/// of bob's (a fresh one for the methods that change it); a refusal must
/// name the caller and change nothing.
async fn table(a: &Agent, b: &impl Binding, ops: &[Op]) {
    let shared = bobs_task(a).await;
    let mut wrong = Vec::new();
    for &op in ops {
        for (who, token) in WHO {
            let changes = matches!(op, Cancel | SetPush | DeletePush | SetPush03 | DeletePush03);
            let task = if changes {
                bobs_task(a).await
            } else {
                shared.clone()
            };
            let want = allowed(op, who);
            let before = if want {
                None
            } else {
                Some(snapshot(a, &task).await)
            };
            let out = b.call(op, token, &task, "keep").await;
            match (want, &out) {
                (true, Outcome::Allowed) => {}
                (false, Outcome::Denied(m)) if m.contains(who) => {
                    let after = Some(snapshot(a, &task).await);
                    if before != after {
                        wrong.push(format!(
                            "{op:?} as {who}: refused, but something changed: {before:?} -> {after:?}"
                        ));
                    }
                }
                (want, got) => wrong.push(format!(
                    "{op:?} as {who}: expected {}, got {got}",
                    if want {
                        "allowed"
                    } else {
                        "denied naming them"
                    }
                )),
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

struct JsonRpc<'a>(&'a Agent);

impl Binding for JsonRpc<'_> {
    async fn call(&self, op: Op, token: &str, task: &str, config: &str) -> Outcome {
        let (method, params) = match op {
            SendMsg => ("SendMessage", message("list resources")),
            Stream => ("SendStreamingMessage", message("list resources")),
            GetTask => ("GetTask", json!({"id": task})),
            ListTasks => ("ListTasks", json!({})),
            Cancel => ("CancelTask", json!({"id": task})),
            Subscribe => ("SubscribeToTask", json!({"id": task})),
            SetPush => (
                "CreateTaskPushNotificationConfig",
                json!({"taskId": task, "id": "new", "url": HOOK}),
            ),
            GetPush => (
                "GetTaskPushNotificationConfig",
                json!({"taskId": task, "id": config}),
            ),
            ListPush => ("ListTaskPushNotificationConfigs", json!({"taskId": task})),
            DeletePush => (
                "DeleteTaskPushNotificationConfig",
                json!({"taskId": task, "id": config}),
            ),
            SetPush03 => (
                "tasks/pushNotificationConfig/set",
                json!({"taskId": task, "pushNotificationConfig": {"id": "new", "url": HOOK}}),
            ),
            DeletePush03 => (
                "tasks/pushNotificationConfig/delete",
                json!({"id": task, "pushNotificationConfigId": config}),
            ),
            Card => ("GetExtendedAgentCard", json!({})),
        };
        let v = if method.contains('/') { "0.3" } else { "1.0" };
        let r = client()
            .post(self.0.url("/a2a"))
            .header("A2A-Version", v)
            .bearer_auth(token)
            .timeout(Duration::from_secs(30))
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let sse = r
            .headers()
            .get("content-type")
            .is_some_and(|c| c.as_bytes().starts_with(b"text/event-stream"));
        if status == 200 && sse {
            // A stream opened: its first frame is a result.
            let first = first_event(r).await;
            return match first.get("result") {
                Some(_) => Outcome::Allowed,
                None => Outcome::Other(first.to_string()),
            };
        }
        let body: Value = r.json().await.unwrap_or(Value::Null);
        match (status, body.get("result")) {
            (200, Some(_)) => Outcome::Allowed,
            (403, _) => Outcome::Denied(body["error"]["message"].to_string()),
            _ => Outcome::Other(format!("{status} {body}")),
        }
    }
}

/// The first `data:` event of an SSE response, as JSON.
async fn first_event(mut r: reqwest::Response) -> Value {
    let mut text = String::new();
    loop {
        if let Some(data) = text
            .split("\n\n")
            .next()
            .filter(|_| text.contains("\n\n"))
            .and_then(|e| e.lines().find_map(|l| l.strip_prefix("data:")))
        {
            return serde_json::from_str(data.trim()).unwrap_or(Value::Null);
        }
        match tokio::time::timeout(Duration::from_secs(20), r.chunk()).await {
            Ok(Ok(Some(c))) => text.push_str(&String::from_utf8_lossy(&c)),
            _ => return json!({"no event": text}),
        }
    }
}

struct HttpJson<'a>(&'a Agent);

impl Binding for HttpJson<'_> {
    async fn call(&self, op: Op, token: &str, task: &str, config: &str) -> Outcome {
        use reqwest::Method;
        let pushes = format!("/a2a/tasks/{task}/pushNotificationConfigs");
        let (method, path, body) = match op {
            SendMsg => (
                Method::POST,
                "/a2a/message:send".into(),
                Some(message("list resources")),
            ),
            Stream => (
                Method::POST,
                "/a2a/message:stream".into(),
                Some(message("list resources")),
            ),
            GetTask => (Method::GET, format!("/a2a/tasks/{task}"), None),
            ListTasks => (Method::GET, "/a2a/tasks".into(), None),
            Cancel => (
                Method::POST,
                format!("/a2a/tasks/{task}:cancel"),
                Some(json!({})),
            ),
            Subscribe => (Method::GET, format!("/a2a/tasks/{task}:subscribe"), None),
            SetPush => (
                Method::POST,
                pushes,
                Some(json!({"id": "new", "url": HOOK})),
            ),
            GetPush => (Method::GET, format!("{pushes}/{config}"), None),
            ListPush => (Method::GET, pushes, None),
            DeletePush => (Method::DELETE, format!("{pushes}/{config}"), None),
            Card => (Method::GET, "/a2a/extendedAgentCard".into(), None),
            SetPush03 | DeletePush03 => unreachable!("JSON-RPC only"),
        };
        let mut req = client()
            .request(method, self.0.url(&path))
            .header("A2A-Version", "1.0")
            .bearer_auth(token)
            .timeout(Duration::from_secs(30));
        if let Some(b) = body {
            req = req.json(&b);
        }
        let r = req.send().await.unwrap();
        let status = r.status().as_u16();
        let sse = r
            .headers()
            .get("content-type")
            .is_some_and(|c| c.as_bytes().starts_with(b"text/event-stream"));
        if status == 200 && sse {
            let first = first_event(r).await;
            return match first.get("task").or_else(|| first.get("statusUpdate")) {
                Some(_) => Outcome::Allowed,
                None => Outcome::Other(first.to_string()),
            };
        }
        let body: Value = r.json().await.unwrap_or(Value::Null);
        match status {
            200 => Outcome::Allowed,
            403 => Outcome::Denied(body["error"]["message"].to_string()),
            _ => Outcome::Other(format!("{status} {body}")),
        }
    }
}

/// Any message: protobuf skips the fields a check does not read.
#[derive(Clone, PartialEq, prost::Message)]
struct Anything {}

#[derive(Clone, PartialEq, prost::Message)]
struct PushConfig {
    #[prost(string, tag = "2")]
    id: String,
    #[prost(string, tag = "3")]
    task_id: String,
    #[prost(string, tag = "4")]
    url: String,
}

/// `Get`/`DeleteTaskPushNotificationConfigRequest`.
#[derive(Clone, PartialEq, prost::Message)]
struct PushConfigId {
    #[prost(string, tag = "2")]
    task_id: String,
    #[prost(string, tag = "3")]
    id: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct ListPushRequest {
    #[prost(string, tag = "1")]
    task_id: String,
}

/// A server-streaming call, to its first frame.
async fn streaming<Q>(ch: &Channel, method: &str, token: &str, msg: Q) -> Result<(), tonic::Status>
where
    Q: prost::Message + Send + Sync + 'static,
{
    let mut g = tonic::client::Grpc::new(ch.clone());
    g.ready()
        .await
        .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
    let mut req = tonic::Request::new(msg);
    let bearer = format!("Bearer {token}").parse().expect("an ASCII token");
    req.metadata_mut().insert("authorization", bearer);
    let path = format!("/lf.a2a.v1.A2AService/{method}").parse().unwrap();
    let codec = tonic_prost::ProstCodec::<Q, Anything>::default();
    let mut frames = g.server_streaming(req, path, codec).await?.into_inner();
    match tokio::time::timeout(Duration::from_secs(20), frames.message()).await {
        Ok(Ok(Some(_))) => Ok(()),
        Ok(Ok(None)) => Err(tonic::Status::internal("the stream ended without a frame")),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(tonic::Status::deadline_exceeded("no first frame")),
    }
}

struct Grpc(Channel);

impl Binding for Grpc {
    async fn call(&self, op: Op, token: &str, task: &str, config: &str) -> Outcome {
        let ch = &self.0;
        let t = Some(token);
        let id = || TaskIdRequest { id: task.into() };
        let pc = || PushConfigId {
            task_id: task.into(),
            id: config.into(),
        };
        let r: Result<(), tonic::Status> = match op {
            SendMsg => unary::<_, SendMessageResponse>(
                ch,
                "SendMessage",
                t,
                &[],
                say("list resources", None),
            )
            .await
            .map(drop),
            Stream => {
                streaming(
                    ch,
                    "SendStreamingMessage",
                    token,
                    say("list resources", None),
                )
                .await
            }
            GetTask => unary::<_, Anything>(ch, "GetTask", t, &[], id())
                .await
                .map(drop),
            ListTasks => unary::<_, Anything>(ch, "ListTasks", t, &[], Anything {})
                .await
                .map(drop),
            Cancel => unary::<_, Anything>(ch, "CancelTask", t, &[], id())
                .await
                .map(drop),
            Subscribe => streaming(ch, "SubscribeToTask", token, id()).await,
            SetPush => {
                let c = PushConfig {
                    id: "new".into(),
                    task_id: task.into(),
                    url: HOOK.into(),
                };
                unary::<_, Anything>(ch, "CreateTaskPushNotificationConfig", t, &[], c)
                    .await
                    .map(drop)
            }
            GetPush => unary::<_, Anything>(ch, "GetTaskPushNotificationConfig", t, &[], pc())
                .await
                .map(drop),
            ListPush => {
                let q = ListPushRequest {
                    task_id: task.into(),
                };
                unary::<_, Anything>(ch, "ListTaskPushNotificationConfigs", t, &[], q)
                    .await
                    .map(drop)
            }
            DeletePush => {
                unary::<_, Anything>(ch, "DeleteTaskPushNotificationConfig", t, &[], pc())
                    .await
                    .map(drop)
            }
            Card => unary::<_, Anything>(ch, "GetExtendedAgentCard", t, &[], Anything {})
                .await
                .map(drop),
            SetPush03 | DeletePush03 => unreachable!("JSON-RPC only"),
        };
        match r {
            Ok(()) => Outcome::Allowed,
            Err(e) if e.code() == Code::PermissionDenied => Outcome::Denied(e.message().into()),
            Err(e) => Outcome::Other(format!("{e:?}")),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_rpc_methods_follow_the_roles_table() {
    let dir = tempfile::tempdir().unwrap();
    let a = serve(dir.path()).await;
    let mut ops = ALL.to_vec();
    ops.extend([SetPush03, DeletePush03]);
    table(&a, &JsonRpc(&a), &ops).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_json_methods_follow_the_roles_table() {
    let dir = tempfile::tempdir().unwrap();
    let a = serve(dir.path()).await;
    table(&a, &HttpJson(&a), &ALL).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_methods_follow_the_roles_table() {
    let dir = tempfile::tempdir().unwrap();
    let a = serve(dir.path()).await;
    let ch = grpc::channel(&a.base).await;
    table(&a, &Grpc(ch), &ALL).await;
}
