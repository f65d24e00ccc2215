//! Small view pieces shared by several pages.

pub mod agent_banner;
pub mod approval_card;
pub mod args_view;
pub mod diff_view;
pub mod edit_form;
pub mod inbox_badge;
pub mod pipeline_tree;
pub mod question_card;
pub mod resolve_form;
pub mod status_badge;
pub mod time;
pub mod viewer;
