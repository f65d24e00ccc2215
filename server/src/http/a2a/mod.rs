//! Inbound A2A (`../shared/A2A.md`): the agent answering other agents.
//!
//! [`card`] (the agent card), [`rpc`] (JSON-RPC framing, dialect choice,
//! errors), [`jsonrpc`] (`POST /a2a`) and [`rest`] (the HTTP+JSON binding),
//! [`tasks`] (tasks over conversations), [`stream`] (SSE), [`push`] (push
//! notifications), [`authorize`] (who may continue a task), [`executor`]
//! (what runs a message: the engine, or the TCK's [`conformance`] script).
//! The protocol's types are the collaborator `crate::a2a::wire`.

pub mod authorize;
pub mod card;
pub mod conformance;
pub mod executor;
pub mod jsonrpc;
pub mod push;
pub mod rest;
pub mod rpc;
pub mod stream;
pub mod tasks;
