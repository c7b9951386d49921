//! Operational metrics of the process, in the OpenMetrics text format Prometheus scrapes: MCP
//! requests by method and outcome and their latency, hot reloads by outcome, render errors, the
//! prompts served and the registry version, and open HTTP sessions and event streams. One set
//! per process ([`global`]); recording a request is a counter increment and a histogram
//! observation on series resolved at start (no label hashing), so every request is counted.

use std::sync::OnceLock;
use std::time::Duration;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// The content type of [`Metrics::encode`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// An MCP request method, as counted.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum Method {
    initialize,
    prompts_list,
    prompts_get,
    completion_complete,
    tools_list,
    tools_call,
}

impl Method {
    /// Every method, in declaration order (`method as usize` indexes it).
    const ALL: [Method; 6] = [
        Method::initialize,
        Method::prompts_list,
        Method::prompts_get,
        Method::completion_complete,
        Method::tools_list,
        Method::tools_call,
    ];
}

/// How a request or reload ended.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum Outcome {
    ok,
    error,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: Method,
    outcome: Outcome,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodLabels {
    method: Method,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: Outcome,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VersionLabels {
    version: String,
}

/// One method's series, taken from their families once: recording a request is then atomic
/// operations only, with no label hashing or family lock.
#[derive(Debug)]
struct MethodSeries {
    ok: Counter,
    error: Counter,
    latency: Histogram,
}

/// The process's metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// Indexed by `Method as usize`; every method's series exist from the start, at zero.
    methods: Vec<MethodSeries>,
    reloads: Family<OutcomeLabels, Counter>,
    render_errors: Counter,
    prompts: Gauge,
    registry_version: Family<VersionLabels, Gauge>,
    sessions: Gauge,
    event_streams: Gauge,
}

/// The process's metrics, registered on first use.
pub fn global() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(Metrics::new)
}

impl Metrics {
    fn new() -> Metrics {
        let mut registry = Registry::with_prefix("promptd");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "mcp_requests",
            "MCP requests answered, by method and outcome",
            requests.clone(),
        );
        // 50 µs to about 1.6 s.
        let latency = Family::<MethodLabels, Histogram>::new_with_constructor(
            (|| Histogram::new(exponential_buckets(0.000_05, 2.0, 16))) as fn() -> Histogram,
        );
        registry.register(
            "mcp_request_duration_seconds",
            "Time to answer an MCP request, by method",
            latency.clone(),
        );
        let reloads = Family::<OutcomeLabels, Counter>::default();
        registry.register(
            "reloads",
            "Hot reloads of the prompt folders and config; error: a file or the config kept \
             its last good version",
            reloads.clone(),
        );
        let render_errors = Counter::default();
        registry.register(
            "render_errors",
            "Prompt renders that failed (bad arguments, template errors)",
            render_errors.clone(),
        );
        let prompts = Gauge::default();
        registry.register(
            "prompts",
            "Prompts loaded, system prompts included",
            prompts.clone(),
        );
        let registry_version = Family::<VersionLabels, Gauge>::default();
        registry.register(
            "registry_version",
            "The version (content hash) of the prompts served, as a label; the value is 1",
            registry_version.clone(),
        );
        let sessions = Gauge::default();
        registry.register(
            "http_sessions",
            "Open MCP sessions over streamable HTTP",
            sessions.clone(),
        );
        let event_streams = Gauge::default();
        registry.register(
            "http_event_streams",
            "Open server-sent event streams (GET /mcp and /studio/events)",
            event_streams.clone(),
        );
        // Each series is cloned out of its family in a call or statement of its own: the
        // family's read guard must be gone before the next `get_or_create` takes its write lock.
        let series = |method, outcome| {
            requests
                .get_or_create(&RequestLabels { method, outcome })
                .clone()
        };
        let methods = Method::ALL
            .iter()
            .map(|&method| {
                let histogram = latency.get_or_create(&MethodLabels { method }).clone();
                MethodSeries {
                    ok: series(method, Outcome::ok),
                    error: series(method, Outcome::error),
                    latency: histogram,
                }
            })
            .collect();
        Metrics {
            registry,
            methods,
            reloads,
            render_errors,
            prompts,
            registry_version,
            sessions,
            event_streams,
        }
    }

    /// Counts one answered request and its latency.
    pub fn request(&self, method: Method, ok: bool, elapsed: Duration) {
        let series = &self.methods[method as usize];
        if ok { &series.ok } else { &series.error }.inc();
        series.latency.observe(elapsed.as_secs_f64());
    }

    /// Counts one reload.
    pub fn reload(&self, ok: bool) {
        let outcome = if ok { Outcome::ok } else { Outcome::error };
        self.reloads.get_or_create(&OutcomeLabels { outcome }).inc();
    }

    /// Counts one failed render.
    pub fn render_error(&self) {
        self.render_errors.inc();
    }

    /// Records what is served now: the number of prompts and the registry's version.
    pub fn serving(&self, prompts: usize, version: &str) {
        self.prompts.set(i64::try_from(prompts).unwrap_or(i64::MAX));
        self.registry_version.clear();
        self.registry_version
            .get_or_create(&VersionLabels {
                version: version.to_string(),
            })
            .set(1);
    }

    /// Records the number of open HTTP sessions.
    pub fn sessions(&self, open: usize) {
        self.sessions.set(i64::try_from(open).unwrap_or(i64::MAX));
    }

    /// Records the number of open event streams.
    pub fn event_streams(&self, open: usize) {
        self.event_streams
            .set(i64::try_from(open).unwrap_or(i64::MAX));
    }

    /// The metrics in the OpenMetrics text format ([`CONTENT_TYPE`]).
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_has_its_series() {
        let m = Metrics::new();
        for (i, method) in Method::ALL.into_iter().enumerate() {
            assert_eq!(method as usize, i);
            assert!(m.methods.len() > i);
            // A method added to the enum must be added to `Method::ALL` too: this match stops
            // compiling until it is looked at.
            match method {
                Method::initialize
                | Method::prompts_list
                | Method::prompts_get
                | Method::completion_complete
                | Method::tools_list
                | Method::tools_call => {}
            }
        }
    }

    #[test]
    fn recorded_values_appear_in_the_text_format() {
        let m = Metrics::new();
        m.request(Method::prompts_get, true, Duration::from_micros(120));
        m.request(Method::prompts_get, false, Duration::from_millis(3));
        m.reload(true);
        m.render_error();
        m.serving(7, "abc123");
        m.serving(8, "def456");
        m.sessions(2);
        let text = m.encode();
        for line in [
            "promptd_mcp_requests_total{method=\"prompts_get\",outcome=\"ok\"} 1",
            "promptd_mcp_requests_total{method=\"prompts_get\",outcome=\"error\"} 1",
            "promptd_mcp_request_duration_seconds_count{method=\"prompts_get\"} 2",
            "promptd_reloads_total{outcome=\"ok\"} 1",
            "promptd_render_errors_total 1",
            "promptd_prompts 8",
            "promptd_registry_version{version=\"def456\"} 1",
            "promptd_http_sessions 2",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing in\n{text}");
        }
        assert!(!text.contains("abc123"), "{text}");
        // Methods never called are reported at zero.
        assert!(
            text.lines()
                .any(|l| l
                    == "promptd_mcp_requests_total{method=\"tools_call\",outcome=\"error\"} 0"),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"));
    }
}
