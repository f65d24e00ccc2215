//! The agent engine: turns, the tool-call lifecycle, the orchestration
//! tree, and the commands that start, decide and cancel them.
//!
//! - `turn/`: the tool loop: model → tools → model … → answer, pausing at a
//!   destructive call; runs a whole turn (simple mode) or one pipeline node
//!   (`scope`). `model` asks the model, `step` records its answer,
//!   `history` turns the stored timeline into a transcript.
//! - `calls/`: one call's lifecycle: claim → gate → approval → execute →
//!   record (`handle_call`), with the gate (rules, annotations, pins), an
//!   approver's edit, and delegation to sub-agents with proxied approvals.
//! - `pipeline/`: the orchestration tree and its durable run (`run`),
//!   whether a stored run can be resumed (`resume`), `{key}` placeholders
//!   (`template`), and one file per node kind (`llm_node`, `sequential`,
//!   `parallel`, `loop_node`, `a2a_node`).
//! - `commands/`: the public commands: `send` (start a conversation, send a
//!   message), `decide` (approve/reject, by API or link), `cancel`.
//! - `expiry`: approvals that time out or escalate.
//! - `receipt`: the signed receipt a decided call runs under (RECEIPTS.md).
//! - `recovery`: what a restart does with turns and approvals it finds
//!   half-done.
//! - `replicas`: each replica's background work (heartbeat, lease
//!   takeover); `running`: the running turns' cancel switches; `locks`: one
//!   writer per conversation.
//!
//! Key decisions:
//! - **The database is the turn's state.** The loop re-reads the
//!   conversation before every step and derives what to do next (an
//!   unanswered call, a decided approval, a model call). Nothing lives only in
//!   memory, so a restart resumes from exactly where the last commit left it.
//! - **Write ahead of every side effect.** A destructive call is stored as
//!   an approval row before the turn pauses; an approved call is moved to
//!   `executing` (and the tool message marked started) in a committed
//!   transaction *before* the tool runs, and its result is committed
//!   together with `executed`. A crash in between leaves `executing`, which
//!   recovery turns into `in_doubt`, never into a second run.
//! - **Events follow commits.** Each state change is published on the
//!   [`Events`] bus only after its transaction committed, so an SSE client
//!   that reloads on an event sees the change.
//! - **Turns run on their own task.** Each turn is a task of the engine's
//!   owner ([`Tasks`]) holding the conversation's lock; the HTTP request
//!   awaits it but cannot cancel it by disconnecting. Shutdown stops it at
//!   its next await point, as a crash would, and the crash rules settle it.

pub(crate) mod a2a_tasks;
pub(crate) mod ag_ui;
mod boards;
mod calls;
mod commands;
mod drive;
mod error;
mod expiry;
mod handle;
mod locks;
pub(crate) mod mcp_endpoint;
mod outcome;
mod pipeline;
mod receipt;
mod recovery;
mod replicas;
mod reply;
mod running;
mod scope;
mod tree;
mod turn;

#[cfg(test)]
use commands as decide;
pub(crate) use commands::answer::Answer;
pub(crate) use commands::decide::DecisionRequest;
pub(crate) use error::EngineError;
pub(crate) use handle::{Engine, NodeModels};
#[cfg(test)]
use recovery::TURN_INTERRUPTED_NOTE;
pub(crate) use reply::Reply;
#[cfg(test)]
use turn::history;

#[cfg(test)]
mod tests;
