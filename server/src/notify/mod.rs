//! Notifications (POLICY.md §5): telling people that an approval waits.
//!
//! The store writes outbox rows in the transaction of each event
//! ([`crate::store::outbox`]); this module delivers them. Each process runs
//! one worker ([`worker`]) that claims due rows (`FOR UPDATE SKIP LOCKED`
//! on PostgreSQL, so replicas share the work and each row goes out from one
//! of them at a time), sends them (webhooks in `json` or `slack` format,
//! email over SMTP), and records the outcome: delivered, retried later
//! with exponential backoff and jitter (or the receiver's `Retry-After`),
//! or, after `retry_for` (24 h), a dead letter that `/ui/notifications`
//! can send again. Sending happens off every request path: a turn that
//! raises an approval only pays for the rows it writes.
//!
//! - [`body`]: what a notification says in each format.
//! - [`links`]: the signed single-use links in it.
//! - [`webhook`], [`email`]: one attempt of each kind.
//! - [`slack`]: the clicks of interactive Slack buttons, verified, and the
//!   outcome posted back.

pub(crate) mod body;
pub(crate) mod email;
pub(crate) mod links;
mod notifier;
pub(crate) mod push;
pub(crate) mod slack;
pub(crate) mod webhook;
mod worker;

pub(crate) use notifier::{Notifier, link_key, routes};
