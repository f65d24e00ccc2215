//! Why an A2A task operation failed, in the protocol's terms (the A2A
//! error each case is), without its framing: the HTTP edge writes it as a
//! JSON-RPC, HTTP+JSON or gRPC error.

use crate::engine::error::EngineError;
use crate::store::StoreError;

/// An A2A task error. Each case is one A2A error code; the message is the
/// client's to read, except [`TaskError::Internal`]'s, which only the log
/// sees.
#[derive(Debug)]
pub(crate) enum TaskError {
    /// `-32001`: the task (or what it names) does not exist.
    NotFound(String),
    /// `-32602`: the message or its parameters do not fit the task.
    Params(String),
    /// `-32004`: the task cannot take this now (terminal, busy, decided).
    Unsupported(String),
    /// The caller may not (HTTP 403).
    Forbidden(String),
    /// Ours: the detail is logged, the client gets a correlation id.
    Internal(String),
}

impl TaskError {
    /// No task with this id.
    pub(crate) fn task_not_found(id: &str) -> TaskError {
        TaskError::NotFound(format!("Task not found: {id:?}"))
    }
}

impl From<StoreError> for TaskError {
    fn from(e: StoreError) -> Self {
        TaskError::Internal(e.to_string())
    }
}

impl From<EngineError> for TaskError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::NotFound(m) => TaskError::NotFound(m),
            EngineError::Forbidden(m) => TaskError::Forbidden(m),
            EngineError::Invalid(m) | EngineError::Store(StoreError::Unstorable(m)) => {
                TaskError::Params(m)
            }
            e @ (EngineError::Busy(_)
            | EngineError::WaitingApproval { .. }
            | EngineError::WaitingInput { .. }
            | EngineError::AlreadyDecided { .. }
            | EngineError::AlreadyAnswered { .. }
            | EngineError::AlreadyVoted { .. }
            | EngineError::ConfigChanged(_)) => TaskError::Unsupported(e.to_string()),
            e => TaskError::Internal(e.to_string()),
        }
    }
}
