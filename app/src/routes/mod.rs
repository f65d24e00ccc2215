//! One page per file.

pub mod conversation;
pub mod home;
pub mod not_found;
