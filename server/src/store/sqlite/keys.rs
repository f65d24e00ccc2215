//! Shared keys on SQLite: the statements of [`KeyTx`].

use crate::store::error::StoreError;
use crate::store::tx::KeyTx;
use rusqlite::{Connection, OptionalExtension, params};

impl KeyTx for Connection {
    fn shared_key(&self, name: &str, fresh: &str, at: &str) -> Result<String, StoreError> {
        self.prepare_cached(
            "INSERT INTO server_keys (name, secret, created_at) VALUES (?1, ?2, ?3) \
             ON CONFLICT (name) DO NOTHING",
        )?
        .execute(params![name, fresh, at])?;
        let found: Option<String> = self
            .prepare_cached("SELECT secret FROM server_keys WHERE name = ?1")?
            .query_row(params![name], |r| r.get(0))
            .optional()?;
        found.ok_or_else(|| {
            StoreError::Corrupt(format!("the key {name:?} was stored but cannot be read"))
        })
    }
}
