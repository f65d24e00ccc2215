//! The statements a transaction is made of, as backend-neutral traits.
//!
//! The store's intent-level methods (open a conversation, record a step,
//! claim a call, decide, recover...) are written once, against `&dyn Tx`,
//! and each runs as one transaction of whichever backend holds the data.
//! A backend implements these statements and nothing else: the rules (what
//! a decision writes, which crash rule applies) live in the intents, so two
//! backends cannot drift apart. No SQL or driver type appears here.
//!
//! [`Tx`] is the whole set: one sub-trait per entity ([`ConversationTx`],
//! [`MessageTx`], [`ApprovalTx`], ...), which each backend implements in
//! its file of that entity (`sqlite/<entity>.rs` beside
//! `postgres/<entity>.rs`), and the statements that span entities, kept
//! on [`Tx`] itself so that a backend can override their defaults with
//! fewer statements. Callers hold a `&dyn Tx`, which reaches the methods
//! of every sub-trait.

use super::approvals::{Approval, Decider, NewApproval};
use super::audit::{self, Event};
use super::conversations::{Page, PageRequest, TasksInState};
use super::error::StoreError;
use super::messages::{NewMessage, StoredMessage};
use super::questions::QuestionRow;
use super::sessions::Session;
use app::models::{
    ApprovalStatus, Conversation, ConversationItem, ConversationStatus, Message, PendingApproval,
    Summary,
};
use app::pipeline::PipelineState;

/// One open transaction (or read snapshot) of a backend: the statements
/// of every entity, and those that span entities (conversations and
/// messages), whose defaults a backend may override with fewer statements.
pub(crate) trait Tx:
    ConversationTx
    + MessageTx
    + ApprovalTx
    + QuestionTx
    + LeaseTx
    + PinTx
    + CardPinTx
    + OutboxTx
    + PushTx
    + AuditTx
    + SessionTx
    + GrantTx
    + KeyTx
{
    /// A new conversation in `session`, asked by `name`, with its first
    /// message and its turn running:
    /// [`ConversationTx::insert_conversation`],
    /// [`ConversationTx::set_requester`], [`MessageTx::append`] and
    /// [`ConversationTx::set_turn_running`] in one. A backend may write it
    /// as one statement (PostgreSQL: one row inserted with its final
    /// columns, instead of inserted and then updated three times).
    fn insert_with_message(
        &self,
        session: &str,
        name: &str,
        first: NewMessage,
    ) -> Result<(Conversation, Message), StoreError> {
        let c = self.insert_conversation(session)?;
        self.set_requester(&c.id, name, session)?;
        let m = append_existing(self, &c.id, first)?;
        self.set_turn_running(&c.id, true)?;
        Ok((c, m))
    }
    /// [`MessageTx::append`] of a turn's last message, and
    /// [`ConversationTx::set_turn_running`] to false: the turn ends with it.
    /// A backend may write both in one row update (PostgreSQL does, for a
    /// conversation this transaction fenced). An error when the
    /// conversation is gone.
    fn append_ending(&self, conversation_id: &str, m: NewMessage) -> Result<Message, StoreError> {
        append_then_end(self, conversation_id, m)
    }
}

/// Conversations: a conversation's own row (status, requester, turn flag,
/// pipeline run, A2A context), read whole or as pages.
pub(crate) trait ConversationTx {
    /// A new, empty, active conversation.
    fn insert_conversation(&self, session_id: &str) -> Result<Conversation, StoreError>;
    /// Records who last asked something of the conversation (and who
    /// created it, the first time).
    fn set_requester(&self, id: &str, name: &str, session: &str) -> Result<(), StoreError>;
    fn created_by(&self, id: &str) -> Result<Option<String>, StoreError>;
    fn set_context(&self, id: &str, context_id: &str) -> Result<(), StoreError>;
    /// The newest conversation whose id or A2A context is `context_id`.
    fn by_context(&self, context_id: &str) -> Result<Option<String>, StoreError>;
    /// False when the conversation does not exist.
    fn set_status(&self, id: &str, status: ConversationStatus) -> Result<bool, StoreError>;
    fn set_turn_running(&self, id: &str, running: bool) -> Result<(), StoreError>;
    fn set_pipeline_state(&self, id: &str, state: &PipelineState) -> Result<(), StoreError>;
    fn pipeline_state(&self, id: &str) -> Result<Option<PipelineState>, StoreError>;
    /// Conversations whose turn was running, oldest first.
    fn running(&self) -> Result<Vec<String>, StoreError>;
    fn exists(&self, id: &str) -> Result<bool, StoreError>;
    fn conversation(&self, id: &str) -> Result<Option<Conversation>, StoreError>;
    /// A page of whole conversations.
    fn list(&self, req: &PageRequest) -> Result<Page, StoreError>;
    /// A page of list items (no message is read, except for a text search).
    fn list_items(&self, req: &PageRequest) -> Result<Page<ConversationItem>, StoreError>;
    /// Counts by status, as kept in the transaction of each change.
    fn summary(&self) -> Result<Summary, StoreError>;
    /// A page of list items and the counts, from one snapshot. PostgreSQL
    /// reads both, with each item's pending approval, in one statement (so
    /// a list is one round trip, without `BEGIN`/`COMMIT`).
    fn list_items_counted(
        &self,
        req: &PageRequest,
    ) -> Result<(Page<ConversationItem>, Summary), StoreError> {
        Ok((self.list_items(req)?, self.summary()?))
    }
    /// Conversations whose A2A task is in `state` (`working`,
    /// `input-required`, ...): a page from before `before`, and the count.
    fn tasks_in_state(
        &self,
        state: &str,
        before: i64,
        limit: u32,
    ) -> Result<TasksInState, StoreError>;
}

/// Messages: a conversation's timeline and a tool call's lifecycle
/// (started, result).
pub(crate) trait MessageTx {
    /// `None` when the conversation does not exist.
    fn append(&self, conversation_id: &str, m: NewMessage) -> Result<Option<Message>, StoreError>;
    fn mark_started(&self, message_id: &str) -> Result<(), StoreError>;
    fn clear_started(&self, message_id: &str) -> Result<(), StoreError>;
    /// False when the call already has a result (a result is written once).
    fn set_result(
        &self,
        message_id: &str,
        result: &str,
        is_error: bool,
    ) -> Result<bool, StoreError>;
    fn messages(&self, conversation_id: &str) -> Result<Vec<StoredMessage>, StoreError>;
    /// Milliseconds since the call started, if it did.
    fn running_ms(&self, message_id: &str) -> Result<Option<u64>, StoreError>;
    /// A run call's result ([`MessageTx::set_result`]), and how long it
    /// ran ([`MessageTx::running_ms`]), for `finish_call`. A backend may
    /// read both in one statement.
    fn finish_result(
        &self,
        message_id: &str,
        result: &str,
        is_error: bool,
    ) -> Result<Option<u64>, StoreError> {
        let ms = self.running_ms(message_id)?;
        self.set_result(message_id, result, is_error)?;
        Ok(ms)
    }
}

/// Approvals: the rows a tool call waits on, and their state machine.
pub(crate) trait ApprovalTx {
    fn insert_approval(&self, a: NewApproval) -> Result<Approval, StoreError>;
    fn approval(&self, uuid: &str) -> Result<Option<Approval>, StoreError>;
    fn approval_for_message(&self, message_id: &str) -> Result<Option<Approval>, StoreError>;
    /// One approval, its row locked until the transaction ends (votes on
    /// one approval from several replicas are counted one after another).
    fn lock_approval(&self, uuid: &str) -> Result<Option<Approval>, StoreError>;
    /// Records the votes (JSON) of an approval read with
    /// [`ApprovalTx::lock_approval`].
    fn set_votes(&self, uuid: &str, votes: &str) -> Result<(), StoreError>;
    /// Records the arguments (JSON) an approver edited before approving.
    fn set_edited(&self, uuid: &str, args: &str, by: &str) -> Result<(), StoreError>;
    /// Records the signed receipt of the call the approval lets through.
    fn set_receipt(&self, uuid: &str, receipt: &str) -> Result<(), StoreError>;
    /// Records the upstream receipt that came with the approving decision.
    fn set_upstream_receipt(&self, uuid: &str, receipt: &str) -> Result<(), StoreError>;
    /// `executing` → `approved` for the one retry of a call cut by a crash
    /// (RECEIPTS.md §3); false when it is not executing or was retried.
    fn retry_once(&self, uuid: &str) -> Result<bool, StoreError>;
    /// Pending approvals whose `expires_at` is at or before `now`, oldest
    /// deadline first.
    fn due_approvals(&self, now: &str, limit: u32) -> Result<Vec<Approval>, StoreError>;
    /// The first expiry of an escalating approval: new approvers (JSON) and
    /// deadline, once (false if it was escalated or decided meanwhile).
    fn escalate(&self, uuid: &str, approvers: &str, expires_at: &str) -> Result<bool, StoreError>;
    /// Moves `uuid` from one of `from` to `to`, conditionally: false if it
    /// was in another state (the loser of a race).
    fn transition(
        &self,
        uuid: &str,
        from: &[ApprovalStatus],
        to: ApprovalStatus,
        decided_by: Option<&Decider>,
        reason: Option<&str>,
    ) -> Result<bool, StoreError>;
    fn pending_for(&self, conversation_id: &str) -> Result<Option<PendingApproval>, StoreError>;
    /// Every approval in `status`, oldest first.
    fn approvals_with_status(&self, status: ApprovalStatus) -> Result<Vec<Approval>, StoreError>;
    /// The approvals of one conversation in `status`, oldest first.
    fn approvals_of(
        &self,
        conversation_id: &str,
        status: ApprovalStatus,
    ) -> Result<Vec<Approval>, StoreError>;
    fn count_approvals(&self, status: ApprovalStatus) -> Result<usize, StoreError>;
    /// The pending approvals a sub-agent's task waits on (proxies),
    /// oldest first.
    fn pending_proxies(&self) -> Result<Vec<Approval>, StoreError>;
    /// Up to `limit` pending approvals, oldest first (by creation, then
    /// uuid), after the approval `after` (`None`: from the oldest); `None`
    /// when `after` names no approval.
    fn pending_after(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Option<Vec<Approval>>, StoreError>;
}

/// Leases (several replicas share PostgreSQL; SQLite serves one process
/// and has none).
pub(crate) trait LeaseTx {
    /// Fails with [`StoreError::LeaseLost`] when this replica runs the
    /// conversation's turn under a lease another replica has since taken
    /// over; every write of a turn starts with it.
    fn fence(&self, conversation_id: &str) -> Result<(), StoreError>;
    /// Takes over one turn whose lease expired (the sweeper): its
    /// conversation and the new epoch, or `None`.
    fn take_expired_lease(&self) -> Result<Option<(String, i64)>, StoreError>;
    /// Leases a conversation this transaction inserted to this replica
    /// (nobody else can know it yet): its epoch. The lease commits with the
    /// conversation, so a turn's first write needs no claim of its own.
    fn lease_new(&self, conversation_id: &str) -> Result<i64, StoreError>;
    /// Gives the turn's lease back with this transaction's commit: for the
    /// turn's last write, so the release needs no round trip of its own.
    fn release_lease(&self, conversation_id: &str) -> Result<(), StoreError>;
}

/// Tool pins (POLICY.md §4).
pub(crate) trait PinTx {
    fn pins(&self) -> Result<Vec<super::pins::PinRow>, StoreError>;
    fn pin(&self, server: &str, tool: &str) -> Result<Option<super::pins::PinRow>, StoreError>;
    /// False when the tool was pinned meanwhile.
    fn insert_pin(&self, p: &super::pins::PinRow) -> Result<bool, StoreError>;
    /// Records (or with `None` clears) a changed definition: (digest, JSON, when).
    fn set_pin_change(
        &self,
        server: &str,
        tool: &str,
        change: Option<(&str, &str, &str)>,
    ) -> Result<(), StoreError>;
    /// The changed definition becomes the pin; false when none waited.
    fn accept_pin(&self, server: &str, tool: &str) -> Result<bool, StoreError>;
}

/// Agent Card pins (signed cards, `a2a[].trust`).
pub(crate) trait CardPinTx {
    fn card_pins(&self) -> Result<Vec<super::card_pins::CardPinRow>, StoreError>;
    /// The pin of `agent`, locked for this transaction where the backend can.
    fn card_pin(&self, agent: &str) -> Result<Option<super::card_pins::CardPinRow>, StoreError>;
    /// Writes the whole row (inserted, or replacing the agent's).
    fn put_card_pin(&self, p: &super::card_pins::CardPinRow) -> Result<(), StoreError>;
}

/// The notification outbox (POLICY.md §5).
pub(crate) trait OutboxTx {
    fn insert_notification(&self, n: &super::outbox::Notification) -> Result<(), StoreError>;
    /// Due rows (`pending`, `next_at` at or before `now`), oldest first,
    /// held until `until`; rows another transaction holds are skipped.
    fn claim_notifications(
        &self,
        now: &str,
        until: &str,
        limit: u32,
    ) -> Result<Vec<super::outbox::Notification>, StoreError>;
    fn finish_notification(
        &self,
        id: &str,
        a: &super::outbox::Attempt,
        at: &str,
    ) -> Result<(), StoreError>;
    /// The newest rows, optionally of one status.
    fn recent_notifications(
        &self,
        status: Option<&str>,
        limit: u32,
    ) -> Result<Vec<super::outbox::Notification>, StoreError>;
    fn notification_counts(&self) -> Result<Vec<(String, u64)>, StoreError>;
    /// A dead letter becomes pending again; false if it was not dead.
    fn retry_notification(&self, id: &str, at: &str) -> Result<bool, StoreError>;
    /// Deletes up to `limit` rows delivered or skipped before `finished`,
    /// or dead-lettered before `dead`; how many went.
    fn prune_notifications(
        &self,
        finished: &str,
        dead: &str,
        limit: u32,
    ) -> Result<u64, StoreError>;
    /// Records the use of a signed link; false when it was used already.
    fn use_link(&self, link: &str, uuid: &str, by: &str, at: &str) -> Result<bool, StoreError>;
    fn link_used(&self, link: &str) -> Result<bool, StoreError>;
}

/// A2A push notification configs.
pub(crate) trait PushTx {
    fn put_push_config(&self, p: &super::push::PushConfig) -> Result<(), StoreError>;
    fn push_configs(&self, task_id: &str) -> Result<Vec<super::push::PushConfig>, StoreError>;
    fn push_config(&self, uid: &str) -> Result<Option<super::push::PushConfig>, StoreError>;
    fn delete_push_config(&self, task_id: &str, config_id: &str) -> Result<bool, StoreError>;
    /// Records `state` as sent to `uid`; false when it was already.
    fn advance_push(&self, uid: &str, state: &str) -> Result<bool, StoreError>;
    fn unsettled_push_configs(
        &self,
        limit: u32,
    ) -> Result<Vec<super::push::PushConfig>, StoreError>;
}

/// Questions a tool asked the human (see [`super::questions`]).
pub(crate) trait QuestionTx {
    /// Inserts a question; who sent the conversation's latest message (its
    /// `requested_by`, read in the same statement).
    fn insert_question(&self, q: &QuestionRow) -> Result<Option<String>, StoreError>;
    fn question(&self, uuid: &str) -> Result<Option<QuestionRow>, StoreError>;
    /// A call's questions, oldest first.
    fn questions_of_call(&self, message_id: &str) -> Result<Vec<QuestionRow>, StoreError>;
    /// `pending` → `status`; false when it was not pending.
    fn answer_question(
        &self,
        uuid: &str,
        status: &str,
        action: &str,
        content: Option<&str>,
        by: &str,
        via: &str,
    ) -> Result<bool, StoreError>;
    /// Sets a question's `state` that has none (a proxy question's
    /// `relayed`); false when it had one.
    fn set_question_state(&self, uuid: &str, state: &str) -> Result<bool, StoreError>;
    /// Pending questions after `after_seq`, oldest first.
    fn pending_questions(
        &self,
        after_seq: Option<i64>,
        limit: u32,
    ) -> Result<Vec<QuestionRow>, StoreError>;
    fn count_pending_questions(&self) -> Result<u64, StoreError>;
    /// A conversation's pending questions, oldest first.
    fn pending_questions_of(&self, conversation_id: &str) -> Result<Vec<QuestionRow>, StoreError>;
    /// Pending questions whose `expires_at` is at or before `now`.
    fn due_questions(&self, now: &str, limit: u32) -> Result<Vec<QuestionRow>, StoreError>;
}

/// The audit trail.
pub(crate) trait AuditTx {
    fn audit(&self, e: &Event<'_>) -> Result<(), StoreError>;
    fn audit_page(&self, after: i64, limit: u32) -> Result<Vec<audit::Row>, StoreError>;
    fn audit_head(&self) -> Result<(i64, String), StoreError>;
}

/// Grants (REACH.md §3).
pub(crate) trait GrantTx {
    fn insert_grant(&self, g: &super::grants::GrantRow) -> Result<(), StoreError>;
    fn grant(&self, id: &str) -> Result<Option<super::grants::GrantRow>, StoreError>;
    /// The grants live at `now`, newest first; of one (tool, server) when given.
    fn live_grants(
        &self,
        now: &str,
        tool: Option<(&str, Option<&str>)>,
    ) -> Result<Vec<super::grants::GrantRow>, StoreError>;
    /// Counts a use of a grant that is live at `now`; false if it is not.
    fn use_grant(&self, id: &str, now: &str) -> Result<bool, StoreError>;
    /// Ends a live grant; false if it had ended.
    fn revoke_grant(&self, id: &str, by: &str, now: &str) -> Result<bool, StoreError>;
    /// The ids of the live grants made in the sign-in session `signin`.
    fn signin_grants(&self, signin: &str) -> Result<Vec<String>, StoreError>;
    /// Who sent the latest request of a conversation (its approvals'
    /// `requested_by`).
    fn requester_of(&self, conversation_id: &str) -> Result<Option<String>, StoreError>;
}

/// Sign-in sessions (by the hash of their id).
pub(crate) trait SessionTx {
    fn insert_session(&self, id_hash: &str, s: &Session) -> Result<(), StoreError>;
    fn session(&self, id_hash: &str, now: &str) -> Result<Option<Session>, StoreError>;
    /// The live session of `name` that was signed in last.
    fn session_of(&self, name: &str, now: &str) -> Result<Option<Session>, StoreError>;
    fn delete_session(&self, id_hash: &str) -> Result<Option<Session>, StoreError>;
    fn purge_sessions(&self, now: &str) -> Result<usize, StoreError>;
}

/// Keys the replicas share (`server_keys`).
pub(crate) trait KeyTx {
    /// The key named `name`: the stored one, else `fresh`, stored now.
    fn shared_key(&self, name: &str, fresh: &str, at: &str) -> Result<String, StoreError>;
}

/// [`MessageTx::append`] to a conversation the transaction created or
/// holds: its absence is corruption, not an answer.
pub(super) fn append_existing<T: Tx + ?Sized>(
    tx: &T,
    conversation_id: &str,
    m: NewMessage,
) -> Result<Message, StoreError> {
    tx.append(conversation_id, m)?.ok_or_else(|| {
        StoreError::Corrupt(format!(
            "conversation {conversation_id} vanished inside its own transaction"
        ))
    })
}

/// [`Tx::append_ending`] as two statements: the append, then the flag.
pub(super) fn append_then_end<T: Tx + ?Sized>(
    tx: &T,
    conversation_id: &str,
    m: NewMessage,
) -> Result<Message, StoreError> {
    let m = append_existing(tx, conversation_id, m)?;
    tx.set_turn_running(conversation_id, false)?;
    Ok(m)
}
