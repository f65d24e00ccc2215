//! Questions a tool asks the human (MCP elicitation), in both eras:
//!
//! - on a live session (2025-11-25 and before) the server sends
//!   `elicitation/create` while a call runs. The request names no call, so
//!   it goes to the oldest call in flight on that connection (over stdio one
//!   process serves every conversation; a server that asks during
//!   concurrent calls cannot be told apart, and MCP gives no way to). The
//!   call's [`Asker`] puts it in front of a human; the call's own timeout
//!   stops while it waits ([`run_pausable`]).
//! - at 2026-07-28 the call returns `input_required`: the round is handed
//!   to the engine as an [`InputRequired`] (it stores it and retries the
//!   call with the answers, maybe after a restart); requests nobody needs to
//!   see (`roots/list`) are answered here.
//!
//! `on_question: decline`, or a call made where nobody can be asked (no
//! asker), declines every question at once, as MCP clients without the
//! capability do.

use crate::domain::tools::{Ask, AskAnswer, AskerRef, InputRequired};
use app::models::QuestionKind;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest};
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The calls in flight on one server, oldest first.
#[derive(Default)]
pub(super) struct InFlight {
    next: AtomicU64,
    live: Mutex<Vec<Arc<Live>>>,
}

/// One call in flight: who answers its questions, and how long it has
/// waited for them.
pub(super) struct Live {
    id: u64,
    asker: Option<AskerRef>,
    paused: Mutex<Paused>,
}

#[derive(Default)]
struct Paused {
    waiting: u32,
    since: Option<Instant>,
    total: Duration,
}

impl Live {
    /// Time spent waiting for answers, the current wait included.
    fn paused(&self) -> Duration {
        let p = self.paused.lock().unwrap_or_else(|e| e.into_inner());
        p.total + p.since.map(|s| s.elapsed()).unwrap_or_default()
    }

    fn pause(&self) {
        let mut p = self.paused.lock().unwrap_or_else(|e| e.into_inner());
        p.waiting += 1;
        if p.waiting == 1 {
            p.since = Some(Instant::now());
        }
    }

    fn unpause(&self) {
        let mut p = self.paused.lock().unwrap_or_else(|e| e.into_inner());
        p.waiting = p.waiting.saturating_sub(1);
        if p.waiting == 0
            && let Some(s) = p.since.take()
        {
            p.total += s.elapsed();
        }
    }

    /// Asks the human through this call's asker.
    pub(super) async fn ask(&self, ask: Ask) -> AskAnswer {
        let Some(asker) = &self.asker else {
            return AskAnswer::decline();
        };
        self.pause();
        let answer = asker.0.ask(ask).await;
        self.unpause();
        answer
    }
}

/// Removes its call from the list when the call ends (or is dropped).
pub(super) struct Entered {
    flight: Arc<InFlight>,
    pub(super) live: Arc<Live>,
}

impl Drop for Entered {
    fn drop(&mut self) {
        let mut live = self.flight.live.lock().unwrap_or_else(|e| e.into_inner());
        live.retain(|l| l.id != self.live.id);
    }
}

impl InFlight {
    /// Registers a call; it leaves the list when the guard drops.
    pub(super) fn enter(self: &Arc<Self>, asker: Option<AskerRef>) -> Entered {
        let live = Arc::new(Live {
            id: self.next.fetch_add(1, Ordering::Relaxed),
            asker,
            paused: Mutex::default(),
        });
        self.live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(live.clone());
        Entered {
            flight: self.clone(),
            live,
        }
    }

    /// The call a live-session question belongs to: the oldest in flight.
    pub(super) fn oldest(&self) -> Option<Arc<Live>> {
        self.live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .first()
            .cloned()
    }
}

/// Runs `call` with `timeout`, not counting the time its questions wait.
/// `None`: the call used up its time.
pub(super) async fn run_pausable<T>(
    call: impl std::future::Future<Output = T>,
    timeout: Duration,
    live: &Live,
) -> Option<T> {
    let started = Instant::now();
    tokio::pin!(call);
    let mut step = timeout;
    loop {
        tokio::select! {
            out = &mut call => return Some(out),
            _ = tokio::time::sleep(step) => {}
        }
        let used = started.elapsed().saturating_sub(live.paused());
        if used >= timeout {
            return None;
        }
        step = (timeout - used).max(Duration::from_millis(10));
    }
}

/// A question as MCP sent it, keyed by its MRTR key when it has one.
pub(super) fn ask_of(params: &ElicitRequestParams, key: Option<String>) -> Ask {
    match params {
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } => Ask {
            key,
            kind: QuestionKind::Form,
            message: message.clone(),
            schema: serde_json::to_value(requested_schema).ok(),
            url: None,
            elicitation_id: None,
        },
        ElicitRequestParams::UrlElicitationParams {
            message,
            url,
            elicitation_id,
            ..
        } => Ask {
            key,
            kind: QuestionKind::Url,
            message: message.clone(),
            schema: None,
            url: Some(url.clone()),
            elicitation_id: (!elicitation_id.is_empty()).then(|| elicitation_id.clone()),
        },
        // A mode this agent does not know: shown as a plain message.
        _ => Ask {
            key,
            kind: QuestionKind::Form,
            message: "The tool asked something this agent cannot show.".into(),
            schema: Some(serde_json::json!({"type": "object", "properties": {}})),
            url: None,
            elicitation_id: None,
        },
    }
}

/// The answer as MCP's `ElicitResult`.
pub(super) fn result_of(answer: &AskAnswer) -> ElicitResult {
    let action = match answer.action.as_str() {
        "accept" => ElicitationAction::Accept,
        "cancel" => ElicitationAction::Cancel,
        _ => ElicitationAction::Decline,
    };
    let accept = action == ElicitationAction::Accept;
    let mut result = ElicitResult::new(action);
    if accept && let Some(c) = &answer.content {
        result = result.with_content(Value::Object(c.clone()));
    }
    result
}

/// An MRTR round as the engine gets it: the elicitations to ask, the
/// requests answered here (`roots/list`: we expose no roots), and the state.
/// A sampling request is not answered (the agent does not offer sampling):
/// the server sees it missing, as it would from any client without the
/// capability.
pub(super) fn round_of(
    requests: Option<rmcp::model::InputRequests>,
    state: Option<String>,
) -> InputRequired {
    let mut asks = Vec::new();
    let mut answered = serde_json::Map::new();
    for (key, request) in requests.unwrap_or_default() {
        match request {
            InputRequest::Elicitation(e) => asks.push(ask_of(&e.params, Some(key))),
            InputRequest::ListRoots(_) => {
                answered.insert(key, serde_json::json!({ "roots": [] }));
            }
            _ => {}
        }
    }
    InputRequired {
        asks,
        answered,
        state,
    }
}

/// The retry's responses when every question of a round is declined at
/// once.
pub(super) fn declined(round: &InputRequired) -> serde_json::Map<String, Value> {
    let mut responses = round.answered.clone();
    for a in &round.asks {
        if let Some(k) = &a.key {
            responses.insert(k.clone(), AskAnswer::decline().to_json());
        }
    }
    responses
}
