//! What handling one tool call means for the turn that handles it: the
//! one outcome type of the call level (the turn's loop reads it).

use app::models::{PendingApproval, Question};

/// What handling one call did.
pub(crate) enum CallOutcome {
    /// The turn pauses: the call waits for this approval.
    AwaitsApproval(Box<PendingApproval>),
    /// The turn pauses: the call asked the human this (and waits for the
    /// answers of its round).
    AwaitsAnswer(Box<Question>),
    /// The call ran here and this result was recorded (with its note).
    Ran(CallResult),
    /// The call's answer went to the store some other way (denied,
    /// declined, expired, delegated, answered as in doubt), or another
    /// writer claimed it first: the turn reads it back.
    AnsweredInStore,
}

/// A call's result as recorded.
pub(crate) struct CallResult {
    pub(crate) text: String,
    pub(crate) is_error: bool,
}
