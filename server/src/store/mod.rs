//! Durable state: SQLite (`data_dir/agent.db`) or PostgreSQL.
//!
//! [`Store`] is the async facade the server uses. Its intents (open a
//! conversation, record a step, claim a call, decide, recover...) are
//! written once over [`Tx`], the statements a transaction is made of, and
//! each runs as one transaction, committed before the caller answers its
//! HTTP request. Both backends implement [`Tx`]; only the facade knows
//! which one it runs on. No driver type leaves `store/` ([`StoreError`]
//! carries text). The layout:
//!
//! - `tx.rs`: [`Tx`], one sub-trait per entity, plus the statements that
//!   span entities.
//! - [`conversations`], [`messages`], [`approvals`], [`leases`], [`pins`],
//!   [`card_pins`], [`outbox`], [`push`], [`audit`], [`sessions`], [`grants`]: each entity's types,
//!   the decoders both backends share, and its intents (`impl Store`).
//! - `turns`, `calls`, `decisions`, `expiry`, [`recovery`], `inbox`,
//!   `lookups`, `event_rows`, `resolutions`: intents that span entities.
//! - `sqlite/` (embedded, one process): the engine (one write connection
//!   with group commit, a pool of readers), the migrations, and
//!   `sqlite/<entity>.rs`, each entity's statements in SQLite's dialect.
//! - `postgres/` (several replicas sharing one state, REPLICAS.md): the
//!   pool, pipelined transactions (`postgres/tx.rs`), the migrations, and
//!   `postgres/<entity>.rs`, each entity's statements in PostgreSQL's
//!   dialect, mirroring `sqlite/<entity>.rs`.

pub(crate) mod approvals;
pub mod audit;
mod calls;
pub(crate) mod card_pins;
pub(crate) mod conversations;
mod decisions;
mod error;
mod event_rows;
mod expiry;
mod facade;
pub(crate) mod grants;
mod inbox;
mod intents;
mod keys;
pub(crate) mod leases;
mod lookups;
pub(crate) mod messages;
pub(crate) mod outbox;
pub(crate) mod pins;
mod postgres;
pub(crate) mod push;
pub(crate) mod questions;
pub(crate) mod recovery;
pub(crate) mod resolutions;
pub(crate) mod sessions;
mod sqlite;
mod turns;
mod tx;

pub(crate) use calls::{DeniedCall, FinishedCall, HandedOver, Mint};
pub(crate) use conversations::PageRequest;
pub(crate) use decisions::{Decided, DecisionRecord};
pub use error::StoreError;
pub(crate) use expiry::ExpiryOutcome;
pub use facade::Store;
#[cfg(test)]
pub(crate) use leases::Beat;
pub(crate) use leases::Lease;
pub(crate) use messages::{NewMessage, NodeTag, StoredMessage};
pub(crate) use postgres::EventRow;
pub(crate) use turns::{Requester, StepMessage, Waiting};
// `Tx` is the store's own: outside `store/` only the A2A conformance
// executor (feature `a2a-tck`) and tests that stage a state no intent makes
// (a crash half-way) name it, through `Store::write_raw`.
#[cfg(any(test, feature = "a2a-tck"))]
pub(crate) use tx::Tx;
// Ids and timestamps are the domain's (the store's tests name them here).
#[cfg(test)]
pub(crate) use crate::domain::ids::now;

use std::path::Path;

#[cfg(test)]
pub(crate) mod suite;
#[cfg(test)]
mod tests;
#[cfg(test)]
use sqlite::CHECKPOINT_EVERY;

/// Checks the audit chain of the PostgreSQL database at `url` (read-only).
/// Blocking: call it off the async workers.
pub fn audit_verify_postgres(url: &str, key: Option<&[u8]>) -> Result<audit::Verdict, StoreError> {
    postgres::verify_audit(url, key)
}

/// Checks the audit chain of the database at `path` (read-only: a running
/// agent may keep writing).
pub fn audit_verify(path: &Path, key: Option<&[u8]>) -> Result<audit::Verdict, StoreError> {
    sqlite::verify_audit(path, key)
}
