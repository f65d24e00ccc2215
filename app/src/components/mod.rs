//! Small view pieces shared by several pages.

pub mod agent_banner;
pub mod approval_card;
pub mod status_badge;
