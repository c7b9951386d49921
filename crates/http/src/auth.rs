//! Who may use the HTTP routes, as every route checks it: bearer tokens (the token of an
//! `Authorization` value, and a comparison whose time does not reveal how much of a guess was
//! right), the `Host` a request names (no DNS rebinding onto a loopback bind), and the peer a
//! connection counts as (`peer_key`: every loopback address is one).

use std::net::{IpAddr, SocketAddr};

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

#[cfg(test)]
mod tests {
    use super::*;

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
