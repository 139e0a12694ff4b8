//! A lean HTTP/1.1 response reader for the load generator: the head is parsed with
//! httparse straight from the connection's buffer, the body is only counted (never
//! stored), by Content-Length, chunked framing, or until the server closes.

/// Where a response stands after some bytes.
#[derive(Debug, PartialEq, Eq)]
pub enum Progress {
    /// More bytes are needed.
    More,
    /// The response is complete; `keep_alive` says whether the connection may carry
    /// another request.
    Done { keep_alive: bool },
}

/// A response that cannot be read.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Malformed {
    Head,
    HeadTooLarge,
    Length,
    Chunk,
}

#[derive(Debug, Clone, Copy)]
enum Body {
    Length(u64),
    Chunked(Chunk),
    UntilClose,
}

#[derive(Debug, Clone, Copy)]
enum Chunk {
    Size { value: u64, digits: u8 },
    Extension(u64),
    SizeLf(u64),
    Data(u64),
    DataCr,
    DataLf,
    TrailerLineStart,
    TrailerLine,
    TrailerEndLf,
}

/// One response being read.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    /// Body bytes as the application sent them (chunk framing not counted).
    pub body_bytes: u64,
    /// Every byte received for this response, head included.
    pub total_bytes: u64,
    keep_alive: bool,
    body: Option<Body>,
}

impl Default for Response {
    fn default() -> Self {
        Self::new()
    }
}

impl Response {
    pub fn new() -> Response {
        Response { status: 0, body_bytes: 0, total_bytes: 0, keep_alive: true, body: None }
    }

    pub fn reset(&mut self) {
        *self = Response::new();
    }

    /// Whether the head has been read.
    pub fn in_body(&self) -> bool {
        self.body.is_some()
    }

    /// Parses the head from the start of `buf`. Once it is complete, the caller drops
    /// the head's bytes and passes the rest to [`Response::body`] (or, after an interim
    /// 1xx answer, to `head` again). `server` receives the Server header when asked for.
    pub fn head(
        &mut self,
        buf: &[u8],
        head_request: bool,
        server: Option<&mut String>,
    ) -> Result<Head, Malformed> {
        let mut headers = [httparse::EMPTY_HEADER; 48];
        let mut r = httparse::Response::new(&mut headers);
        let n = match r.parse(buf) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return Ok(Head::Partial),
            Err(httparse::Error::TooManyHeaders) => return Err(Malformed::HeadTooLarge),
            Err(_) => return Err(Malformed::Head),
        };
        let status = r.code.unwrap_or(0);
        let http10 = r.version == Some(0);
        let mut length = None;
        let mut chunked = false;
        let mut close = http10;
        for h in r.headers.iter() {
            let name = h.name.as_bytes();
            if name.eq_ignore_ascii_case(b"content-length") {
                length = Some(parse_length(h.value).ok_or(Malformed::Length)?);
            } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
                chunked = last_token(h.value).eq_ignore_ascii_case(b"chunked");
            } else if name.eq_ignore_ascii_case(b"connection") {
                for t in h.value.split(|&b| b == b',') {
                    let t = trim(t);
                    if t.eq_ignore_ascii_case(b"close") {
                        close = true;
                    } else if t.eq_ignore_ascii_case(b"keep-alive") && http10 {
                        close = false;
                    }
                }
            }
        }
        if let Some(s) = server
            && let Some(h) = r.headers.iter().find(|h| h.name.eq_ignore_ascii_case("server"))
        {
            *s = String::from_utf8_lossy(h.value).into_owned();
        }
        if (100..200).contains(&status) && status != 101 {
            // An interim answer (100 Continue): the real one follows.
            self.total_bytes += n as u64;
            return Ok(Head::Interim(n));
        }
        self.status = status;
        self.total_bytes += n as u64;
        self.keep_alive = !close;
        let no_body = head_request || status == 204 || status == 304;
        self.body = Some(if no_body {
            Body::Length(0)
        } else if chunked {
            Body::Chunked(Chunk::Size { value: 0, digits: 0 })
        } else if let Some(l) = length {
            Body::Length(l)
        } else {
            self.keep_alive = false;
            Body::UntilClose
        });
        Ok(Head::Complete(n))
    }

    /// Counts body bytes; `Done` once the body is complete. Bytes after the end of the
    /// response are ignored (the generator does not pipeline).
    pub fn body(&mut self, data: &[u8]) -> Result<Progress, Malformed> {
        let Some(body) = self.body.as_mut() else { return Ok(Progress::More) };
        match body {
            Body::Length(left) => {
                let take = (*left).min(data.len() as u64);
                *left -= take;
                self.body_bytes += take;
                self.total_bytes += take;
                if *left == 0 {
                    return Ok(Progress::Done { keep_alive: self.keep_alive });
                }
                Ok(Progress::More)
            }
            Body::UntilClose => {
                self.body_bytes += data.len() as u64;
                self.total_bytes += data.len() as u64;
                Ok(Progress::More)
            }
            Body::Chunked(state) => {
                let mut i = 0;
                while i < data.len() {
                    let b = data[i];
                    match *state {
                        Chunk::Size { value, digits } => {
                            if let Some(d) = (b as char).to_digit(16) {
                                if digits >= 15 {
                                    return Err(Malformed::Chunk);
                                }
                                *state = Chunk::Size { value: value * 16 + d as u64, digits: digits + 1 };
                            } else if digits == 0 {
                                return Err(Malformed::Chunk);
                            } else {
                                *state = match b {
                                    b';' | b' ' | b'\t' => Chunk::Extension(value),
                                    b'\r' => Chunk::SizeLf(value),
                                    b'\n' => chunk_start(value),
                                    _ => return Err(Malformed::Chunk),
                                };
                            }
                        }
                        Chunk::Extension(size) => match b {
                            b'\r' => *state = Chunk::SizeLf(size),
                            b'\n' => *state = chunk_start(size),
                            _ => {}
                        },
                        Chunk::SizeLf(size) => {
                            if b != b'\n' {
                                return Err(Malformed::Chunk);
                            }
                            *state = chunk_start(size);
                        }
                        Chunk::Data(left) => {
                            let take = left.min((data.len() - i) as u64);
                            self.body_bytes += take;
                            i += take as usize;
                            *state = if left == take { Chunk::DataCr } else { Chunk::Data(left - take) };
                            continue;
                        }
                        Chunk::DataCr => match b {
                            b'\r' => *state = Chunk::DataLf,
                            b'\n' => *state = Chunk::Size { value: 0, digits: 0 },
                            _ => return Err(Malformed::Chunk),
                        },
                        Chunk::DataLf => {
                            if b != b'\n' {
                                return Err(Malformed::Chunk);
                            }
                            *state = Chunk::Size { value: 0, digits: 0 };
                        }
                        Chunk::TrailerLineStart => match b {
                            b'\r' => *state = Chunk::TrailerEndLf,
                            b'\n' => {
                                self.total_bytes += i as u64 + 1;
                                return Ok(Progress::Done { keep_alive: self.keep_alive });
                            }
                            _ => *state = Chunk::TrailerLine,
                        },
                        Chunk::TrailerLine => {
                            if b == b'\n' {
                                *state = Chunk::TrailerLineStart;
                            }
                        }
                        Chunk::TrailerEndLf => {
                            if b != b'\n' {
                                return Err(Malformed::Chunk);
                            }
                            self.total_bytes += i as u64 + 1;
                            return Ok(Progress::Done { keep_alive: self.keep_alive });
                        }
                    }
                    i += 1;
                }
                self.total_bytes += data.len() as u64;
                Ok(Progress::More)
            }
        }
    }

    /// The server closed the connection: complete when the body runs until close,
    /// otherwise the response was cut short.
    pub fn closed(&self) -> bool {
        matches!(self.body, Some(Body::UntilClose))
    }
}

/// What [`Response::head`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Head {
    Partial,
    /// The head, this many bytes long, is read.
    Complete(usize),
    /// An interim answer (100 Continue) this many bytes long; the real head follows.
    Interim(usize),
}

fn chunk_start(size: u64) -> Chunk {
    if size == 0 { Chunk::TrailerLineStart } else { Chunk::Data(size) }
}

fn parse_length(v: &[u8]) -> Option<u64> {
    let v = trim(v);
    if v.is_empty() || v.len() > 18 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(v.iter().fold(0u64, |n, &d| n * 10 + (d - b'0') as u64))
}

fn trim(v: &[u8]) -> &[u8] {
    let s = v.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(v.len());
    let e = v.iter().rposition(|b| !b.is_ascii_whitespace()).map_or(s, |e| e + 1);
    &v[s..e]
}

fn last_token(v: &[u8]) -> &[u8] {
    trim(v.rsplit(|&b| b == b',').next().unwrap_or(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `text` in pieces of `step` bytes; returns (status, body bytes, total, keep-alive).
    fn read(text: &[u8], step: usize) -> Result<(u16, u64, u64, bool), Malformed> {
        let mut r = Response::new();
        let mut buf = Vec::new();
        let mut server = String::new();
        for piece in text.chunks(step) {
            if r.in_body() {
                if let Progress::Done { keep_alive } = r.body(piece)? {
                    return Ok((r.status, r.body_bytes, r.total_bytes, keep_alive));
                }
                continue;
            }
            buf.extend_from_slice(piece);
            loop {
                match r.head(&buf, false, Some(&mut server))? {
                    Head::Partial => break,
                    Head::Interim(n) => {
                        buf.drain(..n);
                    }
                    Head::Complete(n) => {
                        let rest = buf.split_off(n);
                        buf.clear();
                        if let Progress::Done { keep_alive } = r.body(&rest)? {
                            return Ok((r.status, r.body_bytes, r.total_bytes, keep_alive));
                        }
                        break;
                    }
                }
            }
        }
        assert!(r.closed(), "ended early");
        Ok((r.status, r.body_bytes, r.total_bytes, false))
    }

    #[test]
    fn lengths_chunks_and_close() {
        let plain = b"HTTP/1.1 200 OK\r\nServer: t\r\nContent-Length: 5\r\n\r\nhello";
        let chunked = b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\n\
                        A\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n";
        let close = b"HTTP/1.0 200 OK\r\n\r\nabc";
        let interim = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n";
        for step in [1, 2, 3, 7, 1000] {
            assert_eq!(read(plain, step), Ok((200, 5, plain.len() as u64, true)));
            assert_eq!(read(chunked, step), Ok((404, 15, chunked.len() as u64, true)));
            assert_eq!(read(close, step), Ok((200, 3, close.len() as u64, false)));
            let n = interim.len() as u64;
            assert_eq!(read(interim, step), Ok((204, 0, n, false)));
        }
        assert_eq!(read(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", 100), Err(Malformed::Length));
        assert_eq!(
            read(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 100),
            Err(Malformed::Chunk)
        );
        assert_eq!(read(b"HTTZ/1.1 200 OK\r\n\r\n", 100), Err(Malformed::Head));
    }
}
