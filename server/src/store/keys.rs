//! Keys the agent makes for itself and every replica shares: the first
//! to ask stores a random one, everyone after reads it (CLIENTS.md §2: the
//! MCP round state's HMAC key). Key decision: the store, not a file in
//! `data_dir`, so a state sealed on one replica opens on another.

use super::error::StoreError;
use super::facade::Store;

impl Store {
    /// The shared key `name`: 32 random bytes (hex) made once, then read.
    pub(crate) async fn shared_key(&self, name: &str) -> Result<Vec<u8>, StoreError> {
        let name = name.to_string();
        let fresh = crate::domain::digest::hex(&rand::random::<[u8; 32]>());
        let at = crate::domain::ids::now();
        let key = self
            .write(move |tx| tx.shared_key(&name, &fresh, &at))
            .await?;
        Ok(key.into_bytes())
    }
}
