//! IP subnets for `-R` and `-ipmatch`, read the way APR's `apr_ipsubnet_create()` reads
//! them and tested the way `apr_ipsubnet_test()` tests.
//!
//! | written          | means                                                   |
//! |------------------|---------------------------------------------------------|
//! | `10.1.2.3`       | that one address                                        |
//! | `10.1`, `10.1.`  | the network `10.1.0.0/16` (only without a mask)         |
//! | `10.0.0.0/8`     | a mask in bits: 1 to 32 for IPv4, 1 to 128 for IPv6     |
//! | `10.0.0.0/255.0.0.0` | an IPv4 netmask                                     |
//! | `2001:db8::/32`  | IPv6                                                    |
//! | `::ffff:1.2.3.4` | refused: APR wants mapped addresses written as IPv4     |
//!
//! A `/0` mask is refused, as APR does. An IPv4 subnet also matches a client that comes
//! as an IPv4-mapped IPv6 address.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subnet {
    V4 { net: u32, mask: u32 },
    V6 { net: u128, mask: u128 },
}

impl Subnet {
    /// Reads `addr[/mask]`; `None` where APR reports an error.
    pub fn parse(text: &str) -> Option<Subnet> {
        let (addr, mask) = match text.split_once('/') {
            Some((a, m)) => (a, Some(m)),
            None => (text, None),
        };
        if !looks_like_ip(addr) {
            return None;
        }
        let subnet = if let Ok(v6) = addr.parse::<Ipv6Addr>() {
            if v6.to_ipv4_mapped().is_some() {
                return None;
            }
            Subnet::V6 { net: u128::from(v6), mask: u128::MAX }
        } else if let Ok(v4) = addr.parse::<Ipv4Addr>() {
            Subnet::V4 { net: u32::from(v4), mask: u32::MAX }
        } else if mask.is_none() {
            network(addr)?
        } else {
            return None;
        };
        let subnet = match (subnet, mask) {
            (s, None) => s,
            (Subnet::V4 { net, .. }, Some(m)) => {
                let mask = match bits(m, 32) {
                    Some(b) => u32::MAX << (32 - b),
                    None => u32::from(m.parse::<Ipv4Addr>().ok()?),
                };
                Subnet::V4 { net, mask }
            }
            (Subnet::V6 { net, .. }, Some(m)) => Subnet::V6 { net, mask: u128::MAX << (128 - bits(m, 128)?) },
        };
        Some(match subnet {
            Subnet::V4 { net, mask } => Subnet::V4 { net: net & mask, mask },
            Subnet::V6 { net, mask } => Subnet::V6 { net: net & mask, mask },
        })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(IpAddr::V6(v6)),
            v4 => v4,
        };
        match (self, ip) {
            (Subnet::V4 { net, mask }, IpAddr::V4(a)) => u32::from(a) & mask == *net,
            (Subnet::V6 { net, mask }, IpAddr::V6(a)) => u128::from(a) & mask == *net,
            _ => false,
        }
    }
}

/// APR's first filter: anything with a colon is taken for IPv6, otherwise only digits
/// and dots pass.
fn looks_like_ip(addr: &str) -> bool {
    !addr.is_empty() && (addr.contains(':') || addr.bytes().all(|b| b == b'.' || b.is_ascii_digit()))
}

/// A mask in bits, as `strtol` with nothing after the number; `0` is refused.
fn bits(mask: &str, max: u32) -> Option<u32> {
    let n: i64 = mask.trim_start().parse().ok()?;
    (1..=i64::from(max)).contains(&n).then_some(n as u32)
}

/// The legacy network form: one to four octets, each followed by an optional dot.
fn network(addr: &str) -> Option<Subnet> {
    // APR copies into a buffer of `sizeof "255.255.255.255"`.
    if addr.len() >= 16 {
        return None;
    }
    let (mut net, mut mask) = (0u32, 0u32);
    let mut shift: i32 = 24;
    let mut rest = addr;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || shift < 0 {
            return None;
        }
        let octet: u32 = rest[..digits].parse().ok()?;
        if octet > 255 {
            return None;
        }
        rest = &rest[digits..];
        match rest.strip_prefix('.') {
            Some(r) => rest = r,
            None if rest.is_empty() => {}
            None => return None,
        }
        net |= octet << shift;
        mask |= 0xff << shift;
        shift -= 8;
    }
    Some(Subnet::V4 { net, mask })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn forms_apr_accepts() {
        let cases = [
            ("10.0.0.0/8", "10.200.1.1", true),
            ("10.0.0.0/8", "11.0.0.1", false),
            ("10.1", "10.1.255.3", true),
            ("10.1.", "10.2.0.0", false),
            ("192.168.1.7", "192.168.1.7", true),
            ("192.168.1.7", "192.168.1.8", false),
            ("172.16.0.0/255.240.0.0", "172.31.9.9", true),
            ("172.16.0.0/255.240.0.0", "172.32.0.0", false),
            ("2001:db8::/32", "2001:db8:1::1", true),
            ("2001:db8::/32", "2001:db9::1", false),
            ("10.0.0.0/8", "::ffff:10.9.9.9", true),
            ("10.0.0.0/8", "::1", false),
        ];
        for (subnet, addr, want) in cases {
            let s = Subnet::parse(subnet).unwrap_or_else(|| panic!("{subnet} should parse"));
            assert_eq!(s.contains(ip(addr)), want, "{addr} in {subnet}");
        }
    }

    #[test]
    fn forms_apr_refuses() {
        for bad in [
            "",
            "foo",
            "10.0.0.0/0",
            "10.0.0.0/33",
            "10.1/8",
            "::ffff:1.2.3.4",
            "1.2.3.4.5",
            "300.1",
            "::1/255.0.0.0",
        ] {
            assert_eq!(Subnet::parse(bad), None, "{bad:?}");
        }
    }
}
