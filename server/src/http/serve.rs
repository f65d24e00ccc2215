//! Serving: the router on a bound listener until shutdown, with the
//! background work a running agent does beside its requests (the outbox,
//! A2A pushes, the audit chain's hourly anchor).

use super::state::AppState;
use crate::store::Store;
use std::future::Future;
use tokio::net::TcpListener;

/// Serves the app on `listener` until `shutdown` completes; in-flight
/// requests finish first.
pub async fn run(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use axum::serve::ListenerExt;
    let events = state.engine.events().clone();
    let store = state.store.clone();
    // Links in notifications point at `public_url`, else at this address.
    let base = match &state.config.public_url {
        Some(u) => u.clone(),
        None => match listener.local_addr() {
            Ok(a) if a.ip().is_unspecified() => format!("http://127.0.0.1:{}", a.port()),
            Ok(a) => format!("http://{a}"),
            Err(_) => String::new(),
        },
    };
    if state.notify.is_on() && state.config.public_url.is_none() {
        tracing::warn!(base = %base, "notifications are on but public_url is not set: their links point at {base}");
    }
    state.notify.start(base);
    super::a2a::push::start(state.clone());
    // The audit chain's head goes to the log every hour (and at startup
    // and shutdown), so an external log holds anchors (AUTH.md §7).
    let anchors = tokio::spawn({
        let store = store.clone();
        async move {
            let mut every = tokio::time::interval(std::time::Duration::from_secs(3600));
            every.tick().await;
            loop {
                every.tick().await;
                log_audit_head(&store).await;
            }
        }
    });
    let app = super::router::router(state);
    // Answers go out as soon as they are written: without TCP_NODELAY a
    // response written in two parts waits for the client's delayed ACK.
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("could not set TCP_NODELAY: {e}");
        }
    });
    // The peer address is what failed sign-ins are counted by, and what
    // mode `proxy` checks against `trusted_proxies`.
    let app = app.into_make_service_with_connect_info::<std::net::SocketAddr>();
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown.await;
            // Open SSE streams never finish by themselves; end them so the
            // graceful shutdown does not wait for browsers to go away.
            events.close();
        })
        .await;
    anchors.abort();
    log_audit_head(&store).await;
    served
}

/// Logs the audit chain's row count and head hash.
async fn log_audit_head(store: &Store) {
    match store.audit_head().await {
        Ok((rows, head)) => tracing::info!(rows, head = %head, "audit chain head"),
        Err(e) => tracing::error!(error = %e, "cannot read the audit chain's head"),
    }
}
