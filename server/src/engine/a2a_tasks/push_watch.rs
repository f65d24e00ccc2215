//! The push watcher: each state change of a task with push configs is
//! queued in the notification outbox for each config, in one transaction
//! (`Store::announce_push`), and the outbox worker delivers it with
//! retries. The watcher follows the engine's event bus; a sweep at start
//! and every few seconds catches up on changes a dead process or another
//! replica did not announce, so a state change is never lost, and each
//! state goes to each config once (a config also gets the task's current
//! state when it is made).
//!
//! The payload is a 1.0 `StreamResponse` (`statusUpdate` while the task
//! runs or waits, with the approval's data part when it waits on one;
//! the whole `task` with its artifacts once it ends) or, for a config
//! made over 0.3, the 0.3 task object.
//!
//! What it remembers (the watched tasks, a lock per task) is the
//! service's, owned by the server that started it, not the process's.

use super::executor::{Executor, view_of};
use super::plan::load;
use crate::a2a::wire::{self, Dialect, TaskState};
use crate::domain::tasks::Tasks;
use crate::engine::Engine;
use crate::events::Delivery;
use crate::store::push::Announcement;
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often configs not yet sent a final state are looked at.
const SWEEP: Duration = Duration::from_secs(5);

/// How many announcement locks the tasks share (by their id's hash).
const LOCKS: usize = 64;

/// Tasks with configs, so events of other tasks cost nothing, each with
/// the state last queued from here: an event that leaves the state as it
/// was (a tool started, the model asked) costs no store write.
#[derive(Default)]
struct Watched(Mutex<HashMap<String, Option<TaskState>>>);

impl Watched {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Option<TaskState>>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
    /// Watches `id`; `fresh` forgets what was queued (a new config).
    fn add(&self, id: &str, fresh: bool) {
        let mut m = self.map();
        let e = m.entry(id.to_string()).or_insert(None);
        if fresh {
            *e = None;
        }
    }
    fn remove(&self, id: &str) {
        self.map().remove(id);
    }
    fn has(&self, id: &str) -> bool {
        self.map().contains_key(id)
    }
    /// Whether `s` is news for `id` (not the state last queued from here).
    fn changed(&self, id: &str, s: TaskState) -> bool {
        self.map().get(id).is_none_or(|last| *last != Some(s))
    }
    fn queued(&self, id: &str, s: TaskState) {
        if let Some(e) = self.map().get_mut(id) {
            *e = Some(s);
        }
    }
}

/// The watcher's memory: the watched tasks and the announcement locks.
pub(crate) struct PushWatch {
    watched: Watched,
    /// One lock per task (of a fixed set, by the task id's hash): a task's
    /// announcements run one at a time, each reading the state and
    /// queuing it under the lock, so the watcher and the sweep cannot
    /// commit an older reading after a newer one. (Across replicas the
    /// store's rule holds: nothing is queued for a config after a final
    /// state.)
    locks: Vec<tokio::sync::Mutex<()>>,
}

impl Default for PushWatch {
    fn default() -> Self {
        PushWatch {
            watched: Watched::default(),
            locks: (0..LOCKS).map(|_| tokio::sync::Mutex::new(())).collect(),
        }
    }
}

impl PushWatch {
    fn announcing(&self, task_id: &str) -> &tokio::sync::Mutex<()> {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        task_id.hash(&mut h);
        &self.locks[(h.finish() % self.locks.len() as u64) as usize]
    }

    /// A config was made for `task_id`: watch it afresh and queue its
    /// current state.
    pub(crate) async fn config_added(&self, engine: &Engine, executor: &dyn Executor, id: &str) {
        self.watched.add(id, true);
        self.announce(engine, executor, id).await;
    }

    /// Queues the task's current state for its configs (those that were
    /// not sent it yet). Failures are logged: the sweep tries again.
    async fn announce(&self, engine: &Engine, executor: &dyn Executor, task_id: &str) {
        let _one_at_a_time = self.announcing(task_id).lock().await;
        let Ok(c) = load(engine, task_id).await else {
            return;
        };
        let v = view_of(engine, executor, &c, Some(0));
        if !self.watched.changed(task_id, v.state) {
            return;
        }
        match engine.store().announce_push(announcement(&v)).await {
            Ok(n) => {
                self.watched.queued(task_id, v.state);
                if n > 0 {
                    tracing::debug!(task = %task_id, state = v.state.wire(Dialect::V03), configs = n, "push queued");
                }
            }
            Err(e) => {
                tracing::warn!(task = %task_id, error = %e, "could not queue a push notification")
            }
        }
        if v.state.is_terminal() {
            self.watched.remove(task_id);
        }
    }

    /// Every config not yet sent a final state: its task's state now.
    async fn sweep(&self, engine: &Engine, executor: &dyn Executor) {
        let open = match engine.store().unsettled_push_configs(1000).await {
            Ok(o) => o,
            Err(e) => {
                tracing::warn!(error = %e, "could not read the push configs");
                return;
            }
        };
        let tasks: HashSet<String> = open.into_iter().map(|p| p.task_id).collect();
        for t in tasks {
            self.watched.add(&t, false);
            self.announce(engine, executor, &t).await;
        }
    }
}

/// The task's state now, as each config shape tells it.
fn announcement(v: &wire::TaskView) -> Announcement {
    let mut snapshot = v.clone();
    snapshot.history.clear();
    let v1 = if v.state.is_terminal() {
        json!({"task": wire::task(&snapshot, Dialect::V1, true)})
    } else {
        wire::status_update(v, Dialect::V1, false)
    };
    Announcement {
        task_id: v.id.clone(),
        state: v.state.wire(Dialect::V03).to_string(),
        v1,
        v03: wire::task(&snapshot, Dialect::V03, true),
    }
}

/// Starts the watcher (events of watched tasks) and the sweep, as tasks of
/// `owner`, which stops and drains them on shutdown.
pub(crate) fn start(
    watch: Arc<PushWatch>,
    engine: Engine,
    executor: Arc<dyn Executor>,
    owner: &Tasks,
) {
    let (w, e, x) = (watch.clone(), engine.clone(), executor.clone());
    owner.spawn_background("push watcher", async move {
        let mut sub = e.events().subscribe(None);
        while let Some(next) = sub.next().await {
            let Delivery::Event(p) = next else { continue };
            let id = &p.event.conversation_id;
            if w.watched.has(id) {
                w.announce(&e, x.as_ref(), id).await;
            }
        }
    });
    owner.spawn_background("push sweep", async move {
        loop {
            watch.sweep(&engine, executor.as_ref()).await;
            tokio::time::sleep(SWEEP).await;
        }
    });
}
