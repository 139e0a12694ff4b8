//! An address or network in `Allow from`, `Deny from` and `Require ip`, read as APR's
//! `apr_ipsubnet_create()` reads it (apr/network_io/unix/sockaddr.c), and matched as
//! `apr_ipsubnet_test()` matches a client.
//!
//! | written | APR reads |
//! |---|---|
//! | `10.1.2.3`, `fe80::1` | one address |
//! | `10.1`, `10.1.` | a network of whole octets (only without a mask) |
//! | `10.0.0.0/8`, `10.0.0.0/255.0.0.0` | a network; a dotted mask may have holes |
//! | `0177.0.0.1`, `127.000.000.001` | an address, each octet read in decimal |
//! | `300.1.1.1`, `10.1/8`, `::ffff:10.0.0.1` | an invalid address (Apache refuses the line) |
//! | `10.0.0.0/33`, `10.0.0.0/8.0`, `10.0.0.0/0` | an invalid mask (refused) |
//! | `example.com`, `10.0.0.x` | not an address at all: a host name for Allow/Deny |

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A network: the address bits and the mask, IPv4 in the low 32 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Subnet {
    pub v6: bool,
    pub addr: u128,
    pub mask: u128,
}

/// Why APR does not take a string as an address or network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubnetError {
    /// It does not look like an address at all (APR_EINVAL): a host name to mod_access.
    NotAnAddress,
    /// "The specified IP address is invalid."
    BadAddress,
    /// "The specified network mask is invalid."
    BadMask,
}

impl SubnetError {
    /// Apache's words.
    pub fn message(self) -> &'static str {
        match self {
            SubnetError::NotAnAddress => "An IP address was expected",
            SubnetError::BadAddress => "The specified IP address is invalid.",
            SubnetError::BadMask => "The specified network mask is invalid.",
        }
    }
}

/// `ip` with the optional mask or prefix length `mask`, as `apr_ipsubnet_create` reads it.
pub fn parse(ip: &str, mask: Option<&str>) -> Result<Subnet, SubnetError> {
    if !looks_like_ip(ip) {
        return Err(SubnetError::NotAnAddress);
    }
    let mut s = parse_ip(ip, mask.is_none())?;
    if let Some(m) = mask {
        let max = if s.v6 { 128 } else { 32 };
        match strtol(m) {
            Some(bits) if bits > 0 && bits <= i64::from(max) => {
                let bits = bits as u32;
                let full = if s.v6 { u128::MAX } else { u128::from(u32::MAX) };
                s.mask = full & !(full >> bits);
            }
            _ => match (s.v6, inet_pton4(m)) {
                (false, Some(v)) => s.mask = u128::from(v),
                _ => return Err(SubnetError::BadMask),
            },
        }
    }
    s.addr &= s.mask;
    Ok(s)
}

/// A word of `Allow from` / `Deny from` / `Require ip`, split at its first `/`.
pub fn parse_word(word: &str) -> Result<Subnet, SubnetError> {
    match word.split_once('/') {
        Some((ip, mask)) => parse(ip, Some(mask)),
        None => parse(word, None),
    }
}

impl Subnet {
    /// Reads `addr[/mask]` (a constant of ap_expr's `-R` and `-ipmatch`); None where APR
    /// reports an error.
    pub fn parse(text: &str) -> Option<Subnet> {
        parse_word(text).ok()
    }

    /// The network as lighten.lua's `ip_matches` takes it: `a.b.c.d/m.m.m.m` (the mask may
    /// have holes) or an IPv6 `addr/bits`.
    pub fn lua_form(&self) -> String {
        if self.v6 {
            let bits = self.mask.count_ones();
            return format!("{}/{bits}", Ipv6Addr::from(self.addr));
        }
        format!("{}/{}", Ipv4Addr::from(self.addr as u32), Ipv4Addr::from(self.mask as u32))
    }

    /// Whether a client at `ip` is in the network (an IPv4 network also takes the client
    /// as an IPv4-mapped IPv6 address, as APR does).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.v6, ip) {
            (false, IpAddr::V4(a)) => u128::from(u32::from(a)) & self.mask == self.addr,
            (false, IpAddr::V6(a)) => {
                a.to_ipv4_mapped().is_some_and(|v4| u128::from(u32::from(v4)) & self.mask == self.addr)
            }
            (true, IpAddr::V6(a)) => u128::from(a) & self.mask == self.addr,
            (true, IpAddr::V4(_)) => false,
        }
    }

    /// The network as CIDR when its mask has no holes (lighttpd's `$HTTP["remote-ip"]`
    /// takes only that), with its first address.
    pub fn cidr(&self) -> Option<(String, IpAddr)> {
        let full = if self.v6 { u128::MAX } else { u128::from(u32::MAX) };
        let bits = self.mask.count_ones();
        if self.mask != full & !full.checked_shr(bits).unwrap_or(0) {
            return None;
        }
        let ip = if self.v6 {
            IpAddr::V6(Ipv6Addr::from(self.addr))
        } else {
            IpAddr::V4(Ipv4Addr::from(self.addr as u32))
        };
        Some((format!("{ip}/{bits}"), ip))
    }
}

/// APR's `looks_like_ip`: anything with a colon, or digits and dots only.
fn looks_like_ip(s: &str) -> bool {
    !s.is_empty() && (s.contains(':') || s.bytes().all(|b| b == b'.' || b.is_ascii_digit()))
}

fn parse_ip(s: &str, network_allowed: bool) -> Result<Subnet, SubnetError> {
    if let Ok(a) = s.parse::<Ipv6Addr>() {
        // APR keeps IPv4-mapped addresses out: a.b.c.d must be written as such.
        if a.to_ipv4_mapped().is_some() {
            return Err(SubnetError::BadAddress);
        }
        return Ok(Subnet { v6: true, addr: u128::from(a), mask: u128::MAX });
    }
    if let Some(v) = inet_pton4(s) {
        return Ok(Subnet { v6: false, addr: u128::from(v), mask: u128::from(u32::MAX) });
    }
    if network_allowed { parse_network(s) } else { Err(SubnetError::BadAddress) }
}

/// `inet_pton(AF_INET)` as APR implements it (apr/network_io/unix/inet_pton.c, from
/// BIND): four octets of decimal digits, each at most 255; leading zeros are taken
/// (`127.000.000.001`, `0255.0.0.0` are addresses to APR).
fn inet_pton4(s: &str) -> Option<u32> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut v = 0u32;
    for p in parts {
        if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let mut o = 0u32;
        for b in p.bytes() {
            o = o * 10 + u32::from(b - b'0');
            if o > 255 {
                return None;
            }
        }
        v = v << 8 | o;
    }
    Some(v)
}

/// `strtol(s, &end, 10)` with nothing left after the number: leading blanks and a sign.
fn strtol(s: &str) -> Option<i64> {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'+') => (false, &t[1..]),
        Some(b'-') => (true, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: i64 = digits.parse().ok()?;
    Some(if neg { -n } else { n })
}

/// APR's `parse_network`: up to four components of digits, each an octet read in decimal.
fn parse_network(s: &str) -> Result<Subnet, SubnetError> {
    if s.len() > "255.255.255.255".len() {
        return Err(SubnetError::BadAddress);
    }
    let (mut addr, mut mask, mut shift) = (0u32, 0u32, 24i32);
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(SubnetError::BadAddress);
        }
        let (num, after) = rest.split_at(digits);
        rest = match after.strip_prefix('.') {
            Some(r) => r,
            None if after.is_empty() => after,
            None => return Err(SubnetError::BadAddress),
        };
        if shift < 0 {
            return Err(SubnetError::BadAddress);
        }
        // atoi of a run of at most 15 digits fits
        let octet: u64 = num.parse().map_err(|_| SubnetError::BadAddress)?;
        if octet > 255 {
            return Err(SubnetError::BadAddress);
        }
        addr |= (octet as u32) << shift;
        mask |= 0xff << shift;
        shift -= 8;
    }
    Ok(Subnet { v6: false, addr: u128::from(addr), mask: u128::from(mask) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> Subnet {
        parse_word(s).unwrap_or_else(|e| panic!("{s}: {e:?}"))
    }

    /// Each case as `apache2 -t` judged it on 2.4.71 (Allow from, Deny from, Require ip).
    #[test]
    fn words_read_as_apr_reads_them() {
        assert_eq!(parse_word("10.0.0.0/33"), Err(SubnetError::BadMask));
        assert_eq!(parse_word("10.0.0.0/8.0"), Err(SubnetError::BadMask));
        assert_eq!(parse_word("::ffff:10.0.0.1"), Err(SubnetError::BadAddress));
        assert_eq!(parse_word("300.1.1.1"), Err(SubnetError::BadAddress));
        assert_eq!(parse_word("10.1/8"), Err(SubnetError::BadAddress));
        assert_eq!(parse_word("localhost"), Err(SubnetError::NotAnAddress));
        assert!(parse_word("10.0.0.").is_ok());
        assert!(parse_word("10.0.0.0/255.0.255.0").is_ok());
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(ok("10.1").contains(ip("10.1.2.3")));
        assert!(!ok("10.1").contains(ip("10.2.2.3")));
        assert!(ok("10.0.0.0/8").contains(ip("10.9.9.9")));
        assert!(ok("0177.0.0.1").contains(ip("177.0.0.1")));
        assert!(!ok("0177.0.0.1").contains(ip("127.0.0.1")));
        // APR's inet_pton takes leading zeros, and the prefix as strtol reads it
        assert!(ok("127.000.000.001/8").contains(ip("127.9.9.9")));
        assert!(ok("127.0.0.0/0255.0.0.0").contains(ip("127.9.9.9")));
        assert!(ok("127.0.0.0/+8").contains(ip("127.9.9.9")));
        assert!(ok("127.0.0.0/ 8").contains(ip("127.9.9.9")));
        assert_eq!(parse_word("10.0.0.0/0"), Err(SubnetError::BadMask));
        assert_eq!(parse_word("10.0.0.0/8x"), Err(SubnetError::BadMask));
        assert!(ok("10.0.0.0/255.0.255.0").contains(ip("10.7.0.9")));
        assert!(!ok("10.0.0.0/255.0.255.0").contains(ip("10.7.1.9")));
        assert!(ok("127.0.0.1").contains(ip("::ffff:127.0.0.1")));
        assert!(ok("2001:db8::/32").contains(ip("2001:db8::5")));
        assert_eq!(ok("10.1").cidr().map(|c| c.0), Some("10.1.0.0/16".into()));
        assert_eq!(ok("10.0.0.0/255.0.255.0").cidr(), None);
        assert_eq!(ok("::1").cidr().map(|c| c.0), Some("::1/128".into()));
        assert_eq!(ok("127.0.0.1").cidr().map(|c| c.0), Some("127.0.0.1/32".into()));
        assert_eq!(ok("192.0.2.0/255.255.255.0").cidr().map(|c| c.0), Some("192.0.2.0/24".into()));
        assert_eq!(ok("2001:db8::/32").cidr().map(|c| c.0), Some("2001:db8::/32".into()));
    }
}
