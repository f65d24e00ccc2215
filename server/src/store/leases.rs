//! Who runs a conversation's turn: a lease (REPLICAS.md §3).
//!
//! On PostgreSQL a lease is a row shared by the replicas (see
//! `postgres/leases.rs`): claimed before a turn, renewed by a heartbeat,
//! checked by every write of the turn, taken over by another replica's
//! sweeper when it expires. On SQLite one process owns the file and its
//! in-process locks are enough: a lease there is a token that costs
//! nothing.

use super::error::StoreError;
use super::facade::Backend;
use super::facade::Store;
pub(crate) use super::postgres::Beat;
use super::recovery::recover_one;

/// The right to write one conversation's turn. Dropped without
/// [`Lease::release`] (an early error return), it is released in the
/// background; dropped once the agent is shutting down (its turn was
/// stopped), it is left to expire.
pub(crate) struct Lease {
    store: Store,
    conversation_id: String,
    epoch: i64,
    released: bool,
}

/// A turn the sweeper took over from a replica that stopped.
pub(crate) struct Swept {
    pub(crate) lease: Lease,
    /// An approved call waits to run (or a rejection to be forwarded):
    /// the turn goes on under `lease`.
    pub(crate) resume: bool,
    /// Approvals that became `in_doubt`.
    pub(crate) in_doubt: u64,
}

impl Lease {
    pub(crate) fn conversation_id(&self) -> &str {
        &self.conversation_id
    }

    /// Gives the lease back (the turn ended or paused).
    pub(crate) async fn release(mut self) {
        self.released = true;
        if let Backend::Postgres(pg) = &self.store.backend
            && let Err(e) = pg.release(&self.conversation_id, self.epoch).await
        {
            // Not fatal: the lease expires and the sweeper finds nothing
            // to settle.
            tracing::warn!(conversation = %self.conversation_id, error = %e, "could not release a lease; it will expire");
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        let Backend::Postgres(pg) = &self.store.backend else {
            return;
        };
        let (pg, id, epoch) = (pg.clone(), self.conversation_id.clone(), self.epoch);
        // Shutting down (the turn holding it was stopped, or there is no
        // runtime left): it expires, as after a crash, and the sweeper
        // settles its turn by the crash rules. Released now, it would leave
        // a running turn that no sweeper looks at.
        if self.store.tasks.is_stopping() || tokio::runtime::Handle::try_current().is_err() {
            pg.forget(&id, epoch);
            return;
        }
        self.store.tasks.spawn_background("lease release", async move {
            if let Err(e) = pg.release(&id, epoch).await {
                tracing::warn!(conversation = %id, error = %e, "could not release a lease; it will expire");
            }
        });
    }
}

impl Store {
    /// True when other replicas may share the data (PostgreSQL).
    pub(crate) fn shared(&self) -> bool {
        matches!(self.backend, Backend::Postgres(_))
    }

    /// Claims the turn of `conversation_id`: `None` while another replica
    /// runs it.
    pub(crate) async fn claim_lease(
        &self,
        conversation_id: &str,
    ) -> Result<Option<Lease>, StoreError> {
        let epoch = match &self.backend {
            Backend::Sqlite(_) => Some(0),
            Backend::Postgres(pg) => pg.claim(conversation_id).await?,
        };
        Ok(epoch.map(|epoch| Lease {
            store: self.clone(),
            conversation_id: conversation_id.to_string(),
            epoch,
            released: false,
        }))
    }

    /// The lease a committed transaction took with [`super::tx::LeaseTx::lease_new`].
    pub(super) fn adopt_lease(&self, conversation_id: &str, epoch: i64) -> Lease {
        if let Backend::Postgres(pg) = &self.backend {
            pg.adopt(conversation_id, epoch);
        }
        Lease {
            store: self.clone(),
            conversation_id: conversation_id.to_string(),
            epoch,
            released: false,
        }
    }

    /// Renews this replica's leases; says which were lost and which were
    /// asked to cancel.
    pub(crate) async fn heartbeat(&self) -> Result<Beat, StoreError> {
        match &self.backend {
            Backend::Sqlite(_) => Ok(Beat::default()),
            Backend::Postgres(pg) => pg.heartbeat().await,
        }
    }

    /// Asks the replica running `conversation_id`'s turn to cancel it:
    /// false when no replica runs it.
    pub(crate) async fn request_cancel(&self, conversation_id: &str) -> Result<bool, StoreError> {
        match &self.backend {
            Backend::Sqlite(_) => Ok(false),
            Backend::Postgres(pg) => pg.request_cancel(conversation_id).await,
        }
    }

    /// Takes over one turn whose lease expired and applies the crash rules
    /// to it, in one transaction; `None` when there is none.
    /// `keyed`: the servers a cut call is retried on once, with its key.
    pub(crate) async fn sweep_one(&self, keyed: Vec<String>) -> Result<Option<Swept>, StoreError> {
        let Backend::Postgres(pg) = &self.backend else {
            return Ok(None);
        };
        let routes = self.notify_routes.clone();
        let taken = self
            .write(move |tx| {
                let Some((id, epoch)) = tx.take_expired_lease()? else {
                    return Ok(None);
                };
                let (resume, in_doubt) = recover_one(tx, &routes, &id, &keyed)?;
                Ok(Some((id, epoch, resume, in_doubt)))
            })
            .await?;
        Ok(taken.map(|(id, epoch, resume, in_doubt)| {
            pg.adopt(&id, epoch);
            Swept {
                lease: Lease {
                    store: self.clone(),
                    conversation_id: id,
                    epoch,
                    released: false,
                },
                resume,
                in_doubt,
            }
        }))
    }
}
