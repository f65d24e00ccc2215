//! Live events as rows, so every replica sees every event (REPLICAS.md §3).
//!
//! - An event's `seq` comes from the one-row `event_head`, locked until
//!   commit: events become visible in `seq` order, and a reader that has
//!   seen N has seen everything before N (a plain sequence could commit 11
//!   before 10 and a reader would skip 10).
//! - `NOTIFY stopgo_events` carries only the newest `seq` (payloads are
//!   limited to 8000 bytes): a replica woken by it reads the rows after the
//!   last one it has, unless it has that `seq` already (its own batch,
//!   whose last `seq` the append returns). One `LISTEN` connection per
//!   replica, on a thread of its own (the synchronous client blocks while
//!   it waits).
//! - A missed notification costs a re-read on the next poll, never an
//!   event.

use super::conn::{Answer, Step};
use super::pool::Pg;
use crate::store::error::StoreError;
use postgres::fallible_iterator::FallibleIterator;
use std::time::Duration;

/// The channel replicas listen on.
const CHANNEL: &str = "stopgo_events";

/// One stored event: its `seq` and its JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EventRow {
    pub(crate) seq: i64,
    pub(crate) conversation_id: Option<String>,
    pub(crate) payload: String,
}

/// One statement appends a whole batch and wakes the listeners: the head
/// moves by the batch's size (its row lock held to commit keeps `seq`
/// order equal to visibility order), the rows take the numbers below it in
/// their order, and the notification carries the newest.
const APPEND: &str = "WITH batch AS ( \
         SELECT c, p, o FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(c, p, o)), \
     h AS (UPDATE event_head SET seq = seq + (SELECT count(*) FROM batch) RETURNING seq), \
     ins AS (INSERT INTO events (seq, conversation_id, payload) \
         SELECT h.seq - (SELECT count(*) FROM batch) + batch.o, batch.c, batch.p::jsonb \
         FROM h, batch RETURNING seq) \
     SELECT pg_notify('stopgo_events', max(seq)::text), max(seq) FROM ins";
const AFTER: &str = "SELECT seq, conversation_id, payload::text FROM events \
     WHERE seq > $1 ORDER BY seq LIMIT $2";
const NEWEST: &str = "SELECT seq, conversation_id, payload FROM \
     (SELECT seq, conversation_id, payload::text AS payload FROM events ORDER BY seq DESC LIMIT $1) n \
     ORDER BY seq";
const PRUNE: &str = "DELETE FROM events WHERE seq <= (SELECT seq FROM event_head) - $1";

fn row(r: &postgres::Row) -> EventRow {
    EventRow {
        seq: r.get(0),
        conversation_id: r.get(1),
        payload: r.get(2),
    }
}

impl Pg {
    /// Appends `events` (conversation, JSON) in order, in one statement
    /// (one round trip), and wakes every replica's listener. The `seq` of
    /// the last one (the batch's are the ones up to it; 0 when empty).
    pub(crate) async fn append_events(
        &self,
        events: Vec<(Option<String>, String)>,
    ) -> Result<i64, StoreError> {
        if events.is_empty() {
            return Ok(0);
        }
        let (conversations, mut payloads): (Vec<Option<String>>, Vec<String>) =
            events.into_iter().unzip();
        // `jsonb` refuses the escape `\u0000`: one such event would fail
        // the whole batch.
        for p in payloads.iter_mut().filter(|p| p.contains("\\u0000")) {
            *p = without_nul(p);
        }
        self.on_conn(move |conn, _| {
            // One round trip, with the plan prepared once: the arrays would
            // otherwise have the statement planned again on every call.
            let append = conn.prepared(APPEND)?;
            let steps = [
                Step::Simple("BEGIN; SET LOCAL plan_cache_mode = force_generic_plan"),
                Step::Query(&append, &[&conversations, &payloads]),
                Step::Simple("COMMIT"),
            ];
            let mut last = 0;
            for answer in conn.pipeline(&steps) {
                if let Answer::Rows(rows) = answer? {
                    last = rows
                        .first()
                        .and_then(|r| r.get::<_, Option<i64>>(1))
                        .unwrap_or(0);
                }
            }
            Ok(last)
        })
        .await
    }

    /// Up to `limit` events after `seq`, oldest first.
    pub(crate) async fn events_after(
        &self,
        seq: i64,
        limit: i64,
    ) -> Result<Vec<EventRow>, StoreError> {
        self.on_conn(move |client, _| {
            Ok(client
                .query(AFTER, &[&seq, &limit])?
                .iter()
                .map(row)
                .collect())
        })
        .await
    }

    /// The newest `n` events, oldest first (a replica's backlog at start).
    pub(crate) async fn newest_events(&self, n: i64) -> Result<Vec<EventRow>, StoreError> {
        self.on_conn(move |client, _| Ok(client.query(NEWEST, &[&n])?.iter().map(row).collect()))
            .await
    }

    /// Deletes all but the newest `keep` events.
    pub(crate) async fn prune_events(&self, keep: i64) -> Result<u64, StoreError> {
        self.on_conn(move |client, _| client.execute(PRUNE, &[&keep]))
            .await
    }

    /// Listens for new events on a connection of its own, on a thread of
    /// its own, calling `wake` on each notification with the newest `seq`
    /// it announced, and with `None` at least once a second and after
    /// (re)connecting (the re-read that covers a lost notification);
    /// reconnects (with a log line) when the connection breaks; stops when
    /// `wake` returns false.
    pub(crate) fn listen(
        &self,
        wake: impl Fn(Option<i64>) -> bool + Send + 'static,
    ) -> std::io::Result<()> {
        let config = postgres::Config::from(self.inner.config.clone());
        let shown = self.inner.shown.clone();
        std::thread::Builder::new()
            .name("pg-listen".into())
            .spawn(move || {
                loop {
                    let mut client = match config.connect(postgres::NoTls) {
                        Ok(c) => c,
                        Err(e) => {
                            tracing::warn!(database = %shown, error = %e, "cannot listen for events; retrying");
                            std::thread::sleep(Duration::from_secs(1));
                            if !wake(None) {
                                return;
                            }
                            continue;
                        }
                    };
                    if let Err(e) = client.batch_execute(&format!("LISTEN {CHANNEL}")) {
                        tracing::warn!(database = %shown, error = %e, "cannot listen for events; retrying");
                        std::thread::sleep(Duration::from_secs(1));
                        continue;
                    }
                    // Caught up after (re)connecting: anything sent while
                    // not listening is read now.
                    if !wake(None) {
                        return;
                    }
                    loop {
                        let got = {
                            let mut n = client.notifications();
                            // Many notifications, one wake: with the newest
                            // seq announced (`None` after a quiet second).
                            let first = n.timeout_iter(Duration::from_secs(1)).next();
                            first.map(|first| {
                                let mut newest: Option<i64> =
                                    first.and_then(|f| f.payload().parse().ok());
                                while let Ok(Some(f)) = n.iter().next() {
                                    newest = newest.max(f.payload().parse().ok());
                                }
                                newest
                            })
                        };
                        match got {
                            Ok(newest) if !wake(newest) => return,
                            Ok(_) if client.is_closed() => break,
                            Ok(_) => {}
                            Err(e) => {
                                tracing::warn!(database = %shown, error = %e, "the event listener's connection broke; reconnecting");
                                break;
                            }
                        }
                    }
                }
            })
            .map(drop)
    }
}

/// JSON text with each escaped NUL (`\u0000`) replaced by U+FFFD's escape.
/// Escapes are read pairwise, so an escaped backslash followed by the text
/// `u0000` is left as it is.
fn without_nul(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let mut rest = json;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let escape = &rest[i..];
        if let Some(after) = escape.strip_prefix("\\u0000") {
            out.push_str("\\ufffd");
            rest = after;
        } else {
            // The backslash and the character it escapes.
            let len = escape[1..].chars().next().map_or(1, |c| 1 + c.len_utf8());
            out.push_str(&escape[..len]);
            rest = &escape[len..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_escaped_nuls_are_replaced() {
        assert_eq!(
            super::without_nul(r#"{"a":"x\u0000y","b":"\\u0000","c":"\\\u0000"}"#),
            r#"{"a":"x\ufffdy","b":"\\u0000","c":"\\\ufffd"}"#
        );
    }
}
