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
            req = req.with_header(h)?;
        }
        Ok(Some(req))
    }

    /// The request-target as sent: path and `?query`.
    pub fn target(&self) -> String {
        match &self.query {
            Some(q) => format!("{}?{q}", self.path),
            None => self.path.clone(),
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

#[cfg(test)]
mod tests {
    use super::*;

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
