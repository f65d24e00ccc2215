//! PostgreSQL's schema versions and the migration that applies them under
//! an advisory lock (replicas starting together migrate once).

use crate::store::error::StoreError;

/// Schema versions, in order; index 0 creates version 1.
const MIGRATIONS: &[&str] = &[
    include_str!("v1.sql"),
    include_str!("v2.sql"),
    include_str!("v3.sql"),
    include_str!("v4.sql"),
    include_str!("v5.sql"),
    include_str!("v6.sql"),
    include_str!("v7.sql"),
    include_str!("v8.sql"),
    include_str!("v9.sql"),
    include_str!("v10.sql"),
    include_str!("../grants.sql"),    // v11
    include_str!("../card_pins.sql"), // v12
    include_str!("../keys.sql"),      // v13
    include_str!("../receipts.sql"),  // v14
];
/// The advisory lock migrations run under (any constant shared by replicas).
const MIGRATION_LOCK: i64 = 0x5354_4f50_474f; // "STOPGO"

/// Brings the schema up to date under the migration lock; refuses a
/// database newer than this binary.
pub(super) fn migrate(config: &tokio_postgres::Config, shown: &str) -> Result<(), StoreError> {
    // The synchronous client, on a connection of its own: migrations run
    // once, before the pool serves anything.
    let mut client = postgres::Config::from(config.clone()).connect(postgres::NoTls)?;
    let client = &mut client;
    client.execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])?;
    let out = (|| {
        client.batch_execute(
            "CREATE TABLE IF NOT EXISTS stopgo_schema (version BIGINT NOT NULL); \
             INSERT INTO stopgo_schema (version) SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM stopgo_schema)",
        )?;
        let found: i64 = client
            .query_one("SELECT version FROM stopgo_schema", &[])?
            .get(0);
        let known = MIGRATIONS.len() as i64;
        if found > known {
            return Err(StoreError::TooNew {
                path: shown.to_string(),
                found,
                known,
            });
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
            let mut tx = client.transaction()?;
            tx.batch_execute(sql)?;
            tx.execute("UPDATE stopgo_schema SET version = $1", &[&(i as i64 + 1)])?;
            tx.commit()?;
            tracing::info!(database = %shown, version = i + 1, "PostgreSQL schema migrated");
        }
        Ok(())
    })();
    let unlocked = client.execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK]);
    out?;
    unlocked?;
    Ok(())
}
