//! What observing costs (issue 14): "list" turns at concurrency 1 and
//! `GET /conversations/:id` against two agents started alike, one sending
//! traces to an OTLP/HTTP collector (a minimal in-process receiver that
//! accepts and drops, so it is never the bottleneck; the agent's batch
//! thread is what is measured) and one without. Rounds alternate between
//! the two so drift on a busy machine touches both alike. Metrics are
//! always on, in both.
//!
//! Then the page load of `/` in Chromium, cold and warm cache: the
//! Playwright spec `end2end/tests/assets.spec.ts` prints bytes over the
//! wire and time to hydrated (it needs `make build`'s site).

use super::{Agent, pct, reads, turns};
use std::time::Duration;

/// A collector that takes every export and answers 200 at once.
async fn collector() -> String {
    use axum::routing::post;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new().route("/v1/traces", post(|| async { "" }));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    base
}

pub async fn rows(
    http: &reqwest::Client,
    fake_base: &str,
    rows: &mut Vec<(String, String, String)>,
    quick: bool,
) {
    let otlp = collector().await;
    let plain = Agent::start(fake_base, true);
    let traced = Agent::start_env(
        fake_base,
        true,
        "",
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "1000"),
        ],
    );
    for a in [&plain, &traced] {
        let _ = turns(http, &a.base, 30, 1).await;
    }
    let rounds = if quick { 4 } else { 10 };
    let per_round = if quick { 50 } else { 100 };
    let (mut lat_plain, mut lat_traced) = (Vec::new(), Vec::new());
    let (mut secs_plain, mut secs_traced) = (0.0, 0.0);
    for _ in 0..rounds {
        for (a, lat, secs) in [
            (&plain, &mut lat_plain, &mut secs_plain),
            (&traced, &mut lat_traced, &mut secs_traced),
        ] {
            let (_, l) = turns(http, &a.base, per_round, 1).await;
            *secs += l.iter().map(Duration::as_secs_f64).sum::<f64>();
            lat.extend(l);
        }
    }
    lat_plain.sort();
    lat_traced.sort();
    let n = (rounds * per_round) as f64;
    let (tps_plain, tps_traced) = (n / secs_plain, n / secs_traced);
    rows.push((
        "\"list\" turns/s, c=1: no collector / OTLP collector".into(),
        format!("{tps_plain:.0} / {tps_traced:.0}"),
        "".into(),
    ));
    rows.push((
        "  throughput lost to tracing (%)".into(),
        format!("{:.1}", (1.0 - tps_traced / tps_plain) * 100.0),
        "< 5 %".into(),
    ));
    rows.push((
        "  turn p50 added by tracing (ms)".into(),
        format!("{:.3}", pct(&lat_traced, 0.5) - pct(&lat_plain, 0.5)),
        "< 0.1 ms".into(),
    ));

    // Reads of one stored conversation, alternating.
    let id_of = |base: &str| {
        let http = http.clone();
        let url = format!("{base}/conversations?limit=1");
        async move {
            let v: serde_json::Value = http.get(url).send().await.unwrap().json().await.unwrap();
            v["conversations"][0]["id"].as_str().unwrap().to_string()
        }
    };
    let (p_id, t_id) = (id_of(&plain.base).await, id_of(&traced.base).await);
    let (mut r_plain, mut r_traced) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        r_plain.extend(
            reads(
                http,
                &vec![format!("{}/conversations/{p_id}", plain.base); 200],
            )
            .await,
        );
        r_traced.extend(
            reads(
                http,
                &vec![format!("{}/conversations/{t_id}", traced.base); 200],
            )
            .await,
        );
    }
    r_plain.sort();
    r_traced.sort();
    rows.push((
        "GET /conversations/:id p50 (ms): none / OTLP".into(),
        format!("{:.3} / {:.3}", pct(&r_plain, 0.5), pct(&r_traced, 0.5)),
        "".into(),
    ));
    rows.push((
        "  GET p50 added by tracing (ms)".into(),
        format!("{:.3}", pct(&r_traced, 0.5) - pct(&r_plain, 0.5)),
        "< 0.1 ms".into(),
    ));
    drop((plain, traced));

    // The page load, through Playwright.
    let (cold, warm) = page_load();
    rows.push((
        "page load of / cold: bytes, ms to hydrated".into(),
        cold,
        "< 600 KB".into(),
    ));
    rows.push((
        "page load of / warm: bytes, ms to hydrated".into(),
        warm,
        "< 20 KB".into(),
    ));
}

/// Runs the assets spec and reads its `PAGELOAD` line.
fn page_load() -> (String, String) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let missing = || ("n/a (run make build)".to_string(), "n/a".to_string());
    if !root.join("target/site/hash.txt").is_file() {
        return missing();
    }
    let out = std::process::Command::new("npx")
        .args(["playwright", "test", "assets.spec.ts", "--reporter=line"])
        .current_dir(root.join("end2end"))
        .env(
            "PATH",
            format!(
                "{}:{}",
                root.join(".tools/node_modules/.bin").display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .output();
    let Ok(out) = out else { return missing() };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(line) = text.lines().find(|l| l.contains("PAGELOAD")) else {
        return ("n/a (the spec failed)".into(), "n/a".into());
    };
    let field = |k: &str| {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(k))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    };
    (
        format!(
            "{:.0} KB, {:.0} ms",
            field("cold_bytes=") / 1024.0,
            field("cold_ms=")
        ),
        format!(
            "{:.1} KB, {:.0} ms",
            field("warm_bytes=") / 1024.0,
            field("warm_ms=")
        ),
    )
}
