//! Leases: one replica runs a conversation's turn at a time (REPLICAS.md §3).
//!
//! - A claim is one conditional upsert: it succeeds only when no replica
//!   owns the conversation, and bumps `epoch`, the fencing token.
//! - The times are the database's (`now()`), so replicas' clocks never
//!   matter.
//! - Every write of a turn checks, in its own transaction, that the lease
//!   it was started under is still this replica's ([`LeaseTx::fence`]); a
//!   replica that stalled past its lease finds the epoch moved on and stops
//!   writing, while the replica that took over applies the crash rules.
//! - One heartbeat statement renews every lease this replica holds and
//!   reads the cancel requests other replicas left on them.
//! - Claims and releases are single statements outside an explicit
//!   transaction: one round trip each. Two ride on a turn's own writes
//!   instead: a new conversation commits with its lease (`LEASE_NEW`), and
//!   a turn's last write gives it back (`LeaseTx::release_lease`), which the
//!   engine's later release then finds done.
//!
//! The transaction's side of a lease ([`LeaseTx`] on a [`PgTx`]: fence,
//! take over, lease a new conversation, give back) is here too.

use super::mode::Mode;
use super::pool::Pg;
use super::tx::{Deferred, PgTx, own};
use crate::store::error::StoreError;
use crate::store::tx::LeaseTx;

/// What a heartbeat found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Beat {
    /// Conversations whose lease another replica took over.
    pub(crate) lost: Vec<String>,
    /// Conversations another replica was asked to cancel.
    pub(crate) cancel: Vec<String>,
}

/// The statements.
const CLAIM: &str = "INSERT INTO leases (conversation_id, owner, epoch, lease_until) \
     VALUES ($1, $2, 1, now() + make_interval(secs => $3)) \
     ON CONFLICT (conversation_id) DO UPDATE \
     SET owner = EXCLUDED.owner, epoch = leases.epoch + 1, \
         lease_until = EXCLUDED.lease_until, cancel_requested = false \
     WHERE leases.owner IS NULL \
     RETURNING epoch";
/// The lease of a conversation its own transaction inserts: no other
/// replica can hold it, so it is a plain insert at the first epoch.
const LEASE_NEW: &str = "INSERT INTO leases (conversation_id, owner, epoch, lease_until) \
     VALUES ($1, $2, $3, now() + make_interval(secs => $4))";
/// A lease's first epoch.
const NEW_EPOCH: i64 = 1;
const RELEASE: &str = "UPDATE leases SET owner = NULL, lease_until = NULL, cancel_requested = false \
     WHERE conversation_id = $1 AND epoch = $2 AND owner = $3";
const RENEW: &str = "UPDATE leases SET lease_until = now() + make_interval(secs => $2) \
     FROM unnest($3::text[], $4::bigint[]) AS h(id, epoch) \
     WHERE leases.owner = $1 AND leases.conversation_id = h.id AND leases.epoch = h.epoch \
     RETURNING leases.conversation_id, leases.cancel_requested";
const REQUEST_CANCEL: &str = "UPDATE leases SET cancel_requested = true \
     WHERE conversation_id = $1 AND owner IS NOT NULL";
const FENCE: &str = "SELECT 1 FROM leases \
     WHERE conversation_id = $1 AND epoch = $2 AND owner = $3 FOR SHARE";
const TAKE_EXPIRED: &str = "SELECT conversation_id FROM leases \
     WHERE owner IS NOT NULL AND lease_until < now() \
     ORDER BY lease_until LIMIT 1 FOR UPDATE SKIP LOCKED";
const TAKE_OVER: &str = "UPDATE leases \
     SET owner = $2, epoch = epoch + 1, lease_until = now() + make_interval(secs => $3), \
         cancel_requested = false \
     WHERE conversation_id = $1 RETURNING epoch";

impl Pg {
    /// Claims the turn of `conversation_id` for this replica: its epoch, or
    /// `None` while another replica (or another turn here) owns it.
    pub(crate) async fn claim(&self, conversation_id: &str) -> Result<Option<i64>, StoreError> {
        let id = conversation_id.to_string();
        let epoch = self
            .on_conn(move |conn, leases| {
                let row = conn.query_opt(CLAIM, &[&id, &leases.owner, &leases.seconds])?;
                let epoch: Option<i64> = row.map(|r| r.get(0));
                if let Some(e) = epoch {
                    leases.adopt(&id, e);
                }
                Ok(epoch)
            })
            .await?;
        Ok(epoch)
    }

    /// Gives the lease back (its turn ended). Nothing to do when it is no
    /// longer held here: the turn's last write gave it back with its
    /// commit (`LeaseTx::release_lease`), or another replica took it over.
    pub(crate) async fn release(
        &self,
        conversation_id: &str,
        epoch: i64,
    ) -> Result<(), StoreError> {
        if self.inner.leases.epoch(conversation_id) != Some(epoch) {
            return Ok(());
        }
        let id = conversation_id.to_string();
        let out = self
            .on_conn(move |conn, leases| {
                conn.execute(RELEASE, &[&id, &epoch, &leases.owner])?;
                Ok(())
            })
            .await;
        self.inner.leases.forget(conversation_id, epoch);
        out
    }

    /// Stops renewing a lease without a round trip (a turn that ended
    /// abnormally): it expires and the sweeper settles the conversation.
    pub(crate) fn forget(&self, conversation_id: &str, epoch: i64) {
        self.inner.leases.forget(conversation_id, epoch);
    }

    /// Registers a lease the sweeper took over (after its transaction
    /// committed).
    pub(crate) fn adopt(&self, conversation_id: &str, epoch: i64) {
        self.inner.leases.adopt(conversation_id, epoch);
    }

    /// Renews every lease this replica holds, in one statement.
    pub(crate) async fn heartbeat(&self) -> Result<Beat, StoreError> {
        let held: Vec<(String, i64)> = self
            .inner
            .leases
            .held()
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        if held.is_empty() {
            return Ok(Beat::default());
        }
        self.on_conn(move |conn, leases| {
            let (ids, epochs): (Vec<String>, Vec<i64>) = held.iter().cloned().unzip();
            let rows = conn.query(RENEW, &[&leases.owner, &leases.seconds, &ids, &epochs])?;
            let mut beat = Beat::default();
            let mut renewed = std::collections::HashSet::new();
            for r in rows {
                let id: String = r.get(0);
                if r.get::<_, bool>(1) {
                    beat.cancel.push(id.clone());
                }
                renewed.insert(id);
            }
            for (id, epoch) in held {
                // Released meanwhile: not lost.
                if !renewed.contains(&id) && leases.epoch(&id) == Some(epoch) {
                    leases.forget(&id, epoch);
                    beat.lost.push(id);
                }
            }
            Ok(beat)
        })
        .await
    }

    /// Asks the replica running `conversation_id` to cancel it; false when
    /// no replica runs it.
    pub(crate) async fn request_cancel(&self, conversation_id: &str) -> Result<bool, StoreError> {
        let id = conversation_id.to_string();
        self.on_conn(move |conn, _| Ok(conn.execute(REQUEST_CANCEL, &[&id])? > 0))
            .await
    }
}

impl LeaseTx for PgTx<'_> {
    fn fence(&self, conversation_id: &str) -> Result<(), StoreError> {
        let Some(epoch) = self.leases.epoch(conversation_id) else {
            return Ok(());
        };
        if self.mode == Mode::Write {
            // Held like a write: `stopgo_fence` raises when the lease moved
            // on, which fails the transaction before anything after it
            // (a pipelined `COMMIT` included) can take effect.
            self.deferred.borrow_mut().push(Deferred {
                sql: "SELECT stopgo_fence($1, $2, $3)",
                params: vec![
                    own(conversation_id.to_string()),
                    own(epoch),
                    own(self.leases.owner.clone()),
                ],
                fence: Some(conversation_id.to_string()),
            });
            self.known.borrow_mut().insert(conversation_id.to_string());
            return Ok(());
        }
        // FOR SHARE: a replica taking the lease over waits for this
        // transaction, so nothing it writes lands after the takeover.
        match self
            .first(FENCE, &[&conversation_id, &epoch, &self.leases.owner])?
            .is_some()
        {
            true => Ok(()),
            false => Err(StoreError::LeaseLost(conversation_id.to_string())),
        }
    }
    fn lease_new(&self, conversation_id: &str) -> Result<i64, StoreError> {
        // Held like a write: the conversation's insert goes first, in the
        // same round trip, and a failure fails the transaction.
        self.defer(
            LEASE_NEW,
            vec![
                own(conversation_id.to_string()),
                own(self.leases.owner.clone()),
                own(NEW_EPOCH),
                own(self.leases.seconds),
            ],
        )?;
        Ok(NEW_EPOCH)
    }
    fn release_lease(&self, conversation_id: &str) -> Result<(), StoreError> {
        let Some(epoch) = self.leases.epoch(conversation_id) else {
            return Ok(());
        };
        self.defer(
            RELEASE,
            vec![
                own(conversation_id.to_string()),
                own(epoch),
                own(self.leases.owner.clone()),
            ],
        )?;
        self.released
            .borrow_mut()
            .push((conversation_id.to_string(), epoch));
        Ok(())
    }
    fn take_expired_lease(&self) -> Result<Option<(String, i64)>, StoreError> {
        let Some(row) = self.first(TAKE_EXPIRED, &[])? else {
            return Ok(None);
        };
        let id: String = row.get(0);
        let epoch: i64 = self
            .first(TAKE_OVER, &[&id, &self.leases.owner, &self.leases.seconds])?
            .map(|r| r.get(0))
            .ok_or_else(|| StoreError::Corrupt(format!("the lease of {id} vanished")))?;
        Ok(Some((id, epoch)))
    }
}
