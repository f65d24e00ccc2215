//! Inbound A2A (`../shared/A2A.md`): the agent answering other agents.
//!
//! [`card`] (the agent card), [`rpc`] (JSON-RPC framing, dialect choice,
//! errors), [`jsonrpc`] (`POST /a2a`), [`rest`] (the HTTP+JSON binding) and
//! [`grpc`] (the gRPC binding),
//! [`tasks`] (the task methods), [`stream`] (SSE), [`push`] (push
//! notifications), [`authorize`] (who may continue a task). What a task
//! is and what runs a message (the engine, or the TCK's script) are the
//! engine's A2A task service, `crate::engine::a2a_tasks`; the protocol's
//! types are the collaborator `crate::a2a::wire`.

pub(crate) mod arrival;
pub(crate) mod authorize;
pub(crate) mod card;
pub(crate) mod errors;
pub(crate) mod grpc;
pub(crate) mod jsonrpc;
pub(crate) mod push;
pub(crate) mod rest;
pub(crate) mod rpc;
pub(crate) mod stream;
pub(crate) mod tasks;
