//! What every A2A binding checks first of a request that arrives: the
//! hop count it has travelled (`X-A2A-Hop-Count`), so delegation cycles
//! end, and the mark that the call came over A2A.

use super::rpc::RpcError;
use crate::domain::tools::CallContext;
use crate::http::state::AppState;
use axum::http::HeaderMap;

/// Reads `X-A2A-Hop-Count` into the caller context (and marks the call
/// as A2A); beyond `a2a_max_hops` it is refused, so delegation cycles end.
pub(crate) fn arrived(
    state: &AppState,
    headers: &HeaderMap,
    ctx: &mut CallContext,
) -> Result<u32, RpcError> {
    let hops = headers
        .get("x-a2a-hop-count")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u32>().ok())
        .unwrap_or(0);
    if hops > state.config.a2a_max_hops {
        return Err(RpcError::invalid_request(format!(
            "this request has passed through {hops} agents, more than a2a_max_hops ({}): refusing, to stop a delegation cycle",
            state.config.a2a_max_hops
        )));
    }
    ctx.hops = hops;
    ctx.via = crate::domain::channel::Channel::A2a;
    Ok(hops)
}
