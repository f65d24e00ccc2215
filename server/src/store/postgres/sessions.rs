//! Sign-in sessions on PostgreSQL: the statements of [`SessionTx`] on a
//! [`PgTx`].

use super::tx::PgTx;
use crate::domain::ids::now;
use crate::store::error::StoreError;
use crate::store::sessions::Session;
use crate::store::tx::SessionTx;

impl SessionTx for PgTx<'_> {
    fn insert_session(&self, id_hash: &str, s: &Session) -> Result<(), StoreError> {
        self.exec(
            "INSERT INTO sessions (id_hash, name, roles, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)",
            &[&id_hash, &s.name, &s.roles.join(","), &now(), &s.expires_at],
        )?;
        Ok(())
    }
    fn session(&self, id_hash: &str, now: &str) -> Result<Option<Session>, StoreError> {
        Ok(self
            .first(
                "SELECT name, roles, expires_at FROM sessions WHERE id_hash = $1 AND expires_at > $2",
                &[&id_hash, &now],
            )?
            .map(|r| Session::decode(r.get(0), r.get::<_, String>(1), r.get(2))))
    }
    fn session_of(&self, name: &str, now: &str) -> Result<Option<Session>, StoreError> {
        Ok(self
            .first(
                "SELECT name, roles, expires_at FROM sessions WHERE name = $1 AND expires_at > $2 \
                 ORDER BY created_at DESC LIMIT 1",
                &[&name, &now],
            )?
            .map(|r| Session::decode(r.get(0), r.get::<_, String>(1), r.get(2))))
    }
    fn delete_session(&self, id_hash: &str) -> Result<Option<Session>, StoreError> {
        let s = self.session(id_hash, "")?;
        self.exec("DELETE FROM sessions WHERE id_hash = $1", &[&id_hash])?;
        Ok(s)
    }
    fn purge_sessions(&self, now: &str) -> Result<usize, StoreError> {
        Ok(self.exec("DELETE FROM sessions WHERE expires_at <= $1", &[&now])? as usize)
    }
}
