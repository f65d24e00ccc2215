//! An A2A error as each binding writes it when it is not a JSON-RPC
//! answer of its own: plain JSON-RPC JSON, the HTTP+JSON binding's AIP-193
//! body, and whether a dialect sends a streaming method's errors inside
//! the stream. The endpoints, the streams and the guard's refusals use it.

use super::rpc::{self, RpcError};
use crate::a2a::wire::Dialect;
use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

/// Whether the dialect sends errors of streaming methods inside the stream
/// (0.3 clients read them there; 1.0 wants plain JSON).
pub(crate) fn errors_in_stream(d: Dialect) -> bool {
    d != Dialect::V1
}

/// A JSON-RPC error response as plain JSON.
pub(crate) fn plain_error(id: &Value, e: &RpcError, d: Dialect) -> Response {
    let status =
        axum::http::StatusCode::from_u16(e.http_status).unwrap_or(axum::http::StatusCode::OK);
    (status, Json(rpc::error(id, e, d))).into_response()
}

/// An error as the HTTP+JSON binding answers it.
pub(crate) fn rest_error(e: &RpcError) -> Response {
    if e.code == -32603 {
        tracing::warn!(error = %e.message, "a2a request failed");
    }
    let status = StatusCode::from_u16(e.rest_status()).unwrap_or(StatusCode::BAD_REQUEST);
    (status, Json(e.rest_body())).into_response()
}
