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

    /// Every value of a header, joined with `, ` as one list (RFC 9110, 5.3).
    pub fn header_joined(&self, name: &str) -> Option<String> {
        let vals: Vec<&str> = self
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect();
        if vals.is_empty() { None } else { Some(vals.join(", ")) }
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
    send_version(addr, "HTTP/1.1", method, target, headers, body)
}

/// Like [`send`], with the request line's protocol `version` as given ("HTTP/1.0").
pub fn send_version(
    addr: SocketAddr,
    version: &str,
    method: &str,
    target: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> io::Result<HttpResponse> {
    let mut stream = connect(addr)?;
    exchange(&mut stream, version, method, target, headers, body)
}

/// Like [`send_version`], over TLS with `server_name` as SNI.  The certificate is not checked:
/// the peer is a server this process started on loopback, often with a self-signed
/// certificate made for the occasion.
pub fn send_tls(
    addr: SocketAddr,
    server_name: &str,
    version: &str,
    method: &str,
    target: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> io::Result<HttpResponse> {
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .dangerous()
        .with_custom_certificate_verifier(std::sync::Arc::new(AnyCertificate(provider)))
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from(server_name.to_string())
        .or_else(|_| rustls::pki_types::ServerName::try_from("localhost".to_string()))
        .map_err(io::Error::other)?;
    let conn = rustls::ClientConnection::new(std::sync::Arc::new(config), name).map_err(io::Error::other)?;
    let mut tls = rustls::StreamOwned::new(conn, connect(addr)?);
    exchange(&mut tls, version, method, target, headers, body)
}

fn connect(addr: SocketAddr) -> io::Result<TcpStream> {
    let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    stream.set_read_timeout(Some(Duration::from_secs(20)))?;
    stream.set_write_timeout(Some(Duration::from_secs(5)))?;
    Ok(stream)
}

fn exchange(
    stream: &mut impl ReadWrite,
    version: &str,
    method: &str,
    target: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> io::Result<HttpResponse> {
    let mut req = format!("{method} {target} {version}\r\n");
    for (n, v) in headers {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    // A body, or a method that carries one: browsers always say its length.
    if !body.is_empty() || matches!(method, "POST" | "PUT" | "PATCH") {
        req.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    req.push_str("Connection: close\r\n\r\n");
    stream.write_all(req.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()?;
    let mut raw = Vec::new();
    let mut buf = [0u8; 16384];
    // Until the server closes, or the whole answer is here: a server may keep the
    // connection a while after answering (lighttpd's lingering close after a refused
    // password takes a second). A TLS peer may close without close_notify; what arrived
    // is the answer.
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                raw.extend_from_slice(&buf[..n]);
                if complete(&raw, method == "HEAD") {
                    break;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if !raw.is_empty() && e.kind() == io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(e),
        }
    }
    parse(&raw, method == "HEAD")
}

/// Whether `raw` holds a whole answer: its head, and the body its Content-Length or
/// chunked framing says (none for HEAD, 1xx, 204 and 304). Without either, only the
/// server's close ends it.
fn complete(raw: &[u8], head: bool) -> bool {
    let mut hdrs = [httparse::EMPTY_HEADER; 128];
    let mut resp = httparse::Response::new(&mut hdrs);
    let Ok(httparse::Status::Complete(len)) = resp.parse(raw) else { return false };
    let code = resp.code.unwrap_or(0);
    if head || code == 204 || code == 304 || (100..200).contains(&code) {
        return true;
    }
    let rest = &raw[len..];
    let value = |name: &str| {
        resp.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_ascii_lowercase())
    };
    if value("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        return chunked_end(rest);
    }
    match value("content-length").and_then(|v| v.parse::<usize>().ok()) {
        Some(n) => rest.len() >= n,
        None => false,
    }
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// Accepts whatever certificate the loopback server shows, but still checks that the
/// handshake signatures are sound.
#[derive(Debug)]
struct AnyCertificate(std::sync::Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
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

/// Whether a chunked body has come to its last chunk and the empty line after it (or
/// after its trailers).
fn chunked_end(mut data: &[u8]) -> bool {
    loop {
        let Some(eol) = data.windows(2).position(|w| w == b"\r\n") else { return false };
        let size_text = String::from_utf8_lossy(&data[..eol]);
        let Ok(size) = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16) else {
            return true; // malformed: parse() says so
        };
        data = &data[eol + 2..];
        if size == 0 {
            return data.starts_with(b"\r\n") || data.windows(4).any(|w| w == b"\r\n\r\n");
        }
        if data.len() < size + 2 {
            return false;
        }
        data = &data[size + 2..];
    }
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
    fn an_answer_is_complete_by_its_framing() {
        assert!(complete(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 3\r\n\r\nabc", false));
        assert!(!complete(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 3\r\n\r\nab", false));
        assert!(complete(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n", true));
        assert!(!complete(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n", false));
        assert!(!complete(b"HTTP/1.1 200 OK\r\n\r\nabc", false));
        assert!(complete(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
            false
        ));
        assert!(!complete(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n", false));
    }

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
