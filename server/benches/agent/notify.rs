//! Notifications (`BENCH_ONLY=notify`): what raising an approval costs a
//! turn with three webhook targets configured versus none (the rows are
//! written in the turn's transaction; delivery is the worker's, off the
//! request path), and the outbox's throughput to a local receiver.
//! Target: < 0.5 ms added at p50.

use super::{Agent, pct};
use std::time::{Duration, Instant};
use test_support::webhook::Receiver;

const SECRET: &str = "whsec-bench-0123456789";

/// `n` turns that each raise an approval, `concurrency` at a time.
async fn approvals(
    http: &reqwest::Client,
    base: &str,
    n: usize,
    concurrency: usize,
) -> Vec<Duration> {
    let (http, url) = (http.clone(), format!("{base}/conversations"));
    let (_, lat) = super::load(n, concurrency, move || {
        let (http, url) = (http.clone(), url.clone());
        async move {
            let resp = http
                .post(&url)
                .json(&serde_json::json!({"message": "add apples 5"}))
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status().as_u16(), 201);
            let body: serde_json::Value = resp.json().await.unwrap();
            assert_eq!(body["result"]["waiting_approval"], true, "{body}");
        }
    })
    .await;
    lat
}

pub async fn rows(
    http: &reqwest::Client,
    fake_base: &str,
    rows: &mut Vec<(String, String, String)>,
    quick: bool,
) {
    let hook = Receiver::start(SECRET).await;
    let targets: String = (0..3)
        .map(|i| {
            format!(
                "    - {{name: hook{i}, url: \"{}\", secret: \"${{HOOK_SECRET}}\"}}\n",
                hook.url
            )
        })
        .collect();
    let none = Agent::start(fake_base, true);
    let three = Agent::start_env(
        fake_base,
        true,
        &format!("notifications:\n  targets:\n{targets}"),
        &[("HOOK_SECRET", SECRET)],
    );
    for a in [&none, &three] {
        let _ = approvals(http, &a.base, 20, 1).await;
    }
    let rounds = if quick { 4 } else { 10 };
    let per_round = if quick { 40 } else { 100 };
    let (mut lat_none, mut lat_three) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        lat_none.extend(approvals(http, &none.base, per_round, 1).await);
        lat_three.extend(approvals(http, &three.base, per_round, 1).await);
    }
    lat_none.sort();
    lat_three.sort();
    rows.push((
        "approval turn p50, c=1: no targets / 3 webhooks (ms)".into(),
        format!("{:.3} / {:.3}", pct(&lat_none, 0.5), pct(&lat_three, 0.5)),
        "".into(),
    ));
    rows.push((
        "  p50 added by 3 webhook targets (ms)".into(),
        format!("{:.3}", pct(&lat_three, 0.5) - pct(&lat_none, 0.5)),
        "< 0.5 ms".into(),
    ));

    // Throughput: a burst of approvals, three notifications each; from
    // the first delivery to the last.
    let expected = 3 * (20 + rounds * per_round);
    hook.wait_until(Duration::from_secs(120), "the warm-up deliveries", |g| {
        g.len() >= expected
    })
    .await;
    let burst = if quick { 300 } else { 1000 };
    let start = Instant::now();
    let _ = approvals(http, &three.base, burst, 16).await;
    let want = expected + 3 * burst;
    let got = hook
        .wait_until(Duration::from_secs(300), "the burst's deliveries", |g| {
            g.len() >= want
        })
        .await;
    let first = got[expected].at.max(start);
    let last = got[want - 1].at;
    let secs = last.duration_since(first).as_secs_f64().max(1e-3);
    assert!(got.iter().all(|r| r.signed && r.status == 200));
    rows.push((
        format!(
            "outbox: {} webhooks delivered to a local receiver (/s)",
            3 * burst
        ),
        format!("{:.0}", (3 * burst) as f64 / secs),
        "".into(),
    ));
}
