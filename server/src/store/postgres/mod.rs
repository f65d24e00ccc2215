//! The PostgreSQL backend (`store.backend: postgres`): several replicas
//! share one database.
//!
//! - **Synchronous intents, blocking pool.** The store's intents are
//!   written once against [`Tx`](super::tx::Tx), a synchronous trait (rusqlite
//!   is synchronous). A pooled connection is `tokio-postgres` driven from
//!   the blocking pool on a runtime of its own (`conn.rs`), so the same
//!   closures run on PostgreSQL. `sqlx` is async-only: every intent would
//!   have to be written twice. An async semaphore of `max_connections`
//!   permits bounds how many transactions run, so a burst of turns waits
//!   without tying up threads.
//! - **Statements are prepared once per connection** and cached by their
//!   text, and planned the way PostgreSQL chooses (`plan_cache_mode =
//!   auto`). Forcing generic plans in write transactions (session 17) had a
//!   connection keep the plan made while a table was empty: the turn's
//!   read of its messages became a sequential scan of every message, 5 ms
//!   a turn after 17,000 messages, until autovacuum's next `ANALYZE`.
//! - **Writes run under READ COMMITTED** with conditional updates (the loser
//!   of a race sees zero rows); reads run in a `REPEATABLE READ READ ONLY`
//!   transaction, so a page and its counts come from one snapshot.
//! - **One file per entity** (`conversations.rs`, `messages.rs`, ...,
//!   mirroring `sqlite/`), each implementing its sub-trait of
//!   [`Tx`](super::tx::Tx) on [`PgTx`](tx::PgTx) in PostgreSQL's dialect.
//! - **Round trips are what a turn costs** here, so statements are
//!   pipelined (`tx.rs`): `BEGIN`, the fence and every write whose answer
//!   nobody waits for go with the next statement that is waited for, or
//!   with the audit rows and `COMMIT`; a transaction that issued nothing
//!   sends nothing, and a read of one statement ([`Mode::Single`]) runs
//!   without `BEGIN`/`COMMIT` (one statement is one snapshot).
//! - **Migrations** take an advisory lock, so replicas starting together
//!   migrate once. A database that cannot be reached is retried for 30 s.

mod approvals;
mod audit;
mod card_pins;
mod conn;
mod conversations;
mod counts;
mod events;
mod grants;
mod held_leases;
mod keys;
mod leases;
mod messages;
mod migrations;
mod mode;
mod outbox;
mod pins;
mod pool;
mod pool_size;
mod push;
mod questions;
mod sessions;
mod tx;

pub(crate) use events::EventRow;
pub(crate) use leases::Beat;
pub(crate) use mode::Mode;
pub(crate) use pool::{Pg, verify_audit};
