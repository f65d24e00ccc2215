//! Leases on SQLite: none. One process owns the database file, and its
//! in-process locks (`engine::locks`) are the leases, so [`LeaseTx`] is
//! all no-ops here (PostgreSQL's is in `postgres/leases.rs`).

use crate::store::error::StoreError;
use crate::store::tx::LeaseTx;
use rusqlite::Connection;

impl LeaseTx for Connection {
    /// One process owns the file: its in-process locks are the leases.
    fn fence(&self, _conversation_id: &str) -> Result<(), StoreError> {
        Ok(())
    }
    fn take_expired_lease(&self) -> Result<Option<(String, i64)>, StoreError> {
        Ok(None)
    }
    fn lease_new(&self, _conversation_id: &str) -> Result<i64, StoreError> {
        Ok(0)
    }
    fn release_lease(&self, _conversation_id: &str) -> Result<(), StoreError> {
        Ok(())
    }
}
