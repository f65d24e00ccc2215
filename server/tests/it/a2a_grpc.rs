//! A2A's gRPC binding against the real agent binary, with a bare gRPC
//! client (tonic over HTTP/2 to the agent's own port, messages declared
//! here with only the fields each check reads: protobuf skips the rest):
//! the same authorization as the JSON bindings (AUTH.md: the bearer in
//! `authorization` metadata, roles per method, separation of duties on a
//! continuation), the spec's status codes with their `ErrorInfo`, bad
//! input, and HTTP/1.1 beside it on the same port.

use crate::support;

use serde_json::{Value, json};
use support::{Agent, client, resources_yaml, write_config};
use test_support::grpc::{
    self, CANCELED, COMPLETED, INPUT_REQUIRED, Part, SendMessageRequest, SendMessageResponse, Task,
    TaskIdRequest as GetTaskRequest, say, unary,
};
use tonic::Code;
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

async fn serve(dir: &std::path::Path) -> Agent {
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
    Agent::serve_with_env(&write_config(dir, &dir.join("data"), &yaml), &ENV).await
}

async fn channel(a: &Agent) -> Channel {
    grpc::channel(&a.base).await
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
    let a = serve(dir.path()).await;
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
    let a = serve(dir.path()).await;
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
            .contains(&json!({"url": format!("http://127.0.0.1:{port}"), "protocolBinding": "GRPC", "protocolVersion": "1.0"})),
        "{card}"
    );
    let done = send(&ch, BOB, "list resources", None).await.unwrap();
    assert_eq!(state(&done), COMPLETED);
}

/// `a2a_extensions` with a required one: the card declares it, and a
/// message that does not activate it is refused on every binding with
/// ExtensionSupportRequired (JSON-RPC -32008, HTTP+JSON 400, gRPC
/// FAILED_PRECONDITION, each with its ErrorInfo reason); the header (or
/// gRPC metadata) or the message's own `extensions` activates it.
#[tokio::test]
async fn a_required_extension_must_be_activated_on_every_binding() {
    const URI: &str = "urn:example:needs-this";
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "{}a2a_extensions:\n  - {{uri: \"{URI}\", required: true, description: A test extension}}\n  - {{uri: \"urn:example:optional\"}}\n",
        resources_yaml("ext-test", dir.path())
    );
    let a = Agent::serve(&write_config(dir.path(), &dir.path().join("data"), &yaml)).await;
    let card: Value = client()
        .get(a.url("/.well-known/agent-card.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    // The configured extensions, in order; the agent's own MCP endpoint
    // (CLIENTS.md §1) is declared after them.
    let configured: Vec<&Value> = card["capabilities"]["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            !e["uri"]
                .as_str()
                .unwrap_or("")
                .starts_with("https://modelcontextprotocol.io/")
        })
        .collect();
    assert_eq!(
        json!(configured),
        json!([{"uri": URI, "required": true, "description": "A test extension"},
               {"uri": "urn:example:optional", "required": false}]),
        "{card}"
    );
    let message = json!({"message": {"messageId": "m-ext-1", "role": "ROLE_USER", "parts": [{"text": "list resources"}]}});
    let rpc = |ext: Option<&str>, params: Value| {
        let mut r = client()
            .post(a.url("/a2a"))
            .header("A2A-Version", "1.0")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}));
        if let Some(e) = ext {
            r = r.header("A2A-Extensions", e);
        }
        r.send()
    };
    let v: Value = rpc(None, message.clone())
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["error"]["code"], -32008, "{v}");
    assert_eq!(
        v["error"]["data"][0]["reason"],
        "EXTENSION_SUPPORT_REQUIRED"
    );
    assert!(v["error"]["message"].as_str().unwrap().contains(URI), "{v}");
    let v: Value = rpc(Some(&format!("urn:other, {URI}")), message.clone())
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        v["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{v}"
    );
    let mut own = message.clone();
    own["message"]["messageId"] = json!("m-ext-2");
    own["message"]["extensions"] = json!([URI]);
    let v: Value = rpc(None, own).await.unwrap().json().await.unwrap();
    assert!(v.get("result").is_some(), "{v}");

    let r = client()
        .post(a.url("/a2a/message:send"))
        .header("A2A-Version", "1.0")
        .json(&message)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["status"], "FAILED_PRECONDITION", "{v}");
    assert_eq!(
        v["error"]["details"][0]["reason"],
        "EXTENSION_SUPPORT_REQUIRED"
    );

    let ch = channel(&a).await;
    let e =
        unary::<_, SendMessageResponse>(&ch, "SendMessage", None, &[], say("list resources", None))
            .await
            .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
    assert_eq!(reason(&e), "EXTENSION_SUPPORT_REQUIRED");
    let r: SendMessageResponse = unary(
        &ch,
        "SendMessage",
        None,
        &[("a2a-extensions", URI)],
        say("list resources", None),
    )
    .await
    .unwrap();
    assert_eq!(r.task.as_ref().map(state), Some(COMPLETED));
}
