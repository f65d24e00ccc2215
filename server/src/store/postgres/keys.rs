//! Shared keys on PostgreSQL: the statements of [`KeyTx`] on a [`PgTx`].

use super::tx::PgTx;
use crate::store::error::StoreError;
use crate::store::tx::KeyTx;

impl KeyTx for PgTx<'_> {
    fn shared_key(&self, name: &str, fresh: &str, at: &str) -> Result<String, StoreError> {
        self.exec(
            "INSERT INTO server_keys (name, secret, created_at) VALUES ($1, $2, $3) \
             ON CONFLICT (name) DO NOTHING",
            &[&name, &fresh, &at],
        )?;
        let row = self.first("SELECT secret FROM server_keys WHERE name = $1", &[&name])?;
        row.map(|r| r.get(0)).ok_or_else(|| {
            StoreError::Corrupt(format!("the key {name:?} was stored but cannot be read"))
        })
    }
}
