//! JSON-RPC 2.0 framing for `POST /a2a`: reading the envelope, choosing the
//! dialect, and A2A errors in each dialect's shape.
//!
//! Every JSON-RPC answer is HTTP 200 with `application/json`, as the spec
//! and both TCKs expect; the error says what is wrong. 1.0 errors carry the
//! `google.rpc.ErrorInfo` detail the spec requires.

use crate::a2a::wire::{Dialect, REASONS};
use crate::engine::a2a_tasks::error::TaskError;
use axum::http::HeaderMap;
use serde_json::{Value, json};

/// An A2A / JSON-RPC error.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RpcError {
    pub(crate) code: i64,
    pub(crate) message: String,
    /// The HTTP status of the answer: 200, except 403 for a caller who may
    /// not do this (AUTH.md §6).
    pub(crate) http_status: u16,
}

impl RpcError {
    pub(crate) fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            http_status: 200,
        }
    }
    /// The caller may not: HTTP 403 with this JSON-RPC error.
    pub(crate) fn forbidden(m: impl Into<String>) -> Self {
        RpcError {
            http_status: 403,
            ..Self::new(-32600, format!("forbidden: {}", m.into()))
        }
    }
    /// No credentials, or ones that do not hold: HTTP 401.
    pub(crate) fn unauthenticated(m: impl Into<String>) -> Self {
        RpcError {
            http_status: 401,
            ..Self::new(-32600, m)
        }
    }
    pub(crate) fn parse(m: impl Into<String>) -> Self {
        Self::new(-32700, m)
    }
    pub(crate) fn invalid_request(m: impl Into<String>) -> Self {
        Self::new(-32600, m)
    }
    pub(crate) fn method(m: impl Into<String>) -> Self {
        Self::new(-32601, m)
    }
    pub(crate) fn params(m: impl Into<String>) -> Self {
        Self::new(-32602, m)
    }
    /// An internal failure: the detail goes to the log under a correlation
    /// id, the client gets the id and a generic message (AUTH.md §8).
    pub(crate) fn internal(m: impl Into<String>) -> Self {
        let id = crate::http::error::log_internal(&m.into());
        Self::new(-32603, crate::http::error::internal_message(&id))
    }
    pub(crate) fn task_not_found(id: &str) -> Self {
        Self::new(-32001, format!("Task not found: {id:?}"))
    }
    /// The same error with another message.
    pub(crate) fn with_message(self, m: impl Into<String>) -> Self {
        RpcError {
            message: m.into(),
            ..self
        }
    }
    pub(crate) fn not_cancelable(m: impl Into<String>) -> Self {
        Self::new(-32002, m)
    }
    pub(crate) fn unsupported(m: impl Into<String>) -> Self {
        Self::new(-32004, m)
    }

    /// The ErrorInfo reason of the code.
    pub(crate) fn reason(&self) -> &'static str {
        REASONS
            .iter()
            .find(|(code, _)| *code == self.code)
            .map_or("INTERNAL_ERROR", |(_, r)| r)
    }

    /// The HTTP status of this error in the HTTP+JSON binding (the spec's
    /// §5.4 mapping); a refusal keeps its own (403).
    pub(crate) fn rest_status(&self) -> u16 {
        if self.http_status != 200 {
            return self.http_status;
        }
        match self.code {
            -32001 | -32601 => 404,
            -32002 => 409,
            -32005 => 415,
            -32006 => 502,
            -32603 => 500,
            _ => 400,
        }
    }

    /// The `google.rpc.Status` name that goes with [`Self::rest_status`].
    pub(crate) fn grpc_status(&self) -> &'static str {
        match (self.rest_status(), self.code) {
            (401, _) => "UNAUTHENTICATED",
            (403, _) => "PERMISSION_DENIED",
            (_, -32001 | -32601) => "NOT_FOUND",
            (_, -32002 | -32007 | -32008) => "FAILED_PRECONDITION",
            (_, -32003 | -32004 | -32009) => "UNIMPLEMENTED",
            (_, -32603 | -32006) => "INTERNAL",
            _ => "INVALID_ARGUMENT",
        }
    }

    /// The body of this error in the HTTP+JSON binding: AIP-193's
    /// `{"error": {code, status, message, details: [ErrorInfo]}}`.
    pub(crate) fn rest_body(&self) -> Value {
        json!({"error": {
            "code": self.rest_status(),
            "status": self.grpc_status(),
            "message": self.message,
            "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                         "reason": self.reason(), "domain": "a2a-protocol.org"}]
        }})
    }

    /// The `error` object in `dialect`.
    pub(crate) fn body(&self, d: Dialect) -> Value {
        match d {
            Dialect::V1 => json!({
                "code": self.code,
                "message": self.message,
                "data": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                          "reason": self.reason(), "domain": "a2a-protocol.org"}]
            }),
            _ => json!({"code": self.code, "message": self.message}),
        }
    }
}

impl From<TaskError> for RpcError {
    fn from(e: TaskError) -> Self {
        match e {
            TaskError::NotFound(m) => RpcError::new(-32001, m),
            TaskError::Params(m) => RpcError::params(m),
            TaskError::Unsupported(m) => RpcError::unsupported(m),
            TaskError::Forbidden(m) => RpcError::forbidden(m),
            TaskError::Internal(m) => RpcError::internal(m),
        }
    }
}

/// A JSON-RPC response with `result`.
pub(crate) fn result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// A JSON-RPC response with `error`.
pub(crate) fn error(id: &Value, e: &RpcError, d: Dialect) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": e.body(d)})
}

/// A parsed request.
#[derive(Clone, Debug)]
pub(crate) struct Request {
    pub(crate) id: Value,
    pub(crate) method: String,
    pub(crate) params: Value,
    pub(crate) dialect: Dialect,
}

/// Reads the envelope and picks the dialect: PascalCase methods are 1.0,
/// slash methods 0.3 (or the seed's legacy form when its parts carry
/// `type` tags or `taskId` sits beside the message). An `A2A-Version` this
/// server does not speak is -32009. On error, the id to answer with.
pub(crate) fn read(
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Request, (Value, RpcError, Dialect)> {
    let version = version(headers);
    let guess = if version.starts_with('1') {
        Dialect::V1
    } else {
        Dialect::V03
    };
    if !json_content(headers) {
        return Err((
            Value::Null,
            RpcError::new(
                -32005,
                "the request body must be JSON (Content-Type: application/json)",
            ),
            guess,
        ));
    }
    let v: Value = serde_json::from_slice(body).map_err(|e| {
        (
            Value::Null,
            RpcError::parse(format!("the body is not valid JSON: {e}")),
            guess,
        )
    })?;
    let Some(obj) = v.as_object() else {
        return Err((
            Value::Null,
            RpcError::invalid_request("a JSON-RPC request must be an object"),
            guess,
        ));
    };
    let id = obj.get("id").cloned().unwrap_or(Value::Null);
    if !matches!(id, Value::Null | Value::String(_) | Value::Number(_)) {
        return Err((
            Value::Null,
            RpcError::invalid_request("`id` must be a string, a number or null"),
            guess,
        ));
    }
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err((
            id,
            RpcError::invalid_request("`jsonrpc` must be \"2.0\""),
            guess,
        ));
    }
    let Some(method) = obj.get("method").and_then(Value::as_str) else {
        return Err((id, RpcError::invalid_request("`method` is required"), guess));
    };
    let params = obj.get("params").cloned().unwrap_or(Value::Null);
    let pascal = method
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_uppercase());
    let dialect = if pascal {
        Dialect::V1
    } else if is_legacy(&params) {
        Dialect::Legacy
    } else {
        Dialect::V03
    };
    let supported = match dialect {
        Dialect::V1 => version.is_empty() || major_minor(version) == Some((1, 0)),
        _ => version.is_empty() || major_minor(version).is_some_and(|(m, _)| m == 0 || m == 1),
    };
    if !supported {
        return Err((
            id,
            RpcError::new(
                -32009,
                format!("A2A-Version {version:?} is not supported: this agent speaks 1.0 and 0.3"),
            ),
            dialect,
        ));
    }
    if !params.is_null() && !params.is_object() {
        return Err((id, RpcError::params("`params` must be an object"), dialect));
    }
    Ok(Request {
        id,
        method: method.to_string(),
        params,
        dialect,
    })
}

/// The `A2A-Version` header, trimmed ("" without one).
fn version(headers: &HeaderMap) -> &str {
    headers
        .get("a2a-version")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .unwrap_or("")
}

/// Whether the body is declared JSON (a media type naming json, e.g.
/// `application/json` or `application/json-rpc`), or not declared at all.
/// The parameters do not count (`text/plain;x=json` is not JSON): a
/// browser may send `text/plain` across sites, and the cross-site check
/// leaves `/a2a` to this.
pub(crate) fn json_content(headers: &HeaderMap) -> bool {
    match headers.get(axum::http::header::CONTENT_TYPE) {
        None => true,
        Some(v) => v.to_str().is_ok_and(|ct| {
            ct.split(';')
                .next()
                .unwrap_or("")
                .to_ascii_lowercase()
                .contains("json")
        }),
    }
}

/// A message must activate every extension the card declares `required`
/// (`a2a_extensions`): in the `A2A-Extensions` header (0.3's
/// `X-A2A-Extensions` too; gRPC metadata under the same name), a
/// comma-separated list, or the message's own `extensions`. Otherwise
/// -32008 (ExtensionSupportRequired) naming what to send.
pub(crate) fn check_extensions(
    config: &crate::config::Config,
    headers: &HeaderMap,
    params: &Value,
) -> Result<(), RpcError> {
    let mut active: Vec<String> = ["a2a-extensions", "x-a2a-extensions"]
        .iter()
        .flat_map(|h| headers.get_all(*h).iter())
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|u| u.trim().to_string())
        .collect();
    if let Some(list) = params
        .get("message")
        .and_then(|m| m.get("extensions"))
        .and_then(Value::as_array)
    {
        active.extend(list.iter().filter_map(Value::as_str).map(str::to_string));
    }
    let missing: Vec<&str> = config
        .a2a_extensions
        .iter()
        .filter(|e| e.required && !active.contains(&e.uri))
        .map(|e| e.uri.as_str())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(RpcError::new(
        -32008,
        format!(
            "this agent requires the extension {}: activate it with the header A2A-Extensions: {}",
            missing.join(", "),
            missing.join(",")
        ),
    ))
}

/// The HTTP+JSON binding speaks 1.0 only: another `A2A-Version` is -32009.
pub(crate) fn check_v1(headers: &HeaderMap) -> Result<(), RpcError> {
    let v = version(headers);
    if v.is_empty() || major_minor(v) == Some((1, 0)) {
        Ok(())
    } else {
        Err(RpcError::new(
            -32009,
            format!(
                "A2A-Version {v:?} is not supported by the HTTP+JSON binding: it speaks 1.0 (JSON-RPC at POST /a2a also speaks 0.3)"
            ),
        ))
    }
}

fn major_minor(v: &str) -> Option<(u32, u32)> {
    let mut it = v.split('.');
    let major = it.next()?.trim().parse().ok()?;
    let minor = it
        .next()
        .map(|m| m.trim().parse().ok())
        .unwrap_or(Some(0))?;
    Some((major, minor))
}

/// The seed's agents: `type`-tagged parts, or `taskId` beside the message.
fn is_legacy(params: &Value) -> bool {
    if params.get("taskId").is_some() {
        return true;
    }
    params
        .get("message")
        .and_then(|m| m.get("parts"))
        .and_then(Value::as_array)
        .is_some_and(|parts| {
            parts
                .iter()
                .any(|p| p.get("type").is_some() && p.get("kind").is_none())
        })
}

/// A string or integer parameter under either spelling.
pub(crate) fn param_str(params: &Value, camel: &str, snake: &str) -> Option<String> {
    params
        .get(camel)
        .or_else(|| params.get(snake))
        .and_then(|v| match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
}

/// A non-negative integer parameter under either spelling.
pub(crate) fn param_u64(params: &Value, camel: &str, snake: &str) -> Result<Option<u64>, RpcError> {
    match params.get(camel).or_else(|| params.get(snake)) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
            .map(Some)
            .ok_or_else(|| RpcError::params(format!("`{camel}` must be a non-negative integer"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(version: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("content-type", "application/json".parse().unwrap());
        if let Some(v) = version {
            h.insert("a2a-version", v.parse().unwrap());
        }
        h
    }

    #[test]
    fn dialects_follow_the_method_and_the_parts() {
        let r = read(
            &headers(Some("1.0")),
            br#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}"#,
        )
        .unwrap();
        assert_eq!(r.dialect, Dialect::V1);
        let r = read(&headers(None), br#"{"jsonrpc":"2.0","id":"a","method":"message/send","params":{"message":{"parts":[{"kind":"text","text":"hi"}]}}}"#).unwrap();
        assert_eq!(r.dialect, Dialect::V03);
        let r = read(&headers(None), br#"{"jsonrpc":"2.0","id":2,"method":"message/send","params":{"message":{"parts":[{"type":"text","text":"hi"}]}}}"#).unwrap();
        assert_eq!(r.dialect, Dialect::Legacy);
    }

    #[test]
    fn bad_envelopes_get_the_spec_codes() {
        let code = |h: HeaderMap, b: &[u8]| read(&h, b).unwrap_err().1.code;
        assert_eq!(code(headers(None), b"{not json"), -32700);
        assert_eq!(
            code(headers(None), br#"{"jsonrpc":"1.0","id":1,"method":"x"}"#),
            -32600
        );
        assert_eq!(
            code(headers(None), br#"{"jsonrpc":"2.0","id":{},"method":"x"}"#),
            -32600
        );
        assert_eq!(code(headers(None), br#"{"jsonrpc":"2.0","id":1}"#), -32600);
        assert_eq!(
            code(
                headers(Some("99.0")),
                br#"{"jsonrpc":"2.0","id":1,"method":"GetTask"}"#
            ),
            -32009
        );
        let mut text = HeaderMap::new();
        text.insert("content-type", "text/plain".parse().unwrap());
        assert_eq!(code(text, b"hello"), -32005);
        let (id, _, _) = read(
            &headers(None),
            br#"{"jsonrpc":"1.0","id":"k","method":"x"}"#,
        )
        .unwrap_err();
        assert_eq!(id, "k", "the id is echoed");
    }

    #[test]
    fn errors_carry_error_info_in_1_0_only() {
        let e = RpcError::task_not_found("t");
        let v1 = e.body(Dialect::V1);
        assert_eq!(v1["data"][0]["reason"], "TASK_NOT_FOUND");
        assert_eq!(v1["data"][0]["domain"], "a2a-protocol.org");
        assert!(e.body(Dialect::V03).get("data").is_none());
    }

    #[test]
    fn json_is_told_by_the_media_type_not_its_parameters() {
        let with = |ct: &str| {
            let mut h = HeaderMap::new();
            h.insert("content-type", ct.parse().unwrap());
            json_content(&h)
        };
        assert!(json_content(&HeaderMap::new()));
        assert!(with("application/json; charset=utf-8"));
        assert!(with("application/json-rpc"));
        assert!(with("application/a2a+json"));
        assert!(!with("text/plain;x=json"));
        assert!(!with("application/x-www-form-urlencoded"));
    }

    #[test]
    fn rest_errors_map_to_http_statuses() {
        let e = RpcError::task_not_found("t");
        assert_eq!(e.rest_status(), 404);
        let b = e.rest_body();
        assert_eq!(b["error"]["code"], 404);
        assert_eq!(b["error"]["status"], "NOT_FOUND");
        assert_eq!(b["error"]["details"][0]["reason"], "TASK_NOT_FOUND");
        assert_eq!(RpcError::not_cancelable("x").rest_status(), 409);
        assert_eq!(RpcError::params("x").rest_status(), 400);
        assert_eq!(RpcError::new(-32005, "x").rest_status(), 415);
        assert_eq!(
            RpcError::new(-32009, "x").rest_body()["error"]["status"],
            "UNIMPLEMENTED"
        );
        assert_eq!(RpcError::forbidden("x").rest_status(), 403);
        let who = RpcError::unauthenticated("x").rest_body();
        assert_eq!(
            (&who["error"]["code"], &who["error"]["status"]),
            (&json!(401), &json!("UNAUTHENTICATED"))
        );
        assert_eq!(RpcError::new(-32603, "x").rest_status(), 500);
    }
}
