//! HTTP execution of an `http` tool, as Plandex's MCP design specifies it: `{param}`
//! placeholders in the URL take the input's values, percent-encoded (every byte but
//! `A-Z a-z 0-9 - _ ~`, so `/`, `@`, `?`, `#`, CR and LF stay data; `.` and `..` are refused, as
//! a URL parser would take them for path steps); the remaining fields are query parameters for
//! GET, DELETE, HEAD and OPTIONS and a JSON body (`Content-Type: application/json`) otherwise;
//! headers come from the definition only, a value `${env:NAME}` read from the server's
//! environment at call time.
//!
//! Which hosts a call may reach is the `tools.http` configuration ([`HttpSettings`]): with no
//! `allowedHosts`, any host whose addresses are all public; with `allowedHosts`, only those
//! hosts (exact names or IP literals), which may then be loopback or private. Loopback,
//! private, link-local, shared, multicast and reserved ranges are refused otherwise, for the URL
//! and for every redirect, by checking IP literals and by resolving names through a resolver
//! that drops such addresses (so a name cannot be rebound between check and connect). No proxy
//! is used. The whole exchange is bounded by `timeoutMs` (a slow-drip body included), the body
//! by `maxResponseBytes` (read chunk by chunk, never buffered past the cap), redirects by
//! `maxRedirects`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::definition::{HeaderValueTemplate, HttpTool};

/// Bytes of a path or query value that are encoded: all but the unreserved ones.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'~');

/// The `tools.http` settings.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct HttpSettings {
    /// Hosts a tool may reach (names or IP literals, compared without case); empty: any host
    /// whose addresses are public.
    pub allowed_hosts: Vec<String>,
    pub timeout_ms: u64,
    pub max_response_bytes: usize,
    pub max_redirects: usize,
}

impl Default for HttpSettings {
    fn default() -> HttpSettings {
        HttpSettings {
            allowed_hosts: Vec::new(),
            timeout_ms: 10_000,
            max_response_bytes: 1024 * 1024,
            max_redirects: 3,
        }
    }
}

/// Why a call did not produce an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpFailure {
    /// The input cannot make a request (a field named): the caller's mistake.
    Input { field: String, message: String },
    /// The request was refused or failed: a tool result with `isError`.
    Failed(String),
}

/// A 2xx answer.
#[derive(Debug, Clone)]
pub struct HttpAnswer {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: String,
}

/// Which hosts and addresses a request may reach.
#[derive(Debug, Clone)]
struct HostPolicy {
    allowed: Vec<String>,
}

impl HostPolicy {
    fn listed(&self, host: &str) -> bool {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        self.allowed.iter().any(|a| {
            a.trim_start_matches('[')
                .trim_end_matches(']')
                .eq_ignore_ascii_case(host)
        })
    }

    /// Whether `url` may be requested: an http(s) URL whose host is listed (or, with no list,
    /// is a name or a public address; names are checked again when resolved).
    fn check(&self, url: &reqwest::Url) -> Result<(), String> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!(
                "refused {}: only http and https are allowed",
                redacted(url)
            ));
        }
        let Some(host) = url.host_str() else {
            return Err(format!("refused {}: no host", redacted(url)));
        };
        if self.listed(host) {
            return Ok(());
        }
        if !self.allowed.is_empty() {
            return Err(format!(
                "refused {}: host `{host}` is not in tools.http.allowedHosts",
                redacted(url)
            ));
        }
        if let Ok(ip) = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            && !is_public(ip)
        {
            return Err(format!(
                "refused {}: {ip} is a loopback, private or reserved address; list the host in \
                 tools.http.allowedHosts to allow it",
                redacted(url)
            ));
        }
        Ok(())
    }
}

/// A URL as shown in messages: scheme, host, port and path, without credentials or query.
fn redacted(url: &reqwest::Url) -> String {
    format!(
        "{}://{}{}{}",
        url.scheme(),
        url.host_str().unwrap_or(""),
        url.port().map(|p| format!(":{p}")).unwrap_or_default(),
        url.path()
    )
}

/// Whether an address is on the public internet.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public_v4(v4);
            }
            let s = v6.segments();
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || (s[0] == 0x2001 && s[1] == 0x0db8)
                || v6 == Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, 0, 0))
        }
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let o = ip.octets();
    !(ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_documentation()
        || ip.is_multicast()
        || o[0] == 0
        || (o[0] == 100 && (o[1] & 0xc0) == 64)
        || (o[0] == 192 && o[1] == 0 && o[2] == 0)
        || (o[0] == 198 && (o[1] & 0xfe) == 18)
        || o[0] >= 240)
}

/// A refusal raised inside reqwest (the resolver, the redirect policy), found again in the
/// error's sources.
#[derive(Debug)]
struct Refused(String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// Resolves names, keeping only the addresses the policy lets a request reach.
struct CheckedResolver {
    policy: HostPolicy,
}

impl reqwest::dns::Resolve for CheckedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let listed = self.policy.listed(name.as_str());
        let host = name.as_str().to_string();
        Box::pin(async move {
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await
                .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)?
                .collect();
            let kept: Vec<SocketAddr> = found
                .iter()
                .copied()
                .filter(|a| listed || is_public(a.ip()))
                .collect();
            if kept.is_empty() {
                return Err(Box::new(Refused(format!(
                    "refused `{host}`: it resolves only to loopback, private or reserved \
                     addresses ({}); list it in tools.http.allowedHosts to allow it",
                    found
                        .iter()
                        .map(|a| a.ip().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )))
                    as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(kept.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The HTTP client of one `tools.http` configuration.
#[derive(Debug, Clone)]
pub struct HttpExecutor {
    client: reqwest::Client,
    policy: HostPolicy,
    settings: HttpSettings,
}

impl HttpExecutor {
    pub fn new(settings: HttpSettings) -> HttpExecutor {
        crate::llm::install_tls_provider();
        let policy = HostPolicy {
            allowed: settings.allowed_hosts.clone(),
        };
        let max = settings.max_redirects;
        let hops = policy.clone();
        let redirects = reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() > max {
                let why = format!(
                    "more than {max} redirect(s) (tools.http.maxRedirects); the last went to {}",
                    redacted(attempt.url())
                );
                return attempt.error(Refused(why));
            }
            match hops.check(attempt.url()) {
                Ok(()) => attempt.follow(),
                Err(why) => attempt.error(Refused(format!("redirect {why}"))),
            }
        });
        let client = reqwest::Client::builder()
            .no_proxy()
            .redirect(redirects)
            .dns_resolver(Arc::new(CheckedResolver {
                policy: policy.clone(),
            }))
            .timeout(Duration::from_millis(settings.timeout_ms))
            .build()
            .unwrap_or_else(|_| reqwest::Client::new());
        HttpExecutor {
            client,
            policy,
            settings,
        }
    }

    pub fn settings(&self) -> &HttpSettings {
        &self.settings
    }

    /// The request `tool` makes for `input`: its URL (placeholders filled, query added) and
    /// JSON body, or the input field at fault.
    pub fn request_for(
        &self,
        tool: &HttpTool,
        input: &Map<String, Value>,
    ) -> Result<(reqwest::Url, Option<Value>), HttpFailure> {
        let mut url = tool.url.clone();
        for name in &tool.placeholders {
            let input_error = |message: String| HttpFailure::Input {
                field: name.clone(),
                message,
            };
            let text = match input.get(name) {
                None | Some(Value::Null) => {
                    return Err(input_error(
                        "required: the URL has a placeholder for it".into(),
                    ));
                }
                Some(Value::String(s)) => s.clone(),
                Some(v @ (Value::Number(_) | Value::Bool(_))) => v.to_string(),
                Some(_) => return Err(input_error("must be a string, number or boolean".into())),
            };
            if text.is_empty() || text == "." || text == ".." {
                return Err(input_error(format!(
                    "`{text}` cannot be a URL path segment"
                )));
            }
            let encoded = utf8_percent_encode(&text, COMPONENT).to_string();
            url = url.replace(&format!("{{{name}}}"), &encoded);
        }
        let mut url = reqwest::Url::parse(&url).map_err(|e| {
            HttpFailure::Failed(format!("the tool's URL does not parse once filled: {e}"))
        })?;
        let rest: Map<String, Value> = input
            .iter()
            .filter(|(k, _)| !tool.placeholders.contains(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let in_query = matches!(
            tool.method,
            reqwest::Method::GET
                | reqwest::Method::DELETE
                | reqwest::Method::HEAD
                | reqwest::Method::OPTIONS
        );
        if !in_query {
            return Ok((url, Some(Value::Object(rest))));
        }
        if !rest.is_empty() {
            let mut pairs = url.query_pairs_mut();
            for (key, value) in &rest {
                match value {
                    Value::Null => {}
                    Value::Array(items) => {
                        for item in items {
                            pairs.append_pair(key, &scalar_text(item));
                        }
                    }
                    other => {
                        pairs.append_pair(key, &scalar_text(other));
                    }
                }
            }
        }
        Ok((url, None))
    }

    /// Makes the request and reads the answer under the settings' bounds.
    pub async fn execute(
        &self,
        tool: &HttpTool,
        input: &Map<String, Value>,
    ) -> Result<HttpAnswer, HttpFailure> {
        let (url, body) = self.request_for(tool, input)?;
        self.policy.check(&url).map_err(HttpFailure::Failed)?;
        let mut request = self.client.request(tool.method.clone(), url.clone());
        for (name, value) in &tool.headers {
            let text = match value {
                HeaderValueTemplate::Text(t) => t.clone(),
                HeaderValueTemplate::Env(var) => std::env::var(var).map_err(|_| {
                    HttpFailure::Failed(format!(
                        "header `{name}` needs the environment variable {var}, which the server \
                         does not have; set it where promptd runs"
                    ))
                })?,
            };
            let value = reqwest::header::HeaderValue::from_str(&text).map_err(|_| {
                HttpFailure::Failed(format!(
                    "header `{name}`: its value is not a valid header value"
                ))
            })?;
            request = request.header(name.clone(), value);
        }
        if let Some(body) = body {
            request = request
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.to_string());
        }
        let timeout = Duration::from_millis(self.settings.timeout_ms);
        let shown = format!("{} {}", tool.method, redacted(&url));
        match tokio::time::timeout(timeout, self.exchange(request, &shown)).await {
            Ok(answer) => answer,
            Err(_) => Err(HttpFailure::Failed(format!(
                "{shown}: no complete answer within {} ms (tools.http.timeoutMs); try again \
                 later or ask for less",
                self.settings.timeout_ms
            ))),
        }
    }

    async fn exchange(
        &self,
        request: reqwest::RequestBuilder,
        shown: &str,
    ) -> Result<HttpAnswer, HttpFailure> {
        let mut response = request
            .send()
            .await
            .map_err(|e| HttpFailure::Failed(send_error(shown, &e, self.settings.timeout_ms)))?;
        let status = response.status();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let max = self.settings.max_response_bytes;
        let over = |size: String| {
            HttpFailure::Failed(format!(
                "{shown}: the response is {size} bytes, over the limit of {max} \
                 (tools.http.maxResponseBytes); ask for less"
            ))
        };
        if let Some(length) = response.content_length()
            && length > max as u64
        {
            return Err(over(length.to_string()));
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| HttpFailure::Failed(send_error(shown, &e, self.settings.timeout_ms)))?
        {
            if bytes.len() + chunk.len() > max {
                return Err(over(format!("more than {max}")));
            }
            bytes.extend_from_slice(&chunk);
        }
        let body = String::from_utf8(bytes).map_err(|e| {
            HttpFailure::Failed(format!(
                "{shown}: the response is not UTF-8 text ({} bytes)",
                e.as_bytes().len()
            ))
        })?;
        if !status.is_success() {
            let excerpt: String = body.chars().take(300).collect();
            return Err(HttpFailure::Failed(format!(
                "{shown} answered HTTP {status}: {excerpt}"
            )));
        }
        Ok(HttpAnswer {
            status: status.as_u16(),
            content_type,
            body,
        })
    }
}

/// A failed send as a message the model can act on: a refusal as it was raised, a timeout, a
/// refused connection.
fn send_error(shown: &str, e: &reqwest::Error, timeout_ms: u64) -> String {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if let Some(refused) = s.downcast_ref::<Refused>() {
            return format!("{shown}: {refused}");
        }
        source = s.source();
    }
    if e.is_timeout() {
        return format!(
            "{shown}: no complete answer within {timeout_ms} ms (tools.http.timeoutMs); try again \
             later or ask for less"
        );
    }
    if e.is_connect() {
        return format!("{shown}: cannot connect: {}", root_cause(e));
    }
    format!("{shown}: {}", root_cause(e))
}

fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut last = e;
    while let Some(s) = last.source() {
        last = s;
    }
    last.to_string()
}

/// A query value: a string as is, anything else as its JSON text.
fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_and_reserved_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "fc00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "224.0.0.1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["1.1.1.1", "93.184.216.34", "2606:4700::1111"] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
    }
}
