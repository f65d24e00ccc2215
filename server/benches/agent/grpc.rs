//! A2A's gRPC binding beside JSON-RPC (issue 44), `BENCH_ONLY=grpc`:
//! `SendMessage` round trips per second on one agent (the fake model
//! answering at once), concurrency 1 and 32, rounds alternating between
//! the bindings, each figure the median of its rounds.
//!
//! JSON-RPC goes over reqwest's pool (HTTP/1.1, a connection per
//! concurrent request); gRPC over one tonic channel (HTTP/2, every request
//! a stream of one connection), as gRPC clients do, with
//! `test_support::grpc`'s client.

use super::{Agent, a2a_sends, load};
use std::time::Duration;
use test_support::grpc::{SendMessageResponse, say, unary};
use tonic::transport::Channel;

/// `SendMessage` over gRPC: (per second, sorted latencies).
async fn grpc_sends(ch: &Channel, n: usize, concurrency: usize) -> (f64, Vec<Duration>) {
    let ch = ch.clone();
    load(n, concurrency, move || {
        let ch = ch.clone();
        async move {
            let r: SendMessageResponse = unary(&ch, "SendMessage", None, &[], say("hello", None))
                .await
                .unwrap();
            assert!(r.task.is_some() || r.message.is_some());
        }
    })
    .await
}

pub(crate) async fn rows(
    http: &reqwest::Client,
    fake_base: &str,
    rows: &mut Vec<(String, String, String)>,
    quick: bool,
) {
    let (n1, n32) = if quick { (100, 500) } else { (500, 3000) };
    let agent = Agent::start(fake_base, false);
    let url = format!("{}/a2a", agent.base);
    let ch = test_support::grpc::channel(&agent.base).await;
    let _ = a2a_sends(http, &url, 50, 1).await;
    let _ = grpc_sends(&ch, 50, 1).await;
    let rounds = if quick { 1 } else { 3 };
    let (mut g1, mut j1, mut g32, mut j32) = (vec![], vec![], vec![], vec![]);
    for _ in 0..rounds {
        j1.push(a2a_sends(http, &url, n1, 1).await.0);
        g1.push(grpc_sends(&ch, n1, 1).await.0);
        j32.push(a2a_sends(http, &url, n32, 32).await.0);
        g32.push(grpc_sends(&ch, n32, 32).await.0);
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    for (c, g, j) in [(1, median(g1), median(j1)), (32, median(g32), median(j32))] {
        rows.push((
            format!("A2A SendMessage/s, c={c}: gRPC vs JSON-RPC ({rounds}r)"),
            format!("{g:.0} vs {j:.0} ({:+.1}%)", (g / j.max(1.0) - 1.0) * 100.0),
            "within 10%".into(),
        ));
    }
}
