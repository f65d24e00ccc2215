//! [`Tx`] on a SQLite connection: each statement is the function of the
//! same name in [`conversations`], [`messages`], [`approvals`], [`audit`]
//! and [`sessions`], the only place SQLite's SQL is written.

use super::approvals::{self, Approval, Decider, NewApproval};
use super::audit::{self, Event};
use super::conversations::{self, Page, PageRequest, TasksInState};
use super::messages::{self, NewMessage, StoredMessage};
use super::sessions::{self, Session};
use super::{StoreError, Tx};
use app::models::{
    ApprovalStatus, Conversation, ConversationItem, ConversationStatus, Message, PendingApproval,
    Summary,
};
use app::pipeline::PipelineState;
use rusqlite::Connection;

impl Tx for Connection {
    fn insert_conversation(&self, session_id: &str) -> Result<Conversation, StoreError> {
        conversations::insert(self, session_id)
    }
    fn set_requester(&self, id: &str, name: &str, session: &str) -> Result<(), StoreError> {
        conversations::set_requester(self, id, name, session)
    }
    fn created_by(&self, id: &str) -> Result<Option<String>, StoreError> {
        conversations::created_by(self, id)
    }
    fn set_context(&self, id: &str, context_id: &str) -> Result<(), StoreError> {
        conversations::set_context(self, id, context_id)
    }
    fn by_context(&self, context_id: &str) -> Result<Option<String>, StoreError> {
        conversations::by_context(self, context_id)
    }
    fn set_status(&self, id: &str, status: ConversationStatus) -> Result<bool, StoreError> {
        conversations::set_status(self, id, status)
    }
    fn set_turn_running(&self, id: &str, running: bool) -> Result<(), StoreError> {
        conversations::set_turn_running(self, id, running)
    }
    fn set_pipeline_state(&self, id: &str, state: &PipelineState) -> Result<(), StoreError> {
        conversations::set_pipeline_state(self, id, state)
    }
    fn pipeline_state(&self, id: &str) -> Result<Option<PipelineState>, StoreError> {
        conversations::pipeline_state(self, id)
    }
    fn running(&self) -> Result<Vec<String>, StoreError> {
        conversations::running(self)
    }
    fn exists(&self, id: &str) -> Result<bool, StoreError> {
        conversations::exists(self, id)
    }
    fn conversation(&self, id: &str) -> Result<Option<Conversation>, StoreError> {
        conversations::get(self, id)
    }
    fn list(&self, req: &PageRequest) -> Result<Page, StoreError> {
        conversations::list(self, req)
    }
    fn list_items(&self, req: &PageRequest) -> Result<Page<ConversationItem>, StoreError> {
        conversations::list_items(self, req)
    }
    fn summary(&self) -> Result<Summary, StoreError> {
        conversations::summary(self)
    }
    fn tasks_in_state(
        &self,
        state: &str,
        before: i64,
        limit: u32,
    ) -> Result<TasksInState, StoreError> {
        conversations::tasks_in_state(self, state, before, limit)
    }

    fn append(&self, conversation_id: &str, m: NewMessage) -> Result<Option<Message>, StoreError> {
        messages::append(self, conversation_id, m.storable())
    }
    fn mark_started(&self, message_id: &str) -> Result<(), StoreError> {
        messages::mark_started(self, message_id)
    }
    fn clear_started(&self, message_id: &str) -> Result<(), StoreError> {
        messages::clear_started(self, message_id)
    }
    fn set_result(
        &self,
        message_id: &str,
        result: &str,
        is_error: bool,
    ) -> Result<bool, StoreError> {
        messages::set_result(self, message_id, result, is_error)
    }
    fn messages(&self, conversation_id: &str) -> Result<Vec<StoredMessage>, StoreError> {
        messages::stored(self, conversation_id)
    }
    fn running_ms(&self, message_id: &str) -> Result<Option<u64>, StoreError> {
        messages::running_ms(self, message_id)
    }

    fn insert_approval(&self, a: NewApproval) -> Result<Approval, StoreError> {
        approvals::insert(self, a)
    }
    fn approval(&self, uuid: &str) -> Result<Option<Approval>, StoreError> {
        approvals::get(self, uuid)
    }
    fn approval_for_message(&self, message_id: &str) -> Result<Option<Approval>, StoreError> {
        approvals::for_message(self, message_id)
    }
    /// SQLite has one writer at a time: the write transaction is the lock.
    fn lock_approval(&self, uuid: &str) -> Result<Option<Approval>, StoreError> {
        approvals::get(self, uuid)
    }
    fn set_votes(&self, uuid: &str, votes: &str) -> Result<(), StoreError> {
        approvals::set_votes(self, uuid, votes)
    }
    fn insert_notification(&self, n: &super::outbox::Notification) -> Result<(), StoreError> {
        super::outbox::insert(self, n)
    }
    fn claim_notifications(
        &self,
        now: &str,
        until: &str,
        limit: u32,
    ) -> Result<Vec<super::outbox::Notification>, StoreError> {
        super::outbox::claim(self, now, until, limit)
    }
    fn finish_notification(
        &self,
        id: &str,
        a: &super::outbox::Attempt,
        at: &str,
    ) -> Result<(), StoreError> {
        super::outbox::finish(self, id, a, at)
    }
    fn recent_notifications(
        &self,
        status: Option<&str>,
        limit: u32,
    ) -> Result<Vec<super::outbox::Notification>, StoreError> {
        super::outbox::recent(self, status, limit)
    }
    fn notification_counts(&self) -> Result<Vec<(String, u64)>, StoreError> {
        super::outbox::counts(self)
    }
    fn retry_notification(&self, id: &str, at: &str) -> Result<bool, StoreError> {
        super::outbox::retry(self, id, at)
    }
    fn prune_notifications(
        &self,
        finished: &str,
        dead: &str,
        limit: u32,
    ) -> Result<u64, StoreError> {
        super::outbox::prune(self, finished, dead, limit)
    }
    fn use_link(&self, link: &str, uuid: &str, by: &str, at: &str) -> Result<bool, StoreError> {
        super::outbox::use_link(self, link, uuid, by, at)
    }
    fn link_used(&self, link: &str) -> Result<bool, StoreError> {
        super::outbox::link_used(self, link)
    }
    fn put_push_config(&self, p: &super::push::PushConfig) -> Result<(), StoreError> {
        super::push::put(self, p)
    }
    fn push_configs(&self, task_id: &str) -> Result<Vec<super::push::PushConfig>, StoreError> {
        super::push::of_task(self, task_id)
    }
    fn push_config(&self, uid: &str) -> Result<Option<super::push::PushConfig>, StoreError> {
        super::push::by_uid(self, uid)
    }
    fn delete_push_config(&self, task_id: &str, config_id: &str) -> Result<bool, StoreError> {
        super::push::delete(self, task_id, config_id)
    }
    fn advance_push(&self, uid: &str, state: &str) -> Result<bool, StoreError> {
        super::push::advance(self, uid, state)
    }
    fn unsettled_push_configs(
        &self,
        limit: u32,
    ) -> Result<Vec<super::push::PushConfig>, StoreError> {
        super::push::unsettled(self, limit)
    }
    fn pins(&self) -> Result<Vec<super::pins::PinRow>, StoreError> {
        super::pins::all(self)
    }
    fn pin(&self, server: &str, tool: &str) -> Result<Option<super::pins::PinRow>, StoreError> {
        super::pins::get(self, server, tool)
    }
    fn insert_pin(&self, p: &super::pins::PinRow) -> Result<bool, StoreError> {
        super::pins::insert(self, p)
    }
    fn set_pin_change(
        &self,
        server: &str,
        tool: &str,
        change: Option<(&str, &str, &str)>,
    ) -> Result<(), StoreError> {
        super::pins::set_change(self, server, tool, change)
    }
    fn accept_pin(&self, server: &str, tool: &str) -> Result<bool, StoreError> {
        super::pins::accept(self, server, tool, &super::now())
    }
    fn set_edited(&self, uuid: &str, args: &str, by: &str) -> Result<(), StoreError> {
        approvals::set_edited(self, uuid, args, by)
    }
    fn due_approvals(&self, now: &str, limit: u32) -> Result<Vec<Approval>, StoreError> {
        approvals::due(self, now, limit)
    }
    fn escalate(&self, uuid: &str, approvers: &str, expires_at: &str) -> Result<bool, StoreError> {
        approvals::escalate(self, uuid, approvers, expires_at)
    }
    fn transition(
        &self,
        uuid: &str,
        from: &[ApprovalStatus],
        to: ApprovalStatus,
        decided_by: Option<&Decider>,
        reason: Option<&str>,
    ) -> Result<bool, StoreError> {
        approvals::transition(self, uuid, from, to, decided_by, reason)
    }
    fn pending_for(&self, conversation_id: &str) -> Result<Option<PendingApproval>, StoreError> {
        approvals::pending_for(self, conversation_id)
    }
    fn approvals_with_status(&self, status: ApprovalStatus) -> Result<Vec<Approval>, StoreError> {
        approvals::with_status(self, status)
    }
    fn approvals_of(
        &self,
        conversation_id: &str,
        status: ApprovalStatus,
    ) -> Result<Vec<Approval>, StoreError> {
        approvals::of_conversation(self, conversation_id, status)
    }
    fn count_approvals(&self, status: ApprovalStatus) -> Result<usize, StoreError> {
        approvals::count_with_status(self, status)
    }
    fn pending_proxies(&self) -> Result<Vec<Approval>, StoreError> {
        approvals::pending_proxies(self)
    }
    fn pending_after(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Option<Vec<Approval>>, StoreError> {
        approvals::pending_after(self, after, limit)
    }

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

    fn audit(&self, e: &Event<'_>) -> Result<(), StoreError> {
        audit::append(self, e)
    }
    fn audit_page(&self, after: i64, limit: u32) -> Result<Vec<audit::Row>, StoreError> {
        audit::page(self, after, limit)
    }
    fn audit_head(&self) -> Result<(i64, String), StoreError> {
        audit::head(self)
    }

    fn insert_session(&self, id_hash: &str, s: &Session) -> Result<(), StoreError> {
        sessions::insert(self, id_hash, s)
    }
    fn session(&self, id_hash: &str, now: &str) -> Result<Option<Session>, StoreError> {
        sessions::get(self, id_hash, now)
    }
    fn delete_session(&self, id_hash: &str) -> Result<Option<Session>, StoreError> {
        sessions::delete(self, id_hash)
    }
    fn purge_sessions(&self, now: &str) -> Result<usize, StoreError> {
        sessions::purge(self, now)
    }
}
