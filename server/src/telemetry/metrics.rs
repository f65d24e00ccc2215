//! What a running agent counts, for `GET /metrics` (OPERATIONS.md §3; the
//! route and the HTTP middleware are in `http::metrics`).
//!
//! One process-wide set of series (an agent is one process; the engine, the
//! LLM client and the A2A server record where things happen without
//! threading a handle through every call). Exposition is the `prometheus`
//! crate's text encoder, never hand-written. Labels are bounded: routes are
//! templates (`/conversations/{id}`), never ids or user text; tools and
//! servers are the configured ones.
//!
//! Two series are read at scrape time rather than counted: the pending
//! approvals (from the store, so they are right after a restart) and
//! whether each MCP server is up.

use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};
use std::sync::LazyLock;
use std::time::Duration;

/// Every series of the agent.
pub(crate) struct Metrics {
    registry: Registry,
    http_requests: IntCounterVec,
    http_duration: HistogramVec,
    turns: IntCounterVec,
    turn_duration: Histogram,
    llm_duration: HistogramVec,
    llm_errors: IntCounterVec,
    llm_tokens: IntCounterVec,
    tool_calls: IntCounterVec,
    approvals_pending: IntGauge,
    approvals: IntCounterVec,
    approval_wait: Histogram,
    a2a_requests: IntCounterVec,
    mcp_up: IntGaugeVec,
    notifications: IntCounterVec,
    notifications_stored: IntGaugeVec,
}

/// How an approval ended, as `stopgo_approvals_total{outcome}` says it.
pub(crate) const APPROVAL_OUTCOMES: [&str; 5] =
    ["approved", "rejected", "expired", "in_doubt", "cancelled"];

/// Request and step durations: half a millisecond to a minute.
const FAST: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0,
];
/// Turns and model calls: ten milliseconds to five minutes.
const SLOW: &[f64] = &[
    0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];
/// Waiting for a human: a second to three days.
const HUMAN: &[f64] = &[
    1.0, 5.0, 15.0, 30.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 10800.0, 43200.0, 86400.0, 259200.0,
];

static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);

/// The process's metrics.
pub(crate) fn get() -> &'static Metrics {
    &METRICS
}

impl Metrics {
    fn new() -> Metrics {
        let registry = Registry::new();
        let counter = |name: &str, help: &str, labels: &[&str]| {
            let c = IntCounterVec::new(Opts::new(name, help), labels)
                .unwrap_or_else(|e| panic!("metric {name}: {e}"));
            registry
                .register(Box::new(c.clone()))
                .unwrap_or_else(|e| panic!("metric {name}: {e}"));
            c
        };
        let histogram = |name: &str, help: &str, labels: &[&str], buckets: &[f64]| {
            let h = HistogramVec::new(
                HistogramOpts::new(name, help).buckets(buckets.to_vec()),
                labels,
            )
            .unwrap_or_else(|e| panic!("metric {name}: {e}"));
            registry
                .register(Box::new(h.clone()))
                .unwrap_or_else(|e| panic!("metric {name}: {e}"));
            h
        };
        let http_requests = counter(
            "stopgo_http_requests_total",
            "HTTP requests answered, by route template and status.",
            &["route", "status"],
        );
        let http_duration = histogram(
            "stopgo_http_request_duration_seconds",
            "Time to answer an HTTP request (to the start of the body), by route template.",
            &["route"],
            FAST,
        );
        let turns = counter(
            "stopgo_turns_total",
            "Turns run, by how they ended: completed, waiting_approval or failed.",
            &["outcome"],
        );
        let turn_duration = histogram(
            "stopgo_turn_duration_seconds",
            "Time a turn ran until it answered, paused or failed.",
            &[],
            SLOW,
        )
        .with_label_values::<&str>(&[]);
        let llm_duration = histogram(
            "stopgo_llm_request_duration_seconds",
            "Time of one model request, retries included, by provider.",
            &["provider"],
            SLOW,
        );
        let llm_errors = counter(
            "stopgo_llm_errors_total",
            "Model requests that failed, by provider and kind (status, timeout, connect, decode).",
            &["provider", "kind"],
        );
        let llm_tokens = counter(
            "stopgo_llm_tokens_total",
            "Tokens the models reported, by provider and direction (input or output).",
            &["provider", "direction"],
        );
        let tool_calls = counter(
            "stopgo_tool_calls_total",
            "Tool calls run, by tool, server and outcome (ok or error).",
            &["tool", "server", "outcome"],
        );
        let approvals_pending = IntGauge::new(
            "stopgo_approvals_pending",
            "Approvals waiting for a decision now.",
        )
        .unwrap_or_else(|e| panic!("metric stopgo_approvals_pending: {e}"));
        registry
            .register(Box::new(approvals_pending.clone()))
            .unwrap_or_else(|e| panic!("metric stopgo_approvals_pending: {e}"));
        let approvals = counter(
            "stopgo_approvals_total",
            "Approvals that ended, by outcome: approved, rejected, expired, in_doubt, cancelled.",
            &["outcome"],
        );
        for outcome in APPROVAL_OUTCOMES {
            approvals.with_label_values(&[outcome]);
        }
        let approval_wait = histogram(
            "stopgo_approval_wait_seconds",
            "Time from an approval's request to its decision.",
            &[],
            HUMAN,
        )
        .with_label_values::<&str>(&[]);
        let a2a_requests = counter(
            "stopgo_a2a_requests_total",
            "A2A requests served, by method and binding or dialect (1.0, 0.3, legacy for JSON-RPC; http+json; grpc).",
            &["method", "dialect"],
        );
        let mcp_up = IntGaugeVec::new(
            Opts::new(
                "stopgo_mcp_server_up",
                "Whether each MCP server is connected (1) or not (0).",
            ),
            &["server"],
        )
        .unwrap_or_else(|e| panic!("metric stopgo_mcp_server_up: {e}"));
        registry
            .register(Box::new(mcp_up.clone()))
            .unwrap_or_else(|e| panic!("metric stopgo_mcp_server_up: {e}"));
        let notifications = counter(
            "stopgo_notification_attempts_total",
            "Notification attempts by this process, by outcome: delivered, retried, dead, skipped.",
            &["outcome"],
        );
        for outcome in ["delivered", "retried", "dead", "skipped"] {
            notifications.with_label_values(&[outcome]);
        }
        let notifications_stored = IntGaugeVec::new(
            Opts::new(
                "stopgo_notifications",
                "Notifications in the outbox, by status: pending, delivered, dead, skipped.",
            ),
            &["status"],
        )
        .unwrap_or_else(|e| panic!("metric stopgo_notifications: {e}"));
        registry
            .register(Box::new(notifications_stored.clone()))
            .unwrap_or_else(|e| panic!("metric stopgo_notifications: {e}"));
        Metrics {
            notifications,
            notifications_stored,
            registry,
            http_requests,
            http_duration,
            turns,
            turn_duration,
            llm_duration,
            llm_errors,
            llm_tokens,
            tool_calls,
            approvals_pending,
            approvals,
            approval_wait,
            a2a_requests,
            mcp_up,
        }
    }

    /// A turn ended (`completed`, `waiting_approval` or `failed`).
    pub(crate) fn turn(&self, outcome: &str, took: Duration) {
        self.turns.with_label_values(&[outcome]).inc();
        self.turn_duration.observe(took.as_secs_f64());
    }

    /// An HTTP request ended: its route template and status.
    pub(crate) fn http_request(&self, route: &str, status: &str, took: Duration) {
        self.http_requests.with_label_values(&[route, status]).inc();
        self.http_duration
            .with_label_values(&[route])
            .observe(took.as_secs_f64());
    }

    /// A model request ended; `error` is its kind when it failed.
    pub(crate) fn llm(&self, provider: &str, took: Duration, error: Option<&str>) {
        self.llm_duration
            .with_label_values(&[provider])
            .observe(took.as_secs_f64());
        if let Some(kind) = error {
            self.llm_errors.with_label_values(&[provider, kind]).inc();
        }
    }

    /// What a model call consumed, as its provider reported it.
    pub(crate) fn llm_tokens(&self, provider: &str, input: u64, output: u64) {
        for (direction, n) in [("input", input), ("output", output)] {
            self.llm_tokens
                .with_label_values(&[provider, direction])
                .inc_by(n);
        }
    }

    /// A tool call ran.
    pub(crate) fn tool_call(&self, tool: &str, server: &str, ok: bool) {
        let outcome = if ok { "ok" } else { "error" };
        self.tool_calls
            .with_label_values(&[tool, server, outcome])
            .inc();
    }

    /// An approval ended; `waited` from its request, when it was decided.
    pub(crate) fn approval(&self, outcome: &str, waited: Option<Duration>) {
        self.approvals.with_label_values(&[outcome]).inc();
        if let Some(w) = waited {
            self.approval_wait.observe(w.as_secs_f64());
        }
    }

    /// `n` approvals ended undecided at once (cancelled with their task,
    /// in doubt after a restart).
    pub(crate) fn approvals_ended(&self, outcome: &str, n: u64) {
        self.approvals.with_label_values(&[outcome]).inc_by(n);
    }

    /// A notification attempt ended (`delivered`, `retried`, `dead`,
    /// `skipped`).
    pub(crate) fn notification(&self, outcome: &str) {
        self.notifications.with_label_values(&[outcome]).inc();
    }

    /// The outbox's rows by status, at scrape time.
    pub(crate) fn notifications_stored(&self, counts: &[(String, u64)]) {
        self.notifications_stored.reset();
        for status in ["pending", "delivered", "dead", "skipped"] {
            self.notifications_stored
                .with_label_values(&[status])
                .set(0);
        }
        for (status, n) in counts {
            self.notifications_stored
                .with_label_values(&[status.as_str()])
                .set(i64::try_from(*n).unwrap_or(i64::MAX));
        }
    }

    /// An A2A request was served.
    pub(crate) fn a2a(&self, method: &str, dialect: &str) {
        self.a2a_requests
            .with_label_values(&[method, dialect])
            .inc();
    }

    /// The text exposition, with the scrape-time series set first.
    pub(crate) fn render(&self, pending: usize, servers: &[(String, bool)]) -> String {
        self.approvals_pending
            .set(i64::try_from(pending).unwrap_or(i64::MAX));
        self.mcp_up.reset();
        for (name, up) in servers {
            self.mcp_up.with_label_values(&[name]).set(i64::from(*up));
        }
        let mut out = Vec::new();
        if let Err(e) = TextEncoder::new().encode(&self.registry.gather(), &mut out) {
            tracing::error!(error = %e, "could not encode the metrics");
        }
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// The time since an approval's `created_at` (RFC 3339), if it parses.
pub(crate) fn since(created_at: &str) -> Option<Duration> {
    let t = chrono::DateTime::parse_from_rfc3339(created_at).ok()?;
    (chrono::Utc::now() - t.with_timezone(&chrono::Utc))
        .to_std()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exposition_names_every_series_with_bounded_labels() {
        let m = Metrics::new();
        m.turn("completed", Duration::from_millis(20));
        m.llm("gemini", Duration::from_millis(5), Some("status"));
        m.tool_call("resources_add", "resources", true);
        m.approval("approved", Some(Duration::from_secs(90)));
        m.a2a("SendMessage", "1.0");
        let text = m.render(2, &[("resources".into(), true), ("files".into(), false)]);
        for line in [
            "stopgo_turns_total{outcome=\"completed\"} 1",
            "stopgo_turn_duration_seconds_count 1",
            "stopgo_llm_request_duration_seconds_count{provider=\"gemini\"} 1",
            "stopgo_llm_errors_total{kind=\"status\",provider=\"gemini\"} 1",
            "stopgo_tool_calls_total{outcome=\"ok\",server=\"resources\",tool=\"resources_add\"} 1",
            "stopgo_approvals_pending 2",
            "stopgo_approvals_total{outcome=\"approved\"} 1",
            "stopgo_approvals_total{outcome=\"expired\"} 0",
            "stopgo_approval_wait_seconds_bucket{le=\"300\"} 1",
            "stopgo_approval_wait_seconds_bucket{le=\"60\"} 0",
            "stopgo_a2a_requests_total{dialect=\"1.0\",method=\"SendMessage\"} 1",
            "stopgo_mcp_server_up{server=\"resources\"} 1",
            "stopgo_mcp_server_up{server=\"files\"} 0",
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
    }

    #[test]
    fn approval_ages_come_from_rfc3339() {
        let an_hour_ago = (chrono::Utc::now() - chrono::Duration::hours(1)).to_rfc3339();
        let age = since(&an_hour_ago).unwrap().as_secs();
        assert!((3595..=3605).contains(&age), "{age}");
        assert_eq!(since("yesterday"), None);
    }
}
