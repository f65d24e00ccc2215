//! Whether a stored run can go on: a tree whose shape changed, or a run
//! paused on another replica, is ended with an explicit error, never
//! guessed at.

use crate::engine::error::EngineError;
use crate::engine::handle::Engine;
use crate::engine::tree::Pipeline;
use app::models::ConversationStatus;
use app::pipeline::{PIPELINE_STATE_VERSION, PipelineState, RunStatus};

/// Why a stored run cannot go on under the current config, if it cannot.
pub(super) fn mismatch(ps: &PipelineState, pipeline: Option<&Pipeline>) -> Option<String> {
    let Some(p) = pipeline else {
        return Some(
            "this conversation paused inside a pipeline, but the agent now runs without one \
             (the `agent:` tree was removed from the config)"
                .into(),
        );
    };
    if ps.version != PIPELINE_STATE_VERSION {
        return Some(format!(
            "the paused run was stored in format version {} and this agent reads version {PIPELINE_STATE_VERSION}",
            ps.version
        ));
    }
    if ps.shape == p.shape {
        return None;
    }
    let at = ps
        .pending
        .first()
        .map(|c| c.path.join("/"))
        .or_else(|| ps.current().first().map(|r| r.path.join("/")))
        .unwrap_or_default();
    Some(format!(
        "the config's `agent` tree changed while the run was paused at `{at}` (was {}, now {})",
        ps.shape, p.shape
    ))
}

/// In simple mode: an error if the current turn paused inside a pipeline
/// that the config no longer has.
pub(crate) async fn paused_elsewhere(
    engine: &Engine,
    conversation_id: &str,
) -> Result<Option<EngineError>, EngineError> {
    // Most conversations never ran a pipeline: one cheap read.
    let (ps, turn) = engine.inner.store.run_and_turn(conversation_id).await?;
    match ps {
        Some(ps)
            if Some(&ps.turn) == turn.as_ref()
                && matches!(
                    ps.status,
                    RunStatus::Running | RunStatus::Paused | RunStatus::Interrupted
                ) =>
        {
            let why = mismatch(&ps, None).unwrap_or_default();
            Ok(Some(
                end_unresumable(engine, conversation_id, Some(ps), why).await?,
            ))
        }
        _ => Ok(None),
    }
}

/// Ends a run that cannot resume: its waiting calls are cancelled (never
/// run), the conversation says why and is open for a new message.
pub(super) async fn end_unresumable(
    engine: &Engine,
    conversation_id: &str,
    ps: Option<PipelineState>,
    why: String,
) -> Result<EngineError, EngineError> {
    let text = format!(
        "The paused run cannot resume: {why}. Its waiting actions were cancelled and not run. \
         Send a new message to start again, or restore the previous config for new conversations."
    );
    engine
        .inner
        .store
        .abandon_run(conversation_id, ps, text.clone())
        .await?;
    tracing::warn!(conversation = %conversation_id, "{text}");
    engine.emit_status(conversation_id, Some(ConversationStatus::Active), false);
    Ok(EngineError::ConfigChanged(text))
}
