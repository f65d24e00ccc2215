//! One page per file.

pub mod approvals;
pub mod conversation;
pub mod home;
pub mod not_found;
pub mod pipeline;
pub mod tools;
