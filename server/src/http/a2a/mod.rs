//! Inbound A2A (`../shared/A2A.md`): the agent answering other agents.
//!
//! [`card`] (the agent card), [`rpc`] (JSON-RPC framing, dialect choice,
//! errors), [`jsonrpc`] (`POST /a2a`), [`rest`] (the HTTP+JSON binding) and
//! [`grpc`] (the gRPC binding),
//! [`tasks`] (tasks over conversations), [`stream`] (SSE), [`push`] (push
//! notifications), [`authorize`] (who may continue a task), [`executor`]
//! (what runs a message: the engine, or the TCK's [`conformance`] script).
//! The protocol's types are the collaborator `crate::a2a::wire`.

pub(crate) mod authorize;
pub(crate) mod card;
#[cfg(feature = "a2a-tck")]
pub(crate) mod conformance;
pub(crate) mod executor;
pub(crate) mod grpc;
pub(crate) mod jsonrpc;
pub(crate) mod push;
pub(crate) mod rest;
pub(crate) mod rpc;
pub(crate) mod stream;
pub(crate) mod tasks;
