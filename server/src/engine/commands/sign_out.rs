//! Signing out as one engine command: the browser session's row is
//! deleted and the grants made in it are revoked in one store
//! transaction, then those grants leave the engine's index, so a grant
//! never outlives the sign-in it was made in.

use crate::engine::error::EngineError;
use crate::engine::handle::Engine;

impl Engine {
    /// Ends the session whose id hashes to `id_hash` (nothing when it is
    /// gone already) with the grants made in it.
    pub(crate) async fn sign_out(&self, id_hash: String) -> Result<(), EngineError> {
        if let Some(ended) = self.store().sign_out(id_hash).await? {
            self.forget_grants(&ended);
        }
        Ok(())
    }
}
