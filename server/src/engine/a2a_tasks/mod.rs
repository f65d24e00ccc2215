//! A2A tasks over our conversations (`../shared/A2A.md`): what a task's
//! state is, what a message means for its task and how it is carried out,
//! below the HTTP edge, which only decodes a request, calls here and
//! encodes the answer (JSON-RPC, HTTP+JSON or gRPC).
//!
//! - [`view`]: a conversation as a task (state, status message, history,
//!   artifacts); [`plan`]: what a `SendMessage` means for its task;
//!   [`run`]: carrying a plan out with the engine; [`error`]: the A2A
//!   errors they answer.
//! - [`executor`]: what runs a message, the engine or the TCK's
//!   [`conformance`] script (`agent --a2a-conformance`);
//!   [`service`]: the two as the one handle the HTTP edge holds, with the
//!   [`push_watch`]er that queues each task's state changes for its push
//!   configs.

#[cfg(feature = "a2a-tck")]
pub(crate) mod conformance;
pub(crate) mod error;
pub(crate) mod executor;
pub(crate) mod plan;
pub(crate) mod push_watch;
pub(crate) mod run;
pub(crate) mod service;
pub(crate) mod view;
