//! A minimal A2A client: one blocking `SendMessage` and its answer (plus
//! `GetTask` and `CancelTask`).
//!
//! Where to send and how comes from the sub-agent's card
//! ([`super::discovery`]: a base URL or the seed's endpoint URL; a 1.0
//! JSON-RPC interface first, then 1.0 HTTP+JSON, then 0.3 framing, then the
//! seed's legacy form for a card without `protocolVersion` or an agent
//! without a card). Every binding's answer is read back in JSON-RPC's shape,
//! so one reader turns it into a [`RemoteReply`]. It forwards the caller's
//! `Authorization: Bearer` and `X-Session-ID`, never logs the token, and
//! bounds every request (card 10 s, message 60 s). A remote task that waits
//! for a decision comes back as [`RemoteReply::NeedsApproval`], which the
//! engine turns into a proxy approval; the decision goes back as a message
//! with the same task id.

use super::discovery::{CARD_TIMEOUT, Dialect, Discovery};
use super::error::{A2aError, short};
use super::read_card::ReadCard;
use super::remote::{Outgoing, RemoteAgents, RemoteAsk, RemoteQuestion, RemoteReply};
use crate::domain::BoxFuture;
use crate::domain::tools::CallContext;
use serde_json::{Value, json};
use std::time::Duration;

/// How long a message may take (DESIGN.md: A2A 60 s).
const SEND_TIMEOUT: Duration = Duration::from_secs(60);

/// An A2A client over reqwest (and tonic for gRPC).
#[derive(Default)]
pub(crate) struct A2aClient {
    http: reqwest::Client,
    grpc: super::grpc::GrpcClient,
    /// Where each configured sub-agent lives, from its card.
    discovery: Discovery,
}

/// One A2A operation our client performs, in whichever binding the card offers.
#[derive(Clone, Copy)]
enum Op<'a> {
    Send(&'a Outgoing),
    Get(&'a str),
    Cancel(&'a str),
}

impl A2aClient {
    /// A client with what the config says of each sub-agent (by its
    /// configured URL): the keys its card must be signed with, the
    /// binding to prefer.
    pub(crate) fn with_settings(settings: Vec<(String, super::discovery::Settings)>) -> A2aClient {
        A2aClient {
            discovery: Discovery::with_settings(settings),
            ..A2aClient::default()
        }
    }

    /// Sends `op` to the agent configured at `url`, in the binding and
    /// dialect its card offers. Returns the answer in JSON-RPC's shape
    /// (`{"result": …}` or `{"error": {code, message}}`) whichever binding
    /// carried it, so one reader serves them all.
    async fn call(
        &self,
        url: &str,
        ctx: &CallContext,
        timeout: Duration,
        op: Op<'_>,
    ) -> Result<Value, A2aError> {
        let target = self
            .discovery
            .target(&self.http, url, &ctx.session_id)
            .await?;
        if target.dialect == Dialect::Grpc {
            return self.call_grpc(url, &target, ctx, timeout, op).await;
        }
        let request = |endpoint: &str| {
            let req = match target.dialect {
                Dialect::Rest => rest(&self.http, endpoint, op),
                dialect => {
                    let (method, params, version) = jsonrpc(dialect, op);
                    let body = json!({"jsonrpc": "2.0", "id": uuid::Uuid::new_v4().to_string(),
                        "method": method, "params": params});
                    let req = self.http.post(endpoint).json(&body);
                    match version {
                        Some(v) => req.header("A2A-Version", v),
                        None => req,
                    }
                }
            };
            let mut req = req
                .timeout(timeout)
                .header("X-Session-ID", &ctx.session_id)
                .header("X-A2A-Hop-Count", (ctx.hops + 1).to_string());
            // W3C trace context, so the sub-agent's spans join this trace.
            for (k, v) in crate::telemetry::inject() {
                req = req.header(k, v);
            }
            with_identity(req, ctx).send()
        };
        let mut endpoint = target.endpoint.clone();
        let mut sent = request(&endpoint).await;
        // The card's URL cannot be connected to (nothing was sent): the
        // endpoint the config names is the one this agent can reach.
        if let (Err(e), Some(fallback)) = (&sent, &target.fallback)
            && e.is_connect()
        {
            endpoint = fallback.clone();
            sent = request(&endpoint).await;
        }
        let resp = sent.map_err(|e| {
            self.discovery.forget(url);
            A2aError::Unreachable {
                url: endpoint.clone(),
                reason: short(&e),
            }
        })?;
        let status = resp.status();
        let answer: Value = resp.json().await.map_err(|e| {
            A2aError::Protocol(format!("{endpoint} answered {status} without JSON: {e}"))
        })?;
        refused(status, &answer)?;
        if target.dialect == Dialect::Rest {
            return rest_answer(status, answer, &endpoint);
        }
        Ok(answer)
    }

    /// `op` over gRPC (`super::grpc`), falling back to the configured
    /// agent's own address when the card's cannot be connected to.
    async fn call_grpc(
        &self,
        url: &str,
        target: &super::discovery::Target,
        ctx: &CallContext,
        timeout: Duration,
        op: Op<'_>,
    ) -> Result<Value, A2aError> {
        use super::grpc::{Call, Failure};
        let mut headers = identity_headers(ctx);
        headers.push(("x-session-id".into(), ctx.session_id.clone()));
        headers.push(("x-a2a-hop-count".into(), (ctx.hops + 1).to_string()));
        headers.push(("a2a-version".into(), "1.0".into()));
        for (k, v) in crate::telemetry::inject() {
            headers.push((k.to_string(), v));
        }
        let call = || match op {
            Op::Send(out) => Call::Send(build(Dialect::V1, out).1),
            Op::Get(id) => Call::Get(id.to_string()),
            Op::Cancel(id) => Call::Cancel(id.to_string()),
        };
        let mut at = target.endpoint.clone();
        let mut sent = self.grpc.call((&at, url), &headers, timeout, call()).await;
        if let (Err(Failure::Connect(_)), Some(fallback)) = (&sent, &target.fallback) {
            at = fallback.clone();
            sent = self.grpc.call((&at, url), &headers, timeout, call()).await;
        }
        sent.map_err(|f| {
            let e = match f {
                Failure::Connect(reason) => A2aError::Unreachable {
                    url: at.clone(),
                    reason,
                },
                Failure::Other(e) => e,
            };
            if matches!(e, A2aError::Unreachable { .. }) {
                self.discovery.forget(url);
                self.grpc.forget(&at, url);
            }
            e
        })
    }

    async fn send_message(
        &self,
        url: &str,
        out: &Outgoing,
        ctx: &CallContext,
    ) -> Result<RemoteReply, A2aError> {
        let answer = self.call(url, ctx, SEND_TIMEOUT, Op::Send(out)).await?;
        read_answer(&answer)
    }

    async fn cancel_task(
        &self,
        url: &str,
        task_id: &str,
        ctx: &CallContext,
    ) -> Result<(), A2aError> {
        let answer = self
            .call(url, ctx, CARD_TIMEOUT, Op::Cancel(task_id))
            .await?;
        match answer.get("error") {
            None => Ok(()),
            Some(err) => Err(remote_error(err)),
        }
    }

    async fn get_task(
        &self,
        url: &str,
        task_id: &str,
        ctx: &CallContext,
    ) -> Result<RemoteReply, A2aError> {
        let answer = self.call(url, ctx, CARD_TIMEOUT, Op::Get(task_id)).await?;
        read_answer(&answer)
    }
}

impl RemoteAgents for A2aClient {
    fn get<'a>(
        &'a self,
        url: &'a str,
        task_id: &'a str,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<RemoteReply, A2aError>> {
        Box::pin(self.get_task(url, task_id, ctx))
    }

    fn cancel<'a>(
        &'a self,
        url: &'a str,
        task_id: &'a str,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<(), A2aError>> {
        Box::pin(self.cancel_task(url, task_id, ctx))
    }

    fn send<'a>(
        &'a self,
        url: &'a str,
        message: &'a Outgoing,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<RemoteReply, A2aError>> {
        Box::pin(self.send_message(url, message, ctx))
    }

    fn check_card<'a>(&'a self, url: &'a str, sid: &'a str) -> BoxFuture<'a, Result<(), A2aError>> {
        Box::pin(async move {
            self.discovery
                .target(&self.http, url, sid)
                .await
                .map(|_| ())
        })
    }

    fn take_verified(&self, url: &str) -> Option<ReadCard> {
        self.discovery.take_verified(url)
    }

    fn set_accepted(&self, accepted: std::collections::HashMap<String, String>) {
        self.discovery.set_accepted(accepted);
    }
}

/// The JSON-RPC method and params of `op` in `dialect`, and the
/// `A2A-Version` to send.
fn jsonrpc(dialect: Dialect, op: Op) -> (&'static str, Value, Option<&'static str>) {
    let version = match dialect {
        Dialect::V1 | Dialect::Rest | Dialect::Grpc => Some("1.0"),
        Dialect::V03 => Some("0.3"),
        Dialect::Legacy => None,
    };
    let v1 = version == Some("1.0");
    match op {
        Op::Send(out) => build(dialect, out),
        Op::Get(id) => (
            if v1 { "GetTask" } else { "tasks/get" },
            json!({"id": id, "historyLength": 0}),
            version,
        ),
        Op::Cancel(id) => (
            if v1 { "CancelTask" } else { "tasks/cancel" },
            json!({ "id": id }),
            version,
        ),
    }
}

/// `op` in the HTTP+JSON binding (A2A 1.0 §11: the proto's HTTP
/// annotations) at the interface URL `base`.
fn rest(http: &reqwest::Client, base: &str, op: Op) -> reqwest::RequestBuilder {
    // A card URL that is not a URL fails at send, with reqwest's reason.
    let Ok(parsed) = reqwest::Url::parse(base) else {
        return http.post(base);
    };
    // The task id is one path segment, escaped as one.
    let at = |segments: &[&str]| {
        let mut u = parsed.clone();
        if let Ok(mut path) = u.path_segments_mut() {
            path.pop_if_empty().extend(segments);
        }
        u
    };
    let req = match op {
        Op::Send(out) => {
            let (_, params, _) = build(Dialect::V1, out);
            http.post(at(&["message:send"])).json(&params)
        }
        Op::Get(task) => {
            let mut u = at(&["tasks", task]);
            u.set_query(Some("historyLength=0"));
            http.get(u)
        }
        Op::Cancel(task) => http
            .post(at(&["tasks", &format!("{task}:cancel")]))
            .json(&json!({})),
    };
    req.header("A2A-Version", "1.0")
}

/// An HTTP+JSON answer in JSON-RPC's shape: a success body is the result;
/// an error is AIP-193's `{"error": {code, status, message, details}}`,
/// whose ErrorInfo reason gives back the A2A code.
fn rest_answer(
    status: reqwest::StatusCode,
    answer: Value,
    endpoint: &str,
) -> Result<Value, A2aError> {
    if status.is_success() {
        return Ok(json!({ "result": answer }));
    }
    let err = answer
        .get("error")
        .filter(|e| e.is_object())
        .ok_or_else(|| {
            A2aError::Protocol(format!(
                "{endpoint} answered {status} without an error body"
            ))
        })?;
    let reason = err
        .get("details")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find_map(|d| d.get("reason").and_then(Value::as_str));
    let code = reason
        .and_then(super::wire::code_of)
        .or_else(|| match status.as_u16() {
            404 => Some(-32001),
            409 => Some(-32002),
            _ => None,
        })
        .unwrap_or(-32603);
    let message = err
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("(no message)");
    Ok(json!({"error": {"code": code, "message": message}}))
}

/// The receipt of an approving decision in the message's metadata under
/// our receipt extension (and, in 1.0, the extension named in the
/// message's `extensions`).
fn with_receipt(m: &mut Value, out: &Outgoing, v1: bool) {
    let Some(r) = &out.receipt else {
        return;
    };
    let ext = super::wire::RECEIPT_EXTENSION;
    m["metadata"] = json!({ ext: {"receipt": r} });
    if v1 {
        m["extensions"] = json!([ext]);
    }
}

/// The JSON-RPC method and params of a message `out` in `dialect`.
fn build(dialect: Dialect, out: &Outgoing) -> (&'static str, Value, Option<&'static str>) {
    let message_id = uuid::Uuid::new_v4().to_string();
    let data = out
        .decision
        .as_ref()
        .map(|(approved, reason)| {
            let mut d = json!({"approved": approved, "reason": reason});
            if let Some(args) = &out.arguments {
                d["arguments"] = args.clone();
            }
            if let Some(u) = &out.approval_uuid {
                d["approval_uuid"] = u.clone().into();
            }
            d
        })
        .or_else(|| {
            out.question_answer
                .as_ref()
                .map(|a| json!({ "question_answer": a }))
        });
    match dialect {
        Dialect::V1 | Dialect::Rest | Dialect::Grpc => {
            let mut parts = vec![json!({"text": out.text})];
            if let Some(d) = data {
                parts.push(json!({"data": d}));
            }
            let mut m = json!({"messageId": message_id, "role": "ROLE_USER", "parts": parts});
            if let Some(t) = &out.task_id {
                m["taskId"] = json!(t);
            }
            with_receipt(&mut m, out, true);
            ("SendMessage", json!({ "message": m }), Some("1.0"))
        }
        Dialect::V03 => {
            let mut parts = vec![json!({"kind": "text", "text": out.text})];
            if let Some(d) = data {
                parts.push(json!({"kind": "data", "data": d}));
            }
            let mut m =
                json!({"kind": "message", "messageId": message_id, "role": "user", "parts": parts});
            if let Some(t) = &out.task_id {
                m["taskId"] = json!(t);
            }
            with_receipt(&mut m, out, false);
            (
                "message/send",
                json!({"message": m, "configuration": {"blocking": true}}),
                Some("0.3"),
            )
        }
        Dialect::Legacy => {
            let m = json!({"messageId": message_id, "role": "user", "parts": [{"type": "text", "text": out.text}]});
            let mut params = json!({ "message": m });
            if let Some(t) = &out.task_id {
                params["taskId"] = json!(t);
            }
            ("message/send", params, None)
        }
    }
}

/// HTTP 401/403 as [`A2aError::Refused`], with the remote's reason (a
/// REST `{"error": "..."}` from its guard, or a JSON-RPC error body).
fn refused(status: reqwest::StatusCode, answer: &Value) -> Result<(), A2aError> {
    if status != reqwest::StatusCode::UNAUTHORIZED && status != reqwest::StatusCode::FORBIDDEN {
        return Ok(());
    }
    let err = answer.get("error");
    let message = err
        .and_then(Value::as_str)
        .or_else(|| err.and_then(|e| e.get("message")).and_then(Value::as_str))
        .unwrap_or("(no reason given)")
        .chars()
        .take(300)
        .collect();
    Err(A2aError::Refused {
        status: status.as_u16(),
        message,
    })
}

/// A JSON-RPC `error` object as the remote's error.
fn remote_error(err: &Value) -> A2aError {
    A2aError::Remote {
        code: err.get("code").and_then(Value::as_i64).unwrap_or(0),
        message: err
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("(no message)")
            .to_string(),
    }
}

/// The outcome of a JSON-RPC answer, or why there is none.
fn read_answer(answer: &Value) -> Result<RemoteReply, A2aError> {
    if let Some(err) = answer.get("error") {
        return Err(remote_error(err));
    }
    let result = answer
        .get("result")
        .ok_or_else(|| A2aError::Protocol("neither `result` nor `error`".into()))?;
    // 1.0 wraps: {"task": …} or {"message": …}; 0.3 answers the object itself.
    if let Some(m) = result.get("message") {
        return Ok(RemoteReply::Done(parts_text(m)));
    }
    let task = result.get("task").unwrap_or(result);
    if task.get("kind").and_then(Value::as_str) == Some("message") || task.get("status").is_none() {
        return Ok(RemoteReply::Done(parts_text(task)));
    }
    let status = &task["status"];
    let state = status
        .get("state")
        .and_then(Value::as_str)
        .unwrap_or("unknown")
        .trim_start_matches("TASK_STATE_")
        .to_ascii_lowercase()
        .replace('_', "-");
    let status_text = status.get("message").map(parts_text).unwrap_or_default();
    match state.as_str() {
        "completed" => {
            let artifacts: Vec<String> = task
                .get("artifacts")
                .and_then(Value::as_array)
                .map(|a| a.iter().map(parts_text).filter(|t| !t.is_empty()).collect())
                .unwrap_or_default();
            Ok(RemoteReply::Done(if artifacts.is_empty() {
                status_text
            } else {
                artifacts.join("\n")
            }))
        }
        "input-required" => {
            let task_id = task
                .get("id")
                .and_then(Value::as_str)
                .ok_or_else(|| A2aError::Protocol("an input-required task without an id".into()))?;
            if let Some(q) = question(task_id, status.get("message")) {
                return Ok(RemoteReply::NeedsAnswer(q));
            }
            Ok(RemoteReply::NeedsApproval(ask(
                task_id,
                status.get("message"),
                status_text,
            )))
        }
        _ => Err(A2aError::Failed {
            state,
            text: status_text,
        }),
    }
}

/// What a waiting task asks for: the structured `data` part when there is
/// one (our agents send `{approval_uuid, tool, arguments, description,
/// chain}`), else the status text.
fn ask(task_id: &str, message: Option<&Value>, text: String) -> RemoteAsk {
    let parts = message
        .and_then(|m| m.get("parts"))
        .and_then(Value::as_array);
    let data = parts.and_then(|parts| {
        parts
            .iter()
            .find_map(|p| p.get("data").filter(|d| d.is_object()))
    });
    let field = |k: &str| data.and_then(|d| d.get(k));
    RemoteAsk {
        task_id: task_id.to_string(),
        tool: field("tool").and_then(Value::as_str).map(str::to_string),
        arguments: field("arguments").cloned().unwrap_or(Value::Null),
        description: field("description")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| {
                let texts: Vec<&str> = parts
                    .map(|p| {
                        p.iter()
                            .filter_map(|x| x.get("text").and_then(Value::as_str))
                            .collect()
                    })
                    .unwrap_or_default();
                if texts.is_empty() {
                    text
                } else {
                    texts.join("\n")
                }
            }),
        chain: strings(field("chain")),
        approval_uuid: field("approval_uuid")
            .and_then(Value::as_str)
            .map(str::to_string),
    }
}

/// The question a waiting task asks, from a data part `{"question": {uuid,
/// kind, message, schema | url, tool, chain}}` (QUESTIONS.md §4); `None`
/// when there is none (then it waits for a decision), or when it names no
/// uuid or kind this agent knows (it cannot be answered from here).
fn question(task_id: &str, message: Option<&Value>) -> Option<RemoteQuestion> {
    let q = message?
        .get("parts")?
        .as_array()?
        .iter()
        .find_map(|p| p.get("data")?.get("question").filter(|q| q.is_object()))?;
    let text = |k: &str| q.get(k).and_then(Value::as_str).map(str::to_string);
    let kind = match q.get("kind").and_then(Value::as_str)? {
        "form" => app::models::QuestionKind::Form,
        "url" => app::models::QuestionKind::Url,
        _ => return None,
    };
    Some(RemoteQuestion {
        task_id: task_id.to_string(),
        uuid: text("uuid")?,
        kind,
        message: text("message").unwrap_or_default(),
        schema: q.get("schema").filter(|s| s.is_object()).cloned(),
        url: text("url"),
        tool: text("tool"),
        chain: strings(q.get("chain")),
    })
}

/// The strings of a JSON array (a chain of agent names); others skipped.
fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The text of an object's `parts` (text parts as they are, data parts as JSON).
fn parts_text(v: &Value) -> String {
    v.get("parts")
        .and_then(Value::as_array)
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| {
                    p.get("text")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .or_else(|| p.get("data").map(Value::to_string))
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// The caller's identity on a request to a sub-agent: the sub-agent's own
/// configured headers (its credential) if any, else the forwarded bearer.
fn with_identity(mut req: reqwest::RequestBuilder, ctx: &CallContext) -> reqwest::RequestBuilder {
    for (k, v) in identity_headers(ctx) {
        req = req.header(k, v);
    }
    req
}

/// Who the call is for: the caller's bearer (unless the entry's own
/// `headers` name an `Authorization`), then the entry's headers.
fn identity_headers(ctx: &CallContext) -> Vec<(String, String)> {
    let own_auth = ctx
        .headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("authorization"));
    let mut out = Vec::new();
    if !own_auth && let Some(token) = &ctx.bearer {
        out.push(("authorization".to_string(), format!("Bearer {token}")));
    }
    out.extend(ctx.headers.iter().cloned());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_in_every_dialect_read_as_text() {
        let done = |t: &str| Some(RemoteReply::Done(t.to_string()));
        let v1 = json!({"result": {"task": {"status": {"state": "TASK_STATE_COMPLETED"},
            "artifacts": [{"parts": [{"text": "done"}]}]}}});
        assert_eq!(read_answer(&v1).ok(), done("done"));
        let v03 = json!({"result": {"kind": "task", "status": {"state": "completed",
            "message": {"parts": [{"kind": "text", "text": "ok"}]}}}});
        assert_eq!(read_answer(&v03).ok(), done("ok"));
        let msg = json!({"result": {"kind": "message", "parts": [{"kind": "text", "text": "hi"}]}});
        assert_eq!(read_answer(&msg).ok(), done("hi"));
        let err = json!({"error": {"code": -32001, "message": "Task not found"}});
        assert!(matches!(
            read_answer(&err),
            Err(A2aError::Remote { code: -32001, .. })
        ));
        let failed = json!({"result": {"kind": "task", "status": {"state": "failed"}}});
        assert!(matches!(read_answer(&failed), Err(A2aError::Failed { .. })));
    }

    #[test]
    fn a_waiting_task_says_what_it_asks_for() {
        let structured = json!({"result": {"task": {"id": "t9", "status": {"state": "TASK_STATE_INPUT_REQUIRED",
            "message": {"parts": [{"text": "Approval needed"}, {"data": {"approval_uuid": "u1",
                "tool": "resources_add", "arguments": {"name": "a"}, "description": "Run add", "chain": ["c"]}}]}}}}});
        let Ok(RemoteReply::NeedsApproval(a)) = read_answer(&structured) else {
            panic!("not an ask")
        };
        assert_eq!(a.task_id, "t9");
        assert_eq!(a.tool.as_deref(), Some("resources_add"));
        assert_eq!(a.arguments, json!({"name": "a"}));
        assert_eq!(
            (a.description.as_str(), a.chain),
            ("Run add", vec!["c".to_string()])
        );
        let text_only = json!({"result": {"kind": "task", "id": "t2", "status": {"state": "input-required",
            "message": {"parts": [{"kind": "text", "text": "Which one?"}]}}}});
        let Ok(RemoteReply::NeedsApproval(a)) = read_answer(&text_only) else {
            panic!("not an ask")
        };
        assert_eq!((a.tool, a.description.as_str()), (None, "Which one?"));
    }

    #[test]
    fn a_waiting_task_with_a_question_asks_for_an_answer() {
        let asked = json!({"result": {"task": {"id": "t3", "status": {"state": "TASK_STATE_INPUT_REQUIRED",
            "message": {"parts": [{"text": "`ask_env` asks: Which?"}, {"data": {"question": {
                "uuid": "q1", "kind": "form", "message": "Which?", "tool": "ask_env",
                "schema": {"type": "object"}, "chain": ["c"]}}}]}}}}});
        let Ok(RemoteReply::NeedsAnswer(q)) = read_answer(&asked) else {
            panic!("not a question")
        };
        assert_eq!((q.task_id.as_str(), q.uuid.as_str()), ("t3", "q1"));
        assert_eq!(q.kind, app::models::QuestionKind::Form);
        assert_eq!(
            (q.tool.as_deref(), q.chain),
            (Some("ask_env"), vec!["c".to_string()])
        );
        // Without a uuid it cannot be answered: read as a plain wait.
        let unnamed = json!({"result": {"kind": "task", "id": "t4", "status": {"state": "input-required",
            "message": {"parts": [{"kind": "data", "data": {"question": {"kind": "form"}}}]}}}});
        assert!(matches!(
            read_answer(&unnamed),
            Ok(RemoteReply::NeedsApproval(_))
        ));
        let mut content = serde_json::Map::new();
        content.insert("env".into(), json!("prod"));
        let out = Outgoing::answer("t3", "q1", "accept", Some(content));
        for dialect in [Dialect::V1, Dialect::V03] {
            let (_, params, _) = build(dialect, &out);
            assert_eq!(params["message"]["taskId"], "t3");
            let parts = params["message"]["parts"].as_array().unwrap();
            let data = parts.iter().find_map(|p| p.get("data")).unwrap();
            assert_eq!(
                data["question_answer"],
                json!({"uuid": "q1", "action": "accept", "content": {"env": "prod"}})
            );
        }
    }

    #[test]
    fn http_json_answers_read_like_json_rpc_ones() {
        let ok = reqwest::StatusCode::OK;
        let task = json!({"task": {"id": "t", "status": {"state": "TASK_STATE_COMPLETED",
            "message": {"parts": [{"text": "fine"}]}}}});
        let answer = rest_answer(ok, task, "http://e").unwrap();
        assert_eq!(
            read_answer(&answer).ok(),
            Some(RemoteReply::Done("fine".into()))
        );
        let missing = json!({"error": {"code": 404, "status": "NOT_FOUND", "message": "no such task",
            "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND"}]}});
        let answer = rest_answer(reqwest::StatusCode::NOT_FOUND, missing, "http://e").unwrap();
        assert!(matches!(
            read_answer(&answer),
            Err(A2aError::Remote { code: -32001, ref message }) if message == "no such task"
        ));
        let done = json!({"error": {"code": 409, "message": "already completed"}});
        let answer = rest_answer(reqwest::StatusCode::CONFLICT, done, "http://e").unwrap();
        assert_eq!(answer["error"]["code"], -32002);
        let html = json!("<html>");
        assert!(matches!(
            rest_answer(reqwest::StatusCode::BAD_GATEWAY, html, "http://e"),
            Err(A2aError::Protocol(_))
        ));
    }

    #[test]
    fn http_json_requests_follow_the_proto_routes() {
        let http = reqwest::Client::new();
        let out = Outgoing::decision("t 1/x", true, None);
        let send = rest(&http, "http://e:9/a2a/", Op::Send(&out))
            .build()
            .unwrap();
        assert_eq!(
            (send.method().as_str(), send.url().as_str()),
            ("POST", "http://e:9/a2a/message:send")
        );
        assert_eq!(send.headers()["A2A-Version"], "1.0");
        let get = rest(&http, "http://e:9", Op::Get("t 1/x")).build().unwrap();
        assert_eq!(
            get.url().as_str(),
            "http://e:9/tasks/t%201%2Fx?historyLength=0"
        );
        let cancel = rest(&http, "http://e:9/a2a", Op::Cancel("t1"))
            .build()
            .unwrap();
        assert_eq!(
            (cancel.method().as_str(), cancel.url().as_str()),
            ("POST", "http://e:9/a2a/tasks/t1:cancel")
        );
    }

    #[test]
    fn decisions_continue_the_task_in_each_dialect() {
        let out = Outgoing::decision("t1", false, Some("no".into()));
        let (m, p, v) = build(Dialect::V1, &out);
        assert_eq!((m, v), ("SendMessage", Some("1.0")));
        assert_eq!(p["message"]["taskId"], "t1");
        assert_eq!(p["message"]["parts"][0]["text"], "reject");
        assert_eq!(
            p["message"]["parts"][1]["data"],
            json!({"approved": false, "reason": "no"})
        );
        let (_, p, _) = build(Dialect::V03, &out);
        assert_eq!(p["message"]["parts"][1]["kind"], "data");
        let (_, p, v) = build(Dialect::Legacy, &out);
        assert_eq!((p["taskId"].as_str(), v), (Some("t1"), None));
    }
}
