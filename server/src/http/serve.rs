//! Serving: the router on a bound listener until shutdown, with the
//! background work a running agent does beside its requests (the outbox,
//! A2A pushes, the audit chain's hourly anchor).
//!
//! Shutdown, once `shutdown` resolves: the listener closes, open event
//! streams end, and the requests in flight get [`REQUEST_GRACE`] to finish
//! (a turn one of them waits on included). Then every task the agent
//! spawned is stopped ([`Tasks::shutdown`]): a turn still running stops at
//! its next await point, which leaves the store as a crash there would
//! (each state change is one committed transaction; the crash rules settle
//! the rest at the next start, or another replica's sweeper once the lease
//! expires). `run` waits up to [`DRAIN`] for the tasks to end, logs how
//! many did (and names any left), then the audit chain's head, and
//! returns: nothing it started runs on behind it.

use super::state::AppState;
use crate::domain::tasks::Tasks;
use crate::store::Store;
use std::future::{Future, IntoFuture};
use std::time::Duration;
use tokio::net::TcpListener;

/// How long the requests in flight may take to finish once shutdown is
/// asked, before the turns they wait on are stopped.
const REQUEST_GRACE: Duration = Duration::from_secs(5);
/// How long stopped tasks (and then the requests left) get to end.
const DRAIN: Duration = Duration::from_secs(10);

/// Serves the app on `listener` until `shutdown` completes; in-flight
/// requests finish first (for [`REQUEST_GRACE`] at most), then every task
/// the agent spawned is stopped and drained (see the module docs).
pub async fn run(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use axum::serve::ListenerExt;
    let events = state.engine.events().clone();
    let store = state.store.clone();
    let tasks = state.tasks.clone();
    // Links in notifications point at `public_url`, else at this address.
    let base = match &state.config.public_url {
        Some(u) => u.clone(),
        None => match listener.local_addr() {
            Ok(a) if a.ip().is_unspecified() => format!("http://127.0.0.1:{}", a.port()),
            Ok(a) => format!("http://{a}"),
            Err(_) => String::new(),
        },
    };
    // Receipts name the agent by the address its executors know it at.
    if let Some(signer) = &state.receipt_signer {
        state.engine.issue_receipts(signer.clone(), &base);
    }
    if state.notify.is_on() && state.config.public_url.is_none() {
        tracing::warn!(base = %base, "notifications are on but public_url is not set: their links point at {base}");
    }
    state.notify.start(
        std::sync::Arc::new(super::pages::UiPages::new(&base)),
        &tasks,
    );
    state.a2a.start_push(&tasks);
    // The audit chain's head goes to the log every hour (and at startup
    // and shutdown), so an external log holds anchors (AUTH.md §7).
    tasks.spawn_background("audit anchors", {
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
    let (asked, asked_rx) = tokio::sync::oneshot::channel::<()>();
    let served = axum::serve(listener, app).with_graceful_shutdown(async move {
        shutdown.await;
        // Open SSE streams never finish by themselves; end them so the
        // graceful shutdown does not wait for browsers to go away.
        events.close();
        let _ = asked.send(());
    });
    let served = serve_until_drained(served.into_future(), asked_rx, &tasks).await;
    drain(&tasks).await;
    log_audit_head(&store).await;
    served
}

/// Serves until the requests in flight have finished after shutdown was
/// `asked`, or for [`REQUEST_GRACE`] after it: then the tasks are stopped,
/// so the turns those requests wait on end, and with them the requests.
async fn serve_until_drained(
    served: impl Future<Output = std::io::Result<()>>,
    asked: tokio::sync::oneshot::Receiver<()>,
    tasks: &Tasks,
) -> std::io::Result<()> {
    let mut served = std::pin::pin!(served);
    let grace = async {
        match asked.await {
            Ok(()) => tokio::time::sleep(REQUEST_GRACE).await,
            // Serving ended without a shutdown (an error): nothing to time.
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        served = &mut served => return served,
        () = grace => {}
    }
    tracing::info!(
        "requests still in flight {}s after shutdown was asked: stopping the turns they wait on",
        REQUEST_GRACE.as_secs()
    );
    tasks.shutdown();
    match tokio::time::timeout(DRAIN, served).await {
        Ok(served) => served,
        Err(_) => {
            tracing::warn!("requests still in flight at the drain deadline: dropped");
            Ok(())
        }
    }
}

/// Stops every task the agent spawned and waits for them (for [`DRAIN`] at
/// most), logging how many ended and which did not.
async fn drain(tasks: &Tasks) {
    tasks.shutdown();
    let running = tasks.len();
    match tasks.wait(DRAIN).await {
        0 => tracing::info!(tasks = running, "stopped every task"),
        left => tracing::warn!(
            left,
            running = ?tasks.running(),
            "tasks still running {}s after shutdown; stopping without them",
            DRAIN.as_secs()
        ),
    }
}

/// Logs the audit chain's row count and head hash.
async fn log_audit_head(store: &Store) {
    match store.audit_head().await {
        Ok((rows, head)) => tracing::info!(rows, head = %head, "audit chain head"),
        Err(e) => tracing::error!(error = %e, "cannot read the audit chain's head"),
    }
}
