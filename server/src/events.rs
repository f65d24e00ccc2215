//! The event bus behind the SSE streams (`GET /events`,
//! `GET /conversations/:id/events`).
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
//! gets one `resync` event and reloads. Nothing here is durable on purpose:
//! the durable record is the conversation itself.

use app::models::{Event, EventKind};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast;

/// Events kept for catching up.
pub const RING: usize = 4096;
/// Live channel capacity per subscriber before it is told to resync.
const CHANNEL: usize = 1024;

/// One event with its sequence number.
#[derive(Clone, Debug)]
pub struct Published {
    pub seq: u64,
    pub event: Arc<Event>,
}

/// What a subscriber receives: an event, or "reload, you missed some".
#[derive(Clone, Debug)]
pub enum Delivery {
    Event(Published),
    Resync,
}

/// A cheap, cloneable handle to the bus.
#[derive(Clone)]
pub struct Events {
    inner: Arc<Inner>,
}

struct Inner {
    /// Distinguishes this process's ids from a previous run's.
    boot: String,
    /// Set at shutdown: every subscription ends.
    closed: tokio::sync::watch::Sender<bool>,
    tx: broadcast::Sender<Published>,
    ring: Mutex<Ring>,
}

struct Ring {
    next: u64,
    kept: VecDeque<Published>,
}

impl Default for Events {
    fn default() -> Self {
        Self::new()
    }
}

impl Events {
    pub fn new() -> Events {
        let (tx, _) = broadcast::channel(CHANNEL);
        let boot = format!("{:x}", rand::random::<u32>());
        Events {
            inner: Arc::new(Inner {
                boot,
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
    pub fn close(&self) {
        self.inner.closed.send_replace(true);
    }

    /// The SSE id of event `seq`.
    pub fn id(&self, seq: u64) -> String {
        format!("{}-{seq}", self.inner.boot)
    }

    /// Publishes `event` to every subscriber (after its change committed).
    pub fn publish(&self, event: Event) {
        let mut ring = self.inner.ring.lock().unwrap_or_else(|p| p.into_inner());
        let p = Published {
            seq: ring.next,
            event: Arc::new(event),
        };
        ring.next += 1;
        if ring.kept.len() == RING {
            ring.kept.pop_front();
        }
        ring.kept.push_back(p.clone());
        // Sent under the lock, so the order on the channel is the seq order
        // and `subscribe` cannot miss or double an event.
        let _ = self.inner.tx.send(p);
    }

    /// Subscribes, replaying what came after `last_event_id` (if given).
    pub fn subscribe(&self, last_event_id: Option<&str>) -> Subscription {
        let ring = self.inner.ring.lock().unwrap_or_else(|p| p.into_inner());
        let rx = self.inner.tx.subscribe();
        let mut backlog = VecDeque::new();
        if let Some(last) = last_event_id {
            match self.parse_id(last) {
                Some(seq) => {
                    let oldest = ring.kept.front().map(|p| p.seq).unwrap_or(ring.next);
                    if seq + 1 < oldest || seq >= ring.next {
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
    pub fn emit(&self, kind: EventKind, conversation_id: &str, fill: impl FnOnce(&mut Event)) {
        let mut e = Event {
            kind,
            conversation_id: conversation_id.to_string(),
            status: None,
            running: None,
            tool: None,
            approval: None,
            detail: None,
            node: None,
            at: crate::store::now(),
        };
        fill(&mut e);
        self.publish(e);
    }
}

/// A live subscription: first the backlog, then the channel.
pub struct Subscription {
    backlog: VecDeque<Delivery>,
    rx: broadcast::Receiver<Published>,
    closed: tokio::sync::watch::Receiver<bool>,
}

impl Subscription {
    /// The next delivery; `None` when the bus is closed or gone.
    pub async fn next(&mut self) -> Option<Delivery> {
        if *self.closed.borrow() {
            return None;
        }
        if let Some(d) = self.backlog.pop_front() {
            return Some(d);
        }
        tokio::select! {
            r = self.rx.recv() => match r {
                Ok(p) => Some(Delivery::Event(p)),
                Err(broadcast::error::RecvError::Lagged(_)) => Some(Delivery::Resync),
                Err(broadcast::error::RecvError::Closed) => None,
            },
            _ = self.closed.wait_for(|c| *c) => None,
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
}
