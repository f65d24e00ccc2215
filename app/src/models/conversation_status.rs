//! Where a conversation stands, in its own file: the conversation views and
//! the live events (`event.rs`) both name it, and neither should import the
//! other's file to get it.

use serde::{Deserialize, Serialize};

/// Where a conversation stands. Serialised in `snake_case`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ConversationStatus {
    /// Open for the next message.
    Active,
    /// Paused until an operator approves or rejects a destructive action.
    WaitingApproval,
    /// A tool asked the human something (QUESTIONS.md §2) and waits for
    /// the answer.
    WaitingInput,
    /// Finished; no further turns are expected.
    Completed,
    /// The last turn failed; the error is recorded as a message.
    Failed,
    /// Cancelled (A2A `CancelTask`): its waiting actions were cancelled and
    /// never run. A new message opens it again.
    Cancelled,
}

impl ConversationStatus {
    /// Every status, in the order the UI lists them.
    pub const ALL: [ConversationStatus; 6] = [
        ConversationStatus::Active,
        ConversationStatus::WaitingApproval,
        ConversationStatus::WaitingInput,
        ConversationStatus::Completed,
        ConversationStatus::Failed,
        ConversationStatus::Cancelled,
    ];

    /// The wire name, as used in JSON and in `?status=`.
    pub fn as_str(self) -> &'static str {
        match self {
            ConversationStatus::Active => "active",
            ConversationStatus::WaitingApproval => "waiting_approval",
            ConversationStatus::WaitingInput => "waiting_input",
            ConversationStatus::Completed => "completed",
            ConversationStatus::Failed => "failed",
            ConversationStatus::Cancelled => "cancelled",
        }
    }

    /// A short human label for badges.
    pub fn label(self) -> &'static str {
        match self {
            ConversationStatus::Active => "Active",
            ConversationStatus::WaitingApproval => "Waiting for approval",
            ConversationStatus::WaitingInput => "Waiting for input",
            ConversationStatus::Completed => "Completed",
            ConversationStatus::Failed => "Failed",
            ConversationStatus::Cancelled => "Cancelled",
        }
    }

    /// Parses the wire name; `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }
}
