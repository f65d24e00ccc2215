//! Every task the agent spawns has an owner (ARCHITECTURE.md invariant 11,
//! STYLE.md "Every task has an owner").
//!
//! A detached `tokio::spawn` is a task nobody drains: a test that stops an
//! in-process agent, or a SIGTERM, would leave turns, watchers and workers
//! running against a store that is going away. As in mini-redis, one owner
//! holds a [`TaskTracker`] (which tasks run) and a [`CancellationToken`]
//! (when to stop): `build_state` creates it and hands it to every part that
//! spawns (the store, the engine, the event bus, the MCP client, the
//! notifier, the HTTP layer's A2A and Slack work), and `run` stops it once
//! requests are served ([`Tasks::shutdown`]) and drains it
//! ([`Tasks::wait`]) before it returns.
//!
//! Two ways to spawn, both stopped at their next await point when shutdown
//! begins:
//! - [`Tasks::spawn_background`]: work nobody awaits: loops, watchers and
//!   workers, which never end by themselves, and one-off jobs (a turn a
//!   sweeper resumes, a lease's release);
//! - [`Tasks::spawn`]: work whose result someone awaits (a turn, a
//!   decision); its handle answers `None` when it was stopped.
//!
//! Key decision: stopping a task drops its future, which is what a crash
//! (`kill -9`) does at that point. Every state change the agent makes is one
//! committed transaction, so what a stopped turn leaves is settled by the
//! crash rules at the next start (or by another replica's sweeper), exactly
//! as after a crash. One rule keeps it so on PostgreSQL: a turn's lease
//! dropped once shutdown began is left to expire, not released
//! (`store/leases.rs`), so the sweeper finds the turn.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The owner of the agent's tasks: every clone the same owner (a
/// [`Tasks::child`] shares the tracker, with a token of its own).
///
/// A clone is one reference count. `AppState` and the store each hold a
/// `Tasks` and are cloned several times per request, and a clone (and a
/// drop) of a [`CancellationToken`] takes its tree's lock: held directly,
/// the two owners cost every request, `/health` included, about 10 µs of
/// CPU on the 2-core bench machine (issue 53 item 9).
#[derive(Clone, Default)]
pub struct Tasks(Arc<Owner>);

/// What a [`Tasks`] and its clones share.
#[derive(Default)]
struct Owner {
    tracker: TaskTracker,
    stop: CancellationToken,
    /// How many tasks of each name run now (the log at a late drain).
    names: Arc<Mutex<BTreeMap<&'static str, usize>>>,
}

/// Counts its task under a name while the task's future lives.
struct Named {
    names: Arc<Mutex<BTreeMap<&'static str, usize>>>,
    name: &'static str,
}

impl Named {
    fn new(names: &Arc<Mutex<BTreeMap<&'static str, usize>>>, name: &'static str) -> Named {
        *names
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(name)
            .or_default() += 1;
        Named {
            names: names.clone(),
            name,
        }
    }
}

impl Drop for Named {
    fn drop(&mut self) {
        let mut names = self.names.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = names.get_mut(self.name) {
            *n -= 1;
            if *n == 0 {
                names.remove(self.name);
            }
        }
    }
}

impl Tasks {
    /// A new owner, not stopping.
    pub fn new() -> Tasks {
        Tasks::default()
    }

    /// Runs `fut` (named `name` in the logs), which nobody awaits, until it
    /// ends or shutdown begins.
    pub fn spawn_background<F>(&self, name: &'static str, fut: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        drop(self.spawn(name, fut));
    }

    /// Runs `fut` (named `name` in the logs) until it ends, or until
    /// shutdown begins: it then stops at its next await point and its
    /// handle answers `None`.
    pub fn spawn<F, T>(&self, name: &'static str, fut: F) -> JoinHandle<Option<T>>
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        let stop = self.0.stop.clone();
        let named = Named::new(&self.0.names, name);
        self.0.tracker.spawn(async move {
            let _named = named;
            tokio::select! {
                biased;
                () = stop.cancelled() => {
                    tracing::debug!(task = name, "stopped: the agent is shutting down");
                    None
                }
                out = fut => Some(out),
            }
        })
    }

    /// An owner for the children of one piece of work (a turn's parallel
    /// branches): tracked here, stopped with this owner and by
    /// [`Tasks::shutdown`] of a child itself.
    pub fn child(&self) -> Tasks {
        Tasks(Arc::new(Owner {
            tracker: self.0.tracker.clone(),
            stop: self.0.stop.child_token(),
            names: self.0.names.clone(),
        }))
    }

    /// Stops this owner (and its children) when the guard drops: the
    /// children of work that was itself dropped do not outlive it.
    pub fn stop_on_drop(&self) -> tokio_util::sync::DropGuard {
        self.0.stop.clone().drop_guard()
    }

    /// Begins shutdown: every task stops at its next await point.
    pub fn shutdown(&self) {
        self.0.stop.cancel();
    }

    /// True once shutdown began.
    pub fn is_stopping(&self) -> bool {
        self.0.stop.is_cancelled()
    }

    /// Resolves when shutdown begins.
    pub async fn stopping(&self) {
        self.0.stop.cancelled().await
    }

    /// How many tasks run now.
    pub fn len(&self) -> usize {
        self.0.tracker.len()
    }

    /// True when no task runs.
    pub fn is_empty(&self) -> bool {
        self.0.tracker.is_empty()
    }

    /// The names of the tasks running now, with how many of each.
    pub fn running(&self) -> Vec<(&'static str, usize)> {
        self.0
            .names
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(k, v)| (*k, *v))
            .collect()
    }

    /// Waits up to `deadline` for every task to end (call it after
    /// [`Tasks::shutdown`]); answers how many still run.
    pub async fn wait(&self, deadline: Duration) -> usize {
        self.0.tracker.close();
        let _ = tokio::time::timeout(deadline, self.0.tracker.wait()).await;
        self.0.tracker.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A clone is a reference count, not a token's clone (which locks):
    /// the request path clones the owner several times per request.
    #[test]
    fn a_clone_is_one_reference_count() {
        assert_eq!(std::mem::size_of::<Tasks>(), std::mem::size_of::<usize>());
        let tasks = Tasks::new();
        let clone = tasks.clone();
        assert!(Arc::ptr_eq(&tasks.0, &clone.0), "one owner");
        assert!(!Arc::ptr_eq(&tasks.0, &tasks.child().0), "a child's own");
    }

    #[tokio::test]
    async fn shutdown_stops_loops_and_work_and_the_wait_sees_none_left() {
        let tasks = Tasks::new();
        tasks.spawn_background("loop", std::future::pending());
        let work = tasks.spawn("work", std::future::pending::<u8>());
        let done = tasks.spawn("done", async { 7 });
        assert_eq!(done.await.unwrap(), Some(7));
        assert_eq!(tasks.len(), 2);
        assert_eq!(tasks.running(), vec![("loop", 1), ("work", 1)]);
        tasks.shutdown();
        assert_eq!(work.await.unwrap(), None, "stopped work answers None");
        assert_eq!(tasks.wait(Duration::from_secs(5)).await, 0);
        assert!(tasks.running().is_empty());
    }

    #[tokio::test]
    async fn a_childs_tasks_stop_with_it_or_with_the_owner() {
        let tasks = Tasks::new();
        let child = tasks.child();
        let guard = child.stop_on_drop();
        let branch = child.spawn("branch", std::future::pending::<()>());
        let other = tasks.spawn("other", std::future::pending::<()>());
        drop(guard);
        assert_eq!(branch.await.unwrap(), None);
        assert!(!tasks.is_stopping(), "the owner goes on");
        let late = tasks.child().spawn("late", std::future::pending::<()>());
        tasks.shutdown();
        assert_eq!(other.await.unwrap(), None);
        assert_eq!(late.await.unwrap(), None, "a child stops with its owner");
        assert_eq!(tasks.wait(Duration::from_secs(5)).await, 0);
    }

    #[tokio::test]
    async fn the_wait_gives_up_at_its_deadline() {
        let tasks = Tasks::new();
        // Work that takes longer than the deadline to end.
        tasks.spawn_background("stuck", async {
            tokio::task::spawn_blocking(|| std::thread::sleep(Duration::from_millis(300)))
                .await
                .ok();
        });
        tokio::task::yield_now().await;
        assert_eq!(tasks.wait(Duration::from_millis(10)).await, 1);
        assert_eq!(tasks.wait(Duration::from_secs(5)).await, 0);
    }
}
