//! The tool-call lifecycle: claim → gate → approval/question → execute →
//! record. `handle_call` (`lifecycle`) takes the first unanswered call of a
//! scope, computes its `CallState` once from the stored rows (`state`),
//! and lets that state's one function say whether the turn pauses or what
//! the call's recorded result is (`outcome`).
//!
//! - `state`: what the stored rows say a call may still do;
//! - `lifecycle`: one function per state;
//! - `site`: the call being handled and where;
//! - `texts`: what people and the model read about a call;
//! - `gate`: what happens to a call before it runs (rules, annotations, pins);
//! - `approval`: storing a pending approval and pausing;
//! - `execute`: running a call write-ahead and recording its result
//!   (`finish_call`, for delegations too);
//! - `edit`: an approver's edit of the arguments, checked like the model's;
//! - `pins`: the tool pins and their drift checks;
//! - `cards`: trust in sub-agents' signed Agent Cards, held and accepted;
//! - `grants`: approvals that spare later identical calls (REACH.md §3);
//! - `delegate`: calls to sub-agents, with proxied approvals.

mod approval;
pub(super) mod cards;
mod delegate;
pub(super) mod edit;
mod execute;
pub(crate) use execute::idempotency_key;
pub(super) mod gate;
pub(crate) mod grants;
mod lifecycle;
pub(crate) mod outcome;
pub(super) mod pins;
pub(crate) mod question;
mod site;
pub(crate) mod state;
pub(crate) mod texts;
