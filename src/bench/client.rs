//! The work loop: one mio event loop per thread, each driving its share of the
//! connections. Requests are written from the prepared bytes, responses counted by
//! [`Response`], timings recorded into per-thread histograms; nothing is allocated
//! per request and no sample is kept.
//!
//! Closed loop (the default): each connection sends its next request as soon as the
//! previous answer is in. Constant rate (`rate`): request k of a thread is due at
//! `start + k / rate`; a free connection waits for its due time, a late one sends at
//! once, and the latency is counted from the due time, so a server that stalls is
//! charged for every request it held up (no coordinated omission).

use super::histogram::Latency;
use super::response::{Head, Malformed, Progress, Response};
use super::target::Target;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use serde::Serialize;
use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Bytes a connection buffers; a response head must fit.
const BUFFER: usize = 32 * 1024;
/// Empty polls before a thread with requests out sleeps in epoll_wait. A client that is
/// asleep when the answer comes makes the server pay for waking it (on loopback the
/// server's CPU runs the wake-up); polling a little longer keeps the client awake
/// between answers at full load, which measured about 5% more requests/s from a
/// single-process lighttpd for about 10% more client CPU (bench/generator.sh).
const SPIN_POLLS: u32 = 64;
/// How often a thread publishes its count and checks timeouts and the stop flag.
const TICK: Duration = Duration::from_millis(50);

/// When a thread stops sending.
#[derive(Clone, Copy, Debug)]
pub enum Budget {
    Requests(u64),
    Until(Instant),
}

/// One thread's share of the work.
pub struct Plan<'a> {
    pub target: &'a Target,
    pub connections: usize,
    pub budget: Budget,
    /// Requests per second for this thread, when the run is rate-limited.
    pub rate: Option<f64>,
    pub keep_alive: bool,
    pub timeout: Duration,
    pub start: Instant,
}

/// What the threads share: counts for the progress display, the stop flag, and the
/// document length the first successful answer set.
pub struct Shared {
    pub stop: AtomicBool,
    pub done: Vec<Padded>,
    pub doc_len: AtomicU64,
}

/// A counter on its own cache line, written by one thread.
#[repr(align(64))]
#[derive(Default)]
pub struct Padded(pub AtomicU64);

impl Shared {
    pub fn new(threads: usize) -> Shared {
        Shared {
            stop: AtomicBool::new(false),
            done: (0..threads).map(|_| Padded::default()).collect(),
            doc_len: AtomicU64::new(u64::MAX),
        }
    }

    pub fn completed(&self) -> u64 {
        self.done.iter().map(|d| d.0.load(Ordering::Relaxed)).sum()
    }
}

/// Failed requests by kind (ab's four, plus timeouts).
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Failures {
    /// The connection could not be opened.
    pub connect: u64,
    /// The connection broke or closed before the response was complete (short bodies).
    pub receive: u64,
    /// A successful answer whose body length differs from the first one's.
    pub length: u64,
    /// The answer could not be read as HTTP.
    pub exceptions: u64,
    /// No complete answer within the timeout.
    pub timeout: u64,
}

impl Failures {
    pub fn total(&self) -> u64 {
        self.connect + self.receive + self.length + self.exceptions + self.timeout
    }

    pub fn add(&mut self, o: &Failures) {
        self.connect += o.connect;
        self.receive += o.receive;
        self.length += o.length;
        self.exceptions += o.exceptions;
        self.timeout += o.timeout;
    }
}

/// What a thread counted.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    pub complete: u64,
    pub failures: Failures,
    pub non_2xx: u64,
    pub keep_alive: u64,
    pub total_bytes: u64,
    pub body_bytes: u64,
    pub server: Option<String>,
    /// Statuses by class: 1xx..5xx at 1..=5, anything else at 0.
    pub classes: [u64; 6],
    pub connect: Latency,
    pub waiting: Latency,
    pub processing: Latency,
    pub total: Latency,
    /// When the thread stopped.
    pub ended: Option<Instant>,
}

impl Tally {
    pub fn merge(&mut self, o: &Tally) {
        self.complete += o.complete;
        self.failures.add(&o.failures);
        self.non_2xx += o.non_2xx;
        self.keep_alive += o.keep_alive;
        self.total_bytes += o.total_bytes;
        self.body_bytes += o.body_bytes;
        if self.server.is_none() {
            self.server.clone_from(&o.server);
        }
        for (a, b) in self.classes.iter_mut().zip(o.classes) {
            *a += b;
        }
        self.connect.merge(&o.connect);
        self.waiting.merge(&o.waiting);
        self.processing.merge(&o.processing);
        self.total.merge(&o.total);
        self.ended = self.ended.max(o.ended);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    Waiting,
    Connecting,
    Writing,
    Reading,
}

struct Conn {
    stream: Option<TcpStream>,
    phase: Phase,
    buf: Box<[u8]>,
    len: usize,
    written: usize,
    resp: Response,
    /// When the request counts from: its due time at a constant rate, else when work on it began.
    due: Instant,
    /// When work on the current attempt began (for the timeout).
    began: Instant,
    connect: Duration,
    sent: Instant,
    first_byte: Option<Instant>,
    reused: bool,
    retried: bool,
}

enum Fail {
    Connect,
    Receive,
    Exceptions,
    Timeout,
}

struct Worker<'a> {
    plan: &'a Plan<'a>,
    shared: &'a Shared,
    poll: Poll,
    conns: Vec<Conn>,
    tally: Tally,
    issued: u64,
    active: usize,
    waiting: VecDeque<usize>,
    /// Connections whose start failed at once, to start again from the loop.
    again: Vec<usize>,
    want_server: bool,
}

/// Runs one thread's share until its budget is spent, the deadline passes or the stop
/// flag is raised; publishes its count in `shared.done[index]`.
pub fn run(plan: &Plan, shared: &Shared, index: usize) -> std::io::Result<Tally> {
    let now = Instant::now();
    let conns = (0..plan.connections)
        .map(|_| Conn {
            stream: None,
            phase: Phase::Idle,
            buf: vec![0u8; BUFFER].into_boxed_slice(),
            len: 0,
            written: 0,
            resp: Response::new(),
            due: now,
            began: now,
            connect: Duration::ZERO,
            sent: now,
            first_byte: None,
            reused: false,
            retried: false,
        })
        .collect();
    let mut w = Worker {
        plan,
        shared,
        poll: Poll::new()?,
        conns,
        tally: Tally::default(),
        issued: 0,
        active: 0,
        waiting: VecDeque::new(),
        again: Vec::new(),
        want_server: true,
    };
    let mut events = Events::with_capacity(1024);
    for i in 0..w.conns.len() {
        w.next(i, now);
    }
    let mut tick = now + TICK;
    let mut idle_polls = 0u32;
    loop {
        let now = Instant::now();
        let mut wake = tick;
        if let Budget::Until(d) = plan.budget {
            wake = wake.min(d);
        }
        if let Some(&i) = w.waiting.front() {
            wake = wake.min(w.conns[i].due);
        }
        let spinning = w.active > 0 && idle_polls < SPIN_POLLS;
        let timeout = if w.again.is_empty() && !spinning {
            wake.saturating_duration_since(now)
        } else {
            Duration::ZERO
        };
        if let Err(e) = w.poll.poll(&mut events, Some(timeout))
            && e.kind() != ErrorKind::Interrupted
        {
            return Err(e);
        }
        if events.is_empty() {
            idle_polls += 1
        } else {
            idle_polls = 0
        }
        let now = Instant::now();
        for ev in events.iter() {
            w.event(ev.token().0, now, ev.is_read_closed() || ev.is_error());
        }
        for i in std::mem::take(&mut w.again) {
            if w.conns[i].phase == Phase::Idle {
                w.next(i, now);
            }
        }
        while let Some(&i) = w.waiting.front() {
            if w.conns[i].due > now {
                break;
            }
            w.waiting.pop_front();
            w.go(i, now);
        }
        shared.done[index].0.store(w.tally.complete, Ordering::Relaxed);
        if now >= tick {
            tick = now + TICK;
            if shared.stop.load(Ordering::Relaxed) {
                break;
            }
            w.expire(now);
        }
        match plan.budget {
            Budget::Until(d) if now >= d => break,
            Budget::Requests(n) if w.issued >= n && w.active == 0 && w.again.is_empty() => break,
            _ => {}
        }
    }
    shared.done[index].0.store(w.tally.complete, Ordering::Relaxed);
    w.tally.ended = Some(Instant::now());
    Ok(w.tally)
}

impl Worker<'_> {
    /// Starts this connection's next request, if the budget allows one.
    fn next(&mut self, i: usize, now: Instant) {
        let more = match self.plan.budget {
            Budget::Requests(n) => self.issued < n,
            Budget::Until(d) => now < d,
        };
        if !more || self.shared.stop.load(Ordering::Relaxed) {
            self.conns[i].phase = Phase::Idle;
            return;
        }
        let k = self.issued;
        self.issued += 1;
        self.active += 1;
        if let Some(rate) = self.plan.rate {
            let due = self.plan.start + Duration::from_secs_f64(k as f64 / rate);
            self.conns[i].due = due;
            if due > now {
                self.conns[i].phase = Phase::Waiting;
                self.waiting.push_back(i);
                return;
            }
        } else {
            self.conns[i].due = now;
        }
        self.go(i, now);
    }

    /// Sends the request now: on the open connection, or on a new one.
    fn go(&mut self, i: usize, now: Instant) {
        let c = &mut self.conns[i];
        c.began = now;
        c.resp.reset();
        c.len = 0;
        c.written = 0;
        c.first_byte = None;
        if c.stream.is_some() {
            c.reused = true;
            c.connect = Duration::ZERO;
            c.phase = Phase::Writing;
            self.write(i, now);
            return;
        }
        c.reused = false;
        match TcpStream::connect(self.plan.target.addr) {
            Ok(mut s) => {
                let _ = s.set_nodelay(true);
                if let Err(_e) =
                    self.poll.registry().register(&mut s, Token(i), Interest::READABLE | Interest::WRITABLE)
                {
                    self.fail(i, Fail::Connect, now);
                    return;
                }
                let c = &mut self.conns[i];
                c.stream = Some(s);
                c.phase = Phase::Connecting;
            }
            Err(_) => self.fail(i, Fail::Connect, now),
        }
    }

    /// `closing`: the peer has closed (or the socket failed); read to the end.
    fn event(&mut self, i: usize, now: Instant, closing: bool) {
        if i >= self.conns.len() {
            return;
        }
        match self.conns[i].phase {
            Phase::Connecting => {
                let c = &mut self.conns[i];
                let Some(s) = c.stream.as_ref() else { return };
                match s.take_error() {
                    Ok(None) => {}
                    _ => return self.fail(i, Fail::Connect, now),
                }
                match s.peer_addr() {
                    Ok(_) => {}
                    Err(e) if e.kind() == ErrorKind::NotConnected => return,
                    Err(_) => return self.fail(i, Fail::Connect, now),
                }
                c.connect = now - c.began;
                c.phase = Phase::Writing;
                self.write(i, now);
            }
            Phase::Writing => self.write(i, now),
            Phase::Reading => self.read(i, now, closing),
            Phase::Idle | Phase::Waiting => {
                // The server may close a connection kept for the next request: notice
                // it now, so the next request opens a new one instead of failing.
                let c = &mut self.conns[i];
                if let Some(s) = c.stream.as_mut() {
                    match s.read(&mut c.buf) {
                        Ok(0) => c.stream = None,
                        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                        _ => c.stream = None,
                    }
                }
            }
        }
    }

    fn write(&mut self, i: usize, now: Instant) {
        let req = &self.plan.target.request;
        let c = &mut self.conns[i];
        let Some(s) = c.stream.as_mut() else { return };
        while c.written < req.len() {
            match s.write(&req[c.written..]) {
                Ok(n) => c.written += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return self.broken(i, now),
            }
        }
        c.sent = now;
        c.phase = Phase::Reading;
    }

    fn read(&mut self, i: usize, now: Instant, closing: bool) {
        loop {
            let c = &mut self.conns[i];
            let Some(s) = c.stream.as_mut() else { return };
            let space = c.buf.len() - c.len;
            if space == 0 {
                return self.fail(i, Fail::Exceptions, now);
            }
            let n = match s.read(&mut c.buf[c.len..]) {
                Ok(0) => return self.closed(i, now),
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => return self.broken(i, now),
            };
            if c.first_byte.is_none() {
                c.first_byte = Some(now);
            }
            c.len += n;
            match self.consume(i) {
                Ok(Progress::More) => {}
                // A close that came with the answer's last bytes has no event of its own
                // after this one: the connection is not kept (a request written on it
                // would wait for an answer that never comes; lighttpd closes idle
                // keep-alive connections this way on a graceful restart).
                Ok(Progress::Done { keep_alive }) => return self.finish(i, now, keep_alive && !closing),
                Err(_) => return self.fail(i, Fail::Exceptions, now),
            }
            // A short read emptied the socket: Linux signals the next bytes (or the
            // peer's close) with a new event. A close that came with this event has
            // no event of its own: keep reading to see it.
            if n < space && !closing {
                return;
            }
        }
    }

    /// Feeds the buffered bytes to the response reader.
    fn consume(&mut self, i: usize) -> Result<Progress, Malformed> {
        let head_request = self.plan.target.head;
        let c = &mut self.conns[i];
        loop {
            if c.resp.in_body() {
                let p = c.resp.body(&c.buf[..c.len]);
                c.len = 0;
                return p;
            }
            let server =
                if self.want_server { Some(self.tally.server.get_or_insert_with(String::new)) } else { None };
            match c.resp.head(&c.buf[..c.len], head_request, server)? {
                Head::Partial => return Ok(Progress::More),
                Head::Interim(n) => {
                    c.buf.copy_within(n..c.len, 0);
                    c.len -= n;
                }
                Head::Complete(n) => {
                    self.want_server = false;
                    let p = c.resp.body(&c.buf[n..c.len]);
                    c.len = 0;
                    return p;
                }
            }
        }
    }

    /// The server closed the connection while a request was out.
    fn closed(&mut self, i: usize, now: Instant) {
        let c = &self.conns[i];
        if c.resp.in_body() && c.resp.closed() {
            return self.finish(i, now, false);
        }
        self.broken(i, now);
    }

    /// The connection failed: a kept-alive connection the server had just closed
    /// before any byte of the answer is retried once on a new one (browsers do the
    /// same); anything else is a failed request.
    fn broken(&mut self, i: usize, now: Instant) {
        let c = &mut self.conns[i];
        if c.reused && !c.retried && c.first_byte.is_none() {
            c.retried = true;
            c.stream = None;
            return self.go(i, now);
        }
        self.fail(i, Fail::Receive, now);
    }

    fn fail(&mut self, i: usize, kind: Fail, now: Instant) {
        let f = &mut self.tally.failures;
        match kind {
            Fail::Connect => f.connect += 1,
            Fail::Receive => f.receive += 1,
            Fail::Exceptions => f.exceptions += 1,
            Fail::Timeout => f.timeout += 1,
        }
        self.tally.complete += 1;
        self.active -= 1;
        let c = &mut self.conns[i];
        c.stream = None;
        c.phase = Phase::Idle;
        c.retried = false;
        // Start again from the loop: a server that refuses at once would otherwise
        // recurse here as deep as the budget.
        let _ = now;
        self.again.push(i);
    }

    fn finish(&mut self, i: usize, now: Instant, keep_alive: bool) {
        let t = &mut self.tally;
        let c = &mut self.conns[i];
        t.complete += 1;
        self.active -= 1;
        t.total_bytes += c.resp.total_bytes;
        t.body_bytes += c.resp.body_bytes;
        let status = c.resp.status;
        t.classes[if (100..600).contains(&status) { (status / 100) as usize } else { 0 }] += 1;
        if (200..300).contains(&status) {
            let len = c.resp.body_bytes;
            let doc = &self.shared.doc_len;
            let first = match doc.compare_exchange(u64::MAX, len, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => len,
                Err(v) => v,
            };
            if first != len {
                t.failures.length += 1;
            }
        } else {
            t.non_2xx += 1;
        }
        let total = now - c.due;
        t.total.record(total);
        t.connect.record(c.connect);
        t.processing.record(now - c.began - c.connect);
        t.waiting.record(c.first_byte.unwrap_or(now) - c.sent);
        c.retried = false;
        if keep_alive && self.plan.keep_alive {
            t.keep_alive += 1;
        } else {
            c.stream = None;
        }
        c.phase = Phase::Idle;
        self.next(i, now);
    }

    /// Requests out for longer than the timeout fail.
    fn expire(&mut self, now: Instant) {
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            let busy = matches!(c.phase, Phase::Connecting | Phase::Writing | Phase::Reading);
            if busy && now - c.began > self.plan.timeout {
                self.fail(i, Fail::Timeout, now);
            }
        }
    }
}
