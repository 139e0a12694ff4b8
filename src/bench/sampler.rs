//! What a server costs while it is benchmarked: memory and CPU of its whole process tree,
//! read from Linux's /proc by a background thread at a fixed interval.
//!
//! A server is a tree, not a pid: Apache forks children, lighttpd runs php-cgi children,
//! and both may fork more while the load runs.  So every sample scans /proc/*/stat, links
//! each process to its parent, and takes everything below the given roots.  The figures
//! are what the published Apache-vs-lighttpd tables call "Max Memory" and "Max Load".
//!
//! This module knows nothing about HTTP, servers or reports: it measures pids.  It never
//! fails: a process that vanishes between two reads is skipped, an unreadable /proc gives
//! empty samples.
//!
//! Memory is the sum of resident set sizes, which counts pages shared between forked
//! children once per child.  That overstates a pre-fork server's real footprint, the same
//! way `ps` and `top` do, and it is what the published tables measured.

use serde::Serialize;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Read;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[derive(Clone, Debug, Serialize)]
pub struct Sample {
    /// Seconds since the sampler started.
    pub t: f64,
    /// Sum of resident set sizes over the tree (bytes).
    pub rss_bytes: u64,
    /// CPU used by the tree during the interval that ends here, in cores (1.0 = one core busy).
    /// The first sample has no interval before it and reads 0.
    pub cpu_cores: f64,
    pub processes: usize,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct ServerStats {
    pub samples: Vec<Sample>,
    pub peak_rss_bytes: u64,
    /// Mean over the samples (they are evenly spaced, so this is also the mean over time).
    pub mean_rss_bytes: u64,
    /// Highest CPU use over any half second of the run (the whole run when shorter), in
    /// cores, at most the machine's core count.
    pub peak_cpu_cores: f64,
    /// CPU seconds used by the tree over the whole sampling, divided by its wall time (cores).
    pub mean_cpu_cores: f64,
    /// CPU seconds (user+system) the tree used while sampled.
    pub cpu_seconds: f64,
    pub max_processes: usize,
}

/// A background thread that samples process trees until [`Sampler::stop`] (or drop).
pub struct Sampler {
    stop_tx: Option<Sender<()>>,
    handle: Option<JoinHandle<ServerStats>>,
}

impl Sampler {
    /// Starts sampling the trees rooted at `roots` (those pids and all their descendants, found by
    /// scanning /proc/*/stat ppid links at every sample, so children forked later are counted).
    /// The first sample is taken at once; it is the baseline the first interval's CPU is
    /// measured from.  If no thread can be started, [`Sampler::stop`] returns empty figures.
    pub fn start(roots: Vec<u32>, interval: Duration) -> Sampler {
        let interval = interval.max(Duration::from_millis(1));
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        // The baseline is read here, so the load the caller starts next is measured from it.
        let mut run = Run::new(roots);
        let handle = std::thread::Builder::new()
            .name("lighten-sampler".into())
            .spawn(move || {
                let mut due = run.started + interval;
                loop {
                    let wait = due.saturating_duration_since(Instant::now());
                    match stop_rx.recv_timeout(wait) {
                        Err(RecvTimeoutError::Timeout) => {
                            run.sample();
                            // Fixed-rate: a late sample does not shift the ones after it, and
                            // a long stall skips the samples it missed instead of bunching them.
                            due += interval;
                            let now = Instant::now();
                            if due < now {
                                due = now + interval;
                            }
                        }
                        Ok(()) | Err(RecvTimeoutError::Disconnected) => {
                            run.sample();
                            return run.finish();
                        }
                    }
                }
            })
            .ok();
        Sampler { stop_tx: Some(stop_tx), handle }
    }

    /// Stops the thread (takes one last sample) and returns the figures.
    pub fn stop(mut self) -> ServerStats {
        self.halt().unwrap_or_default()
    }

    fn halt(&mut self) -> Option<ServerStats> {
        // Dropping the sender wakes the thread from its wait: nothing is ever sent.
        drop(self.stop_tx.take());
        self.handle.take()?.join().ok()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.halt();
    }
}

/// The pids of the trees rooted at `roots` (roots included, when alive).  Sorted.  Zombies
/// (exited, not yet reaped) are left out, as in [`read_tree`].
pub fn tree(roots: &[u32]) -> Vec<u32> {
    let mut scan = Scan::default();
    scan.read_tree(roots);
    let mut pids: Vec<u32> = scan.members.iter().filter(|m| m.stat.state != 'Z').map(|m| m.pid).collect();
    pids.sort_unstable();
    pids
}

/// One reading of a tree: (rss bytes, cumulative cpu seconds of live members, process count).
/// Zombies (exited, not yet reaped) are neither counted nor charged.
pub fn read_tree(roots: &[u32]) -> (u64, f64, usize) {
    let mut scan = Scan::default();
    scan.read_tree(roots);
    let live = || scan.members.iter().filter(|m| m.stat.state != 'Z');
    let ticks: u64 = live().map(|m| m.stat.cpu_ticks).sum();
    let count = live().count();
    (scan.rss_bytes(), ticks as f64 / clock_ticks_per_second(), count)
}

/// The state of one sampling thread.
struct Run {
    roots: Vec<u32>,
    started: Instant,
    /// When the sampler started, in clock ticks since boot (the unit of a process's start time).
    started_ticks: u64,
    scan: Scan,
    cpu: CpuAccount,
    last_t: f64,
    samples: Vec<Sample>,
}

impl Run {
    fn new(roots: Vec<u32>) -> Run {
        let mut run = Run {
            roots,
            started: Instant::now(),
            started_ticks: uptime_ticks(),
            scan: Scan::default(),
            cpu: CpuAccount::default(),
            last_t: 0.0,
            samples: Vec::new(),
        };
        run.sample();
        run
    }

    fn sample(&mut self) {
        let t = self.started.elapsed().as_secs_f64();
        self.scan.read_tree(&self.roots);
        let stats = self.scan.members.iter().map(|m| (m.pid, m.stat));
        let ticks = self.cpu.interval(stats, self.started_ticks);
        let first = self.samples.is_empty();
        let cpu_cores = if first || t <= self.last_t {
            0.0
        } else {
            ticks as f64 / clock_ticks_per_second() / (t - self.last_t)
        };
        let processes = self.scan.members.iter().filter(|m| m.stat.state != 'Z').count();
        self.samples.push(Sample { t, rss_bytes: self.scan.rss_bytes(), cpu_cores, processes });
        self.last_t = t;
    }

    fn finish(self) -> ServerStats {
        let samples = self.samples;
        let n = samples.len().max(1) as u64;
        let wall = samples.last().map_or(0.0, |s| s.t) - samples.first().map_or(0.0, |s| s.t);
        let cpu_seconds = self.cpu.total_ticks as f64 / clock_ticks_per_second();
        ServerStats {
            peak_rss_bytes: samples.iter().map(|s| s.rss_bytes).max().unwrap_or(0),
            mean_rss_bytes: samples.iter().map(|s| s.rss_bytes).sum::<u64>() / n,
            peak_cpu_cores: peak_cpu(&samples),
            mean_cpu_cores: if wall > 0.0 { cpu_seconds / wall } else { 0.0 },
            cpu_seconds,
            max_processes: samples.iter().map(|s| s.processes).max().unwrap_or(0),
            samples,
        }
    }
}

/// The window the peak CPU is taken over. /proc counts CPU in clock ticks (10 ms), per
/// process: over one 100 ms interval that rounding alone can read 2.2 cores on a
/// two-core machine. Half a second keeps the peak meaningful.
const PEAK_WINDOW: f64 = 0.5;

/// The highest CPU use over any `PEAK_WINDOW` of the run (the whole run when shorter),
/// at most the machine's core count.
fn peak_cpu(samples: &[Sample]) -> f64 {
    // Cumulative CPU seconds at each sample.
    let mut cum = Vec::with_capacity(samples.len());
    let mut acc = 0.0;
    for (i, s) in samples.iter().enumerate() {
        if i > 0 {
            acc += s.cpu_cores * (s.t - samples[i - 1].t);
        }
        cum.push(acc);
    }
    let mut peak: f64 = 0.0;
    let mut start = 0;
    for end in 1..samples.len() {
        while start + 1 < end && samples[end].t - samples[start + 1].t >= PEAK_WINDOW {
            start += 1;
        }
        let span = samples[end].t - samples[start].t;
        let full = span >= PEAK_WINDOW || (start == 0 && end == samples.len() - 1);
        if span > 0.0 && full {
            peak = peak.max((cum[end] - cum[start]) / span);
        }
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    peak.min(cores)
}

/// CPU charged per interval, from cumulative per-process counters.
///
/// | process in this sample            | charged for the interval           |
/// |-----------------------------------|------------------------------------|
/// | seen before (same pid and start)  | its counter minus the last reading |
/// | new, started after the sampler    | its whole counter                  |
/// | new, started before the sampler   | nothing (its history is not ours)  |
///
/// A process that exits between two samples loses the CPU it used since the last one: it
/// is gone before it can be read (the kernel adds it to the parent's `cutime`, which is
/// not read, since reading it would also count children that were never sampled).  Short
/// CGI processes that live less than one interval are therefore missed entirely; sample
/// more often to see them.
#[derive(Default)]
struct CpuAccount {
    /// pid -> (start time, last cumulative ticks, generation it was last seen in).  The start
    /// time tells a reused pid from the process that had it before.
    last: HashMap<u32, (u64, u64, u64)>,
    generation: u64,
    total_ticks: u64,
}

impl CpuAccount {
    /// Ticks used during the interval that ends with this reading of the tree.
    fn interval(&mut self, members: impl Iterator<Item = (u32, Stat)>, started_ticks: u64) -> u64 {
        self.generation += 1;
        let mut ticks = 0;
        for (pid, stat) in members {
            let before = match self.last.get(&pid) {
                Some(&(start, cpu, _)) if start == stat.start_ticks => cpu,
                _ if stat.start_ticks >= started_ticks => 0,
                _ => stat.cpu_ticks,
            };
            ticks += stat.cpu_ticks.saturating_sub(before);
            self.last.insert(pid, (stat.start_ticks, stat.cpu_ticks, self.generation));
        }
        let generation = self.generation;
        self.last.retain(|_, e| e.2 == generation);
        self.total_ticks += ticks;
        ticks
    }
}

/// The fields of /proc/PID/stat used here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stat {
    state: char,
    ppid: u32,
    /// utime + stime, in clock ticks.
    cpu_ticks: u64,
    /// When the process started, in clock ticks since boot.
    start_ticks: u64,
}

/// `pid (comm) state ppid ...` (proc(5)).  The command name may hold spaces and `)`, so the
/// fields start after the last `)`.  Field n of proc(5) is `rest[n - 3]`.
fn parse_stat(text: &str) -> Option<Stat> {
    let (_, rest) = text.rsplit_once(')')?;
    let mut f = rest.split_ascii_whitespace();
    let state = f.next()?.chars().next()?;
    let ppid = f.next()?.parse().ok()?;
    // Fields 5..=13 are not needed; utime is field 14.
    let utime: u64 = f.nth(9)?.parse().ok()?;
    let stime: u64 = f.next()?.parse().ok()?;
    // Fields 16..=21 are not needed; starttime is field 22.
    let start_ticks = f.nth(6)?.parse().ok()?;
    Some(Stat { state, ppid, cpu_ticks: utime + stime, start_ticks })
}

struct Member {
    pid: u32,
    stat: Stat,
}

/// One pass over /proc.  Its buffers live as long as the sampler, so a sample allocates
/// little beyond what reading the /proc directory costs.
#[derive(Default)]
struct Scan {
    path: String,
    text: String,
    /// Every readable process this pass: (ppid, pid, stat), sorted by ppid.
    all: Vec<(u32, u32, Stat)>,
    /// The tree: the live roots first, then their descendants breadth-first.
    members: Vec<Member>,
}

impl Scan {
    fn read_tree(&mut self, roots: &[u32]) {
        self.all.clear();
        self.members.clear();
        let Ok(dir) = std::fs::read_dir("/proc") else { return };
        for entry in dir.flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
            if let Some(stat) = self.read_stat(pid) {
                self.all.push((stat.ppid, pid, stat));
            }
        }
        self.all.sort_unstable_by_key(|&(ppid, pid, _)| (ppid, pid));
        for &root in roots {
            if self.members.iter().any(|m| m.pid == root) {
                continue;
            }
            if let Some(&(_, pid, stat)) = self.all.iter().find(|e| e.1 == root) {
                self.members.push(Member { pid, stat });
            }
        }
        // Breadth-first down the ppid links.  A root below another root is already a
        // member; the check keeps it from being counted twice.
        let mut next = 0;
        while next < self.members.len() {
            let parent = self.members[next].pid;
            next += 1;
            let from = self.all.partition_point(|e| e.0 < parent);
            for &(ppid, pid, stat) in &self.all[from..] {
                if ppid != parent {
                    break;
                }
                if !roots.contains(&pid) {
                    self.members.push(Member { pid, stat });
                }
            }
        }
    }

    /// Sum of the members' resident sets, in bytes.
    fn rss_bytes(&mut self) -> u64 {
        let mut pages = 0;
        for i in 0..self.members.len() {
            pages += self.read_resident_pages(self.members[i].pid).unwrap_or(0);
        }
        pages * page_size()
    }

    fn read_stat(&mut self, pid: u32) -> Option<Stat> {
        self.read_proc_file(pid, "stat")?;
        parse_stat(&self.text)
    }

    /// statm: `size resident shared text lib data dt`, in pages.
    fn read_resident_pages(&mut self, pid: u32) -> Option<u64> {
        self.read_proc_file(pid, "statm")?;
        self.text.split_ascii_whitespace().nth(1)?.parse().ok()
    }

    /// Reads /proc/`pid`/`file` into `self.text`.
    fn read_proc_file(&mut self, pid: u32, file: &str) -> Option<()> {
        self.path.clear();
        let _ = write!(self.path, "/proc/{pid}/{file}");
        self.text.clear();
        std::fs::File::open(&self.path).ok()?.read_to_string(&mut self.text).ok()?;
        Some(())
    }
}

fn page_size() -> u64 {
    // SAFETY: sysconf(3) has no preconditions and touches no memory of ours.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 { v as u64 } else { 4096 }
}

fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf(3) has no preconditions and touches no memory of ours.
    let v = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if v > 0 { v as f64 } else { 100.0 }
}

/// Now, in clock ticks since boot, from /proc/uptime.  0 when unreadable, which makes every
/// process look started after the sampler: their first sighting then charges their whole
/// history, an overstatement the caller sees as a CPU spike in the first interval.
fn uptime_ticks() -> u64 {
    let text = std::fs::read_to_string("/proc/uptime").unwrap_or_default();
    let secs: f64 = text.split_ascii_whitespace().next().and_then(|s| s.parse().ok()).unwrap_or(0.0);
    (secs * clock_ticks_per_second()) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::{Child, Command};

    /// A shell in its own process group, killed with everything it forked when dropped, so a
    /// failed assertion leaves nothing running.
    struct Group(Child);

    impl Group {
        fn spawn(script: &str) -> Group {
            let child = Command::new("sh").arg("-c").arg(script).process_group(0).spawn().expect("sh");
            Group(child)
        }

        fn pid(&self) -> u32 {
            self.0.id()
        }
    }

    impl Drop for Group {
        fn drop(&mut self) {
            // SAFETY: kill(2) with a negative pid signals the process group; it touches no memory.
            unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
            let _ = self.0.wait();
        }
    }

    fn stat(ppid: u32, cpu_ticks: u64, start_ticks: u64) -> Stat {
        Stat { state: 'S', ppid, cpu_ticks, start_ticks }
    }

    #[test]
    fn parse_stat_splits_at_the_last_parenthesis() {
        let line = "4242 (we ird) (x) R 17 4242 4242 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0 \
                    12345 1000 50 18446744073709551615\n";
        let want = Stat { state: 'R', ppid: 17, cpu_ticks: 10, start_ticks: 12345 };
        assert_eq!(parse_stat(line), Some(want));
    }

    #[test]
    fn parse_stat_rejects_truncated_lines() {
        assert_eq!(parse_stat("4242 (sh) S 1 4242 4242 0 -1 4194560 100 0 0 0 7"), None);
        assert_eq!(parse_stat(""), None);
        assert_eq!(parse_stat("4242 (sh"), None);
    }

    #[test]
    fn cpu_account_charges_only_what_was_used_while_sampled() {
        let started = 1000;
        let mut acct = CpuAccount::default();
        // Baseline: an old process's history is not charged.
        assert_eq!(acct.interval([(1, stat(0, 500, 10))].into_iter(), started), 0);
        // It used 20 more; a child started after the sampler brings all of its 7.
        assert_eq!(acct.interval([(1, stat(0, 520, 10)), (2, stat(1, 7, 1100))].into_iter(), started), 27);
        // An old process first seen now (say, its stat was unreadable before) brings nothing.
        assert_eq!(acct.interval([(1, stat(0, 520, 10)), (3, stat(1, 90, 20))].into_iter(), started), 0);
        // Pid 2 exited and was reused by a new process: the old counter is not subtracted.
        assert_eq!(acct.interval([(2, stat(1, 4, 1200))].into_iter(), started), 4);
        assert_eq!(acct.total_ticks, 31);
        // Pid 1 was dropped when it was missing from a reading: seen again, it counts as new.
        assert_eq!(acct.interval([(1, stat(0, 600, 10))].into_iter(), started), 0);
    }

    #[test]
    fn tree_holds_children_forked_by_the_root() {
        let group = Group::spawn("sleep 5 & sleep 5 & wait");
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut pids = tree(&[group.pid()]);
        while pids.len() < 3 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
            pids = tree(&[group.pid()]);
        }
        assert_eq!(pids.len(), 3, "{pids:?}");
        assert!(pids.contains(&group.pid()));
        let (rss, _, count) = read_tree(&[group.pid()]);
        assert!(rss > 0);
        assert_eq!(count, 3);
    }

    #[test]
    fn tree_of_a_missing_pid_is_empty() {
        // Pids are at most 2^22 on Linux.
        assert!(tree(&[u32::MAX]).is_empty());
        assert_eq!(read_tree(&[u32::MAX]), (0, 0.0, 0));
    }

    #[test]
    fn sampler_sees_a_busy_child() {
        let group = Group::spawn("while :; do :; done");
        let sampler = Sampler::start(vec![group.pid()], Duration::from_millis(50));
        std::thread::sleep(Duration::from_millis(500));
        let stats = sampler.stop();
        assert!(stats.cpu_seconds > 0.1, "{stats:?}");
        assert!(stats.peak_rss_bytes > 0, "{stats:?}");
        assert!(stats.peak_cpu_cores > 0.0, "{stats:?}");
        assert_eq!(stats.max_processes, 1, "{stats:?}");
        assert!(stats.samples.len() >= 3, "{stats:?}");
    }

    #[test]
    fn sampler_counts_children_forked_after_it_started() {
        // The inner shell runs the loop itself, so it is a busy grandchild of the root.
        let group = Group::spawn("sleep 0.1; sh -c 'while :; do :; done'; :");
        let sampler = Sampler::start(vec![group.pid()], Duration::from_millis(50));
        std::thread::sleep(Duration::from_millis(600));
        let stats = sampler.stop();
        assert!(stats.cpu_seconds > 0.1, "{stats:?}");
        assert_eq!(stats.max_processes, 2, "{stats:?}");
    }

    #[test]
    fn stop_does_not_wait_for_the_interval() {
        let sampler = Sampler::start(vec![std::process::id()], Duration::from_secs(3600));
        let stats = sampler.stop();
        // The first and the last sample; nothing in between.
        assert_eq!(stats.samples.len(), 2, "{stats:?}");
        assert!(stats.max_processes >= 1);
    }

    #[test]
    fn drop_stops_the_thread() {
        let sampler = Sampler::start(vec![std::process::id()], Duration::from_secs(3600));
        drop(sampler);
    }

    #[test]
    fn peak_cpu_is_taken_over_half_a_second() {
        let at = |t: f64, cpu_cores: f64| Sample { t, rss_bytes: 0, cpu_cores, processes: 1 };
        // One core busy, with one tick-rounded interval reading 2.5 cores.
        let mut samples = vec![at(0.0, 0.0)];
        for i in 1..=20 {
            samples.push(at(i as f64 * 0.1, if i == 10 { 2.5 } else { 1.0 }));
        }
        let p = peak_cpu(&samples);
        assert!(
            (p - 1.3).abs() < 1e-9 || p == std::thread::available_parallelism().unwrap().get() as f64,
            "{p}"
        );
        // Shorter than the window: the whole run.
        assert!((peak_cpu(&samples[..3]) - 1.0).abs() < 1e-9);
        assert_eq!(peak_cpu(&samples[..1]), 0.0);
    }
}
