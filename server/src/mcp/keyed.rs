//! A call's idempotency key as the `Idempotency-Key` HTTP header
//! (RECEIPTS.md §3): a Streamable HTTP server (or a proxy in front of one)
//! can honour the key without reading MCP's `_meta`, where the key
//! travels too. Every POST goes through [`super::sse_limit::Sized`], which
//! calls this before sending.

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest};
use std::collections::HashMap;

/// The header's name.
const HEADER: HeaderName = HeaderName::from_static("idempotency-key");

/// Adds the header for a `tools/call` that carries a key.
pub(super) fn add_header(
    message: &ClientJsonRpcMessage,
    headers: &mut HashMap<HeaderName, HeaderValue>,
) {
    let ClientJsonRpcMessage::Request(r) = message else {
        return;
    };
    let ClientRequest::CallToolRequest(call) = &r.request else {
        return;
    };
    let key = call
        .params
        .meta
        .as_ref()
        .and_then(|m| m.get(receipts::META_IDEMPOTENCY_KEY))
        .and_then(|v| v.as_str())
        .and_then(|k| HeaderValue::from_str(k).ok());
    if let Some(k) = key {
        headers.insert(HEADER, k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{CallToolRequestParams, Request, RequestId, RequestParamsMeta};

    fn call(key: Option<&str>) -> ClientJsonRpcMessage {
        let mut p = CallToolRequestParams::new("resources_add");
        if let Some(k) = key {
            p.meta_or_default()
                .insert(receipts::META_IDEMPOTENCY_KEY.into(), k.into());
        }
        ClientJsonRpcMessage::request(
            ClientRequest::CallToolRequest(Request::new(p)),
            RequestId::Number(1),
        )
    }

    #[test]
    fn a_keyed_call_carries_the_header_and_nothing_else_does() {
        let mut h = HashMap::new();
        add_header(&call(Some("c1/m1")), &mut h);
        assert_eq!(h.get(&HEADER).map(|v| v.to_str().unwrap()), Some("c1/m1"));
        let mut h = HashMap::new();
        add_header(&call(None), &mut h);
        assert!(h.is_empty());
    }
}
