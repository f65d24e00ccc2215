//! A2A: the agent-to-agent protocol (see `../shared/A2A.md`), the half the
//! engine uses: the protocol's types and a client. (The server half, which
//! answers other agents, is `http::a2a`.)
//!
//! - [`wire`]: objects in 1.0 / 0.3 / legacy form and the error codes,
//!   shared by the server half and the client;
//! - [`discovery`]: which binding and version a remote agent speaks;
//! - [`client`]: sends a message to a remote agent and reads its answer
//!   (or what the remote's waiting task asks for); used by `a2a` nodes and
//!   `a2a_<name>` tools, through the engine's delegation (`engine/calls/delegate.rs`).
//!
//! The engine reaches remote agents through the [`RemoteAgents`] trait, so
//! tests can stand in for the network and the full client (proxy approvals,
//! streaming) can replace this one without touching the engine.

pub(crate) mod client;
pub(crate) mod discovery;
mod error;
pub(crate) mod grpc;
pub(crate) mod proto;
mod read_card;
mod remote;
pub(crate) mod signing;
pub(crate) mod wire;

pub(crate) use client::A2aClient;
pub(crate) use error::A2aError;
pub(crate) use remote::{Outgoing, RemoteAgents, RemoteAsk, RemoteQuestion, RemoteReply};
