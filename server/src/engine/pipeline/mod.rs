//! Orchestration: running the configured tree of nodes as one turn.
//!
//! The node kinds live one per file (`llm_node`, `sequential`, `parallel`,
//! `loop_node`, `a2a_node`); what they share lives beside them:
//! - [`Pipeline`] (`tree`): the tree compiled once at startup, with each
//!   node's effective approval rule (destructive tools run without asking inside
//!   `parallel` and `loop` nodes unless one says `approvals: enforce`) and
//!   `on_reject` (a `stop` on a node covers its subtree);
//! - `Run` (`run`): one turn's run, whose position (`PipelineState`) is
//!   written to the conversation whenever a node starts, finishes or pauses;
//! - `run_node` (`run`): the wrapper every node goes through.
//!
//! Files: `tree` (the compiled tree), `run` (the run and `run_node`),
//! `kinds` (which file runs which node kind), `drive` (the entry point,
//! `drive_pipeline`), `resume` (whether a stored run can go on),
//! `template` (`{key}` placeholders).
//!
//! **Resuming is replaying.** After an approval (or a restart that found an
//! approved call) the turn runs the tree again from the root. A node run
//! recorded as completed returns its recorded output without running; the
//! paused node's tool loop re-reads its own messages and goes on from the
//! decided call (`turn/`). So nothing before the pause runs twice, and a
//! crash at any point leaves a position the next run can continue from.
//! A stored run whose tree shape no longer matches the config is ended
//! with an explicit error (HTTP 409), never guessed at.

mod a2a_node;
mod drive;
mod kinds;
mod llm_node;
mod loop_node;
mod parallel;
mod resume;
mod run;
mod sequential;
mod template;

pub(super) use resume::paused_elsewhere;
pub(super) use template::resolve;
