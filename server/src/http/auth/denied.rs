//! The `auth.denied` audit row: a refused request leaves a trace, but a
//! flood of them must not flood the trail. The guard and the Slack
//! endpoint write it.

use super::Auth;
use crate::store::Store;
use std::net::IpAddr;

/// Records `auth.denied` (at most ten a minute per address).
pub(crate) async fn deny(
    auth: &Auth,
    store: &Store,
    ip: IpAddr,
    actor: &str,
    route: &str,
    reason: &str,
) {
    if auth.denied_rows.blocked(ip).is_some() {
        return;
    }
    auth.denied_rows.fail(ip);
    let details = serde_json::json!({"route": route, "reason": reason, "peer": ip.to_string()});
    if let Err(e) = store.audit(actor.to_string(), "auth.denied", details).await {
        tracing::error!(error = %e, "could not record auth.denied");
    }
}
