//! Why a request to the engine failed: one error type for every command,
//! mapped to HTTP and JSON-RPC answers at the edge.

use crate::llm::LlmError;
use crate::store::StoreError;
use app::models::{ApprovalStatus, Conversation, PendingApproval};

/// Why a request to the engine failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EngineError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Invalid(String),
    #[error("conversation {0:?} is busy with another request; try again when it has finished")]
    Busy(String),
    #[error("conversation {conversation_id:?} is waiting for approval of `{}`: approve or reject it first (POST /approvals/{})", approval.tool_name, approval.uuid)]
    WaitingApproval {
        conversation_id: String,
        approval: Box<PendingApproval>,
    },
    #[error("conversation {conversation_id:?} is waiting for the answer to a question from `{}`: answer it first (POST /questions/{})", question.tool_call.tool, question.uuid)]
    WaitingInput {
        conversation_id: String,
        question: Box<app::models::Question>,
    },
    #[error("question {uuid} was already answered (status: {})", status.as_str())]
    AlreadyAnswered {
        uuid: String,
        status: app::models::QuestionStatus,
    },
    #[error("approval {uuid} was already decided (status: {})", status.as_str())]
    AlreadyDecided {
        uuid: String,
        status: ApprovalStatus,
    },
    /// A second vote by one principal on an approval with a quorum.
    #[error("{voter} has already voted on approval {uuid}: its quorum needs another approver")]
    AlreadyVoted { uuid: String, voter: String },
    /// A signed link from a notification that was used already.
    #[error("this link was used already: each link works once")]
    LinkUsed,
    #[error("{0}")]
    LlmUnavailable(String),
    #[error("{error}")]
    Llm {
        error: LlmError,
        conversation: Box<Conversation>,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the turn stopped unexpectedly: {0}")]
    Task(String),
    /// A paused pipeline run no longer matches the config.
    #[error("{0}")]
    ConfigChanged(String),
    /// The caller may not do this (AUTH.md): the message says why.
    #[error("{0}")]
    Forbidden(String),
    /// The turn was stopped by a cancel (A2A `CancelTask`).
    #[error("the turn of conversation {0:?} was cancelled")]
    Cancelled(String),
}
