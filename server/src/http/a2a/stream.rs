//! Streaming: `SendStreamingMessage` / `message/stream` and
//! `SubscribeToTask` / `tasks/resubscribe` as server-sent events.
//!
//! Each SSE `data:` is a whole JSON-RPC response with the request's id
//! (over HTTP+JSON: the bare `StreamResponse`, [`Framing`]). A
//! stream starts with the task snapshot, then follows the engine's event
//! bus for that conversation: tool activity becomes `working` status
//! updates whose message says what runs, an approval ends a send stream as
//! `input-required`, and the answer arrives as an artifact before the
//! terminal status. The turn itself runs on its own task, so a client that
//! disconnects stops only its stream. Errors found before streaming starts
//! are plain JSON in 1.0 and an `error` event in 0.3, as each TCK expects.

use super::errors::{errors_in_stream, plain_error, rest_error};
use super::rpc::{self, RpcError};
use crate::a2a::wire::{self, Dialect, MessageView, Part, Sender, TaskState, TaskView};
use crate::domain::tools::CallContext;
use crate::engine::a2a_tasks::executor::Ran;
use crate::engine::a2a_tasks::view::view;
use crate::events::Delivery;
use crate::http::state::AppState;
use app::models::{Event, EventKind};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream;
use serde_json::{Value, json};
use std::convert::Infallible;
use std::time::Duration;
use tokio::sync::mpsc;

/// How frames are framed: JSON-RPC responses carrying the request's id,
/// or (HTTP+JSON) the bare `StreamResponse` objects.
#[derive(Clone, Debug)]
pub(crate) enum Framing {
    Rpc(Value),
    Rest,
}

/// One frame of a stream (the gRPC binding reads them too).
pub(crate) enum Frame {
    Result(Value),
    Error(RpcError),
}

/// `SendStreamingMessage` / `message/stream`.
pub(crate) async fn send(
    state: AppState,
    id: Framing,
    params: Value,
    d: Dialect,
    ctx: CallContext,
) -> Response {
    match open_send(state, params, d, ctx).await {
        Ok(rx) => sse(id, d, rx),
        Err(e) => early_error(id, e, d),
    }
}

/// Starts a send stream: its frames, or the error found before the first.
pub(crate) async fn open_send(
    state: AppState,
    params: Value,
    d: Dialect,
    mut ctx: CallContext,
) -> Result<mpsc::Receiver<Frame>, RpcError> {
    let start = async {
        let mut m = wire::incoming(&params, d).map_err(RpcError::params)?;
        m.dialect = Some(d);
        ctx.message_id = m.message_id.clone();
        let push = super::push::on_send(&state, &params)?;
        let plan = state.a2a.plan(&m, d).await?;
        super::authorize::plan(&state, &plan, &ctx).await?;
        // Know the conversation before the turn starts, to follow it.
        let cid = state.a2a.task_for(&plan, &m, &ctx).await?;
        if let Some(p) = &push {
            super::push::register(&state, &cid, p, d, &ctx).await?;
        }
        let plan = plan.on(&cid);
        Ok::<_, RpcError>((cid, plan))
    };
    let (cid, plan) = start.await?;
    let sub = state.engine.events().subscribe(None);
    let (tx, rx) = mpsc::channel::<Frame>(64);
    let owner = state.tasks.clone();
    owner.spawn_background("a2a stream", async move {
        let mut sub = sub;
        let snapshot = match state.a2a.load(&cid).await {
            Ok(c) => {
                let mut v = view(&c, true, None);
                v.state = TaskState::Working;
                v
            }
            Err(e) => {
                let _ = tx.send(Frame::Error(e.into())).await;
                return;
            }
        };
        let first = match d {
            Dialect::V1 => json!({"task": wire::task(&snapshot, d, false)}),
            _ => wire::task(&snapshot, d, false),
        };
        if tx.send(Frame::Result(first)).await.is_err() {
            // The client left: the turn still runs, detached.
        }
        let (a2a, ctx2) = (state.a2a.clone(), ctx);
        let mut op = state.tasks.spawn("a2a task", async move {
            a2a.run(plan, ctx2).await.map_err(RpcError::from)
        });
        let mut ended = false;
        let follow = |p: &crate::events::Published| {
            progress(&p.event).map(|text| Frame::Result(working(&snapshot, d, text)))
        };
        let outcome = loop {
            tokio::select! {
                done = &mut op => break done,
                next = sub.next() => match next {
                    Some(Delivery::Event(p)) if p.event.conversation_id == cid => {
                        ended |= ends_turn(&p.event);
                        if let Some(f) = follow(&p) {
                            let _ = tx.send(f).await;
                        }
                    }
                    Some(_) => {}
                    // The bus closed (shutdown): no more progress to
                    // follow, only the end.
                    None => break (&mut op).await,
                }
            }
        };
        // With replicas, events reach subscribers once written, so the
        // turn's last progress may come after the turn returned: read on
        // until its end shows (briefly at most).
        if matches!(outcome, Ok(Some(Ok(Ran::Task(_))))) && !ended {
            let until = tokio::time::Instant::now() + LATE_EVENTS;
            while let Ok(Some(next)) = tokio::time::timeout_at(until, sub.next()).await {
                let Delivery::Event(p) = next else { continue };
                if p.event.conversation_id != cid {
                    continue;
                }
                if let Some(f) = follow(&p) {
                    let _ = tx.send(f).await;
                }
                if ends_turn(&p.event) {
                    break;
                }
            }
        }
        finish(&state, &tx, d, outcome).await;
    });
    Ok(rx)
}

/// The end of a send stream: the task's final frames, the message, or
/// why the turn has neither.
async fn finish(
    state: &AppState,
    tx: &mpsc::Sender<Frame>,
    d: Dialect,
    outcome: Result<Option<Result<Ran, RpcError>>, tokio::task::JoinError>,
) {
    match outcome {
        Ok(Some(Ok(Ran::Task(c)))) => {
            let v = state.a2a.view_of(&c, None);
            for f in finals(&v, d) {
                let _ = tx.send(Frame::Result(f)).await;
            }
        }
        Ok(Some(Ok(Ran::Message(m)))) => {
            let msg = wire::message(&m, d);
            let r = match d {
                Dialect::V1 => json!({ "message": msg }),
                _ => msg,
            };
            let _ = tx.send(Frame::Result(r)).await;
        }
        Ok(Some(Err(e))) => {
            let _ = tx.send(Frame::Error(e)).await;
        }
        Ok(None) => {
            let stopped = RpcError::internal("the agent is shutting down");
            let _ = tx.send(Frame::Error(stopped)).await;
        }
        Err(join) => {
            let _ = tx
                .send(Frame::Error(RpcError::internal(join.to_string())))
                .await;
        }
    }
}

/// `SubscribeToTask` / `tasks/resubscribe`: the current snapshot, then live
/// updates until the task is terminal (1.0) or also interrupted (0.3).
pub(crate) async fn subscribe(state: AppState, id: Framing, params: Value, d: Dialect) -> Response {
    match open_subscribe(state, params, d).await {
        Ok(rx) => sse(id, d, rx),
        Err(e) => early_error(id, e, d),
    }
}

/// Starts a subscription: its frames, or the error found before the first.
pub(crate) async fn open_subscribe(
    state: AppState,
    params: Value,
    d: Dialect,
) -> Result<mpsc::Receiver<Frame>, RpcError> {
    let Some(tid) = rpc::param_str(&params, "id", "id") else {
        return Err(RpcError::params("`id` is required"));
    };
    let sub = state.engine.events().subscribe(None);
    let c = state.a2a.load(&tid).await?;
    let v = state.a2a.view_of(&c, None);
    if v.state.is_terminal() {
        return Err(RpcError::unsupported(format!(
            "task {tid:?} is {}: there is nothing more to follow; use GetTask",
            v.state.wire(Dialect::V03)
        )));
    }
    let (tx, rx) = mpsc::channel::<Frame>(64);
    let owner = state.tasks.clone();
    owner.spawn_background("a2a subscription", async move {
        let mut sub = sub;
        let first = match d {
            Dialect::V1 => json!({"task": wire::task(&v, d, true)}),
            _ => wire::task(&v, d, true),
        };
        if tx.send(Frame::Result(first)).await.is_err() {
            return;
        }
        let ends =
            |s: TaskState| s.is_terminal() || (d != Dialect::V1 && s == TaskState::InputRequired);
        if ends(v.state) {
            let _ = tx
                .send(Frame::Result(wire::status_update(&v, d, true)))
                .await;
            return;
        }
        let mut last = v.state;
        while let Some(next) = sub.next().await {
            let Delivery::Event(p) = next else { continue };
            if p.event.conversation_id != tid {
                continue;
            }
            let Ok(c) = state.a2a.load(&tid).await else {
                return;
            };
            let now = state.a2a.view_of(&c, None);
            if ends(now.state) {
                for f in finals(&now, d) {
                    let _ = tx.send(Frame::Result(f)).await;
                }
                return;
            }
            if now.state != last || progress(&p.event).is_some() {
                last = now.state;
                let frame = match progress(&p.event) {
                    Some(text) if now.state == TaskState::Working => working(&now, d, text),
                    _ => wire::status_update(&now, d, false),
                };
                if tx.send(Frame::Result(frame)).await.is_err() {
                    return;
                }
            }
        }
    });
    Ok(rx)
}

/// How long a stream waits for the events of a turn that has returned.
const LATE_EVENTS: Duration = Duration::from_millis(300);

/// Whether an event marks the end of a turn: it settled, or it waits.
fn ends_turn(e: &Event) -> bool {
    match e.kind {
        EventKind::StatusChanged => e.running == Some(false),
        EventKind::ApprovalRequested | EventKind::QuestionAsked => true,
        _ => false,
    }
}

/// The last frames of a stream: the answer as an artifact (when there is
/// one), then the final status.
fn finals(v: &TaskView, d: Dialect) -> Vec<Value> {
    let mut out: Vec<Value> = v
        .artifacts
        .iter()
        .map(|a| wire::artifact_update(v, a, d))
        .collect();
    out.push(wire::status_update(v, d, true));
    out
}

/// A `working` status update saying what runs.
fn working(v: &TaskView, d: Dialect, text: String) -> Value {
    let mut w = v.clone();
    w.state = TaskState::Working;
    w.status_message = Some(MessageView {
        id: format!("{}-progress-{}", v.id, crate::domain::ids::new_id()),
        role: Sender::Agent,
        parts: vec![Part::Text(text)],
        task_id: Some(v.id.clone()),
        context_id: Some(v.context_id.clone()),
    });
    wire::status_update(&w, d, false)
}

/// What an engine event says to a streaming client.
fn progress(e: &Event) -> Option<String> {
    let node = e
        .node
        .as_ref()
        .map(|n| format!(" ({n})"))
        .unwrap_or_default();
    match e.kind {
        EventKind::ModelCalled => Some(format!("Thinking{node}…")),
        EventKind::ToolCallStarted => Some(format!(
            "Running {}{node}…",
            e.tool.as_deref().unwrap_or("a tool")
        )),
        EventKind::ToolCallFinished => Some(format!(
            "{} finished{node}: {}",
            e.tool.as_deref().unwrap_or("A tool"),
            e.detail.as_deref().unwrap_or("done")
        )),
        EventKind::NodeStarted => {
            Some(format!("Node {} started", e.node.as_deref().unwrap_or("?")))
        }
        _ => None,
    }
}

/// An error before the stream starts: plain JSON in 1.0, an SSE `error`
/// event in 0.3 (whose clients read errors there).
fn early_error(id: Framing, e: RpcError, d: Dialect) -> Response {
    let rpc_id = match &id {
        Framing::Rest => return rest_error(&e),
        Framing::Rpc(rpc_id) => rpc_id,
    };
    if !errors_in_stream(d) || e.http_status != 200 {
        return plain_error(rpc_id, &e, d);
    }
    let (tx, rx) = mpsc::channel::<Frame>(1);
    let _ = tx.try_send(Frame::Error(e));
    drop(tx);
    sse(id, d, rx)
}

/// The SSE response over a channel of frames; ends when the sender does.
fn sse(id: Framing, d: Dialect, rx: mpsc::Receiver<Frame>) -> Response {
    let s = stream::unfold(rx, move |mut rx| {
        let id = id.clone();
        async move {
            let frame = rx.recv().await?;
            let ev = match (frame, &id) {
                (Frame::Result(r), Framing::Rpc(id)) => {
                    SseEvent::default().data(rpc::result(id, r).to_string())
                }
                (Frame::Result(r), Framing::Rest) => SseEvent::default().data(r.to_string()),
                (Frame::Error(e), Framing::Rpc(id)) => SseEvent::default()
                    .event("error")
                    .data(rpc::error(id, &e, d).to_string()),
                (Frame::Error(e), Framing::Rest) => SseEvent::default()
                    .event("error")
                    .data(e.rest_body().to_string()),
            };
            Some((Ok::<_, Infallible>(ev), rx))
        }
    });
    Sse::new(s)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}
