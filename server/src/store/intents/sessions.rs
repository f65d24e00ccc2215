//! Sign-in sessions' intents (sign in, sign out with its grants, look a
//! session up) and the audit log's own (an event, a page, the head).

use crate::domain::ids::now;
use crate::store::audit::{self, Event};
use crate::store::error::StoreError;
use crate::store::facade::Store;
use crate::store::grants::end_signin_grants;
use crate::store::sessions::Session;

impl Store {
    /// Starts a session and records `auth.signed_in`, in one transaction.
    pub(crate) async fn sign_in(
        &self,
        id_hash: String,
        session: Session,
        method: &'static str,
    ) -> Result<(), StoreError> {
        self.write(move |tx| {
            tx.insert_session(&id_hash, &session)?;
            tx.audit(
                &Event {
                    actor: &session.name,
                    event: "auth.signed_in",
                    conversation_id: None,
                    approval_uuid: None,
                    details: serde_json::json!({"method": method, "roles": session.roles, "expires_at": session.expires_at}),
                },
            )?;
            // Old sessions go when new ones come: no separate sweeper.
            tx.purge_sessions(&now())?;
            Ok(())
        })
        .await
    }

    /// Ends a session and records `auth.signed_out`, and in the same
    /// transaction ends the grants made in it (REACH.md §3: a grant never
    /// outlives its sign-in), each `grant.revoked`; returns their ids
    /// (`None`: there was no such session).
    pub(crate) async fn sign_out(
        &self,
        id_hash: String,
    ) -> Result<Option<Vec<String>>, StoreError> {
        self.write(move |tx| {
            let Some(s) = tx.delete_session(&id_hash)? else {
                return Ok(None);
            };
            tx.audit(&Event {
                actor: &s.name,
                event: "auth.signed_out",
                conversation_id: None,
                approval_uuid: None,
                details: serde_json::json!({}),
            })?;
            end_signin_grants(tx, &id_hash, &s.name).map(Some)
        })
        .await
    }

    /// The live session under `id_hash`.
    pub(crate) async fn session(&self, id_hash: String) -> Result<Option<Session>, StoreError> {
        self.read(move |tx| tx.session(&id_hash, &now())).await
    }

    /// The live session `name` signed in with last (its roles are what the
    /// identity provider said then).
    pub(crate) async fn session_of(&self, name: String) -> Result<Option<Session>, StoreError> {
        self.read(move |tx| tx.session_of(&name, &now())).await
    }

    /// Records one audit event in its own transaction (events that change
    /// no other state: `auth.denied`, `config.loaded`).
    pub(crate) async fn audit(
        &self,
        actor: String,
        event: &'static str,
        details: serde_json::Value,
    ) -> Result<(), StoreError> {
        self.write(move |tx| {
            tx.audit(&Event {
                actor: &actor,
                event,
                conversation_id: None,
                approval_uuid: None,
                details,
            })
        })
        .await
    }

    /// Up to `limit` audit rows after `after`.
    pub(crate) async fn audit_page(
        &self,
        after: i64,
        limit: u32,
    ) -> Result<Vec<audit::Row>, StoreError> {
        self.read_long(move |tx| tx.audit_page(after, limit)).await
    }

    /// The audit chain's newest `(seq, hash)`.
    pub(crate) async fn audit_head(&self) -> Result<(i64, String), StoreError> {
        self.read(|tx| tx.audit_head()).await
    }
}
