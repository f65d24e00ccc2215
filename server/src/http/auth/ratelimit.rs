//! Failed sign-ins per peer address: 10 a minute, then 429 (AUTH.md §3).
//!
//! Only failures count, and only against the address that made them, so
//! a guesser locks out itself and nobody else. A fixed one-minute window
//! per address keeps it to one counter each; the table is pruned of
//! finished windows and capped, so spraying addresses cannot grow it
//! without bound. A std `Mutex`: nothing awaits while it is held.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failures allowed per address per window.
pub(crate) const MAX_FAILURES: u32 = 10;
pub(crate) const WINDOW: Duration = Duration::from_secs(60);
/// Addresses tracked at once.
const CAPACITY: usize = 100_000;

#[derive(Default)]
pub(crate) struct FailureLimiter {
    windows: Mutex<HashMap<IpAddr, (Instant, u32)>>,
}

impl FailureLimiter {
    /// `Some(seconds to wait)` if `ip` has used up its failures.
    pub(crate) fn blocked(&self, ip: IpAddr) -> Option<u64> {
        let w = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        let (start, n) = w.get(&ip)?;
        let left = WINDOW.checked_sub(start.elapsed())?;
        (*n >= MAX_FAILURES).then(|| left.as_secs().max(1))
    }

    /// Counts a failure of `ip`.
    pub(crate) fn fail(&self, ip: IpAddr) {
        let mut w = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        if w.len() >= CAPACITY {
            w.retain(|_, (start, _)| start.elapsed() < WINDOW);
        }
        if w.len() >= CAPACITY {
            return;
        }
        let e = w.entry(ip).or_insert((Instant::now(), 0));
        if e.0.elapsed() >= WINDOW {
            *e = (Instant::now(), 0);
        }
        e.1 += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_failures_block_that_address_only() {
        let l = FailureLimiter::default();
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        for _ in 0..MAX_FAILURES {
            assert!(l.blocked(a).is_none());
            l.fail(a);
        }
        let wait = l.blocked(a).unwrap();
        assert!((1..=60).contains(&wait));
        assert!(l.blocked(b).is_none());
    }
}
