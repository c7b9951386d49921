//! Who may use the HTTP routes, as every route checks it: bearer tokens (the token of an
//! `Authorization` value, and a comparison whose time does not reveal how much of a guess was
//! right), the `Host` a request names (no DNS rebinding onto a loopback bind), and the peer a
//! connection counts as (`peer_key`: every loopback address is one); where a server may listen
//! without a token ([`check_bind`]); the bearer check every protected route runs
//! ([`require_bearer`]); and the OAuth paths answered for a server that has none
//! ([`no_oauth_routes`]).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The token of an `Authorization: Bearer <token>` value; the scheme name is matched without
/// regard to case (RFC 7235).
pub fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim_start().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

/// Whether `supplied` is `expected`, compared without an early exit.
pub fn same_token(supplied: &str, expected: &str) -> bool {
    let (a, b) = (supplied.as_bytes(), expected.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A `Host` header's host name, without brackets, port or case.
pub fn host_of(authority: &str) -> Option<String> {
    let a = axum::http::uri::Authority::try_from(authority.trim()).ok()?;
    Some(
        a.host()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase(),
    )
}

/// Why a request's `Host` is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostRefusal {
    /// No `Host`, or one that is not an authority.
    Malformed,
    /// A name that is not the server's ([`host_allowed`]).
    NotAllowed,
}

impl HostRefusal {
    /// The HTTP status and the plain-text body of the refusal.
    pub fn answer(self) -> (axum::http::StatusCode, &'static str) {
        match self {
            HostRefusal::Malformed => (
                axum::http::StatusCode::BAD_REQUEST,
                "400 Bad Request: missing or malformed Host header\n",
            ),
            HostRefusal::NotAllowed => (
                axum::http::StatusCode::FORBIDDEN,
                "403 Forbidden: Host not allowed\n",
            ),
        }
    }
}

/// The host name of a request's `Host` header (`header`) when it names a server bound at
/// `local`: the one `Host` check of `/metrics` and the studio (rmcp makes the same for `/mcp`).
pub fn checked_host(header: Option<&str>, local: SocketAddr) -> Result<String, HostRefusal> {
    let host = header.and_then(host_of).ok_or(HostRefusal::Malformed)?;
    if host_allowed(local, &host) {
        Ok(host)
    } else {
        Err(HostRefusal::NotAllowed)
    }
}

/// Whether `host` names a server bound at `local`: on a loopback bind a loopback name or the
/// address bound (so that no DNS rebinding reaches it); on any other bind every name (clients
/// reach it under names it cannot know, and the token protects it).
pub fn host_allowed(local: SocketAddr, host: &str) -> bool {
    if !local.ip().is_loopback() {
        return true;
    }
    let bound = local.ip().to_string();
    ["localhost", "127.0.0.1", "::1", bound.as_str()].contains(&host)
}

/// The key sessions (and event streams) are counted under: an IPv4 address, the /64 network
/// of an IPv6 one, and one key for every loopback address (`127.0.0.0/8`, `::1`, and
/// `::ffff:127.x.y.z`).
pub fn peer_key(ip: IpAddr) -> IpAddr {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        IpAddr::V4(_) => ip,
    };
    if ip.is_loopback() {
        return IpAddr::from([127, 0, 0, 1]);
    }
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(bits.into())
        }
    }
}

/// Why a server may not listen where it was asked to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BindRefusal {
    #[error(
        "refusing to serve on {addr} without a token: binding a non-loopback address requires \
         --auth-token or PROMPTD_AUTH_TOKEN"
    )]
    NoToken { addr: SocketAddr },
    #[error(
        "refusing to serve on {addr}: the auth token has {chars} character(s), fewer than \
         {min} (limits.minAuthTokenChars); use a long random token"
    )]
    WeakToken {
        addr: SocketAddr,
        chars: usize,
        min: usize,
    },
}

/// Checks that binding `addr` is allowed: loopback always, anything else only with a token of
/// at least `min_token_chars` non-blank characters.
pub fn check_bind(
    addr: SocketAddr,
    token: Option<&str>,
    min_token_chars: usize,
) -> Result<(), BindRefusal> {
    if addr.ip().is_loopback() {
        return Ok(());
    }
    let Some(token) = token.map(str::trim).filter(|t| !t.is_empty()) else {
        return Err(BindRefusal::NoToken { addr });
    };
    let chars = token.chars().count();
    if chars < min_token_chars {
        return Err(BindRefusal::WeakToken {
            addr,
            chars,
            min: min_token_chars,
        });
    }
    Ok(())
}

/// Marks a request that carried the server's bearer token (in its extensions).
#[derive(Debug, Clone, Copy)]
pub struct Authenticated;

/// Middleware: a request must carry `Authorization: Bearer <token>` with the server's token
/// (401 with `WWW-Authenticate: Bearer` otherwise); one that does is marked [`Authenticated`].
pub async fn require_bearer(
    State(token): State<Arc<str>>,
    mut request: Request,
    next: Next,
) -> Response {
    let supplied = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer_token);
    match supplied {
        Some(s) if same_token(s, &token) => {
            request.extensions_mut().insert(Authenticated);
            next.run(request).await
        }
        _ => (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "401 Unauthorized: missing or wrong bearer token\n",
        )
            .into_response(),
    }
}

/// The OAuth discovery and registration paths an MCP client tries when a request is refused
/// (MCP authorization: protected resource metadata, authorization server metadata, dynamic
/// client registration), each answering 404 with a JSON error saying that promptd takes a
/// static bearer token and is no OAuth server: never a page of HTML.
pub fn no_oauth_routes() -> axum::Router {
    let routes = [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/{*resource}",
        "/.well-known/oauth-authorization-server",
        "/.well-known/oauth-authorization-server/{*issuer}",
        "/.well-known/openid-configuration",
        "/.well-known/openid-configuration/{*issuer}",
        "/register",
    ];
    routes.iter().fold(axum::Router::new(), |router, path| {
        router.route(path, axum::routing::any(no_oauth))
    })
}

async fn no_oauth() -> Response {
    let body = serde_json::json!({
        "error": "not_found",
        "error_description": "this promptd server takes a static bearer token (Authorization: Bearer <token>, the token given to `promptd serve --auth-token`); it offers no OAuth discovery or client registration",
    });
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binding_rules() {
        let lo: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let lo2: SocketAddr = "127.0.0.2:0".parse().unwrap();
        let any: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let strong = "0123456789abcdef";
        assert!(check_bind(lo, None, 16).is_ok());
        assert!(check_bind(lo2, None, 16).is_ok());
        assert!(check_bind(any, None, 16).is_err());
        assert!(check_bind(any, Some(""), 16).is_err());
        assert!(check_bind(any, Some("   \t"), 16).is_err());
        let weak = check_bind(any, Some("t"), 16).unwrap_err().to_string();
        assert!(weak.contains("limits.minAuthTokenChars"), "{weak}");
        assert!(check_bind(any, Some(&format!(" {} ", &strong[1..])), 16).is_err());
        assert!(check_bind(any, Some(strong), 16).is_ok());
    }

    #[test]
    fn bearer_scheme_is_case_insensitive() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer abc"), Some("abc"));
        assert_eq!(bearer_token("BEARER  abc "), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearerabc"), None);
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same_token("abc", "abc"));
        assert!(!same_token("abc", "abd"));
        assert!(!same_token("abc", "ab"));
    }
}
