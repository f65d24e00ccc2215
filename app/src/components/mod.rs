//! Small view pieces shared by several pages.

pub mod status_badge;
