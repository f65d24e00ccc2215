//! The PostgreSQL rows (`BENCH_ONLY=pg`; `make bench` starts a throwaway
//! cluster and names it in `STOPGO_TEST_DATABASE_URL`):
//! - turns/s at concurrency 1 and 32, SQLite beside PostgreSQL in the same
//!   run, and the ratio (target: PostgreSQL's per-turn cost within 1.5x);
//! - `GET /conversations?limit=50` and the home page at 32 connections with
//!   10,000 and 1,000,000 stored conversations on both backends, one of the
//!   newest 50 holding 2,000 turns (target: p99 < 5 ms, and the 1,000,000
//!   figure within 1.2x of the 10,000 one). The stored conversations are
//!   seeded with one SQL statement (a million turns through HTTP would take
//!   a quarter of an hour per backend); the newest 50, the long one
//!   included, are real turns;
//! - 1,000 conversations in flight on a 1 s model spread over three
//!   replicas of one database: wall time and each replica's peak RSS.

use super::{Agent, FakeState, floor, in_flight, load, pct, turns};
use std::time::{Duration, Instant};

type Rows = Vec<(String, String, String)>;

/// The YAML that puts an agent on `url`, with the pool's default size (the
/// database is on this host: two connections per core, see
/// `store/postgres/pool_size.rs`).
fn on_postgres(url: &str) -> String {
    format!("store:\n  backend: postgres\n  url: \"{url}\"\n")
}

/// A fresh database for an agent on this host: over the cluster's Unix
/// socket when `make bench` named it (the way a database on the agent's
/// host is reached), else over loopback TCP; and which of the two.
fn local_database() -> (String, &'static str) {
    match test_support::postgres::fresh_database_on_socket("bench") {
        Some(url) => (url, "socket"),
        None => (test_support::postgres::fresh_database("bench"), "tcp"),
    }
}

pub async fn rows(
    http: &reqwest::Client,
    fake: &FakeState,
    fake_base: &str,
    rows: &mut Rows,
    quick: bool,
) {
    if std::env::var("STOPGO_TEST_DATABASE_URL").is_err() {
        rows.push((
            "PostgreSQL rows".into(),
            "skipped".into(),
            "set STOPGO_TEST_DATABASE_URL".into(),
        ));
        return;
    }
    fake.set_latency(Duration::ZERO);
    // `BENCH_ONLY=pgturns` (or `pglists`, `pgflight`): that part alone.
    let only = std::env::var("BENCH_ONLY").ok();
    let wants =
        |part: &str| matches!(only.as_deref(), None | Some("pg")) || only.as_deref() == Some(part);
    if wants("pgturns") {
        turn_rows(http, fake_base, rows, quick).await;
    }
    if wants("pglists") {
        list_rows(http, fake_base, rows, quick).await;
    }
    if wants("pgflight") {
        in_flight_row(http, fake, fake_base, rows).await;
    }
    fake.set_latency(Duration::ZERO);
}

async fn turn_rows(http: &reqwest::Client, fake_base: &str, rows: &mut Rows, quick: bool) {
    let (n1, n32) = if quick { (100, 1000) } else { (400, 4000) };
    // PostgreSQL over its Unix socket (a database on the agent's host) and
    // over loopback TCP (the round trips a database on another host adds
    // to, minus the network), beside SQLite in the same run.
    let mut backends = vec![("sqlite", String::new())];
    if let Some(url) = test_support::postgres::fresh_database_on_socket("bench") {
        backends.push(("postgres (socket)", on_postgres(&url)));
    }
    backends.push((
        "postgres (tcp)",
        on_postgres(&test_support::postgres::fresh_database("bench")),
    ));
    let mut measured = Vec::new();
    for (backend, extra) in &backends {
        let agent = Agent::start_with(fake_base, true, extra);
        // Warm: the pool's connections and their prepared statements, and
        // the database's caches for a fresh database.
        let _ = turns(http, &agent.base, 100, 4).await;
        let (tps1, lat1) = turns(http, &agent.base, n1, 1).await;
        let (tps32, lat32) = turns(http, &agent.base, n32, 32).await;
        measured.push((*backend, tps1, pct(&lat1, 0.5), tps32, pct(&lat32, 0.99)));
    }
    for (backend, tps1, p50, tps32, p99) in &measured {
        rows.push((
            format!("{backend}: \"list\" turns/s c=1 (p50 ms) / c=32 (p99 ms)"),
            format!("{tps1:.0} ({p50:.2}) / {tps32:.0} ({p99:.1})"),
            String::new(),
        ));
    }
    let s = &measured[0];
    for p in &measured[1..] {
        rows.push((
            format!("  {} / SQLite per-turn time, c=1 / c=32", p.0),
            format!("{:.2}x / {:.2}x", p.2 / s.2, s.3 / p.3),
            "<= 1.5x".into(),
        ));
    }
}

/// Seeds `n` finished conversations with one statement (both backends'
/// schemas have these columns; the kept counts follow through their
/// triggers).
pub fn seed(backend: &str, target: &str, from: usize, n: usize) {
    let (target, backend) = (target.to_string(), backend.to_string());
    std::thread::spawn(move || {
        let columns = "id, session_id, status, created_at, updated_at, message_count, title, last_role, last_content";
        match backend.as_str() {
            "postgres" => {
                // In statements of 5,000 rows: the kept counts are updated
                // row by row, and one statement of a million would pile a
                // million versions of the counter rows into one transaction.
                let mut c = postgres::Client::connect(&target, postgres::NoTls).expect("seed");
                let last = from + n - 1;
                for start in (from..=last).step_by(5000) {
                    c.batch_execute(&format!(
                        "INSERT INTO conversations ({columns}) \
                         SELECT 'seed-' || g, 'bench', 'active', '2026-01-01T00:00:00.000Z', \
                                '2026-01-01T00:00:00.000Z', 2, 'seeded ' || g, 'assistant', 'hello' \
                         FROM generate_series({start}, {end}) g",
                        end = (start + 4999).min(last)
                    ))
                    .expect("seed PostgreSQL");
                }
            }
            _ => {
                let c = rusqlite::Connection::open(&target).expect("seed");
                c.busy_timeout(Duration::from_secs(30)).expect("seed");
                c.execute_batch(&format!(
                    "WITH RECURSIVE g(x) AS (SELECT {from} UNION ALL SELECT x + 1 FROM g WHERE x < {last}) \
                     INSERT INTO conversations ({columns}) \
                     SELECT 'seed-' || x, 'bench', 'active', '2026-01-01T00:00:00.000Z', \
                            '2026-01-01T00:00:00.000Z', 2, 'seeded ' || x, 'assistant', 'hello' FROM g",
                    last = from + n - 1
                ))
                .expect("seed SQLite");
            }
        }
    })
    .join()
    .expect("seed");
}

/// The newest 50: one conversation of `long` turns, then 49 of one turn.
async fn newest_fifty(http: &reqwest::Client, base: &str, long: usize) {
    let c: serde_json::Value = http
        .post(format!("{base}/conversations"))
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = c["conversation"]["id"].as_str().expect("an id").to_string();
    for i in 0..long {
        let r = http
            .post(format!("{base}/conversations/{id}/messages"))
            .json(&serde_json::json!({"message": format!("turn {i}")}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
    }
    let _ = turns(http, base, 49, 8).await;
}

async fn gets(http: &reqwest::Client, url: String, n: usize) -> Vec<Duration> {
    let http = http.clone();
    let (_, lat) = load(n, 32, move || {
        let (http, url) = (http.clone(), url.clone());
        async move {
            let r = http.get(&url).send().await.unwrap();
            assert_eq!(r.status().as_u16(), 200);
            let _ = r.bytes().await;
        }
    })
    .await;
    lat
}

async fn list_rows(http: &reqwest::Client, fake_base: &str, rows: &mut Rows, quick: bool) {
    let sizes: [usize; 2] = if quick {
        [10_000, 100_000]
    } else {
        [10_000, 1_000_000]
    };
    let long = if quick { 200 } else { 2000 };
    let n = if quick { 1000 } else { 3000 };
    for backend in ["sqlite", "postgres"] {
        let (url, transport) = local_database();
        let name = match backend {
            "postgres" => format!("postgres ({transport})"),
            _ => backend.to_string(),
        };
        let extra = match backend {
            "postgres" => on_postgres(&url),
            _ => String::new(),
        };
        let agent = Agent::start_with(fake_base, false, &extra);
        let target = match backend {
            "postgres" => url,
            _ => agent.data_dir().join("agent.db").display().to_string(),
        };
        let mut stored = 0;
        let mut figures = Vec::new();
        for size in sizes {
            let started = Instant::now();
            seed(backend, &target, stored + 1, size - stored - 50);
            let seeded = started.elapsed();
            newest_fifty(http, &agent.base, long).await;
            stored = size;
            let list = gets(http, format!("{}/conversations?limit=50", agent.base), n).await;
            let home = gets(http, format!("{}/", agent.base), n / 3).await;
            rows.push((
                format!("{name}, {}k stored: list / home p50, p99 (ms)", size / 1000),
                list_and_home(&list, &home),
                format!("p99 < 5 ms (seeded in {:.0} s)", seeded.as_secs_f64()),
            ));
            figures.push((pct(&list, 0.99), pct(&home, 0.99)));
        }
        floor_row(http, &agent.base, &name, n, rows).await;
        rows.push((
            format!(
                "  {name}: p99 at {}k / at 10k, list / home",
                sizes[1] / 1000
            ),
            format!(
                "{:.2}x / {:.2}x",
                figures[1].0 / figures[0].0,
                figures[1].1 / figures[0].1
            ),
            "<= 1.2x".into(),
        ));
    }
}

/// A list row's figures: "list p50,p99 / home p50,p99" in ms.
fn list_and_home(list: &[Duration], home: &[Duration]) -> String {
    format!(
        "{:.2},{:.2} / {:.1},{:.1}",
        pct(list, 0.5),
        pct(list, 0.99),
        pct(home, 0.5),
        pct(home, 0.99)
    )
}

/// The same two answers (the list and the home page at the larger size)
/// from a server that does nothing but send them, under the same load: the
/// machine's floor under the rows above (see `floor.rs`). Then the UI's own
/// floor: the agent's smallest page (`/ui/tools`, the page shell around a
/// short table, no store read), what any page rendered by Leptos costs here.
async fn floor_row(http: &reqwest::Client, base: &str, name: &str, n: usize, rows: &mut Rows) {
    let body = |path: &str| {
        let url = format!("{base}{path}");
        async move {
            let r = http.get(url).send().await.expect("a page");
            r.bytes().await.expect("its body")
        }
    };
    let list =
        floor::StaticServer::start(body("/conversations?limit=50").await, "application/json");
    let home = floor::StaticServer::start(body("/").await, "text/html; charset=utf-8");
    let list_lat = gets(http, format!("{}/", list.base), n).await;
    let home_lat = gets(http, format!("{}/", home.base), n / 3).await;
    rows.push((
        format!("  floor ({name}'s bytes, static): list / home p50, p99 (ms)"),
        list_and_home(&list_lat, &home_lat),
        "the machine's floor".into(),
    ));
    let shell = gets(http, format!("{base}/ui/tools"), n / 3).await;
    rows.push((
        format!("  {name}: smallest page (/ui/tools) p50, p99 (ms)"),
        format!("{:.1},{:.1}", pct(&shell, 0.5), pct(&shell, 0.99)),
        "the page renderer's floor".into(),
    ));
}

async fn in_flight_row(http: &reqwest::Client, fake: &FakeState, fake_base: &str, rows: &mut Rows) {
    let (url, transport) = local_database();
    let extra = on_postgres(&url);
    let agents: Vec<Agent> = (0..3)
        .map(|_| Agent::start_with(fake_base, false, &extra))
        .collect();
    fake.set_latency(Duration::from_secs(1));
    // Twice: the first burst also opens every pooled connection (a
    // PostgreSQL backend each, its caches and prepared statements cold).
    for run in ["cold", "warm"] {
        let (wall, ok) = in_flight(http, &agents).await;
        rows.push((
            format!(
                "1,000 in flight, 1 s model, 3 PostgreSQL replicas ({transport}), {run}: wall (s)"
            ),
            format!("{wall:.2} ({ok}/1000 ok)"),
            "< 2 s".into(),
        ));
    }
    fake.set_latency(Duration::ZERO);
    let rss: Vec<String> = agents
        .iter()
        .map(|a| format!("{:.0}", a.peak_rss_mib()))
        .collect();
    rows.push((
        "  peak RSS per replica (MiB)".into(),
        rss.join(" / "),
        "< 150 MB".into(),
    ));
}
