//! Which browser pages may call promptd's routes, one rule for every route (`/mcp`,
//! `/metrics`, the studio's): the `Host` must name the server ([`crate::auth::checked_host`]: no
//! DNS rebinding), and a request with an `Origin` must come from the page's own origin (the
//! scheme and the `Host` it was sent to), one of the server's own ([`own_origins`]) or one of
//! `serve.allowedOrigins`. Origins compare as RFC 6454 tuples (scheme, host, port; a port left
//! out is the scheme's default, `:*` is any port, `null` is the opaque origin). Requests without
//! `Origin` (non-browser clients) pass.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use serde::Deserialize;

/// Config section of the HTTP server.
pub const SECTION: &str = "serve";

/// The `serve` config section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ServeConfig {
    /// Browser origins allowed to call the server (`scheme://host[:port]`, `:*` for any port,
    /// or `null`). A request carrying any other `Origin` gets 403; requests without `Origin`
    /// (non-browser clients) are allowed.
    pub allowed_origins: Vec<String>,
}

impl ServeConfig {
    /// The `serve` section of a project config, each origin checked.
    pub fn from_config(
        config: &promptd_base::config::ProjectConfig,
    ) -> Result<ServeConfig, String> {
        let c: ServeConfig = config.section_as(SECTION)?;
        for (i, o) in c.allowed_origins.iter().enumerate() {
            if Allowed::parse(o).is_none() {
                return Err(format!(
                    "{SECTION}.allowedOrigins[{i}]: `{o}` is not an origin: expected \
                     scheme://host[:port] (port `*` for any) or `null`"
                ));
            }
        }
        Ok(c)
    }

    /// The configured origins and the server's own ([`own_origins`]).
    pub fn served_origins(&self, local: SocketAddr) -> Vec<String> {
        let mut out = self.allowed_origins.clone();
        for origin in own_origins(local) {
            if !out.contains(&origin) {
                out.push(origin);
            }
        }
        out
    }
}

/// The origins of pages the server itself serves at `local` (the studio talks to `/mcp` from
/// there): `http://ADDR` and, on loopback, the same port under `localhost` and the other
/// loopback spellings.
pub fn own_origins(local: SocketAddr) -> Vec<String> {
    let port = local.port();
    let mut own = vec![format!("http://{local}")];
    if local.ip().is_loopback() {
        own.extend([
            format!("http://localhost:{port}"),
            format!("http://127.0.0.1:{port}"),
            format!("http://[::1]:{port}"),
        ]);
    }
    own
}

/// Whether the `Origin` header value `origin` is one of `allowed` (entries as in
/// [`ServeConfig::allowed_origins`]; one that is not an origin matches nothing).
pub fn is_allowed<S: AsRef<str>>(origin: &str, allowed: &[S]) -> bool {
    let Some(origin) = Origin::parse(origin) else {
        return false;
    };
    allowed
        .iter()
        .filter_map(|a| Allowed::parse(a.as_ref()))
        .any(|a| a.matches(&origin))
}

/// What [`require_site`] checks a request against.
#[derive(Debug, Clone)]
pub struct Site {
    /// The address the server is bound to.
    pub local: SocketAddr,
    /// The configured origins and the server's own ([`ServeConfig::served_origins`]).
    pub origins: Vec<String>,
}

impl Site {
    pub fn new(local: SocketAddr, config: &ServeConfig) -> Site {
        Site {
            local,
            origins: config.served_origins(local),
        }
    }

    /// Whether a page at `origin` may send a request whose `Host` is `host`: the page's own
    /// origin (`http://HOST` or `https://HOST`), or one of [`Site::origins`].
    pub fn origin_allowed(&self, origin: &str, host: &str) -> bool {
        let same = Origin::parse(origin).is_some_and(|o| {
            ["http", "https"].iter().any(|scheme| {
                Origin::parse(&format!("{scheme}://{host}")).is_some_and(|own| own == o)
            })
        });
        same || is_allowed(origin, &self.origins)
    }
}

/// Middleware: the `Host` must name the server (403 naming `Host` otherwise) and an `Origin`
/// must be allowed ([`Site::origin_allowed`]; 403 otherwise).
pub async fn require_site(State(site): State<Arc<Site>>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    let host = match crate::auth::checked_host(host, site.local) {
        Ok(_) => host.unwrap_or_default(),
        Err(refusal) => {
            let (status, text) = refusal.answer();
            return crate::plain(status, text);
        }
    };
    if let Some(origin) = headers.get(header::ORIGIN)
        && !origin
            .to_str()
            .is_ok_and(|origin| site.origin_allowed(origin, host))
    {
        return crate::plain(
            StatusCode::FORBIDDEN,
            "403 Forbidden: Origin not allowed (serve.allowedOrigins)\n",
        );
    }
    next.run(request).await
}

/// A serialized origin as a tuple, or the opaque `null`.
#[derive(Debug, PartialEq, Eq)]
enum Origin {
    Null,
    Tuple {
        scheme: String,
        host: String,
        port: u16,
    },
}

impl Origin {
    fn parse(value: &str) -> Option<Origin> {
        let value = value.trim();
        if value == "null" {
            return Some(Origin::Null);
        }
        let url = url::Url::parse(value).ok()?;
        // An origin is scheme, host and port: nothing after them, no user-info.
        let bare = url.path() == "/"
            && !value.ends_with('/')
            && url.query().is_none()
            && url.fragment().is_none()
            && url.username().is_empty()
            && url.password().is_none();
        match url.origin() {
            url::Origin::Tuple(scheme, host, port) if bare => Some(Origin::Tuple {
                scheme,
                host: host.to_string(),
                port,
            }),
            _ => None,
        }
    }
}

/// One entry of an allow-list: an origin, or a scheme and host on any port.
#[derive(Debug)]
enum Allowed {
    Exactly(Origin),
    AnyPort { scheme: String, host: String },
}

impl Allowed {
    fn parse(value: &str) -> Option<Allowed> {
        match value.strip_suffix(":*") {
            Some(base) => match Origin::parse(base)? {
                Origin::Tuple { scheme, host, .. } => Some(Allowed::AnyPort { scheme, host }),
                Origin::Null => None,
            },
            None => Origin::parse(value).map(Allowed::Exactly),
        }
    }

    fn matches(&self, origin: &Origin) -> bool {
        match (self, origin) {
            (Allowed::Exactly(a), o) => a == o,
            (
                Allowed::AnyPort { scheme, host },
                Origin::Tuple {
                    scheme: s, host: h, ..
                },
            ) => scheme == s && host == h,
            (Allowed::AnyPort { .. }, Origin::Null) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_origins_are_checked() {
        for good in [
            "https://app.example.com",
            "http://localhost:3000",
            "http://localhost:*",
            "null",
        ] {
            assert!(Allowed::parse(good).is_some(), "{good}");
        }
        for bad in [
            "example.com",
            "https://",
            "https://a.com/path",
            "*",
            "",
            "https://u:p@a.com",
        ] {
            assert!(Allowed::parse(bad).is_none(), "{bad}");
        }
        let cfg = promptd_base::config::ProjectConfig::parse(
            r#"{"serve":{"allowedOrigins":["https://ok.example","nope"]}}"#,
            None,
        )
        .unwrap();
        let err = ServeConfig::from_config(&cfg).unwrap_err();
        assert!(err.contains("serve.allowedOrigins[1]"), "{err}");
    }

    #[test]
    fn origins_compare_as_tuples() {
        let allowed = ["https://app.example", "http://localhost:*", "null"];
        assert!(is_allowed("https://app.example", &allowed));
        assert!(is_allowed("https://APP.example:443", &allowed));
        assert!(!is_allowed("https://app.example:8443", &allowed));
        assert!(!is_allowed("http://app.example", &allowed));
        assert!(!is_allowed("https://app.example.evil", &allowed));
        assert!(is_allowed("http://localhost:5173", &allowed));
        assert!(is_allowed("http://localhost", &allowed));
        assert!(!is_allowed("http://localhost.evil:5173", &allowed));
        assert!(is_allowed("null", &allowed));
        assert!(!is_allowed("null", &["https://app.example"]));
        assert!(!is_allowed("not an origin", &allowed));
    }

    #[test]
    fn the_servers_own_origins_include_every_loopback_spelling() {
        let local: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let served = ServeConfig::default().served_origins(local);
        for o in [
            "http://127.0.0.1:8080",
            "http://localhost:8080",
            "http://[::1]:8080",
        ] {
            assert!(is_allowed(o, &served), "{o}");
        }
        assert!(!is_allowed("http://localhost:8081", &served));
        let public: SocketAddr = "192.0.2.7:80".parse().unwrap();
        assert_eq!(own_origins(public), ["http://192.0.2.7:80"]);
    }

    #[test]
    fn a_page_may_call_the_host_it_was_served_from() {
        let site = Site::new("0.0.0.0:8080".parse().unwrap(), &ServeConfig::default());
        assert!(site.origin_allowed("https://prompts.example:8080", "prompts.example:8080"));
        assert!(site.origin_allowed("http://prompts.example", "prompts.example:80"));
        assert!(!site.origin_allowed("http://prompts.example:8081", "prompts.example:8080"));
        assert!(!site.origin_allowed("http://evil.example", "prompts.example:8080"));
        assert!(!site.origin_allowed("null", "prompts.example:8080"));
    }
}
