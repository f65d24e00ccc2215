//! A conversation's own intents: create one (tests), append a message, set
//! its status (tests), read one with its pending question, and list a page
//! with the summary from one snapshot.

use crate::store::conversations::{Page, PageRequest};
use crate::store::error::StoreError;
use crate::store::facade::Store;
use crate::store::messages::NewMessage;
use crate::store::questions;
use crate::store::tx::Tx;
#[cfg(test)]
use crate::store::tx::append_existing;
use app::models::{Conversation, Message, Summary};

impl Store {
    /// Creates an empty, active conversation for `session_id`.
    #[cfg(test)]
    pub(crate) async fn create_conversation(
        &self,
        session_id: String,
    ) -> Result<Conversation, StoreError> {
        self.write(move |tx| tx.insert_conversation(&session_id))
            .await
    }

    /// Creates a conversation and its first message in one transaction.
    #[cfg(test)]
    pub(crate) async fn create_conversation_with(
        &self,
        session_id: String,
        first: NewMessage,
    ) -> Result<Conversation, StoreError> {
        self.write(move |tx| {
            let mut c = tx.insert_conversation(&session_id)?;
            let m = append_existing(tx, &c.id, first)?;
            c.updated_at = m.created_at.clone();
            c.messages.push(m);
            Ok(c)
        })
        .await
    }

    /// Appends a message; `None` if the conversation does not exist.
    pub(crate) async fn append_message(
        &self,
        conversation_id: String,
        m: NewMessage,
    ) -> Result<Option<Message>, StoreError> {
        self.write(move |tx| tx.append(&conversation_id, m)).await
    }

    /// Sets a conversation's status; false if it does not exist.
    #[cfg(test)]
    pub(crate) async fn set_status(
        &self,
        id: String,
        status: app::models::ConversationStatus,
    ) -> Result<bool, StoreError> {
        self.write(move |tx| tx.set_status(&id, status)).await
    }

    /// One conversation with its messages.
    pub(crate) async fn get_conversation(
        &self,
        id: String,
    ) -> Result<Option<Conversation>, StoreError> {
        self.read(move |tx| {
            let mut c = tx.conversation(&id)?;
            // Only a conversation that waits for an answer has a question
            // to show (no read otherwise).
            if let Some(c) = c.as_mut()
                && c.status == app::models::ConversationStatus::WaitingInput
                && let Some(q) = tx.pending_questions_of(&id)?.into_iter().next()
            {
                c.pending_question = Some(questions::decode(q)?.question);
            }
            Ok(c)
        })
        .await
    }

    /// One page of conversations and the summary, from one snapshot.
    pub(crate) async fn list_conversations(
        &self,
        req: PageRequest,
    ) -> Result<(Page, Summary), StoreError> {
        self.read_long(move |tx| Ok((tx.list(&req)?, tx.summary()?)))
            .await
    }

    /// One page of list items and the summary, from one snapshot: one
    /// statement on PostgreSQL (see
    /// [`ConversationTx::list_items_counted`](crate::store::tx::ConversationTx::list_items_counted)). A short
    /// read unless it searches message text (a scan).
    pub(crate) async fn list_items(
        &self,
        req: PageRequest,
    ) -> Result<(Page<app::models::ConversationItem>, Summary), StoreError> {
        let scans = req.text.is_some();
        let read = move |tx: &dyn Tx| tx.list_items_counted(&req);
        if scans {
            self.read_long(read).await
        } else {
            self.read_one(read).await
        }
    }
}
