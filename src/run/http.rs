//! A small HTTP/1.1 client that sends exactly the request it is given (raw target, no
//! normalisation, no redirects followed), one connection per request: what a differential
//! test needs to see a server's own answer.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// Sends `method target` with `headers` (the first `Host` among them is used as given) to
/// `addr` and reads the whole answer.
pub fn send(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> io::Result<HttpResponse> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    stream.set_read_timeout(Some(Duration::from_secs(20)))?;
    stream.set_write_timeout(Some(Duration::from_secs(5)))?;
    let mut req = format!("{method} {target} HTTP/1.1\r\n");
    for (n, v) in headers {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    if !body.is_empty() {
        req.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    req.push_str("Connection: close\r\n\r\n");
    stream.write_all(req.as_bytes())?;
    stream.write_all(body)?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    parse(&raw, method == "HEAD")
}

/// Parses a complete response read until the connection closed.
pub fn parse(raw: &[u8], head: bool) -> io::Result<HttpResponse> {
    let mut hdrs = [httparse::EMPTY_HEADER; 128];
    let mut resp = httparse::Response::new(&mut hdrs);
    let status = resp.parse(raw).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
    let httparse::Status::Complete(len) = status else {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "incomplete response head"));
    };
    let code = resp.code.unwrap_or(0);
    let headers: Vec<(String, String)> = resp
        .headers
        .iter()
        .map(|h| (h.name.to_string(), String::from_utf8_lossy(h.value).into_owned()))
        .collect();
    let rest = &raw[len..];
    let chunked = headers.iter().any(|(n, v)| {
        n.eq_ignore_ascii_case("transfer-encoding") && v.to_ascii_lowercase().contains("chunked")
    });
    let body = if head || code == 204 || code == 304 {
        Vec::new()
    } else if chunked {
        dechunk(rest)?
    } else if let Some(cl) = headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("content-length")) {
        let n: usize = cl.1.trim().parse().unwrap_or(rest.len());
        rest[..n.min(rest.len())].to_vec()
    } else {
        rest.to_vec()
    };
    Ok(HttpResponse { status: code, headers, body })
}

fn dechunk(mut data: &[u8]) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    while let Some(eol) = data.windows(2).position(|w| w == b"\r\n") {
        let size_text = String::from_utf8_lossy(&data[..eol]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad chunk size"))?;
        data = &data[eol + 2..];
        if size == 0 {
            break;
        }
        let take = size.min(data.len());
        out.extend_from_slice(&data[..take]);
        data = &data[take..];
        if data.starts_with(b"\r\n") {
            data = &data[2..];
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_length_and_chunked_bodies() {
        let r = parse(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcdef", false).unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, &b"abc"[..]));
        let r = parse(
            b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
            false,
        )
        .unwrap();
        assert_eq!((r.status, r.body.as_slice()), (404, &b"abcde"[..]));
        let r = parse(b"HTTP/1.1 301 Moved\r\nLocation: /x/\r\n\r\n", true).unwrap();
        assert_eq!(r.header("location"), Some("/x/"));
    }
}
