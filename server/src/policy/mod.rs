//! Approval rules (POLICY.md §1): what happens to a tool call before its
//! annotations are consulted.
//!
//! The rules of `approvals:` are compiled once at startup (tool globs,
//! predicates, approvers) and evaluated in order for every call; the first
//! whose tool glob, server and predicates all hold decides: `allow` runs
//! the call without asking (even a destructive tool), `approve` asks the
//! rule's approvers, `deny` never runs it. No match leaves the decision to
//! the tool's annotations, as before rules existed.
//!
//! Everything that could make a rule silently useless is a startup error
//! naming the rule: a bad glob, regex or pointer, a predicate that can
//! never hold, a server that does not exist, a rule shadowed by an earlier
//! one (it could never be reached), options of another action.

mod approver;
pub(crate) mod config;
mod explain;
pub mod grants;
mod predicate;
mod rule;
mod table;
#[cfg(test)]
mod tests;

pub(crate) use crate::domain::duration::parse as parse_duration;
pub(crate) use approver::admitted;
pub use explain::{explain, grants_note};
pub(crate) use rule::Action;
pub use rule::Rule;
pub(crate) use table::Expiry;
pub use table::Policy;
