//! What one call of the agent's MCP tool comes back with, in the engine's
//! terms; `http/mcp` writes it as a tool result, an `input_required`
//! round, or an `elicitation/create` on a 2025-11-25 session.

use super::round_state::WaitsOn;
use app::models::{ConversationStatus, PendingApproval, Question};
use serde_json::{Map, Value};

/// What a paused turn waits on.
#[derive(Clone, Debug)]
pub(crate) enum Pause {
    Approval(Box<PendingApproval>),
    Question(Box<Question>),
}

impl Pause {
    /// What a round's state names.
    pub(crate) fn waits_on(&self) -> WaitsOn {
        match self {
            Pause::Approval(a) => WaitsOn::Approval(a.uuid.clone()),
            Pause::Question(q) => WaitsOn::Question(q.uuid.clone()),
        }
    }

    /// `waiting_approval` or `waiting_input`.
    pub(crate) fn status(&self) -> ConversationStatus {
        match self {
            Pause::Approval(_) => ConversationStatus::WaitingApproval,
            Pause::Question(_) => ConversationStatus::WaitingInput,
        }
    }
}

/// The outcome of one call.
#[derive(Clone, Debug)]
pub(crate) enum McpReply {
    /// No pause: the conversation's status and the agent's last answer
    /// (`active` while a turn decided elsewhere is still running).
    Ended {
        conversation_id: String,
        status: ConversationStatus,
        response: String,
    },
    /// Paused on someone else, or on a caller whose client cannot be
    /// asked: the plain waiting result, with the page to pass on.
    Waiting { conversation_id: String, on: Pause },
    /// Paused on this caller, whose client can show it: ask (a form, or
    /// the page as a URL); `state` is the sealed round for 2026-07-28.
    Ask {
        conversation_id: String,
        on: Pause,
        form: bool,
        state: String,
    },
}

/// What the client's elicitation came back with (an `ElicitResult`).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Response {
    /// `accept`, `decline` or `cancel`.
    pub(crate) action: String,
    pub(crate) content: Option<Map<String, Value>>,
}

/// What the client declared it can show (its elicitation capability).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Abilities {
    pub(crate) form: bool,
    pub(crate) url: bool,
}

impl Abilities {
    /// Whether it can be asked anything at all.
    pub(crate) fn any(self) -> bool {
        self.form || self.url
    }
}
