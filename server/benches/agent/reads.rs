//! The read path under load (`BENCH_ONLY=reads`): `GET /conversations/:id`
//! and `GET /conversations?limit=50` at 32 connections against 10,000
//! stored conversations, auth mode `none`, each beside its floor from the
//! same run:
//! - one conversation beside `GET /health` of the same agent (the same
//!   middleware, HTTP and load generator, no store read): its p99 over
//!   /health's says what the read itself costs under load;
//! - the list page beside a server that only sends the same bytes
//!   (`floor.rs`): what loopback HTTP and the load generator allow here.
//!
//! The kinds alternate in rounds, so drift on this shared machine touches
//! them alike; each figure pools its rounds. The stored conversations are
//! 50 real turns (one of which is read) and 9,950 seeded with one
//! statement, as the PostgreSQL list rows do (`replicas.rs`); the oldest
//! [`WAITING`] of those wait for an approval, so a read that walks other
//! conversations' pending approvals (as both reads did until issue 53
//! item 9) shows here.

use super::{Agent, floor, get_json, load, pct, replicas, turns};
use std::time::Duration;

type Rows = Vec<(String, String, String)>;

/// Rounds of each kind, alternating.
const ROUNDS: usize = 3;
/// Seeded conversations waiting for an approval (none on the list's page).
const WAITING: usize = 1_000;

/// The oldest `n` seeded conversations of the agent's database at `db`
/// wait for an approval each (of a message of their own).
fn waiting(db: &std::path::Path, n: usize) {
    let c = rusqlite::Connection::open(db).expect("the agent's database");
    c.busy_timeout(Duration::from_secs(30))
        .expect("a busy timeout");
    c.execute_batch(&format!(
        "BEGIN; \
         CREATE TEMP TABLE g AS WITH RECURSIVE s(x) AS \
           (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < {n}) SELECT x FROM s; \
         UPDATE conversations SET status = 'waiting_approval' WHERE id IN \
           (SELECT 'seed-' || x FROM g); \
         INSERT INTO messages (id, conversation_id, role, content, created_at) \
         SELECT 'seed-message-' || x, 'seed-' || x, 'assistant', 'seeded', \
           '2026-01-01T00:00:00.000Z' FROM g; \
         INSERT INTO approvals (uuid, conversation_id, message_id, tool_name, tool_args, \
           description, status, created_at, updated_at) \
         SELECT 'seed-approval-' || x, 'seed-' || x, 'seed-message-' || x, \
           'resources_add', '{{}}', 'seeded', 'pending', '2026-01-01T00:00:00.000Z', \
           '2026-01-01T00:00:00.000Z' FROM g; \
         COMMIT;"
    ))
    .expect("seed the waiting approvals");
}

/// `n` GETs of `url` at 32 connections: (seconds, sorted latencies).
async fn gets(http: &reqwest::Client, url: &str, n: usize) -> (f64, Vec<Duration>) {
    let (http, url) = (http.clone(), url.to_string());
    let started = std::time::Instant::now();
    let (_, lat) = load(n, 32, move || {
        let (http, url) = (http.clone(), url.clone());
        async move {
            let r = http.get(&url).send().await.unwrap();
            assert_eq!(r.status().as_u16(), 200, "{url}");
            let _ = r.bytes().await;
        }
    })
    .await;
    (started.elapsed().as_secs_f64(), lat)
}

/// Pooled rounds of one kind: requests/s over all of them and the sorted
/// latencies.
#[derive(Default)]
struct Pooled {
    secs: f64,
    lat: Vec<Duration>,
}

impl Pooled {
    fn add(&mut self, (secs, lat): (f64, Vec<Duration>)) {
        self.secs += secs;
        self.lat.extend(lat);
        self.lat.sort();
    }

    fn rps(&self) -> f64 {
        self.lat.len() as f64 / self.secs
    }

    fn p99(&self) -> f64 {
        pct(&self.lat, 0.99)
    }

    /// "12345/s (p50 1.10, p99 4.20 ms)".
    fn show(&self) -> String {
        format!(
            "{:.0}/s (p50 {:.2}, p99 {:.2} ms)",
            self.rps(),
            pct(&self.lat, 0.5),
            self.p99()
        )
    }
}

pub async fn rows(http: &reqwest::Client, rows: &mut Rows, quick: bool) {
    let agent = Agent::start_echo();
    let _ = turns(http, &agent.base, 50, 8).await;
    let db = agent.data_dir().join("agent.db");
    replicas::seed("sqlite", &db.display().to_string(), 1, 9_950);
    waiting(&db, WAITING);
    let list = get_json(http, &format!("{}/conversations?limit=1", agent.base)).await;
    assert_eq!(list["summary"]["total"].as_u64(), Some(10_000), "{list}");
    assert_eq!(
        list["summary"]["waiting_approval"].as_u64(),
        Some(WAITING as u64),
        "{list}"
    );
    // The newest real conversation: two messages (the echo turn).
    let newest = get_json(
        http,
        &format!("{}/conversations?limit=1&q=list", agent.base),
    )
    .await;
    let id = newest["conversations"][0]["id"]
        .as_str()
        .expect("a real conversation")
        .to_string();
    let health = format!("{}/health", agent.base);
    let one = format!("{}/conversations/{id}", agent.base);
    let page = format!("{}/conversations?limit=50", agent.base);
    let body = http.get(&page).send().await.unwrap().bytes().await.unwrap();
    let still = floor::StaticServer::start(body, "application/json");
    let still_url = format!("{}/", still.base);
    let n = if quick { 2_000 } else { 6_000 };
    // Warm: connections, statement caches, pages.
    for url in [&health, &one, &page, &still_url] {
        let _ = gets(http, url, n / 4).await;
    }
    let mut pooled: [Pooled; 4] = Default::default();
    for _ in 0..ROUNDS {
        for (i, url) in [&health, &one, &page, &still_url].into_iter().enumerate() {
            pooled[i].add(gets(http, url, n).await);
        }
    }
    let [health, one, page, still] = pooled;
    rows.push((
        "GET /health, 32 connections".into(),
        health.show(),
        "the floor of :id".into(),
    ));
    rows.push((
        "GET /conversations/:id, 10k stored, 32 connections".into(),
        one.show(),
        String::new(),
    ));
    rows.push((
        "  p99 of :id / p99 of /health, same run".into(),
        format!("{:.2}x", one.p99() / health.p99()),
        "<= 1.5x".into(),
    ));
    rows.push((
        "GET /conversations?limit=50, 10k stored, 32 connections".into(),
        page.show(),
        String::new(),
    ));
    rows.push((
        "  floor (its bytes, static), 32 connections".into(),
        still.show(),
        "the machine's floor".into(),
    ));
    rows.push((
        "  list / floor: requests/s; p99".into(),
        format!(
            "{:.2}x; {:.2}x",
            page.rps() / still.rps(),
            page.p99() / still.p99()
        ),
        ">= 0.18x; <= 4.5x".into(),
    ));
}
