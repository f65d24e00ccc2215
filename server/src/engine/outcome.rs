//! How a turn ended: the one outcome type of the turn level, shared by
//! the simple tool loop's driver and the pipeline's run (so neither
//! imports the other for it).

use app::models::{Conversation, PendingApproval, Question};

/// How a turn ended.
#[derive(Clone, Debug)]
pub(crate) enum TurnOutcome {
    /// The model answered with text; the conversation as the turn's last
    /// write left it, when that write read it back.
    Done(String, Option<Box<Conversation>>),
    /// A destructive call waits for an operator.
    Waiting(Box<PendingApproval>),
    /// A tool asked the human something (QUESTIONS.md).
    Asking(Box<Question>),
}
