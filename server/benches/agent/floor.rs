//! The floor under a GET's latency at 32 connections on this machine: the
//! same bytes the agent answered, served by an axum server that does
//! nothing else. It runs on a runtime of its own in a thread of its own
//! (the agent is a process of its own), listens with the agent's backlog
//! and sets TCP_NODELAY as the agent does; the load generator is the same.
//! What is left is what the load generator, loopback TCP and HTTP cost on
//! these cores, so a p99 target can be read against what the machine allows.

use axum::{Router, body::Bytes, http::header, routing::get};

/// A server answering every GET with one body; stops when dropped.
pub struct StaticServer {
    pub base: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl StaticServer {
    /// Serves `body` as `content_type` on `127.0.0.1:0`.
    pub fn start(body: Bytes, content_type: &'static str) -> StaticServer {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (bound, base) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            rt.block_on(async move {
                let listener = mcp_serve::listen("127.0.0.1:0").await.expect("bind");
                let addr = listener.local_addr().expect("an address");
                let _ = bound.send(format!("http://{addr}"));
                let app = Router::new().fallback(get(move || {
                    let body = body.clone();
                    async move { ([(header::CONTENT_TYPE, content_type)], body) }
                }));
                use axum::serve::ListenerExt;
                let listener = listener.tap_io(|tcp| {
                    let _ = tcp.set_nodelay(true);
                });
                // Stopping drops the runtime and every connection with it.
                tokio::select! {
                    _ = axum::serve(listener, app) => {}
                    _ = stopped => {}
                }
            });
        });
        StaticServer {
            base: base.recv().expect("the static server's address"),
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for StaticServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
