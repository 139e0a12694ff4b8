//! A request to evaluate or to send: what a browser puts on the wire, reduced to what the
//! servers look at.
//!
//! Written as a URL (`http://example.test/path?q=1`, or a bare `/path`), a method and
//! headers; the same type reads the request files of `lighten verify --requests` and the
//! fixtures' `requests.txt`: one request a line, `METHOD TARGET` then `| Name: value`
//! headers, `#` comments:
//!
//! ```text
//! GET /2024/hello-world/ | Accept-Encoding: gzip
//! POST https://shop.example/cart?add=1 | Cookie: wordpress_logged_in_x=1
//! ```
//!
//! A part in parentheses says how the request goes on the wire when that is not the
//! usual `METHOD /path HTTP/1.1` with the host as Host ([`Wire`]): `| (absolute-form)`,
//! `| (HTTP/1.0, no Host)`, `| (Host: example.test:80)` (that Host header, byte for byte,
//! to the server and port the URL names).

use std::net::IpAddr;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    /// `http` or `https`.
    pub scheme: String,
    /// The Host header as sent (may include `:port`); `None` to use the vhost's name.
    pub host: Option<String>,
    /// The request-target's path, as sent (still percent-encoded).
    pub path: String,
    /// The query after `?`, as sent; `None` when there is no `?`.
    pub query: Option<String>,
    /// Other headers, in order.
    pub headers: Vec<(String, String)>,
    pub remote: IpAddr,
    /// How it goes on the wire (what the servers see besides the above).
    pub wire: Wire,
}

/// How a request goes on the wire, beyond what [`Request`] says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Wire {
    /// `METHOD /path HTTP/1.1` with the Host header.
    #[default]
    Origin,
    /// The request-target in absolute form (`GET http://host/path HTTP/1.1`), the Host
    /// header as usual.
    Absolute,
    /// `METHOD /path HTTP/1.0` and no Host header at all.
    Http10NoHost,
    /// The Host header sent as this value, byte for byte, whatever the request's host and
    /// the port it goes to.
    Host(String),
}

impl Wire {
    /// The request-file part that says this (`None` for [`Wire::Origin`]).
    pub fn part(&self) -> Option<String> {
        match self {
            Wire::Origin => None,
            Wire::Absolute => Some("(absolute-form)".into()),
            Wire::Http10NoHost => Some("(HTTP/1.0, no Host)".into()),
            Wire::Host(h) => Some(format!("(Host: {h})")),
        }
    }

    fn parse(part: &str) -> Result<Wire, String> {
        match part {
            "(absolute-form)" => Ok(Wire::Absolute),
            "(HTTP/1.0, no Host)" => Ok(Wire::Http10NoHost),
            _ => match part.strip_prefix("(Host: ").and_then(|h| h.strip_suffix(')')) {
                Some(h) if !h.is_empty() && !h.contains(['\r', '\n']) => Ok(Wire::Host(h.to_string())),
                _ => Err(format!(
                    "'{part}': a part in parentheses is (absolute-form), (HTTP/1.0, no Host) or (Host: value)"
                )),
            },
        }
    }
}

impl Request {
    /// A request for `url` (`http://host/path?q`, `https://...`, or `/path?q`).
    pub fn parse_url(method: &str, url: &str) -> Result<Request, String> {
        let (scheme, rest) = if let Some(r) = url.strip_prefix("http://") {
            ("http", Some(r))
        } else if let Some(r) = url.strip_prefix("https://") {
            ("https", Some(r))
        } else {
            ("http", None)
        };
        let (host, target) = match rest {
            Some(r) => match r.find('/') {
                Some(i) => (Some(r[..i].to_string()), &r[i..]),
                None => match r.find('?') {
                    Some(i) => (Some(r[..i].to_string()), &r[i..]),
                    None => (Some(r.to_string()), "/"),
                },
            },
            None => (None, url),
        };
        if !target.starts_with('/') && !target.starts_with('?') {
            return Err(format!("'{url}' is neither a URL nor a path starting with '/'"));
        }
        let (path, query) = match target.split_once('?') {
            Some((p, q)) => (p.to_string(), Some(q.to_string())),
            None => (target.to_string(), None),
        };
        let path = if path.is_empty() { "/".to_string() } else { path };
        if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(format!("'{method}' is not an HTTP method"));
        }
        Ok(Request {
            method: method.to_string(),
            scheme: scheme.to_string(),
            host: host.filter(|h| !h.is_empty()),
            path,
            query,
            headers: Vec::new(),
            remote: IpAddr::from([127, 0, 0, 1]),
            wire: Wire::Origin,
        })
    }

    /// `Name: value` added to the headers; a `Host` header sets the host.
    pub fn with_header(mut self, line: &str) -> Result<Request, String> {
        let (n, v) = line.split_once(':').ok_or_else(|| format!("header '{line}' has no ':'"))?;
        let (n, v) = (n.trim(), v.trim());
        if n.is_empty() || n.contains(char::is_whitespace) {
            return Err(format!("header '{line}' has no valid name"));
        }
        if n.eq_ignore_ascii_case("host") {
            self.host = Some(v.to_string());
        } else {
            self.headers.push((n.to_string(), v.to_string()));
        }
        Ok(self)
    }

    /// One line of a request file; `Ok(None)` for blank and comment lines.
    pub fn parse_line(line: &str) -> Result<Option<Request>, String> {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return Ok(None);
        }
        let mut parts = line.split(" | ");
        let first = parts.next().unwrap_or("");
        let (method, url) =
            first.split_once(' ').ok_or_else(|| format!("'{first}' needs a method and a URL"))?;
        let mut req = Request::parse_url(method.trim(), url.trim())?;
        for h in parts {
            if h.trim_start().starts_with('(') {
                req.wire = Wire::parse(h.trim())?;
            } else {
                req = req.with_header(h)?;
            }
        }
        Ok(Some(req))
    }

    /// The Host header this request carries on the wire when sent to `host`: the
    /// [`Wire`]'s own value, none for HTTP/1.0 without Host, else `host`.
    pub fn host_header(&self, host: &str) -> Option<String> {
        match &self.wire {
            Wire::Host(h) => Some(h.clone()),
            Wire::Http10NoHost => None,
            Wire::Origin | Wire::Absolute => Some(host.to_string()),
        }
    }

    /// The request-target as sent: path and `?query`.
    pub fn target(&self) -> String {
        match &self.query {
            Some(q) => format!("{}?{q}", self.path),
            None => self.path.clone(),
        }
    }

    /// The protocol of the request line.
    pub fn protocol(&self) -> &'static str {
        if self.wire == Wire::Http10NoHost { "HTTP/1.0" } else { "HTTP/1.1" }
    }

    /// The request-target as sent: absolute-form keeps the scheme and authority.
    pub fn target_as_sent(&self) -> String {
        match (&self.wire, &self.host) {
            (Wire::Absolute, Some(h)) => format!("{}://{h}{}", self.scheme, self.target()),
            _ => self.target(),
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        if name.eq_ignore_ascii_case("host") {
            return self.host.as_deref();
        }
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The line that reads back as this request.
    pub fn to_line(&self) -> String {
        let mut s = format!("{} ", self.method);
        if self.scheme == "https" || self.host.is_some() {
            s.push_str(&format!("{}://{}", self.scheme, self.host.as_deref().unwrap_or("")));
        }
        s.push_str(&self.target());
        for (n, v) in &self.headers {
            s.push_str(&format!(" | {n}: {v}"));
        }
        if let Some(p) = self.wire.part() {
            s.push_str(&format!(" | {p}"));
        }
        s
    }
}

/// Reads a request file; errors carry the line number.
pub fn parse_file(text: &str) -> Result<Vec<Request>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        match Request::parse_line(line) {
            Ok(Some(r)) => out.push(r),
            Ok(None) => {}
            Err(e) => return Err(format!("line {}: {e}", i + 1)),
        }
    }
    Ok(out)
}

/// Whether Apache 2.4 takes `host` (a Host header's value, or an absolute-form target's
/// authority) as a host name; it answers 400 to any other ("Client sent malformed Host
/// header"). vhost.c's `fix_hostname` under `HttpProtocolOptions Strict` (the default)
/// after `apr_parse_addr_port`, measured on 2.4.71: an optional `:port` of digits (1 to
/// 65535, leading zeros allowed); a bracketed IPv6 address without a zone; otherwise
/// letters, digits, `-`, `_` and `.`, no `..`, one trailing dot ignored, a name of digits
/// and dots only a dotted quad without leading zeros, and the last label of any other
/// name starting with a letter. An empty value is not judged here.
pub fn apache_host_ok(host: &str) -> bool {
    if host.is_empty() {
        return true;
    }
    let b = host.as_bytes();
    // apr_parse_addr_port: trailing digits after a ':' are the port.
    let digits = b.iter().rev().take_while(|c| c.is_ascii_digit()).count();
    let (name, port) = if digits == b.len() {
        // All digits: a port without an address, which Apache then takes as the name.
        (host, Some(host))
    } else if b[b.len() - digits - 1] == b':' && (b[0] != b'[' || b[b.len() - digits - 2] == b']') {
        (&host[..b.len() - digits - 1], Some(&host[b.len() - digits..]))
    } else {
        (host, None)
    };
    if let Some(p) = port
        && (p.is_empty() || !matches!(p.trim_start_matches('0').parse::<u32>(), Ok(1..=65535)))
    {
        return false;
    }
    if let Some(inner) = name.strip_prefix('[') {
        return inner.strip_suffix(']').is_some_and(ipv6_ok);
    }
    // fix_hostname_non_v6
    if name.contains("..") || name.contains(['/', '\\']) {
        return false;
    }
    let name = name.strip_suffix('.').unwrap_or(name);
    // strict_hostname_check
    if !name.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.')) {
        return false;
    }
    if name.bytes().all(|c| c.is_ascii_digit() || c == b'.') {
        let quad: Vec<&str> = name.split('.').collect();
        return quad.len() == 4 && quad.iter().all(|o| !(o.is_empty() || o.len() > 1 && o.starts_with('0')));
    }
    match name.rfind('.') {
        Some(i) if i + 1 < name.len() => name.as_bytes()[i + 1].is_ascii_alphabetic(),
        _ => true,
    }
}

/// An IPv6 address as inet_pton reads it (groups of 1-4 hex digits, one `::` at most, an
/// IPv4 dotted quad at the end), without a zone.
fn ipv6_ok(s: &str) -> bool {
    if s.is_empty() || s.contains(":::") || s.matches("::").count() > 1 {
        return false;
    }
    let (head, tail) = match s.split_once("::") {
        Some((h, t)) => (h, Some(t)),
        None => (s, None),
    };
    let groups = |part: &str| -> Option<usize> {
        if part.is_empty() {
            return Some(0);
        }
        let mut n = 0;
        let items: Vec<&str> = part.split(':').collect();
        for (k, g) in items.iter().enumerate() {
            if k + 1 == items.len() && g.contains('.') {
                let quad: Vec<&str> = g.split('.').collect();
                let ok = quad.len() == 4
                    && quad.iter().all(|o| {
                        !o.is_empty()
                            && o.len() <= 3
                            && o.bytes().all(|c| c.is_ascii_digit())
                            && !(o.len() > 1 && o.starts_with('0'))
                            && o.parse::<u32>().is_ok_and(|v| v <= 255)
                    });
                if !ok {
                    return None;
                }
                n += 2;
            } else if g.is_empty() || g.len() > 4 || !g.bytes().all(|c| c.is_ascii_hexdigit()) {
                return None;
            } else {
                n += 1;
            }
        }
        Some(n)
    };
    // A dotted quad only ends the address.
    if tail.is_some() && head.contains('.') {
        return false;
    }
    match (groups(head), tail.map(groups)) {
        (Some(h), None) => h == 8,
        (Some(h), Some(Some(t))) => h + t <= 7,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_as_apache_reads_them() {
        // Measured on Apache 2.4.71 (fixtures/regress/host-as-sent): 200 or 400.
        let ok = [
            "example.test",
            "EXAMPLE.TEST",
            "example.test:80",
            "example.test.",
            "example.test.:80",
            "a_b.example",
            "a-b.example",
            "-a.example",
            "_a.example",
            ".example",
            "a-.example",
            "example.test.:08",
            "example.test:080",
            "example.test:65535",
            "[::1]",
            "[::1]:80",
            "[::FFFF:1.2.3.4]",
            "1.2.3.4",
            "1.2.3.4:80",
            "a.b.c.d.e.f",
            "xn--bcher-kva.example",
            "a0b.example",
        ];
        let refused = [
            "a b",
            "x/y",
            "x\\y",
            "[::1",
            "example.test:",
            "example.test:abc",
            "example.test:0",
            "example.test:99999",
            "example.test:65536",
            "...",
            "a..b",
            "example..",
            "[fe80::1%25eth0]",
            "example.test:80:80",
            "ex%41mple.test",
            "ex~mple",
            ".",
            "01.2.3.4",
            "1.2.3",
            "1.2.3.4.5",
            "example.1com",
            "example.123",
            "[::1]:",
            "[::1]x",
            "[v1.x]",
            "a\tb",
            "\"quoted\"",
            "example.test, other.test",
            "a!b.example",
            "a:b.example",
            "a;b.example",
            "a@b.example",
            "a*b.example",
            "a[b.example",
            "a]b.example",
        ];
        for h in ok {
            assert!(apache_host_ok(h), "{h} is a host name for Apache");
        }
        for h in refused {
            assert!(!apache_host_ok(h), "Apache answers 400 for {h}");
        }
    }

    #[test]
    fn urls_and_lines() {
        let r = Request::parse_url("GET", "http://example.test/a%20b?x=1").unwrap();
        assert_eq!(
            (r.host.as_deref(), r.path.as_str(), r.query.as_deref()),
            (Some("example.test"), "/a%20b", Some("x=1"))
        );
        let r = Request::parse_line("POST https://shop.example/?add | Cookie: a=b | Host: other")
            .unwrap()
            .unwrap();
        assert_eq!(
            (r.method.as_str(), r.scheme.as_str(), r.host.as_deref()),
            ("POST", "https", Some("other"))
        );
        assert_eq!(r.header("cookie"), Some("a=b"));
        assert_eq!(r.query.as_deref(), Some("add"));
        assert!(Request::parse_line("# comment").unwrap().is_none());
        assert!(Request::parse_line("GET nowhere").is_err());
        let line = "GET http://h.test/x?y | Accept-Encoding: gzip";
        assert_eq!(Request::parse_line(line).unwrap().unwrap().to_line(), line);
    }
}
