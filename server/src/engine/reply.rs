//! What a caller of a turn gets back: the conversation after the turn and
//! what it produced.

use app::models::{Conversation, ProcessResult};

/// The outcome a caller gets: the conversation after the turn and what it produced.
#[derive(Clone, Debug)]
pub(crate) struct Reply {
    pub(crate) conversation: Conversation,
    pub(crate) result: ProcessResult,
}
