//! The REST API's handlers (DESIGN.md), one resource a file. Routes,
//! roles and docs are declared once, in `super::router`'s list.

pub mod approvals;
pub mod audit;
pub mod conversations;
pub mod docs;
pub mod events;
pub mod health;
pub mod links;
pub mod notifications;
pub mod pipeline;
pub mod tools;
