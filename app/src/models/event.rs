//! The live events (SSE) the server publishes and the UI follows.

use super::conversation_status::ConversationStatus;
use serde::{Deserialize, Serialize};

/// What happened, as the SSE streams (`GET /events`,
/// `GET /conversations/:id/events`) publish it. The event's SSE name is
/// `kind`; its SSE id orders events and lets a client catch up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A new conversation (or a new message in one).
    MessageAdded,
    /// A tool started running (`tool` names it).
    ToolCallStarted,
    /// A tool finished (`detail` is `ok` or `error`).
    ToolCallFinished,
    /// A destructive call waits for a decision (`approval` is its uuid).
    ApprovalRequested,
    /// An approval was approved or rejected (`detail` says which).
    ApprovalDecided,
    /// A vote on an approval with a quorum that is still short of it
    /// (`detail`: "1 of 2").
    ApprovalVoted,
    /// The conversation's status or its running turn changed.
    StatusChanged,
    /// The model is being asked (`detail` says which step).
    ModelCalled,
    /// A pipeline node started (`node` names it).
    NodeStarted,
    /// A pipeline node finished (`detail`: completed, paused, stopped or failed).
    NodeFinished,
    /// A tool asked the human something (`question` is its uuid).
    QuestionAsked,
    /// A question was answered, declined, cancelled or expired (`detail`).
    QuestionAnswered,
    /// The server cannot replay what the client missed (it restarted, or
    /// the client was away too long): reload the state.
    Resync,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::MessageAdded => "message_added",
            EventKind::ToolCallStarted => "tool_call_started",
            EventKind::ToolCallFinished => "tool_call_finished",
            EventKind::ApprovalRequested => "approval_requested",
            EventKind::ApprovalDecided => "approval_decided",
            EventKind::ApprovalVoted => "approval_voted",
            EventKind::StatusChanged => "status_changed",
            EventKind::ModelCalled => "model_called",
            EventKind::NodeStarted => "node_started",
            EventKind::NodeFinished => "node_finished",
            EventKind::QuestionAsked => "question_asked",
            EventKind::QuestionAnswered => "question_answered",
            EventKind::Resync => "resync",
        }
    }

    pub const ALL: [EventKind; 13] = [
        EventKind::MessageAdded,
        EventKind::ToolCallStarted,
        EventKind::ToolCallFinished,
        EventKind::ApprovalRequested,
        EventKind::ApprovalDecided,
        EventKind::ApprovalVoted,
        EventKind::StatusChanged,
        EventKind::ModelCalled,
        EventKind::NodeStarted,
        EventKind::NodeFinished,
        EventKind::QuestionAsked,
        EventKind::QuestionAnswered,
        EventKind::Resync,
    ];
}

/// One published event (the SSE `data`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct Event {
    pub kind: EventKind,
    pub conversation_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ConversationStatus>,
    /// True while a turn runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The pipeline node it concerns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    pub at: String,
}
