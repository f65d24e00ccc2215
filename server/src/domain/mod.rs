//! The bottom layer: what every other layer shares, importing none of them.
//!
//! - [`principal`]: who is calling ([`principal::Principal`], roles) and who
//!   may decide an approval ([`principal::may_decide`]);
//! - [`tools`]: the tool router the engine calls and the MCP client and
//!   sub-agents implement, with the call's context;
//! - [`channel`]: how a decision or an answer arrived (`rest`, `ui`…);
//! - [`ids`]: ids and timestamps; [`duration`]: `90s`, `15m`, `24h`;
//! - [`digest`]: hex, canonical JSON and its SHA-256;
//! - [`net`]: loopback hosts, browser origins, CIDR blocks;
//! - [`text`]: HTML escaping; [`problem`]: a config problem at a key path;
//! - [`tasks`]: the owner of every task the agent spawns, drained on
//!   shutdown; [`pages`]: the UI's page links, as `http/` hands them down.
//!
//! Key decision: these are facts and rules with no I/O (the task owner
//! spawns, but reads and writes nothing), so the store, the
//! collaborators, the engine and the HTTP layer can all use them without
//! depending on each other.

pub(crate) mod channel;
pub(crate) mod digest;
pub(crate) mod duration;
pub(crate) mod form;
pub(crate) mod ids;
pub mod net;
pub(crate) mod pages;
pub(crate) mod principal;
pub(crate) mod problem;
pub mod tasks;
pub(crate) mod text;
pub(crate) mod tools;

use std::future::Future;
use std::pin::Pin;

/// A boxed, sendable future borrowing from `'a`.
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
