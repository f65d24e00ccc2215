//! The inbox: the approvals waiting for a decision, oldest first, a page at
//! a time, and how many wait in all.
//!
//! A page is read from the `(status, created_at)` index after the last
//! approval of the page before (a keyset, never an offset), so every page
//! costs the same however many wait; the total is an index count of the
//! pending ones only, never of the approvals' history. Every UI page shows
//! that total (the navigation's badge), so it is read alone when nothing
//! else is asked for.

use super::approvals::Approval;
use super::error::StoreError;
use super::facade::Store;
use app::models::ApprovalStatus;

/// One page of the inbox.
#[derive(Clone, Debug)]
pub(crate) struct PendingPage {
    pub(crate) approvals: Vec<Approval>,
    /// Every approval waiting, on this page or not.
    pub(crate) total: usize,
    /// Newer pending approvals follow this page.
    pub(crate) more: bool,
}

impl Store {
    /// Up to `limit` pending approvals after the approval `after` (`None`:
    /// from the oldest), and the total, from one snapshot. `None` when
    /// `after` names no approval. With `limit` 0, the total alone.
    pub(crate) async fn pending_page(
        &self,
        after: Option<String>,
        limit: u32,
    ) -> Result<Option<PendingPage>, StoreError> {
        if limit == 0 {
            let total = self.count_pending().await?;
            return Ok(Some(PendingPage {
                approvals: Vec::new(),
                total,
                more: total > 0,
            }));
        }
        self.read_long(move |tx| {
            let total = tx.count_approvals(ApprovalStatus::Pending)?;
            let Some(mut approvals) =
                tx.pending_after(after.as_deref(), limit.saturating_add(1))?
            else {
                return Ok(None);
            };
            let more = approvals.len() > limit as usize;
            approvals.truncate(limit as usize);
            Ok(Some(PendingPage {
                approvals,
                total,
                more,
            }))
        })
        .await
    }

    /// The pending approvals a sub-agent's task waits on, oldest first
    /// (the expiry's check of proxy approvals: the local ones are not read).
    pub(crate) async fn pending_proxies(&self) -> Result<Vec<Approval>, StoreError> {
        self.read_long(|tx| tx.pending_proxies()).await
    }

    /// How many approvals wait for a decision (one statement).
    pub(crate) async fn count_pending(&self) -> Result<usize, StoreError> {
        self.read_one(|tx| tx.count_approvals(ApprovalStatus::Pending))
            .await
    }
}
