//! The REST API's handlers (DESIGN.md), one resource a file. Routes,
//! roles and docs are declared once, in `super::router`'s list.

pub(crate) mod approvals;
pub(crate) mod audit;
pub(crate) mod conversations;
pub(crate) mod docs;
pub(crate) mod events;
pub(crate) mod grants;
pub(crate) mod health;
pub(crate) mod links;
pub(crate) mod notifications;
pub(crate) mod pipeline;
pub(crate) mod questions;
pub(crate) mod resolve;
pub(crate) mod slack;
pub(crate) mod tools;
