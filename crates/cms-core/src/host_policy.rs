//! Which names are this server, and whose forwarded headers are believed.
//!
//! A browser's `Origin` counts as this server ("same-server", allowed without a key) only
//! when its host is one the site names: a loopback name or the address the server listens
//! on (with its port), the host of `site.url`, or an entry of `server.allowed_hosts`. The
//! request's own `Host` header never decides it: under DNS rebinding a hostile page's
//! `Origin` and `Host` are both the attacker's name, which resolves to this server.
//!
//! `Forwarded` and `X-Forwarded-*` headers can be set by any client; they are believed only
//! from a peer listed in `server.trusted_proxies` (a reverse proxy that sets them itself).
//! Pure: the web crates read the headers and hand their values here.

use core::net::{IpAddr, SocketAddr};
use std::sync::OnceLock;

/// The names and proxies of one server.
#[derive(Debug, Default)]
pub struct HostPolicy {
    /// `server.allowed_hosts` and the host of `site.url`: host, and the port if one was
    /// written (any port otherwise).
    named: Vec<(String, Option<u16>)>,
    proxies: Vec<IpRange>,
    /// The addresses the server listens on, known once it is bound.
    bound: OnceLock<Vec<SocketAddr>>,
    /// `site.url`'s scheme and authority (`https`, `example.com`).
    site_scheme: String,
    site_authority: Option<(String, Option<u16>)>,
}

impl HostPolicy {
    /// The policy of a site whose URL is `site_url`, with `server.allowed_hosts` and
    /// `server.trusted_proxies` from `cms.yaml` (already validated; this module is below
    /// the configuration, which checks those entries with [`is_authority`] and
    /// [`IpRange::parse`]).
    pub fn new(site_url: &str, allowed_hosts: &[String], trusted_proxies: &[String]) -> Self {
        let site_authority = authority_of(site_url).and_then(split_authority);
        let site_host = site_authority.clone().map(|(host, _)| (host, None));
        let named = allowed_hosts.iter().filter_map(|h| split_authority(h)).chain(site_host).collect();
        let proxies = trusted_proxies.iter().filter_map(|p| IpRange::parse(p).ok()).collect();
        let site_scheme =
            site_url.split_once("://").map_or("https", |(scheme, _)| scheme).to_ascii_lowercase();
        Self { named, proxies, bound: OnceLock::new(), site_scheme, site_authority }
    }

    /// Records the addresses the server listens on (once; later calls are ignored): their
    /// ports make the loopback names this server's, and a specific address is a name too.
    pub fn bind(&self, addresses: &[SocketAddr]) {
        let _ = self.bound.set(addresses.to_vec());
    }

    /// Whether a browser `Origin` (`scheme://host[:port]`) is this server.
    pub fn is_this_server(&self, origin: &str) -> bool {
        let origin = origin.trim_end_matches('/');
        let Some((scheme, authority)) = origin.split_once("://") else { return false };
        let Some((host, port)) = split_authority(authority) else { return false };
        let port = port.or(match scheme.to_ascii_lowercase().as_str() {
            "http" => Some(80),
            "https" => Some(443),
            _ => None,
        });
        if self
            .named
            .iter()
            .any(|(name, named_port)| *name == host && named_port.is_none_or(|p| Some(p) == port))
        {
            return true;
        }
        let Some(bound) = self.bound.get() else { return false };
        bound.iter().any(|address| {
            Some(address.port()) == port
                && (is_loopback_name(&host)
                    || (!address.ip().is_unspecified() && host_ip(&host) == Some(address.ip())))
        })
    }

    /// Whether `peer` is a reverse proxy whose forwarded headers are believed.
    pub fn trusts(&self, peer: Option<IpAddr>) -> bool {
        peer.is_some_and(|peer| self.proxies.iter().any(|range| range.contains(peer)))
    }

    /// The client's address: the peer, or, behind trusted proxies, the nearest address of
    /// `X-Forwarded-For` (read from the right) that is not itself a trusted proxy.
    pub fn client_address(&self, peer: Option<IpAddr>, forwarded_for: Option<&str>) -> Option<IpAddr> {
        if !self.trusts(peer) {
            return peer;
        }
        let mut client = peer;
        for hop in forwarded_for.unwrap_or("").rsplit(',') {
            let Some(address) = parse_forwarded_ip(hop) else { break };
            client = Some(address);
            if !self.trusts(client) {
                break;
            }
        }
        client
    }

    /// `scheme://host[:port]` under which the client reached this server, for links the
    /// server hands out (preview links): a trusted proxy's `X-Forwarded-Proto` and
    /// `X-Forwarded-Host` when that host is one of this server's names; otherwise the
    /// request's `Host` when it names this server (with `site.url`'s scheme when it is
    /// `site.url`'s host, else `http`); otherwise `site.url`'s origin.
    pub fn public_origin(&self, request: &RequestOrigin<'_>) -> String {
        if self.trusts(request.peer)
            && let Some(host) = request.forwarded_host.and_then(first_value)
            && split_authority(host).is_some()
        {
            let scheme = match request.forwarded_proto.and_then(first_value) {
                Some(proto) if proto.eq_ignore_ascii_case("https") => "https",
                _ => "http",
            };
            if self.is_this_server(&format!("{scheme}://{host}")) {
                return format!("{scheme}://{host}");
            }
        }
        if let Some(host) = request.host
            && split_authority(host).is_some()
            && self.is_this_server(&format!("http://{host}"))
        {
            let scheme = if self.is_site_authority(host) { self.site_scheme.as_str() } else { "http" };
            return format!("{scheme}://{host}");
        }
        match &self.site_authority {
            Some((host, Some(port))) => format!("{}://{host}:{port}", self.site_scheme),
            Some((host, None)) => format!("{}://{host}", self.site_scheme),
            None => format!("{}://localhost", self.site_scheme),
        }
    }

    /// Whether the client reached this server over HTTPS (this server itself speaks plain
    /// HTTP): a trusted proxy says so, or the request was sent to `site.url`'s own host
    /// and port and that URL is `https` (a proxy in front that nobody listed).
    pub fn is_https(&self, request: &RequestOrigin<'_>) -> bool {
        if self.trusts(request.peer) {
            return request
                .forwarded_proto
                .and_then(first_value)
                .is_some_and(|p| p.eq_ignore_ascii_case("https"));
        }
        self.site_scheme == "https" && request.host.is_some_and(|host| self.is_site_authority(host))
    }

    /// Whether a `Host` value is `site.url`'s host and port (no port: the scheme's default).
    fn is_site_authority(&self, host: &str) -> bool {
        match (split_authority(host), &self.site_authority) {
            (Some((host, port)), Some((site_host, site_port))) => host == *site_host && port == *site_port,
            _ => false,
        }
    }
}

/// What a request says of where it came from, as the web crates read it.
#[derive(Debug, Default, Clone, Copy)]
pub struct RequestOrigin<'a> {
    pub peer: Option<IpAddr>,
    pub host: Option<&'a str>,
    pub forwarded_host: Option<&'a str>,
    pub forwarded_proto: Option<&'a str>,
}

impl<'a> RequestOrigin<'a> {
    /// Reads a request's `Host`, `X-Forwarded-Host` and `X-Forwarded-Proto` (or the
    /// `host=` and `proto=` of a `Forwarded` header) with `header`, which gives a header's
    /// value by its lowercase name.
    pub fn read(peer: Option<IpAddr>, header: impl Fn(&str) -> Option<&'a str>) -> Self {
        let forwarded = header("forwarded");
        let forwarded_param = |name: &str| {
            let first = forwarded?.split(',').next()?;
            first.split(';').find_map(|pair| {
                let (key, value) = pair.trim().split_once('=')?;
                key.trim().eq_ignore_ascii_case(name).then(|| value.trim().trim_matches('"'))
            })
        };
        Self {
            peer,
            host: header("host"),
            forwarded_host: header("x-forwarded-host").or_else(|| forwarded_param("host")),
            forwarded_proto: header("x-forwarded-proto").or_else(|| forwarded_param("proto")),
        }
    }
}

/// The first of a comma-separated header's values (the client-side proxy's), trimmed.
fn first_value(value: &str) -> Option<&str> {
    value.split(',').next().map(str::trim).filter(|v| !v.is_empty())
}

/// The authority (`host[:port]`) of an absolute URL.
fn authority_of(url: &str) -> Option<&str> {
    let (_, rest) = url.split_once("://")?;
    Some(rest.split(['/', '?', '#']).next().unwrap_or(rest))
}

/// Whether `text` is a `host[:port]` (what `server.allowed_hosts` lists).
pub fn is_authority(text: &str) -> bool {
    split_authority(text).is_some()
}

/// `host[:port]` split, the host lowercased (an IPv6 host keeps its brackets); `None` for
/// what is not an authority.
fn split_authority(authority: &str) -> Option<(String, Option<u16>)> {
    let authority = authority.trim();
    if authority.is_empty() || authority.contains(['/', ' ', '@', '?', '#']) {
        return None;
    }
    let (host, port) = if authority.starts_with('[') {
        let end = authority.find(']')?;
        let (host, rest) = authority.split_at(end + 1);
        match rest.strip_prefix(':') {
            Some(port) => (host, Some(port.parse().ok()?)),
            None if rest.is_empty() => (host, None),
            None => return None,
        }
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port.parse().ok()?)),
            None => (authority, None),
        }
    };
    (!host.is_empty()).then(|| (host.to_ascii_lowercase(), port))
}

fn is_loopback_name(host: &str) -> bool {
    host == "localhost" || host.ends_with(".localhost") || host_ip(host).is_some_and(|ip| ip.is_loopback())
}

/// The address a host names literally (`127.0.0.1`, `[::1]`).
fn host_ip(host: &str) -> Option<IpAddr> {
    host.trim_start_matches('[').trim_end_matches(']').parse().ok()
}

/// One hop of `X-Forwarded-For`: an address, perhaps with a port or in brackets.
fn parse_forwarded_ip(hop: &str) -> Option<IpAddr> {
    let hop = hop.trim();
    hop.parse().ok().or_else(|| hop.parse::<SocketAddr>().ok().map(|a| a.ip())).or_else(|| host_ip(hop))
}

/// An address or a CIDR range (`10.0.0.0/8`, `::1`, `fd00::/8`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpRange {
    network: IpAddr,
    prefix: u8,
}

impl IpRange {
    /// Parses `text`; the error says what was expected.
    pub fn parse(text: &str) -> Result<Self, String> {
        let refused = || format!("expected an IP address or a CIDR range like 10.0.0.0/8, got {text:?}");
        let (address, prefix) = match text.trim().split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (text.trim(), None),
        };
        let network: IpAddr = address.parse().map_err(|_| refused())?;
        let max = if network.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(prefix) => prefix.parse::<u8>().ok().filter(|p| *p <= max).ok_or_else(refused)?,
            None => max,
        };
        Ok(Self { network, prefix })
    }

    pub fn contains(&self, address: IpAddr) -> bool {
        let address = match address {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
            v4 => v4,
        };
        match (self.network, address) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.prefix)).unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(self.prefix)).unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(allowed: &[&str], proxies: &[&str]) -> HostPolicy {
        let strings = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        HostPolicy::new("https://example.com/blog/", &strings(allowed), &strings(proxies))
    }

    #[test]
    fn this_server_is_what_the_site_names_never_the_request_host() {
        let p = policy(&["cms.example.net", "Admin.Example.org:8443"], &[]);
        p.bind(&["0.0.0.0:8080".parse().unwrap()]);
        for origin in [
            "https://example.com",
            "http://example.com:8080",
            "https://cms.example.net:9000",
            "https://admin.example.org:8443",
            "http://127.0.0.1:8080",
            "http://localhost:8080/",
            "http://[::1]:8080",
            "http://app.localhost:8080",
        ] {
            assert!(p.is_this_server(origin), "{origin}");
        }
        for origin in [
            "http://rebind.example:8080",
            "https://admin.example.org",
            "http://127.0.0.1:3000",
            "http://localhost",
            "http://0.0.0.0:8080",
            "null",
            "https://example.com.evil.net",
        ] {
            assert!(!p.is_this_server(origin), "{origin}");
        }
        let specific = policy(&[], &[]);
        specific.bind(&["192.168.1.5:8080".parse().unwrap()]);
        assert!(specific.is_this_server("http://192.168.1.5:8080"));
        assert!(!specific.is_this_server("http://192.168.1.6:8080"));
    }

    #[test]
    fn forwarded_headers_count_only_from_trusted_proxies() {
        let p = policy(&[], &["10.0.0.0/8", "::1"]);
        let client = "203.0.113.7".parse().ok();
        let proxy = "10.1.2.3".parse().ok();
        assert_eq!(p.client_address(client, Some("198.51.100.1")), client, "a client cannot name another");
        assert_eq!(
            p.client_address(proxy, Some("198.51.100.1, 203.0.113.7, 10.9.9.9")),
            client,
            "the nearest untrusted hop"
        );
        assert_eq!(p.client_address(proxy, None), proxy);
        assert_eq!(p.client_address(proxy, Some("junk")), proxy);
        assert!(p.trusts("::ffff:10.0.0.1".parse().ok()));
        let via = |peer, proto| RequestOrigin { peer, forwarded_proto: proto, ..RequestOrigin::default() };
        assert!(p.is_https(&via(proxy, Some("https"))));
        assert!(!p.is_https(&via(client, Some("https"))), "a client cannot say it");

        let asked = RequestOrigin {
            peer: client,
            host: Some("evil.example"),
            forwarded_host: Some("evil.example"),
            forwarded_proto: Some("https"),
        };
        assert_eq!(p.public_origin(&asked), "https://example.com");
        let proxied = RequestOrigin { peer: proxy, ..asked };
        assert_eq!(p.public_origin(&proxied), "https://example.com", "a proxy forwards only names of ours");
        let named = RequestOrigin { forwarded_host: Some("example.com"), ..proxied };
        assert_eq!(p.public_origin(&named), "https://example.com");
        p.bind(&["127.0.0.1:8080".parse().unwrap()]);
        let direct = RequestOrigin { peer: client, host: Some("localhost:8080"), ..RequestOrigin::default() };
        assert_eq!(p.public_origin(&direct), "http://localhost:8080");
        assert!(!p.is_https(&direct));
        // Behind a proxy nobody listed, a request to the site's own name keeps its scheme.
        let public = RequestOrigin { peer: client, host: Some("example.com"), ..RequestOrigin::default() };
        assert_eq!(p.public_origin(&public), "https://example.com");
        assert!(p.is_https(&public));
        let other_port = RequestOrigin { host: Some("example.com:8080"), ..public };
        assert!(!p.is_https(&other_port), "plain HTTP on another port");
    }

    #[test]
    fn forwarded_values_come_from_either_header() {
        let headers =
            [("host", "a:1"), ("forwarded", "for=10.0.0.1;proto=https;host=\"pub.example\", for=x")];
        let get = |name: &str| headers.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
        let read = RequestOrigin::read(None, get);
        assert_eq!(
            (read.host, read.forwarded_host, read.forwarded_proto),
            (Some("a:1"), Some("pub.example"), Some("https"))
        );
    }

    #[test]
    fn ranges() {
        let range = IpRange::parse("192.168.0.0/16").unwrap();
        assert!(range.contains("192.168.44.1".parse().unwrap()));
        assert!(!range.contains("192.169.0.1".parse().unwrap()));
        assert!(IpRange::parse("0.0.0.0/0").unwrap().contains("8.8.8.8".parse().unwrap()));
        assert!(IpRange::parse("fd00::/8").unwrap().contains("fd12::1".parse().unwrap()));
        for bad in ["10.0.0.0/33", "example.com", "10.0.0/8", ""] {
            assert!(IpRange::parse(bad).is_err(), "{bad}");
        }
    }
}
