//! Virtual hosts: their addresses, names, and which one Apache picks by default for each
//! address.
//!
//! Apache groups virtual hosts by the address:port they list; for a request on that
//! address it picks the one whose ServerName or ServerAlias matches the Host header, and
//! otherwise the first one listed for the address (the default).  `*:port` vhosts serve
//! addresses no IP-specific vhost claims.  A vhost without a port listens on any port.
//! Follows <https://httpd.apache.org/docs/2.4/vhosts/details.html>.

use super::Scope;
use super::server::split_host_port;
use crate::source::Span;
use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct VhostAddr {
    /// `*`, `_default_`, an IP (IPv6 in brackets) or a host name.
    pub host: String,
    /// `None` for any port.
    pub port: Option<u16>,
    pub at: Span,
}

impl VhostAddr {
    pub fn parse(spec: &str, at: Span) -> VhostAddr {
        let (host, port) = split_host_port(spec);
        let host = host.unwrap_or_else(|| "*".to_string());
        let port = port.and_then(|p| if p == "*" { None } else { p.parse().ok() });
        VhostAddr { host, port, at }
    }

    pub fn key(&self) -> String {
        match self.port {
            Some(p) => format!("{}:{p}", self.host),
            None => format!("{}:*", self.host),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct VirtualHost {
    pub addresses: Vec<VhostAddr>,
    /// ServerName, or the main server's when the vhost has none (as Apache inherits it).
    pub server_name: Option<String>,
    pub aliases: Vec<String>,
    /// DocumentRoot, inherited from the main server when absent.
    pub document_root: Option<String>,
    /// `UseCanonicalName`, inherited; Apache's default is `Off`.
    pub use_canonical_name: String,
    /// Address keys for which this vhost answers requests no name matches.
    pub default_for: Vec<String>,
    /// TLS is switched on (`SSLEngine on`).
    pub tls: bool,
    /// The top-level sections of the main server and this vhost in the order Apache
    /// applies them to a request of this vhost.
    pub merge_order: Vec<SectionRef>,
    pub scope: Scope,
}

impl VirtualHost {
    /// How reports name the vhost at index `i` of the model: `vhost 2 example.com`.
    pub fn label(&self, i: usize) -> String {
        format!("vhost {} {}", i + 1, self.server_name.as_deref().unwrap_or("(no name)"))
    }
}

/// A section as listed in a merge order.
#[derive(Clone, Debug, Serialize)]
pub struct SectionRef {
    /// Apache's merge group: 1 `<Directory>` (+ .htaccess), 2 directory regexes, 3 files,
    /// 4 locations, 5 `<If>`.
    pub group: u8,
    /// `<Directory "/var/www">` and the like.
    pub section: String,
    /// From the main server (applied before the vhost's own sections of the same group).
    pub inherited: bool,
    pub at: Span,
}

/// Whether a `<VirtualHost>` address's host is a wildcard to Apache: `*`, `_default_`, and
/// the unspecified addresses `0.0.0.0` and `::` (checked with Apache: a
/// `<VirtualHost 0.0.0.0:80>` is chosen as a `*:80` one is).
pub fn is_wildcard_host(h: &str) -> bool {
    matches!(h, "*" | "_default_" | "0.0.0.0" | "::" | "[::]" | "")
}

/// Marks, for each address, the first vhost that lists it.
pub fn mark_defaults(vhosts: &mut [VirtualHost]) {
    let mut seen: Vec<String> = Vec::new();
    for v in vhosts.iter_mut() {
        for a in &v.addresses {
            let key = a.key();
            if !seen.contains(&key) {
                seen.push(key.clone());
                v.default_for.push(key);
            }
        }
    }
}

/// Apache's wildcard match for ServerAlias (`*` and `?`, case-insensitive).
pub fn name_matches(pattern: &str, host: &str) -> bool {
    let p: Vec<char> = pattern.to_ascii_lowercase().chars().collect();
    let h: Vec<char> = host.to_ascii_lowercase().chars().collect();
    fn go(p: &[char], h: &[char]) -> bool {
        match p.split_first() {
            None => h.is_empty(),
            Some(('*', rest)) => (0..=h.len()).any(|i| go(rest, &h[i..])),
            Some(('?', rest)) => !h.is_empty() && go(rest, &h[1..]),
            Some((c, rest)) => h.first() == Some(c) && go(rest, &h[1..]),
        }
    }
    go(&p, &h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards() {
        assert!(name_matches("*.static.example", "www.static.example"));
        assert!(!name_matches("*.static.example", "static.example"));
        assert!(name_matches("WWW.Example.com", "www.example.com"));
        assert!(name_matches("host?.example", "host1.example"));
    }
}
