//! What a restart does with work it finds half-done: the crash rules
//! ([`crate::store::recovery`]) run once at startup, before the server
//! accepts requests, in one transaction; the conversations they leave to
//! resume (an approved call not yet started, a rejection not yet forwarded)
//! go on in the background.

use crate::engine::handle::Engine;
#[cfg(test)]
pub(crate) use crate::store::recovery::TURN_INTERRUPTED_NOTE;

impl Engine {
    /// Settles half-done work; returns the conversations to resume.
    pub(crate) async fn recover(&self) -> Result<Vec<String>, crate::store::StoreError> {
        let done = self
            .inner
            .store
            .recover(self.inner.tools.keyed_servers())
            .await?;
        crate::telemetry::metrics::get().approvals_ended("in_doubt", done.in_doubt);
        Ok(done.resume)
    }

    /// Resumes the given conversations in the background (after `recover`).
    pub(crate) fn resume_in_background(&self, ids: Vec<String>) {
        for id in ids {
            let engine = self.clone();
            self.inner
                .tasks
                .spawn_background("resume after a restart", async move {
                    if let Ok(guard) = engine.lock(&id).await {
                        engine.resume(id, guard).await;
                    }
                });
        }
    }

    /// Runs the turn of a conversation recovery left to resume, holding
    /// `guard`, in the conversation's own session (so the resumed work
    /// greps out of every agent's log with the same sid).
    pub(super) async fn resume(&self, id: String, guard: crate::engine::locks::LockGuard) {
        self.resume_after(id, guard, None, "a restart").await
    }

    /// [`Engine::resume`] in the trace that asked (`trace`), for work that
    /// goes on without a request (an expired approval).
    pub(super) async fn resume_after(
        &self,
        id: String,
        guard: crate::engine::locks::LockGuard,
        trace: Option<String>,
        after: &'static str,
    ) {
        let session_id = match self.inner.store.get_conversation(id.clone()).await {
            Ok(Some(c)) => c.session_id,
            _ => "recovery".into(),
        };
        let span = tracing::info_span!("recovery", sid = %session_id);
        let ctx = crate::domain::tools::CallContext {
            bearer: None,
            session_id,
            principal: crate::domain::principal::Principal {
                name: "agent".into(),
                ..crate::domain::principal::Principal::anonymous()
            },
            ..Default::default()
        };
        let run = self.run_turn(id.clone(), ctx, guard, None, None, trace);
        match tracing::Instrument::instrument(run, span).await {
            Ok(_) => tracing::info!(conversation = %id, after, "the turn went on"),
            Err(e) => {
                tracing::warn!(conversation = %id, after, error = %e, "the turn could not go on")
            }
        }
    }
}
