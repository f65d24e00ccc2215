//! A2A's gRPC binding against the real agent binary, with a bare gRPC
//! client (tonic over HTTP/2 to the agent's own port, messages declared
//! here with only the fields each check reads: protobuf skips the rest):
//! the same authorization as the JSON bindings (AUTH.md: the bearer in
//! `authorization` metadata, roles per method, separation of duties on a
//! continuation), the spec's status codes with their `ErrorInfo`, bad
//! input, and HTTP/1.1 beside it on the same port.

mod support;

use serde_json::{Value, json};
use support::{Agent, client, resources_yaml, write_config};
use tonic::Code;
use tonic::metadata::MetadataValue;
use tonic::transport::Channel;

const VIEWER: &str = "viewer-token-0123456789";
const BOB: &str = "bob-requester-token-0123";
const ALICE: &str = "alice-approver-token-012";
const CAROL: &str = "carol-both-roles-token-0";
const OPS: &str = "ops-admin-token-012345678";

const ENV: [(&str, &str); 5] = [
    ("OPS_T", OPS),
    ("VIEWER_T", VIEWER),
    ("BOB_T", BOB),
    ("ALICE_T", ALICE),
    ("CAROL_T", CAROL),
];

#[derive(Clone, PartialEq, prost::Message)]
struct Part {
    #[prost(string, optional, tag = "1")]
    text: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Message {
    #[prost(string, tag = "1")]
    message_id: String,
    #[prost(string, tag = "3")]
    task_id: String,
    #[prost(int32, tag = "4")]
    role: i32,
    #[prost(message, repeated, tag = "5")]
    parts: Vec<Part>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct SendMessageRequest {
    #[prost(message, optional, tag = "2")]
    message: Option<Message>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct TaskStatus {
    #[prost(int32, tag = "1")]
    state: i32,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Task {
    #[prost(string, tag = "1")]
    id: String,
    #[prost(message, optional, tag = "3")]
    status: Option<TaskStatus>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct SendMessageResponse {
    #[prost(message, optional, tag = "1")]
    task: Option<Task>,
    #[prost(message, optional, tag = "2")]
    message: Option<Message>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct GetTaskRequest {
    #[prost(string, tag = "2")]
    id: String,
}

const COMPLETED: i32 = 3;
const CANCELED: i32 = 5;
const INPUT_REQUIRED: i32 = 6;

fn start(dir: &std::path::Path) -> Agent {
    let yaml = format!(
        r#"{base}auth:
  mode: tokens
  tokens:
    - {{name: vera, token: "${{VIEWER_T}}", roles: [viewer]}}
    - {{name: bob, token: "${{BOB_T}}", roles: [requester]}}
    - {{name: alice, token: "${{ALICE_T}}", roles: [approver]}}
    - {{name: carol, token: "${{CAROL_T}}", roles: [requester, approver]}}
    - {{name: ops, token: "${{OPS_T}}", roles: [admin]}}
"#,
        base = resources_yaml("grpc-test", dir)
    );
    Agent::start_with_env(&write_config(dir, &dir.join("data"), &yaml), &ENV)
}

async fn channel(a: &Agent) -> Channel {
    Channel::from_shared(a.base.clone())
        .unwrap()
        .connect()
        .await
        .unwrap()
}

/// One unary call of `A2AService` as `token`, with extra metadata.
async fn unary<Q, R>(
    ch: &Channel,
    method: &'static str,
    token: Option<&str>,
    meta: &[(&'static str, &str)],
    msg: Q,
) -> Result<R, tonic::Status>
where
    Q: prost::Message + Send + Sync + 'static,
    R: prost::Message + Default + Send + Sync + 'static,
{
    let mut g = tonic::client::Grpc::new(ch.clone());
    g.ready().await.unwrap();
    let mut req = tonic::Request::new(msg);
    if let Some(t) = token {
        req.metadata_mut().insert(
            "authorization",
            MetadataValue::try_from(format!("Bearer {t}")).unwrap(),
        );
    }
    for (k, v) in meta {
        req.metadata_mut()
            .insert(*k, MetadataValue::try_from(*v).unwrap());
    }
    let path = format!("/lf.a2a.v1.A2AService/{method}").parse().unwrap();
    g.unary(req, path, tonic_prost::ProstCodec::<Q, R>::default())
        .await
        .map(tonic::Response::into_inner)
}

fn say(text: &str, task: Option<&str>) -> SendMessageRequest {
    SendMessageRequest {
        message: Some(Message {
            message_id: uuid::Uuid::new_v4().to_string(),
            task_id: task.unwrap_or_default().to_string(),
            role: 1,
            parts: vec![Part {
                text: Some(text.into()),
            }],
        }),
    }
}

async fn send(
    ch: &Channel,
    token: &str,
    text: &str,
    task: Option<&str>,
) -> Result<Task, tonic::Status> {
    let r: SendMessageResponse =
        unary(ch, "SendMessage", Some(token), &[], say(text, task)).await?;
    Ok(r.task.expect("a task"))
}

/// The `ErrorInfo` reason of a status.
fn reason(s: &tonic::Status) -> String {
    use tonic_types::StatusExt;
    s.get_details_error_info()
        .map(|i| {
            assert_eq!(i.domain, "a2a-protocol.org");
            i.reason
        })
        .unwrap_or_default()
}

fn state(t: &Task) -> i32 {
    t.status.as_ref().map_or(0, |s| s.state)
}

#[tokio::test]
async fn grpc_calls_are_authorized_like_the_json_bindings() {
    let dir = tempfile::tempdir().unwrap();
    let a = start(dir.path());
    let ch = channel(&a).await;

    // No credentials, a wrong one: UNAUTHENTICATED, nothing runs.
    let e = unary::<_, Task>(&ch, "GetTask", None, &[], GetTaskRequest { id: "x".into() })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated, "{e:?}");
    assert!(e.message().contains("Bearer"), "{e:?}");
    let e = send(&ch, "not-a-token-at-all-000000", "list resources", None)
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated, "{e:?}");

    // A viewer may read, not send: PERMISSION_DENIED naming the role.
    let e = unary::<_, Task>(
        &ch,
        "GetTask",
        Some(VIEWER),
        &[],
        GetTaskRequest { id: "nope".into() },
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "{e:?}");
    assert_eq!(reason(&e), "TASK_NOT_FOUND");
    let e = send(&ch, VIEWER, "list resources", None).await.unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
    assert!(e.message().contains("requester"), "{e:?}");

    // A requester's message runs; its task reads back over gRPC.
    let done = send(&ch, BOB, "list resources", None).await.unwrap();
    assert_eq!(state(&done), COMPLETED, "{done:?}");
    let got: Task = unary(
        &ch,
        "GetTask",
        Some(VIEWER),
        &[],
        GetTaskRequest {
            id: done.id.clone(),
        },
    )
    .await
    .unwrap();
    assert_eq!(got.id, done.id);

    // Separation of duties on a continuation: carol asked, carol may not
    // approve (PERMISSION_DENIED, still waiting); alice may.
    let waiting = send(&ch, CAROL, "add apples 5", None).await.unwrap();
    assert_eq!(state(&waiting), INPUT_REQUIRED, "{waiting:?}");
    let e = send(&ch, CAROL, "approve", Some(&waiting.id))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
    assert!(e.message().contains("separation of duties"), "{e:?}");
    let c: Value = client()
        .get(a.url(&format!("/conversations/{}", waiting.id)))
        .bearer_auth(CAROL)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(c["conversation"]["pending_approval"].is_object(), "{c}");
    // A requester who is not an approver cannot approve by message either.
    let e = send(&ch, BOB, "approve", Some(&waiting.id))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
    let approved = send(&ch, ALICE, "approve", Some(&waiting.id))
        .await
        .unwrap();
    assert_eq!(state(&approved), COMPLETED, "{approved:?}");

    // Who decided, and how it came (A2A), in the audit trail.
    let audit: String = client()
        .get(a.url("/audit?format=jsonl"))
        .bearer_auth(OPS)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let decided: Vec<Value> = audit
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["event"] == "approval.decided")
        .collect();
    assert_eq!(decided.len(), 1, "{decided:?}");
    assert_eq!(decided[0]["actor"], "alice");
    assert_eq!(decided[0]["details"]["via"], "a2a");

    // Cancel: the requester's task, over gRPC.
    let other = send(&ch, BOB, "add pears 2", None).await.unwrap();
    let cancelled: Task = unary(
        &ch,
        "CancelTask",
        Some(BOB),
        &[],
        GetTaskRequest {
            id: other.id.clone(),
        },
    )
    .await
    .unwrap();
    assert_eq!(state(&cancelled), CANCELED);
    let e = unary::<_, Task>(
        &ch,
        "CancelTask",
        Some(BOB),
        &[],
        GetTaskRequest { id: other.id },
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
    assert_eq!(reason(&e), "TASK_NOT_CANCELABLE");
}

#[tokio::test]
async fn bad_grpc_input_gets_the_spec_status_and_the_server_stays_up() {
    let dir = tempfile::tempdir().unwrap();
    let a = start(dir.path());
    let ch = channel(&a).await;
    // An A2A-Version this agent does not speak.
    let e = unary::<_, Task>(
        &ch,
        "GetTask",
        Some(VIEWER),
        &[("a2a-version", "9.9")],
        GetTaskRequest { id: "x".into() },
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), Code::Unimplemented, "{e:?}");
    assert_eq!(reason(&e), "VERSION_NOT_SUPPORTED");
    // No message at all; a message with no parts.
    let e = unary::<_, SendMessageResponse>(
        &ch,
        "SendMessage",
        Some(BOB),
        &[],
        SendMessageRequest { message: None },
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    let mut empty = say("x", None);
    if let Some(m) = empty.message.as_mut() {
        m.parts.clear();
    }
    let e = unary::<_, SendMessageResponse>(&ch, "SendMessage", Some(BOB), &[], empty)
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    // Bytes that are not the request message.
    let e = unary::<_, SendMessageResponse>(
        &ch,
        "SendMessage",
        Some(BOB),
        &[],
        Part {
            text: Some("\u{1}".repeat(3)),
        },
    )
    .await
    .unwrap_err();
    assert!(
        matches!(e.code(), Code::InvalidArgument | Code::Internal),
        "{e:?}"
    );
    // A method the service does not have.
    let e = unary::<_, Task>(
        &ch,
        "Nothing",
        Some(VIEWER),
        &[],
        GetTaskRequest { id: "x".into() },
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), Code::Unimplemented, "{e:?}");
    // A hop count over a2a_max_hops.
    let e = unary::<_, Task>(
        &ch,
        "GetTask",
        Some(VIEWER),
        &[("x-a2a-hop-count", "999")],
        GetTaskRequest { id: "x".into() },
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    // The same port still serves HTTP/1.1 and the card lists gRPC there.
    let card: Value = client()
        .get(a.url("/.well-known/agent-card.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let port = a.base.rsplit(':').next().unwrap().to_string();
    assert!(
        card["supportedInterfaces"]
            .as_array()
            .unwrap()
            .contains(&json!({"url": format!("127.0.0.1:{port}"), "protocolBinding": "GRPC", "protocolVersion": "1.0"})),
        "{card}"
    );
    let done = send(&ch, BOB, "list resources", None).await.unwrap();
    assert_eq!(state(&done), COMPLETED);
}
