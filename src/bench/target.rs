//! What a benchmark asks for: the address to connect to and the request bytes,
//! built once and sent as they are for every request.

use std::net::{SocketAddr, ToSocketAddrs};

#[derive(Clone, Debug)]
pub struct Target {
    pub addr: SocketAddr,
    /// The Host header as sent (with the port when it is not 80).
    pub host: String,
    pub port: u16,
    /// Path and query as sent.
    pub path: String,
    pub method: String,
    /// The whole request, ready to write.
    pub request: Vec<u8>,
    /// HEAD answers have no body, whatever their Content-Length says.
    pub head: bool,
}

impl Target {
    /// `http://host[:port]/path?query`; `extra` headers are sent as given (a `Host`
    /// among them replaces the URL's). Without `keep_alive` each request asks the
    /// server to close (`Connection: close`), as ab does without `-k`.
    pub fn new(
        url: &str,
        method: &str,
        extra: &[(String, String)],
        keep_alive: bool,
    ) -> Result<Target, String> {
        let rest = if let Some(r) = url.strip_prefix("http://") {
            r
        } else if url.starts_with("https://") {
            return Err(format!(
                "{url}: https is not supported by the load generator; benchmark the http listener"
            ));
        } else {
            return Err(format!("{url}: not an http:// URL"));
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if authority.is_empty() {
            return Err(format!("{url}: no host"));
        }
        let (hostname, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => {
                let port = p.parse::<u16>().map_err(|_| format!("{url}: bad port '{p}'"))?;
                (h, port)
            }
            _ => (authority, 80),
        };
        let lookup = hostname.trim_start_matches('[').trim_end_matches(']');
        let addr = (lookup, port)
            .to_socket_addrs()
            .map_err(|e| format!("{url}: cannot resolve {lookup}: {e}"))?
            .next()
            .ok_or_else(|| format!("{url}: {lookup} has no address"))?;
        let method = method.to_ascii_uppercase();
        if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(format!("'{method}' is not an HTTP method"));
        }
        let host = extra
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("host"))
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| authority.to_string());
        let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\n");
        let has = |name: &str| extra.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
        // A short request, as wrk sends: every byte is parsed by the server under test.
        // (No Accept: its absence means */*.)
        if !has("user-agent") {
            req.push_str("User-Agent: lighten\r\n");
        }
        for (n, v) in extra.iter().filter(|(n, _)| !n.eq_ignore_ascii_case("host")) {
            if n.is_empty() || n.bytes().any(|b| b <= b' ' || b == b':') || v.contains(['\r', '\n']) {
                return Err(format!("header '{n}: {v}' is not valid"));
            }
            req.push_str(&format!("{n}: {v}\r\n"));
        }
        if !keep_alive && !has("connection") {
            req.push_str("Connection: close\r\n");
        }
        req.push_str("\r\n");
        Ok(Target {
            addr,
            host,
            port,
            path: path.to_string(),
            head: method == "HEAD",
            method,
            request: req.into_bytes(),
        })
    }
}

/// `Name: value` from the command line.
pub fn parse_header(line: &str) -> Result<(String, String), String> {
    let (n, v) = line.split_once(':').ok_or_else(|| format!("header '{line}' has no ':'"))?;
    Ok((n.trim().to_string(), v.trim().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_bytes() {
        let h = vec![("Accept-Encoding".to_string(), "gzip".to_string())];
        let t = Target::new("http://127.0.0.1:8080/a?b=1", "get", &h, false).unwrap();
        assert_eq!((t.port, t.path.as_str(), t.host.as_str()), (8080, "/a?b=1", "127.0.0.1:8080"));
        let text = String::from_utf8(t.request).unwrap();
        assert!(text.starts_with("GET /a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"), "{text}");
        assert!(text.contains("Accept-Encoding: gzip\r\n") && text.ends_with("Connection: close\r\n\r\n"));
        let t = Target::new("http://localhost", "HEAD", &[("Host".into(), "x.test".into())], true).unwrap();
        let text = String::from_utf8(t.request).unwrap();
        assert!(text.starts_with("HEAD / HTTP/1.1\r\nHost: x.test\r\n") && !text.contains("Connection"));
        assert!(t.head);
        assert!(Target::new("https://x/", "GET", &[], true).is_err());
        assert!(Target::new("http://x:99999/", "GET", &[], true).is_err());
    }
}
