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

//! One reading for all of Apache's address forms: `model::subnet` (also Allow, Deny and
//! `Require ip`).

pub use crate::model::subnet::Subnet;

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::IpAddr;

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
