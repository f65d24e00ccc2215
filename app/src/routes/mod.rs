//! One page per file.

pub mod approvals;
pub mod conversation;
pub mod home;
pub mod link;
pub mod not_found;
pub mod notifications;
pub mod pipeline;
pub mod tools;
