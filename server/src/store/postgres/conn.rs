//! One pooled connection: `tokio-postgres` driven from a blocking thread,
//! with its statements prepared once, and **pipelining**.
//!
//! The store's intents are synchronous closures (see `mod.rs`), so a
//! connection is used from the blocking pool like the synchronous
//! `postgres` client would be: its own current-thread runtime drives the
//! connection while a call blocks. What that client cannot do is send
//! several statements before the first answer comes back. Here
//! [`Conn::pipeline`] does: every step is polled once, in order, before any
//! answer is awaited, so `BEGIN`, the fence, the writes whose answers
//! nobody waits for, the audit rows and `COMMIT` leave in one write and
//! cost one round trip instead of one each (a round trip is what a turn on
//! PostgreSQL is made of; see `tx.rs`).

use crate::store::error::StoreError;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Error, Row, Statement};

/// Parameters of one statement.
pub(super) type Params<'p> = &'p [&'p (dyn ToSql + Sync)];

/// One connection and its prepared statements.
pub(crate) struct Conn {
    runtime: tokio::runtime::Runtime,
    client: Client,
    statements: HashMap<String, Statement>,
    /// Where this connection counts its round trips (set by the pool).
    #[cfg(test)]
    pub(super) trips: Option<std::sync::Arc<std::sync::atomic::AtomicUsize>>,
}

/// One step of a pipeline.
pub(super) enum Step<'a> {
    /// A simple query (`BEGIN`, `COMMIT`, the audit rows): no answer.
    Simple(&'a str),
    /// A prepared statement whose changed-row count is the answer.
    Exec(&'a Statement, Params<'a>),
    /// A prepared statement whose rows are the answer.
    Query(&'a Statement, Params<'a>),
}

/// What a step answered.
pub(super) enum Answer {
    Done,
    Count(u64),
    Rows(Vec<Row>),
}

type StepFuture<'a> = Pin<Box<dyn Future<Output = Result<Answer, Error>> + 'a>>;

impl Conn {
    /// Connects on a runtime of the connection's own. Blocking: call it off
    /// the async workers.
    pub(super) fn connect(config: &tokio_postgres::Config) -> Result<Conn, StoreError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| StoreError::Worker(format!("cannot start a connection's runtime: {e}")))?;
        let (client, connection) = runtime.block_on(config.connect(tokio_postgres::NoTls))?;
        runtime.spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "a PostgreSQL connection closed");
            }
        });
        let mut conn = Conn {
            runtime,
            client,
            statements: HashMap::new(),
            #[cfg(test)]
            trips: None,
        };
        // The audit rows are written as literals (`audit::literal`), which is
        // safe only with standard strings; it is the default, made certain.
        conn.batch_execute("SET standard_conforming_strings = on")?;
        Ok(conn)
    }

    /// Counts one request sent and awaited.
    fn trip(&self) {
        #[cfg(test)]
        if let Some(t) = &self.trips {
            t.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    pub(super) fn is_closed(&self) -> bool {
        self.client.is_closed()
    }

    /// `sql` prepared on this connection (once: preparing is a round trip
    /// of its own).
    pub(super) fn prepared(&mut self, sql: &str) -> Result<Statement, Error> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = self.runtime.block_on(self.client.prepare(sql))?;
        self.statements.insert(sql.to_string(), s.clone());
        Ok(s)
    }

    pub(super) fn query(&mut self, sql: &str, params: Params<'_>) -> Result<Vec<Row>, Error> {
        let s = self.prepared(sql)?;
        self.trip();
        self.runtime.block_on(self.client.query(&s, params))
    }

    pub(super) fn query_opt(
        &mut self,
        sql: &str,
        params: Params<'_>,
    ) -> Result<Option<Row>, Error> {
        Ok(self.query(sql, params)?.into_iter().next())
    }

    pub(super) fn execute(&mut self, sql: &str, params: Params<'_>) -> Result<u64, Error> {
        let s = self.prepared(sql)?;
        self.trip();
        self.runtime.block_on(self.client.execute(&s, params))
    }

    pub(super) fn batch_execute(&mut self, sql: &str) -> Result<(), Error> {
        self.trip();
        self.runtime.block_on(self.client.batch_execute(sql))
    }

    /// Runs `steps` in one round trip: each is sent, in order, before any
    /// answer is awaited; the answers come back in the same order. A step
    /// that fails does not stop the others from being sent (inside a
    /// transaction they then fail too, and a `COMMIT` among them rolls
    /// back): the caller reads the first error.
    pub(super) fn pipeline(&mut self, steps: &[Step<'_>]) -> Vec<Result<Answer, Error>> {
        self.trip();
        let client = &self.client;
        let mut futures: Vec<StepFuture<'_>> =
            steps
                .iter()
                .map(|step| -> StepFuture<'_> {
                    match *step {
                        Step::Simple(sql) => Box::pin(async move {
                            client.batch_execute(sql).await.map(|_| Answer::Done)
                        }),
                        Step::Exec(s, p) => {
                            Box::pin(async move { client.execute(s, p).await.map(Answer::Count) })
                        }
                        Step::Query(s, p) => {
                            Box::pin(async move { client.query(s, p).await.map(Answer::Rows) })
                        }
                    }
                })
                .collect();
        let mut answers: Vec<Option<Result<Answer, Error>>> =
            futures.iter().map(|_| None).collect();
        // Each pass polls the unfinished steps in order, so the first pass
        // sends every request in order (a step's request goes out on its
        // first poll) before anything is awaited.
        self.runtime.block_on(std::future::poll_fn(|cx| {
            let mut waiting = false;
            for (future, answer) in futures.iter_mut().zip(answers.iter_mut()) {
                if answer.is_none() {
                    match future.as_mut().poll(cx) {
                        Poll::Ready(a) => *answer = Some(a),
                        Poll::Pending => waiting = true,
                    }
                }
            }
            if waiting {
                Poll::Pending
            } else {
                Poll::Ready(())
            }
        }));
        drop(futures);
        answers.into_iter().flatten().collect()
    }
}
