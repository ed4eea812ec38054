//! The SSRF guard of `webfetch`: which addresses count as public, and resolving a host to one
//! address that is then pinned for the connection.
//!
//! Resolving here and handing the address to the client (rather than letting the client resolve
//! again) is what stops DNS rebinding: the name cannot answer a public address to the check and a
//! private one to the connection.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::Url;

use super::error::WebError;

/// Which non-public addresses a fetch may still reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Reach {
    /// Loopback only, for tests against a fake server on 127.0.0.1; private and link-local
    /// stay refused.
    pub loopback: bool,
}

/// Why `ip` is not a public address, or `None` when it is.
pub fn non_public_kind(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_kind(v4),
        IpAddr::V6(v6) => v6_kind(v6),
    }
}

fn v4_kind(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    match (a, b, c) {
        (127, _, _) => Some("loopback"),
        (0, _, _) => Some("unspecified"),
        (10, _, _) => Some("private"),
        (172, 16..=31, _) | (192, 168, _) => Some("private"),
        (169, 254, _) => Some("link-local"),
        (100, 64..=127, _) => Some("shared (carrier-grade NAT)"),
        // IETF protocol assignments and benchmarking nets: never a public web server.
        (192, 0, 0) | (198, 18..=19, _) => Some("reserved"),
        (224..=239, _, _) => Some("multicast"),
        // 240/4 is reserved, and holds the broadcast address.
        (240..=255, _, _) => Some("reserved"),
        _ => None,
    }
}

fn v6_kind(ip: Ipv6Addr) -> Option<&'static str> {
    if ip.is_loopback() {
        return Some("loopback");
    }
    if ip.is_unspecified() {
        return Some("unspecified");
    }
    // IPv4-mapped (::ffff:a.b.c.d) reaches the IPv4 address on a dual-stack socket.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return v4_kind(v4);
    }
    let segments = ip.segments();
    match segments {
        // IPv4-compatible (::a.b.c.d, deprecated) and NAT64 (64:ff9b::/96) embed an IPv4
        // address in the last 32 bits.
        [0, 0, 0, 0, 0, 0, _, _] | [0x64, 0xff9b, 0, 0, 0, 0, _, _] => {
            v4_kind(embedded_v4(segments[6], segments[7]))
        }
        // 6to4 (2002::/16) embeds one in bits 16..48.
        [0x2002, high, low, ..] => v4_kind(embedded_v4(high, low)),
        [first, ..] if first & 0xfe00 == 0xfc00 => Some("private (unique local)"),
        [first, ..] if first & 0xffc0 == 0xfe80 => Some("link-local"),
        [first, ..] if first & 0xffc0 == 0xfec0 => Some("site-local"),
        [first, ..] if first & 0xff00 == 0xff00 => Some("multicast"),
        _ => None,
    }
}

fn embedded_v4(high: u16, low: u16) -> Ipv4Addr {
    let [a, b] = high.to_be_bytes();
    let [c, d] = low.to_be_bytes();
    Ipv4Addr::new(a, b, c, d)
}

/// `ip` may be reached under `reach`, or the error naming why not.
pub fn check(host: &str, ip: IpAddr, reach: Reach) -> Result<(), WebError> {
    match non_public_kind(ip) {
        None => Ok(()),
        Some("loopback") if reach.loopback => Ok(()),
        Some(kind) => Err(WebError::Blocked {
            host: host.to_owned(),
            addr: ip,
            kind,
        }),
    }
}

/// Where a request may connect: the host name to pin (`None` when the URL names an IP address
/// itself, so there is nothing to resolve) and the checked addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pinned {
    pub host: Option<String>,
    pub addrs: Vec<SocketAddr>,
}

/// Resolves the host of `url` and checks every address it answers; one bad answer refuses the
/// name, since a client could pick any of them.
pub async fn resolve(url: &Url, reach: Reach) -> Result<Pinned, WebError> {
    let bad_url = || WebError::BadUrl {
        url: url.to_string(),
    };
    let host = url.host_str().ok_or_else(bad_url)?;
    let port = url.port_or_known_default().ok_or_else(bad_url)?;
    let literal = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = literal.parse::<IpAddr>() {
        check(host, ip, reach)?;
        return Ok(Pinned {
            host: None,
            addrs: vec![SocketAddr::new(ip, port)],
        });
    }
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|source| WebError::Resolve {
            host: host.to_owned(),
            source,
        })?
        .collect();
    pin(host, addrs, reach)
}

/// The checks on a name's answers, apart from the lookup so they can be tested with any answer.
pub fn pin(host: &str, addrs: Vec<SocketAddr>, reach: Reach) -> Result<Pinned, WebError> {
    if addrs.is_empty() {
        return Err(WebError::NoAddress {
            host: host.to_owned(),
        });
    }
    for addr in &addrs {
        check(host, addr.ip(), reach)?;
    }
    Ok(Pinned {
        host: Some(host.to_owned()),
        addrs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(text: &str) -> Option<&'static str> {
        non_public_kind(text.parse().unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)))
    }

    #[test]
    fn refuses_every_non_public_range() {
        for addr in [
            "127.0.0.1",
            "127.8.9.10",
            "0.0.0.0",
            "10.0.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:c0a8:0101::1",
        ] {
            assert!(kind(addr).is_some(), "{addr} should be refused");
        }
    }

    #[test]
    fn lets_public_addresses_through() {
        for addr in [
            "93.184.216.34",
            "1.1.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert_eq!(kind(addr), None, "{addr} is public");
        }
    }

    #[test]
    fn the_test_switch_opens_loopback_only() {
        let reach = Reach { loopback: true };
        let ip = |text: &str| text.parse().unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        assert!(check("h", ip("127.0.0.1"), reach).is_ok());
        assert!(check("h", ip("::1"), reach).is_ok());
        assert!(check("h", ip("::ffff:127.0.0.1"), reach).is_ok());
        assert!(check("h", ip("10.0.0.1"), reach).is_err());
        assert!(check("h", ip("169.254.169.254"), reach).is_err());
        assert!(check("h", ip("127.0.0.1"), Reach::default()).is_err());
    }

    #[test]
    fn one_private_answer_refuses_the_whole_name() {
        let addr = |text: &str| {
            SocketAddr::new(
                text.parse().unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
                80,
            )
        };
        let answers = vec![addr("93.184.216.34"), addr("10.1.2.3")];
        assert!(matches!(
            pin("rebind.example", answers, Reach::default()),
            Err(WebError::Blocked {
                kind: "private",
                ..
            })
        ));
        let public = vec![addr("93.184.216.34"), addr("2606:2800:220:1::1")];
        assert_eq!(
            pin("example.org", public.clone(), Reach::default()).ok(),
            Some(Pinned {
                host: Some("example.org".into()),
                addrs: public
            })
        );
        assert!(matches!(
            pin("none.example", vec![], Reach::default()),
            Err(WebError::NoAddress { .. })
        ));
    }
}
