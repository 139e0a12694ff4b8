//! `--shard K/N`: which accounts of a server one run converts, so that N machines (or N
//! runs) share the work and together convert every account exactly once.
//!
//! An account belongs to shard `1 + fnv1a64(domain) mod N` (FNV-1a, 64 bits, over the
//! bytes of the domain's folder name).  A hash of the name rather than a position in the
//! sorted list keeps every account in its shard when others are added or removed, so a
//! fleet that re-runs keeps writing each account's folder from the same machine.

use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// Shard `index` (1-based) of `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// The whole server.
    pub const ALL: Shard = Shard { index: 1, count: 1 };

    pub fn contains(self, domain: &str) -> bool {
        fnv1a64(domain.as_bytes()) % u64::from(self.count) == u64::from(self.index - 1)
    }

    pub fn is_all(self) -> bool {
        self.count == 1
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || "expected K/N with 1 <= K <= N, e.g. 2/4".to_string();
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) =
            (k.trim().parse::<u32>().map_err(|_| bad())?, n.trim().parse::<u32>().map_err(|_| bad())?);
        if index == 0 || count == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// FNV-1a, 64 bits: fixed by its definition, so shards stay the same across versions and
/// machines (std's hashers promise neither).
fn fnv1a64(bytes: &[u8]) -> u64 {
    fnv1a64_from(FNV1A64_OFFSET, bytes)
}

/// FNV-1a 64's starting value.
pub(crate) const FNV1A64_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a 64 of `bytes` continued from `h` (a digest of several parts).
pub(crate) fn fnv1a64_from(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_refuses() {
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { index: 2, count: 4 }));
        assert_eq!("1/1".parse::<Shard>(), Ok(Shard::ALL));
        for bad in ["0/2", "3/2", "1/0", "1", "a/b", "1/2/3", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn shards_cover_every_domain_once() {
        // The published test vector of FNV-1a 64.
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        let domains: Vec<String> = (0..1000).map(|i| format!("d{i:04}.example")).collect();
        for n in 1..=5 {
            let mut sizes = vec![0usize; n as usize];
            for d in &domains {
                let owners: Vec<u32> =
                    (1..=n).filter(|&k| Shard { index: k, count: n }.contains(d)).collect();
                assert_eq!(owners.len(), 1, "{d} in shards {owners:?} of {n}");
                sizes[owners[0] as usize - 1] += 1;
            }
            // Roughly even: no shard below half its fair share.
            assert!(sizes.iter().all(|&s| s * n as usize * 2 >= domains.len()), "{n}: {sizes:?}");
        }
    }
}
