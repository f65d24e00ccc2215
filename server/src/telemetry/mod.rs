//! Logs, traces and metrics (OPERATIONS.md §3): [`metrics`] holds the
//! series; the rest of this module the log and the trace exporter.
//!
//! The log goes to stdout as before (`RUST_LOG`). When
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`)
//! is set, our spans also go to that collector over OTLP/HTTP, protobuf or
//! JSON as `OTEL_EXPORTER_OTLP_PROTOCOL` says; the exporter reads the other
//! standard variables itself (headers, timeout, `OTEL_BSP_*`), and
//! `OTEL_SERVICE_NAME` defaults to the agent's `name`.
//!
//! Which spans: those that declare a `sid` field (the request, the turn,
//! each model call, each tool call and delegation, the approval wait), so
//! every exported span carries the session id and library internals never
//! flood the collector. Spans are batched and sent by the SDK's own thread:
//! a turn never waits for the collector, and a collector that cannot be
//! reached costs one log line a minute, not an error.
//!
//! Trace context travels as W3C `traceparent`: read from each request
//! ([`parent_from`]), sent to A2A sub-agents ([`inject`]), and kept with an
//! approval ([`current_traceparent`]) so that the wait and the work after
//! the decision belong to the trace of the request that asked.

pub(crate) mod metrics;

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, filter};

/// The running exporter, flushed on [`Telemetry::shutdown`].
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Sends what is still buffered (at most a few seconds).
    pub fn shutdown(self) {
        if let Some(p) = self.provider
            && let Err(e) = p.shutdown_with_timeout(Duration::from_secs(5))
        {
            tracing::warn!(error = %e, "could not flush the last spans");
        }
    }
}

/// Whether the environment asks for traces (read once: every request asks).
pub(crate) fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        [
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        ]
        .iter()
        .any(|k| std::env::var(k).is_ok_and(|v| !v.trim().is_empty()))
    })
}

/// Installs the global subscriber: the log, and traces when asked for.
/// `service` names the agent when `OTEL_SERVICE_NAME` is not set.
pub fn init(service: &str, ansi: bool) -> Telemetry {
    let log = tracing_subscriber::fmt::layer()
        .with_ansi(ansi)
        .with_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")));
    let (traces, provider, problem) = if enabled() {
        match provider(service) {
            Ok(p) => {
                opentelemetry::global::set_tracer_provider(p.clone());
                let tracer = p.tracer("stopgo");
                let layer = tracing_opentelemetry::layer()
                    .with_tracer(tracer)
                    .with_filter(filter::filter_fn(|m| {
                        m.is_span() && m.fields().field("sid").is_some()
                    }));
                (Some(layer), Some(p), None)
            }
            Err(e) => (None, None, Some(e)),
        }
    } else {
        (None, None, None)
    };
    tracing_subscriber::registry().with(log).with(traces).init();
    if let Some(e) = problem {
        tracing::warn!(error = %e, "traces are off: the OTLP exporter could not be set up");
    } else if provider.is_some() {
        tracing::info!("sending traces over OTLP/HTTP");
    }
    Telemetry { provider }
}

fn provider(service: &str) -> Result<SdkTracerProvider, String> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()
        .map_err(|e| e.to_string())?;
    let mut resource = opentelemetry_sdk::Resource::builder();
    if std::env::var("OTEL_SERVICE_NAME").is_err() {
        resource = resource.with_service_name(service.to_string());
    }
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(Quiet {
            inner: exporter,
            last_warning: Mutex::new(None),
        })
        .with_resource(resource.build())
        .build())
}

/// The exporter, saying at most once a minute that it cannot deliver.
#[derive(Debug)]
struct Quiet<E> {
    inner: E,
    last_warning: Mutex<Option<Instant>>,
}

impl<E: SpanExporter> SpanExporter for Quiet<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let n = batch.len();
        let out = self.inner.export(batch).await;
        if let Err(e) = &out {
            let mut last = self.last_warning.lock().unwrap_or_else(|p| p.into_inner());
            if last.is_none_or(|t| t.elapsed() > Duration::from_secs(60)) {
                *last = Some(Instant::now());
                tracing::warn!(error = %e, spans = n, "could not send spans to the OTLP collector; dropping them");
            }
        }
        out
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.inner.set_resource(resource);
    }
}

struct Headers<'a>(&'a axum::http::HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }
    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}

struct Carrier<'a>(&'a mut Vec<(String, String)>);

impl Injector for Carrier<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0.push((key.to_string(), value));
    }
}

/// Makes `span` a child of the `traceparent` in `headers`, if any.
pub(crate) fn parent_from(span: &tracing::Span, headers: &axum::http::HeaderMap) {
    if !enabled() || headers.get("traceparent").is_none() {
        return;
    }
    let cx = TraceContextPropagator::new().extract(&Headers(headers));
    // A span that is not exported (traces off) has nothing to set.
    let _ = span.set_parent(cx);
}

/// A stored `traceparent` (an approval's), as the one header to extract.
struct Stored<'a>(Option<&'a str>);

impl Extractor for Stored<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.filter(|_| key == "traceparent")
    }
    fn keys(&self) -> Vec<&str> {
        vec!["traceparent"]
    }
}

/// Makes `span` a child of a stored `traceparent` (an approval's).
pub(crate) fn parent_from_traceparent(span: &tracing::Span, traceparent: &str) {
    if !enabled() {
        return;
    }
    let cx = TraceContextPropagator::new().extract(&Stored(Some(traceparent)));
    let _ = span.set_parent(cx);
}

/// The W3C headers (`traceparent`, `tracestate`) of the current span, to
/// send along with an outgoing request; empty when traces are off.
pub(crate) fn inject() -> Vec<(String, String)> {
    let mut out = Vec::new();
    if enabled() {
        let cx = tracing::Span::current().context();
        TraceContextPropagator::new().inject_context(&cx, &mut Carrier(&mut out));
    }
    out
}

/// The current span's `traceparent`, to keep with an approval.
pub(crate) fn current_traceparent() -> Option<String> {
    inject()
        .into_iter()
        .find(|(k, _)| k == "traceparent")
        .map(|(_, v)| v)
}

/// Records the wait for an approval as its own span: from its request
/// (`waited` ago) to now, in the trace of the request that asked
/// (`traceparent`), with the decision and who made it. Built with the
/// OpenTelemetry API, since a `tracing` span cannot start in the past.
pub(crate) fn approval_wait(
    sid: &str,
    traceparent: Option<&str>,
    waited: Duration,
    tool: &str,
    decision: &str,
    decided_by: &str,
) {
    use opentelemetry::KeyValue;
    use opentelemetry::trace::{Span as _, Tracer as _};
    if !enabled() {
        return;
    }
    let parent = TraceContextPropagator::new().extract(&Stored(traceparent));
    let start = std::time::SystemTime::now()
        .checked_sub(waited)
        .unwrap_or(std::time::UNIX_EPOCH);
    let tracer = opentelemetry::global::tracer("stopgo");
    let mut span = tracer
        .span_builder("approval.wait")
        .with_start_time(start)
        .with_attributes(vec![
            KeyValue::new("sid", sid.to_string()),
            KeyValue::new("tool", tool.to_string()),
            KeyValue::new("decision", decision.to_string()),
            KeyValue::new("decided_by", decided_by.to_string()),
            KeyValue::new(
                "wait_ms",
                i64::try_from(waited.as_millis()).unwrap_or(i64::MAX),
            ),
        ])
        .start_with_context(&tracer, &parent);
    span.end();
}
