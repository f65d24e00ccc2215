//! The event bus behind the SSE streams (`GET /events`,
//! `GET /conversations/:id/events`) and A2A subscriptions.
//!
//! The engine publishes an [`Event`] after each state change has been
//! committed, so a client that reacts to an event by reading the REST API
//! always sees the change. Events carry hints (which tool, which approval),
//! not state: the database stays the only source of truth, and a client that
//! missed something can always just reload.
//!
//! Catching up: every event gets an id `"<boot>-<seq>"`. The last
//! [`RING`] events are kept in memory; a client reconnecting with
//! `Last-Event-ID` gets what it missed from there. When that is impossible
//! (the agent restarted, so the boot part differs, or the client was away
//! for more than [`RING`] events, or it fell behind the live channel) it
//! gets one `resync` event and reloads.
//!
//! Two modes:
//! - **Local** (SQLite, one process): events are numbered here and nothing
//!   is durable on purpose: the durable record is the conversation itself.
//! - **Shared** (PostgreSQL, several replicas): a published event is
//!   written as a row (one writer task per replica keeps this replica's
//!   order); every replica delivers rows in the database's `seq` order as
//!   its listener is woken (see `store/postgres/events.rs`). The replica
//!   that wrote a batch delivers it as written, under the numbers the
//!   database gave it, when it has delivered everything before it (a read
//!   of its own rows would bring back what it already has); its own
//!   notification then costs no read. Ids are `"p-<seq>"` on every replica, so
//!   `Last-Event-ID` resumes on any of them, and each replica starts with
//!   the newest [`RING`] rows.
use crate::domain::tasks::Tasks;
use crate::store::{Store, StoreError};
use app::models::{Event, EventKind};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast;

/// Events kept for catching up.
pub(crate) const RING: usize = 4096;
/// Live channel capacity per subscriber before it is told to resync.
const CHANNEL: usize = 1024;

/// One event with its sequence number.
#[derive(Clone, Debug)]
pub(crate) struct Published {
    pub(crate) seq: u64,
    pub(crate) event: Arc<Event>,
}

/// What a subscriber receives: an event, or "reload, you missed some".
#[derive(Clone, Debug)]
pub(crate) enum Delivery {
    Event(Published),
    Resync,
}

/// A cheap, cloneable handle to the bus.
#[derive(Clone)]
pub(crate) struct Events {
    inner: Arc<Inner>,
}

struct Inner {
    /// Distinguishes this process's ids from a previous run's (`p` when
    /// shared: the database numbers the events).
    boot: String,
    /// Shared mode: events to write as rows, in publishing order.
    outbox: Option<tokio::sync::mpsc::UnboundedSender<Event>>,
    /// Set at shutdown: every subscription ends.
    closed: tokio::sync::watch::Sender<bool>,
    tx: broadcast::Sender<Published>,
    ring: Mutex<Ring>,
}

struct Ring {
    next: u64,
    kept: VecDeque<Published>,
}

impl Ring {
    /// Keeps event `seq` (the newest) and sends it to the subscribers.
    /// Called under the ring's lock, so the order on the channel is the
    /// seq order and `subscribe` cannot miss or double an event.
    fn push(&mut self, seq: u64, event: Event, tx: &broadcast::Sender<Published>) {
        let p = Published {
            seq,
            event: Arc::new(event),
        };
        self.next = seq + 1;
        if self.kept.len() == RING {
            self.kept.pop_front();
        }
        self.kept.push_back(p.clone());
        let _ = tx.send(p);
    }
}

impl Default for Events {
    fn default() -> Self {
        Self::new()
    }
}

/// The id prefix of shared mode.
const SHARED_BOOT: &str = "p";
/// Events one writer batch or one read takes at most.
const BATCH: usize = 256;
/// Shared mode: how long a published event waits for others to be written
/// with it (events are hints; this is their only added latency).
const LINGER: std::time::Duration = std::time::Duration::from_millis(3);

impl Events {
    /// A bus for one process.
    pub(crate) fn new() -> Events {
        Events::with_outbox(format!("{:x}", rand::random::<u32>()), None)
    }

    /// A bus shared by every replica through the store's event rows.
    /// Spawns its writer and its reader as tasks of `tasks`: call it inside
    /// the runtime. Events not yet written when shutdown stops the writer
    /// are lost, as in a crash: they are hints, the store has the state.
    pub(crate) async fn shared(store: Store, tasks: &Tasks) -> Result<Events, StoreError> {
        let (out, rx) = tokio::sync::mpsc::unbounded_channel();
        let bus = Events::with_outbox(SHARED_BOOT.into(), Some(out));
        for row in store.newest_events(RING as i64).await? {
            bus.deliver(&row);
        }
        let wake = Arc::new(Wake::default());
        // The writer holds the bus weakly: it ends when the last handle
        // goes (and with it the sender), as before.
        tasks.spawn_background(
            "event writer",
            write_rows(store.clone(), Arc::downgrade(&bus.inner), wake.clone(), rx),
        );
        let weak = Arc::downgrade(&wake);
        store
            .listen_events(move |newest| match weak.upgrade() {
                Some(w) => {
                    w.announce(newest);
                    true
                }
                None => false,
            })
            .map_err(|e| StoreError::Worker(format!("cannot start the event listener: {e}")))?;
        tasks.spawn_background("event reader", read_rows(store, bus.clone(), wake));
        Ok(bus)
    }

    fn with_outbox(
        boot: String,
        outbox: Option<tokio::sync::mpsc::UnboundedSender<Event>>,
    ) -> Events {
        let (tx, _) = broadcast::channel(CHANNEL);
        Events {
            inner: Arc::new(Inner {
                boot,
                outbox,
                closed: tokio::sync::watch::channel(false).0,
                tx,
                ring: Mutex::new(Ring {
                    next: 1,
                    kept: VecDeque::with_capacity(RING),
                }),
            }),
        }
    }

    /// Ends every subscription (at shutdown).
    pub(crate) fn close(&self) {
        self.inner.closed.send_replace(true);
    }

    /// The SSE id of event `seq`.
    pub(crate) fn id(&self, seq: u64) -> String {
        format!("{}-{seq}", self.inner.boot)
    }

    /// Publishes `event` to every subscriber (after its change committed);
    /// shared, to every replica's.
    pub(crate) fn publish(&self, event: Event) {
        if let Some(out) = &self.inner.outbox {
            if out.send(event).is_err() {
                tracing::warn!("the event writer stopped; an event was not published");
            }
            return;
        }
        let mut ring = self.inner.ring.lock().unwrap_or_else(|p| p.into_inner());
        let seq = ring.next;
        ring.push(seq, event, &self.inner.tx);
    }

    /// Shared mode: delivers a row read from the store (in `seq` order;
    /// one already delivered is skipped, an unreadable one passed over).
    fn deliver(&self, row: &crate::store::EventRow) {
        let seq = u64::try_from(row.seq).unwrap_or(0);
        let parsed = serde_json::from_str::<Event>(&row.payload);
        let mut ring = self.inner.ring.lock().unwrap_or_else(|p| p.into_inner());
        if seq < ring.next {
            return;
        }
        let event = match parsed {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(seq, error = %e, "skipping an unreadable event row");
                ring.next = seq + 1;
                return;
            }
        };
        ring.push(seq, event, &self.inner.tx);
    }

    /// Shared mode: the seq of the newest event delivered here (every one
    /// before it was delivered too).
    fn delivered(&self) -> u64 {
        let ring = self.inner.ring.lock().unwrap_or_else(|p| p.into_inner());
        ring.next - 1
    }

    /// Shared mode: delivers the batch this replica just wrote, numbered
    /// from `first`, without reading it back, when everything before it
    /// was delivered already (else the reader gets it with the rows before
    /// it, in order).
    fn deliver_own(&self, first: u64, events: Vec<Event>) {
        let mut ring = self.inner.ring.lock().unwrap_or_else(|p| p.into_inner());
        if ring.next != first {
            return;
        }
        for event in events {
            let seq = ring.next;
            ring.push(seq, event, &self.inner.tx);
        }
    }

    /// Subscribes, replaying what came after `last_event_id` (if given).
    pub(crate) fn subscribe(&self, last_event_id: Option<&str>) -> Subscription {
        let ring = self.inner.ring.lock().unwrap_or_else(|p| p.into_inner());
        let rx = self.inner.tx.subscribe();
        let mut backlog = VecDeque::new();
        let mut after = 0;
        if let Some(last) = last_event_id {
            match self.parse_id(last) {
                Some(seq) => {
                    let oldest = ring.kept.front().map(|p| p.seq).unwrap_or(ring.next);
                    if seq >= ring.next && self.inner.outbox.is_some() {
                        // Seen on a replica that is ahead of this one by a
                        // moment: skip up to it as it arrives.
                        after = seq;
                    } else if seq + 1 < oldest || seq >= ring.next {
                        backlog.push_back(Delivery::Resync);
                    } else {
                        backlog.extend(
                            ring.kept
                                .iter()
                                .filter(|p| p.seq > seq)
                                .cloned()
                                .map(Delivery::Event),
                        );
                    }
                }
                None => backlog.push_back(Delivery::Resync),
            }
        }
        Subscription {
            backlog,
            after,
            rx,
            closed: self.inner.closed.subscribe(),
        }
    }

    /// The seq of one of our ids; `None` for another run's or garbage.
    fn parse_id(&self, id: &str) -> Option<u64> {
        let (boot, seq) = id.trim().rsplit_once('-')?;
        (boot == self.inner.boot).then_some(())?;
        seq.parse().ok()
    }

    /// Shorthand for building and publishing one event.
    pub(crate) fn emit(
        &self,
        kind: EventKind,
        conversation_id: &str,
        fill: impl FnOnce(&mut Event),
    ) {
        let mut e = Event {
            kind,
            conversation_id: conversation_id.to_string(),
            status: None,
            running: None,
            tool: None,
            approval: None,
            question: None,
            detail: None,
            node: None,
            at: crate::domain::ids::now(),
        };
        fill(&mut e);
        self.publish(e);
    }
}

/// A live subscription: first the backlog, then the channel.
pub(crate) struct Subscription {
    backlog: VecDeque<Delivery>,
    /// Events up to this seq were seen elsewhere (shared mode).
    after: u64,
    rx: broadcast::Receiver<Published>,
    closed: tokio::sync::watch::Receiver<bool>,
}

impl Subscription {
    /// The next delivery; `None` when the bus is closed or gone.
    pub(crate) async fn next(&mut self) -> Option<Delivery> {
        if *self.closed.borrow() {
            return None;
        }
        if let Some(d) = self.backlog.pop_front() {
            return Some(d);
        }
        loop {
            let d = tokio::select! {
                r = self.rx.recv() => match r {
                    Ok(p) => Delivery::Event(p),
                    Err(broadcast::error::RecvError::Lagged(_)) => Delivery::Resync,
                    Err(broadcast::error::RecvError::Closed) => return None,
                },
                _ = self.closed.wait_for(|c| *c) => return None,
            };
            match d {
                Delivery::Event(p) if p.seq <= self.after => continue,
                d => return Some(d),
            }
        }
    }
}

/// Shared mode: writes published events as rows, in order, batching what
/// queued while the previous batch was written (until the bus is gone),
/// and delivers each batch here as written (no read back: see
/// [`Events::deliver_own`]). A batch that cannot be written is retried for
/// a few seconds, then dropped with a log line (events are hints: clients
/// reload on the next one).
async fn write_rows(
    store: Store,
    bus: std::sync::Weak<Inner>,
    wake: Arc<Wake>,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<Event>,
) {
    while let Some(first) = rx.recv().await {
        // A turn publishes several events within a few milliseconds: they
        // wait for each other and go as one row batch (one statement, one
        // notification, one read on every other replica) instead of one
        // each.
        tokio::time::sleep(LINGER).await;
        let mut batch = vec![first];
        while batch.len() < BATCH {
            match rx.try_recv() {
                Ok(e) => batch.push(e),
                Err(_) => break,
            }
        }
        let (events, rows): (Vec<Event>, Vec<(Option<String>, String)>) = batch
            .into_iter()
            .filter_map(|e| {
                let json = serde_json::to_string(&e).ok()?;
                let conversation = Some(e.conversation_id.clone());
                Some((e, (conversation, json)))
            })
            .unzip();
        // The reader waits for this batch to be delivered before it
        // decides whether a notification needs a read.
        let _writing = wake.writing.lock().await;
        let mut tries = 0;
        loop {
            match store.append_events(rows.clone()).await {
                Ok(last) => {
                    let first = u64::try_from(last)
                        .ok()
                        .and_then(|last| (last + 1).checked_sub(rows.len() as u64));
                    if let (Some(first), Some(inner)) = (first.filter(|f| *f > 0), bus.upgrade()) {
                        Events { inner }.deliver_own(first, events);
                    }
                    break;
                }
                Err(e) => {
                    tries += 1;
                    if tries == 10 {
                        tracing::error!(error = %e, events = rows.len(), "could not write events; they are lost (clients reload on the next one)");
                        break;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
                }
            }
        }
    }
}

/// Shared mode: what the listener heard since the reader last looked.
#[derive(Default)]
struct Wake {
    notify: tokio::sync::Notify,
    /// The newest seq announced; `i64::MAX` when unknown (a quiet second
    /// or a reconnect: read in any case).
    newest: std::sync::atomic::AtomicI64,
    /// Held while this replica writes a batch and delivers it: its own
    /// notification can arrive first, and is then no reason to read.
    writing: tokio::sync::Mutex<()>,
}

impl Wake {
    fn announce(&self, newest: Option<i64>) {
        self.newest.fetch_max(
            newest.unwrap_or(i64::MAX),
            std::sync::atomic::Ordering::SeqCst,
        );
        self.notify.notify_one();
    }
}

/// Shared mode: delivers the rows after the newest delivered whenever the
/// listener wakes it, until the bus closes. A notification of rows already
/// delivered here (this replica's own batches) costs no read.
async fn read_rows(store: Store, bus: Events, wake: Arc<Wake>) {
    let mut closed = bus.inner.closed.subscribe();
    loop {
        tokio::select! {
            _ = wake.notify.notified() => {}
            _ = closed.wait_for(|c| *c) => return,
        }
        drop(wake.writing.lock().await);
        let newest = wake.newest.swap(0, std::sync::atomic::Ordering::SeqCst);
        if u64::try_from(newest).unwrap_or(0) <= bus.delivered() {
            continue;
        }
        loop {
            let last = bus.delivered();
            let rows = match store.events_after(last as i64, BATCH as i64).await {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read events; retrying");
                    // The next wake (at most a second away) reads again.
                    wake.newest
                        .fetch_max(i64::MAX, std::sync::atomic::Ordering::SeqCst);
                    break;
                }
            };
            for row in &rows {
                bus.deliver(row);
            }
            if rows.len() < BATCH {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(bus: &Events, c: &str) {
        bus.emit(EventKind::MessageAdded, c, |_| {});
    }

    async fn seqs(sub: &mut Subscription, n: usize) -> Vec<Option<u64>> {
        let mut out = Vec::new();
        for _ in 0..n {
            out.push(match sub.next().await {
                Some(Delivery::Event(p)) => Some(p.seq),
                _ => None,
            });
        }
        out
    }

    #[tokio::test]
    async fn close_ends_every_subscription() {
        let bus = Events::new();
        let mut sub = bus.subscribe(None);
        let waiting = tokio::spawn(async move { sub.next().await.is_none() });
        tokio::task::yield_now().await;
        bus.close();
        assert!(waiting.await.unwrap());
        assert!(bus.subscribe(None).next().await.is_none());
    }

    #[tokio::test]
    async fn a_new_subscriber_gets_only_new_events() {
        let bus = Events::new();
        ev(&bus, "a");
        let mut sub = bus.subscribe(None);
        ev(&bus, "b");
        assert_eq!(seqs(&mut sub, 1).await, vec![Some(2)]);
    }

    #[tokio::test]
    async fn last_event_id_replays_what_was_missed_then_goes_live() {
        let bus = Events::new();
        for _ in 0..5 {
            ev(&bus, "a");
        }
        let mut sub = bus.subscribe(Some(&bus.id(3)));
        ev(&bus, "a");
        assert_eq!(
            seqs(&mut sub, 3).await,
            vec![Some(4), Some(5), Some(6)],
            "no gap, no duplicate"
        );
    }

    #[tokio::test]
    async fn an_id_from_another_run_or_too_old_asks_for_a_resync() {
        let bus = Events::new();
        ev(&bus, "a");
        let mut sub = bus.subscribe(Some("deadbeef-1"));
        assert!(matches!(sub.next().await, Some(Delivery::Resync)));
        let mut sub = bus.subscribe(Some("garbage"));
        assert!(matches!(sub.next().await, Some(Delivery::Resync)));
        for _ in 0..RING + 5 {
            ev(&bus, "a");
        }
        let mut sub = bus.subscribe(Some(&bus.id(2)));
        assert!(matches!(sub.next().await, Some(Delivery::Resync)));
        // Up to date: nothing to replay, no resync.
        let mut sub = bus.subscribe(Some(&bus.id(RING as u64 + 6)));
        ev(&bus, "a");
        assert_eq!(seqs(&mut sub, 1).await, vec![Some(RING as u64 + 7)]);
    }

    // Moved from the store suite: it is the bus's behaviour across
    // replicas (the store sits below the bus and does not name it).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn events_reach_every_replica_in_order_and_resume_anywhere() {
        use crate::store::suite::{pg_database, replica};
        let url = pg_database().await;
        let (a, b) = (replica(&url, 30).await, replica(&url, 30).await);
        let (bus_a, bus_b) = (
            Events::shared(a, &Tasks::new()).await.unwrap(),
            Events::shared(b, &Tasks::new()).await.unwrap(),
        );
        let mut on_b = bus_b.subscribe(None);
        let mut on_a = bus_a.subscribe(None);
        for i in 0..50 {
            let bus = if i % 3 == 0 { &bus_b } else { &bus_a };
            bus.emit(
                app::models::EventKind::MessageAdded,
                &format!("c{i}"),
                |_| {},
            );
            if i % 10 == 0 {
                tokio::task::yield_now().await;
            }
        }
        let mut got = Vec::new();
        for sub in [&mut on_b, &mut on_a] {
            let mut seqs = Vec::new();
            for _ in 0..50 {
                let d = tokio::time::timeout(std::time::Duration::from_secs(10), sub.next())
                    .await
                    .expect("every event arrives")
                    .unwrap();
                let Delivery::Event(p) = d else {
                    panic!("no resync expected")
                };
                seqs.push((p.seq, p.event.conversation_id.clone()));
            }
            got.push(seqs);
        }
        assert_eq!(
            got[0].iter().map(|(seq, _)| *seq).collect::<Vec<u64>>(),
            (1..=50).collect::<Vec<u64>>(),
            "in seq order, no gap"
        );
        // A replica delivers its own batches as written, without reading them
        // back: the same event under the same seq as everywhere else.
        assert_eq!(got[0], got[1], "the same on both replicas");
        let mut seen: Vec<&String> = got[0].iter().map(|(_, c)| c).collect();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 50, "each event once");
        // Last-Event-ID from one replica resumes on the other.
        let mut resumed = bus_b.subscribe(Some(&bus_a.id(40)));
        for want in 41..=50 {
            match resumed.next().await {
                Some(Delivery::Event(p)) => assert_eq!(p.seq, want),
                other => panic!("{other:?}"),
            }
        }
        bus_a.close();
        bus_b.close();
    }
}
