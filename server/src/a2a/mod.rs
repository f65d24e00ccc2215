//! A2A: the agent-to-agent protocol (see `../shared/A2A.md`).
//!
//! - [`client`]: sends a message to a remote agent and reads its answer;
//!   used by `a2a` pipeline nodes and by `a2a_<name>` tools of `llm` nodes.
//!
//! The engine reaches remote agents through the [`RemoteAgents`] trait, so
//! tests can stand in for the network and the full client (proxy approvals,
//! streaming) can replace this one without touching the engine.

pub mod client;

pub use client::{A2aClient, A2aError};

use crate::llm::BoxFuture;
use crate::tools::CallContext;

/// Sends one message to a remote agent and returns its answer text.
pub trait RemoteAgents: Send + Sync {
    fn send<'a>(
        &'a self,
        url: &'a str,
        message: &'a str,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<String, A2aError>>;
}
