//! The tool loop of one scope (model → tools → model … → answer), pausing
//! at a destructive call: a whole turn (simple mode) or one pipeline node.
//! Which one runs is the driver's choice (`engine/drive.rs`), so nothing
//! here knows the pipeline.
//!
//! - `tool_loop`: the loop, and how it ends (`ScopeEnd`);
//! - `model`: the transcript as a model request, and the model call;
//! - `step`: a model answer recorded as one step (text, then its calls);
//! - `history`: the stored timeline as a model transcript.
//!
//! Each pass of the loop derives what to do next from the stored messages:
//! an unanswered call goes to `calls::handle_call`, otherwise the model is
//! asked.

pub(super) mod history;
mod model;
mod step;
pub(crate) mod tool_loop;
