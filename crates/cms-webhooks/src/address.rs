//! The address policy: which receivers a delivery may reach.
//!
//! A site owner chooses the webhook URLs, and the delivery log shows how each attempt
//! ended, so a URL on the server's own network would let an owner probe it (which ports
//! are open, what the cloud metadata service answers). Unless
//! `webhooks.allow_private_addresses` is true, deliveries go to public addresses only:
//!
//! - when a subscription is added, a host that is an internal address written literally
//!   (in any spelling the resolver accepts: `127.1`, `2130706433`, `0x7f000001`,
//!   `[::ffff:127.0.0.1]`...) or a `localhost` name is refused ([`literal_host_is_internal`]);
//! - when a delivery is due, [`PolicyResolver`] resolves the host itself, refuses the
//!   delivery when any address it resolves to is not public ([`is_public`]), and hands
//!   ureq exactly the addresses it checked, which ureq connects to without resolving
//!   again. A name that resolved to a public address when it was added and to an
//!   internal one now (DNS rebinding) is therefore refused too.
//!
//! Through an HTTP(S) or SOCKS proxy (`HTTPS_PROXY`, ...) the proxy connects: the
//! target's name is resolved and checked here before the request, but the proxy resolves
//! it again, so the proxy must enforce its own rule.

use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::NextTimeout;

/// The setting that lets deliveries reach internal addresses; named in messages.
pub const ALLOW_SETTING: &str = "webhooks.allow_private_addresses";

/// What the delivery log says of a refused delivery: nothing about the address or the
/// port, which is what an owner must not learn.
pub const REFUSED: &str = "refused by the address policy";

/// Whether `ip` is a public unicast address: not loopback, private (RFC 1918, IPv6 ULA
/// `fc00::/7`), link-local (`169.254/16`, `fe80::/10`), shared (CGNAT `100.64/10`),
/// multicast, unspecified, broadcast, "this network" (`0/8`), reserved (`240/4`), nor set
/// aside for documentation, benchmarks or protocol assignments. IPv6 forms that carry an
/// IPv4 address (mapped `::ffff:0:0/96`, compatible `::/96`, NAT64 `64:ff9b::/96`, 6to4
/// `2002::/16`) are judged by that address; other IPv6 addresses must be global unicast
/// (`2000::/3`).
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => ipv4_is_public(v4),
        IpAddr::V6(v6) => ipv6_is_public(v6),
    }
}

fn ipv4_is_public(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let internal = a == 0 // "this network", 0.0.0.0 included
        || a == 10 // private
        || a == 127 // loopback
        || (a == 100 && b & 0xc0 == 64) // shared address space (CGNAT)
        || (a == 169 && b == 254) // link-local: cloud metadata services live here
        || (a == 172 && b & 0xf0 == 16) // private
        || (a == 192 && b == 168) // private
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 192 && b == 0 && c == 2) // documentation (TEST-NET-1)
        || (a == 192 && b == 88 && c == 99) // 6to4 relay anycast (deprecated)
        || (a == 198 && b & 0xfe == 18) // benchmarking
        || (a == 198 && b == 51 && c == 100) // documentation (TEST-NET-2)
        || (a == 203 && b == 0 && c == 113) // documentation (TEST-NET-3)
        || a >= 224; // multicast, reserved, broadcast
    !internal
}

fn ipv6_is_public(ip: Ipv6Addr) -> bool {
    if let Some(v4) = embedded_ipv4(ip) {
        return ipv4_is_public(v4);
    }
    let s = ip.segments();
    // Outside global unicast: unspecified, loopback, ULA, link-local, site-local,
    // multicast, discard-only, local-use NAT64, IPv4-translated.
    let global_unicast = s[0] & 0xe000 == 0x2000;
    // 2001::/23: IETF protocol assignments (Teredo, benchmarking, ORCHID); 2001:db8::/32
    // and 3fff::/20: documentation.
    let set_aside = (s[0] == 0x2001 && (s[1] < 0x0200 || s[1] == 0x0db8)) || s[0] & 0xfff0 == 0x3ff0;
    global_unicast && !set_aside
}

/// The IPv4 address an IPv6 address stands for, in the forms that reach it.
fn embedded_ipv4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let last = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    match s {
        // Mapped (::ffff:a.b.c.d) and compatible (::a.b.c.d; `::` and `::1` are then
        // 0.0.0.0 and 0.0.0.1, both refused as "this network").
        [0, 0, 0, 0, 0, 0xffff | 0, hi, lo] => Some(last(hi, lo)),
        // NAT64's well-known prefix: the gateway connects to the IPv4 address.
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(last(hi, lo)),
        // 6to4: the relay reaches the IPv4 address in bits 16..48.
        [0x2002, hi, lo, ..] => Some(last(hi, lo)),
        _ => None,
    }
}

/// Whether a URL's host (as `http::Uri` gives it: IPv6 in brackets) is an internal
/// address written literally, or a `localhost` name. Other names are judged when a
/// delivery resolves them.
pub fn literal_host_is_internal(host: &str) -> bool {
    literal_address(host).is_some_and(|ip| !is_public(ip)) || is_localhost_name(host)
}

/// The address a host names literally, in every form the system resolver reads as an
/// address: IPv6 in brackets, dotted IPv4, and the numeric forms of `inet_aton` (one to
/// four parts, each decimal, octal with a leading `0` or hex with `0x`: `127.1`,
/// `2130706433`, `0x7f000001`, `0177.0.0.1`). One trailing dot is ignored.
pub fn literal_address(host: &str) -> Option<IpAddr> {
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        // A zone (`fe80::1%eth0`) names a link-local address whatever the zone.
        let address = inner.split('%').next().unwrap_or(inner);
        return address.parse::<Ipv6Addr>().ok().map(IpAddr::V6);
    }
    let host = host.strip_suffix('.').unwrap_or(host);
    inet_aton(host).map(IpAddr::V4)
}

/// `inet_aton`'s reading of a numeric IPv4 address: `a.b.c.d`, `a.b.c` (c 16 bits), `a.b`
/// (b 24 bits), `a` (32 bits).
fn inet_aton(text: &str) -> Option<Ipv4Addr> {
    let parts: Vec<u32> = text.split('.').map(inet_number).collect::<Option<_>>()?;
    let (last, leading) = parts.split_last()?;
    if leading.len() > 3 || leading.iter().any(|part| *part > 255) {
        return None;
    }
    let last_bits = 32 - 8 * leading.len() as u32;
    if last_bits < 32 && *last >> last_bits != 0 {
        return None;
    }
    let high = leading.iter().enumerate().fold(0u32, |acc, (i, part)| acc | part << (24 - 8 * i as u32));
    Some(Ipv4Addr::from(high | last))
}

fn inet_number(part: &str) -> Option<u32> {
    let (digits, radix) = if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
        (hex, 16)
    } else if part.len() > 1 && part.starts_with('0') {
        (&part[1..], 8)
    } else {
        (part, 10)
    };
    if digits.is_empty() {
        // "0x" alone reads as 0; an empty part ("1..2") is not a number.
        return (radix == 16).then_some(0);
    }
    if !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u32::from_str_radix(digits, radix).ok()
}

/// `localhost` and the names under it (RFC 6761: they always resolve to loopback).
fn is_localhost_name(host: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    host == "localhost" || host.ends_with(".localhost")
}

/// The error a refused resolution carries inside `ureq::Error::Io`, so that the delivery
/// log can say [`REFUSED`] and nothing more.
#[derive(Debug)]
pub struct AddressRefused;

impl fmt::Display for AddressRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REFUSED)
    }
}

impl std::error::Error for AddressRefused {}

impl AddressRefused {
    fn error() -> ureq::Error {
        ureq::Error::Io(io::Error::new(io::ErrorKind::PermissionDenied, AddressRefused))
    }

    /// Whether a ureq error is this refusal.
    pub fn is(error: &ureq::Error) -> bool {
        matches!(error, ureq::Error::Io(e) if e.get_ref().is_some_and(|inner| inner.is::<AddressRefused>()))
    }
}

/// ureq's resolver with the policy: resolves as ureq would (the system resolver, within
/// the time-out), then refuses unless every address is public. ureq connects to the
/// addresses returned here and to no other, so what was checked is what is reached.
#[derive(Debug, Default)]
pub struct PolicyResolver {
    system: DefaultResolver,
}

impl Resolver for PolicyResolver {
    fn resolve(
        &self,
        uri: &Uri,
        config: &Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let addresses = self.system.resolve(uri, config, timeout)?;
        // ureq asks for the proxy's own address through this resolver too (passing the
        // proxy's URI itself); the operator chose that one, so it is not judged.
        if config.proxy().is_some_and(|proxy| std::ptr::eq(proxy.uri(), uri)) {
            return Ok(addresses);
        }
        if addresses.iter().all(|address| is_public(address.ip())) {
            Ok(addresses)
        } else {
            Err(AddressRefused::error())
        }
    }
}

/// For a delivery through a proxy, which resolves the target itself: resolves the
/// target's host here (within `timeout`) and refuses when any of its addresses is not
/// public.
pub fn check_proxied_target(uri: &Uri, timeout: std::time::Duration) -> Result<(), ureq::Error> {
    let direct = ureq::Agent::config_builder().proxy(None).build();
    let timeout = NextTimeout { after: timeout.into(), ..NextTimeout::default() };
    PolicyResolver::default().resolve(uri, &direct, timeout).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn only_public_unicast_addresses_are_public() {
        for internal in [
            "0.0.0.0",
            "0.1.2.3",
            "10.1.2.3",
            "100.64.0.1",
            "100.127.255.254",
            "127.0.0.1",
            "127.255.255.254",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "192.88.99.1",
            "192.168.1.1",
            "198.18.0.1",
            "198.19.255.255",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "::ffff:0:7f00:1", // IPv4-translated: outside 2000::/3
            "64:ff9b::7f00:1",
            "64:ff9b:1::1",
            "100::1",
            "2001::1",
            "2001:2::1",
            "2001:db8::1",
            "2002:7f00:1::1",
            "2002:a00:1::1",
            "3fff::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
        ] {
            assert!(!is_public(ip(internal)), "{internal} is internal");
        }
        for public in [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.215.14",
            "100.63.255.255",
            "100.128.0.1",
            "172.15.255.255",
            "172.32.0.1",
            "192.0.1.1",
            "192.169.0.1",
            "198.20.0.1",
            "223.255.255.254",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
            "2606:4700:4700::1111",
            "2a00:1450:4001::200e",
            "2001:4860:4860::8888",
        ] {
            assert!(is_public(ip(public)), "{public} is public");
        }
    }

    #[test]
    fn every_numeric_spelling_of_an_address_is_read_as_the_resolver_reads_it() {
        let loopback = Some(ip("127.0.0.1"));
        for spelling in [
            "127.0.0.1",
            "127.1",
            "127.0.1",
            "2130706433",
            "0x7f000001",
            "0X7F000001",
            "0177.0.0.1",
            "0x7f.1",
            "127.0.0.1.",
        ] {
            assert_eq!(literal_address(spelling), loopback, "{spelling}");
        }
        assert_eq!(literal_address("0"), Some(ip("0.0.0.0")));
        assert_eq!(literal_address("0.0.0.0"), Some(ip("0.0.0.0")));
        assert_eq!(literal_address("169.254.43518"), Some(ip("169.254.169.254")));
        assert_eq!(literal_address("[::1]"), Some(ip("::1")));
        assert_eq!(literal_address("[::ffff:127.0.0.1]"), Some(ip("::ffff:127.0.0.1")));
        assert_eq!(literal_address("[fe80::1%25eth0]"), Some(ip("fe80::1")));
        for name in [
            "example.com",
            "1e100.net",
            "127.0.0.1.nip.io",
            "256.1.1.1",
            "1.2.3.4.5",
            "1..2",
            "08.1.1.1",
            "4294967296",
            "+1.2.3.4",
            "",
        ] {
            assert_eq!(literal_address(name), None, "{name:?}");
        }
    }

    #[test]
    fn internal_literals_and_localhost_names_are_refused_when_added() {
        for host in [
            "127.0.0.1",
            "2130706433",
            "0x7f000001",
            "127.1",
            "0.0.0.0",
            "169.254.169.254",
            "10.0.0.1",
            "[::1]",
            "[::ffff:127.0.0.1]",
            "[fd00::1]",
            "localhost",
            "LOCALHOST.",
            "api.localhost",
        ] {
            assert!(literal_host_is_internal(host), "{host}");
        }
        for host in
            ["hooks.example.com", "8.8.8.8", "[2606:4700:4700::1111]", "localhost.example.com", "mylocalhost"]
        {
            assert!(!literal_host_is_internal(host), "{host}");
        }
    }

    #[test]
    fn the_resolver_refuses_internal_targets_and_lets_the_proxy_itself_through() {
        let proxy = ureq::Proxy::new("http://127.0.0.1:3128").unwrap();
        let config = ureq::Agent::config_builder().proxy(Some(proxy.clone())).build();
        let resolver = PolicyResolver::default();
        let timeout = NextTimeout::default();
        let proxy_uri = config.proxy().unwrap().uri();
        let resolved = resolver.resolve(proxy_uri, &config, timeout).unwrap();
        assert_eq!(resolved[0].ip(), ip("127.0.0.1"), "the configured proxy is not judged");
        // The same address as a target is.
        let target: Uri = "https://127.0.0.1:3128/".parse().unwrap();
        let refused = resolver.resolve(&target, &config, timeout).unwrap_err();
        assert!(AddressRefused::is(&refused), "{refused}");
        let public: Uri = "https://8.8.8.8/".parse().unwrap();
        assert_eq!(resolver.resolve(&public, &config, timeout).unwrap()[0].ip(), ip("8.8.8.8"));
        let second = std::time::Duration::from_secs(1);
        assert!(AddressRefused::is(
            &check_proxied_target(&"https://[::1]/".parse().unwrap(), second).unwrap_err()
        ));
        assert!(check_proxied_target(&"https://1.1.1.1/".parse().unwrap(), second).is_ok());
    }
}
