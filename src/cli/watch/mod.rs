//! `lighten watch`: the conversion kept in step with Apache's files while the site runs.
//!
//! One step: load and convert as `convert` does; if the output is what the folder holds,
//! nothing happens; else the new output is written to a staging folder inside the output
//! folder and checked there (`lighttpd -tt`, `luac5.4 -p`, the preflight of every file
//! and program it needs), then written file by file atomically, and the lighttpd running
//! from it picks it up: at its next request when only Lua changed (mod_magnet reloads a
//! changed hook script, which reloads the modules), else by a graceful restart.  A step
//! that cannot write leaves the output in force: its .htaccess safety net answers 503
//! where a changed file is met, never the old answer.  Steps run after filesystem events
//! (inotify, `tree.rs`) settle, so an editor's several writes are one change.  A change
//! that concerns only some sites (an .htaccess they alone reach, or their own part of the
//! Apache configuration) converts those sites alone when that is exact (`site.rs`).

mod site;
mod tree;

use super::args::WatchArgs;
use super::convert::absolute;
use super::inspect::load_options;
use crate::config::LoadOptions;
use crate::run::lighttpd::{self, Restart};
use crate::run::preflight::Level;
use crate::settings::Resolved;
use crate::watch::{self, Outcome, Record, Reload, Watched, Why};
use crate::{plan, run};
use anyhow::Context;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

/// How long a graceful restart may take before the step says it was not seen (lighttpd
/// lets requests in progress finish first, `server.graceful-shutdown-timeout`, 8 s).
const RESTART_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a hook script of the output looks for a new one (translate::conf's gate).
const HOOK_TICK: Duration = Duration::from_millis(10);
/// How long the folder stays quiet after site-only steps before the whole conversion that
/// confirms them runs.
const CONFIRM_QUIET: Duration = Duration::from_secs(2);
/// The staging folder inside the output folder.
const STAGING: &str = ".lighten-watch";
/// A change is converted at the latest this long after its first event, however busy
/// the folder stays.
const SETTLE_MAX: Duration = Duration::from_millis(250);

/// Everything a step needs, resolved once from flags and the settings file.
struct Job {
    config: PathBuf,
    load: LoadOptions,
    out_dir: PathBuf,
    listen: Vec<String>,
    runtime_dir: PathBuf,
    php: Option<String>,
    strict: bool,
    color: bool,
    json: bool,
    /// The sites kept in step (`--vhost`), all when empty.
    vhosts: Vec<String>,
    /// Whether luac5.4 is installed (the Lua check is skipped, and said so, without it).
    luac: bool,
}

/// What a step did, and what to watch after it.
struct Step {
    record: Record,
    watched: Option<Watched>,
    inexact: bool,
    /// What the output is now the conversion of, when it is exactly that.
    base: Option<site::Base>,
}

pub fn run(a: WatchArgs, settings: &Resolved, color: bool) -> anyhow::Result<i32> {
    let out_dir = absolute(settings.out()?)?;
    let runtime_dir = match &settings.runtime_dir {
        Some(d) => absolute(d)?,
        None => out_dir.join("run"),
    };
    let job = Job {
        config: a.config.clone(),
        load: load_options(&a.load),
        out_dir,
        listen: settings.listen.clone(),
        runtime_dir,
        php: settings.php_backend.clone(),
        strict: settings.strict,
        color,
        json: a.json,
        luac: which("luac5.4"),
        vhosts: a.site.vhosts.clone(),
    };
    if !job.luac {
        eprintln!(
            "lighten watch: luac5.4 is not installed (apt-get install lua5.4): new Lua is not checked before it is written"
        );
    }
    run::process::stop_softly_on_interrupt();
    if a.once {
        let first = job.step(Vec::new(), Vec::new(), Instant::now(), SystemTime::now());
        job.log(&first.record);
        return Ok(match first.record.outcome {
            Outcome::Refused => 2,
            _ if first.inexact => 1,
            _ => 0,
        });
    }
    // The static lane is on while watch runs (translate::lane): lighttpd takes it in at its
    // next restart, made now if it runs (and by the first step if that writes).
    let lane = job.out_dir.join(crate::translate::lane::WATCHING);
    let _ = std::fs::create_dir_all(&job.runtime_dir);
    if !same_bytes(&lane, crate::translate::lane::WATCHING_TEXT) {
        lane_on(&job, &lane);
    }
    // The files are watched before the first conversion reads them: whatever is written
    // from then on is either in that conversion or an event after it.
    let mut watched = job.watched().unwrap_or_else(|| job.fallback_watch());
    let mut trees = job.watcher(&watched)?;
    let settle = Duration::from_millis(a.settle_ms);
    // The change being gathered: paths, why, first and last event. The first step (the
    // conversion at start, nothing named) is due at once.
    let mut pending: BTreeMap<PathBuf, Why> = BTreeMap::new();
    let mut first_at: Option<(Instant, SystemTime)> = Some((Instant::now(), SystemTime::now()));
    let mut last_at = Instant::now().checked_sub(settle).unwrap_or_else(Instant::now);
    let debug = std::env::var_os("LIGHTEN_WATCH_DEBUG").is_some();
    // The conversion the output is (kept for site-only steps), and the paths site-only
    // steps converted since the last whole conversion.
    let mut base: Option<site::Base> = None;
    let mut since_whole: Option<Vec<PathBuf>> = None;
    let mut quiet_since = Instant::now();
    while !run::process::interrupted() {
        let wait = if first_at.is_some() {
            settle.min(Duration::from_millis(200))
        } else {
            Duration::from_millis(200)
        };
        let mut overflow = false;
        let seen = trees.wait(wait, &mut overflow)?;
        for ev in &seen {
            if debug {
                eprintln!("lighten watch: event {ev:?}");
            }
            if let Some(why) = watched.why(&ev.path, ev.dir) {
                pending.entry(ev.path.clone()).or_insert(why);
                first_at.get_or_insert((Instant::now(), SystemTime::now()));
                last_at = Instant::now();
            }
        }
        if overflow {
            // The kernel's queue overflowed: anything may have changed.
            eprintln!(
                "lighten watch: the kernel dropped events (fs.inotify.max_queued_events): converting again"
            );
            pending.entry(job.out_dir.clone()).or_insert(Why::Folder);
            first_at.get_or_insert((Instant::now(), SystemTime::now()));
        }
        let Some((t0, wall)) = first_at else {
            // Quiet after site-only steps: the whole conversion brings the reports up to
            // date and confirms them.
            if since_whole.is_some() && quiet_since.elapsed() >= CONFIRM_QUIET {
                let changed = since_whole.take().unwrap_or_default();
                let mut step = job.step(changed, vec![Why::Confirm], Instant::now(), SystemTime::now());
                step.record.confirm();
                job.log(&step.record);
                lane_after(&job, &lane, step.record.outcome);
                base = step.base;
            }
            continue;
        };
        if last_at.elapsed() < settle && t0.elapsed() < SETTLE_MAX {
            continue;
        }
        let why: Vec<Why> = pending.values().copied().collect::<BTreeSet<_>>().into_iter().collect();
        let changed: Vec<PathBuf> = std::mem::take(&mut pending).into_keys().collect();
        first_at = None;
        // Per-directory files only: the changed paths are read again; a configuration
        // file among them: the configuration is read again, whole. Either way only the
        // sites the change concerns are converted, when that is exact.
        let config_file = why.contains(&Why::ServerConfig);
        let mut whole = true;
        let step = match base.as_mut().filter(|_| !changed.is_empty()) {
            Some(b) => match if config_file {
                job.step_config_sites(b, &changed, why.clone(), t0, wall)
            } else {
                job.step_sites(b, &changed, why.clone(), t0, wall)
            } {
                Ok(step) => {
                    // (the base stays, as the step left it; a configuration file's change
                    // is confirmed even when no site converted differently: what the
                    // comparison cannot see, the whole conversion does)
                    whole = false;
                    if step.record.outcome == Outcome::Converted || config_file {
                        since_whole.get_or_insert_with(Vec::new).extend(changed.iter().cloned());
                        quiet_since = Instant::now();
                    }
                    step
                }
                Err(reason) => {
                    if debug {
                        eprintln!("lighten watch: converting the whole configuration: {reason}");
                    }
                    base = None;
                    job.step(changed, why, t0, wall)
                }
            },
            None => job.step(changed, why, t0, wall),
        };
        job.log(&step.record);
        if whole || step.record.outcome == Outcome::Refused {
            lane_after(&job, &lane, step.record.outcome);
        } else if !lane.exists() {
            // (the whole conversion that confirms the site steps decides)
            since_whole.get_or_insert_with(Vec::new).extend(changed_paths(&step.record));
            quiet_since = Instant::now();
        }
        if whole {
            base = step.base;
            since_whole = None;
        }
        if let Some(w) = step.watched
            && w != watched
        {
            // Another file read, a new document root: watch what this conversion read.
            // The new watches exist before the old ones go, so nothing falls between.
            watched = w;
            trees = job.watcher(&watched)?;
        }
    }
    drop(trees);
    // Nobody keeps the output in step now: the lane goes off, the Lua's guard back on.
    if std::fs::remove_file(&lane).is_ok() {
        job.lane_restart("off");
    }
    eprintln!("lighten watch: stopped");
    Ok(0)
}

impl Job {
    /// What is never a change: the output folder and the runtime folder (logs, pid file).
    fn ignored(&self) -> Vec<PathBuf> {
        vec![self.out_dir.clone(), self.runtime_dir.clone()]
    }

    /// What the configuration, as it is now, makes watch watch.
    fn watched(&self) -> Option<Watched> {
        let (cfg, model) = super::convert::load_sites(&self.config, &self.load, &self.vhosts, false).ok()?;
        Some(Watched::of(&cfg, &model, self.ignored()))
    }

    /// Converts, checks and writes; `changed` is what the events named (empty at start).
    /// The step's base is the loaded configuration when the output is then exactly its
    /// conversion (converted, or unchanged).
    fn step(&self, changed: Vec<PathBuf>, why: Vec<Why>, t0: Instant, wall: SystemTime) -> Step {
        let mut record = Record::new(&changed, why, wall);
        let ms = |d: Duration| d.as_millis() as u64;
        let (cfg, model) =
            match super::convert::load_sites(&self.config, &self.load, &self.vhosts, self.color) {
                Ok(x) => x,
                Err(e) => {
                    record.reason = Some(format!("{e:#}"));
                    record.enforce_ms = ms(t0.elapsed());
                    return Step { record, watched: None, inexact: true, base: None };
                }
            };
        let watched = Watched::of(&cfg, &model, self.ignored());
        let prepared = super::convert::prepare_model(
            &cfg,
            &model,
            &self.out_dir,
            &self.listen,
            Some(&self.runtime_dir),
            self.php.as_deref(),
            true,
        );
        let conv = match prepared {
            Ok(p) => p.conv,
            Err(e) => {
                record.reason = Some(format!("{e:#}"));
                record.enforce_ms = ms(t0.elapsed());
                return Step { record, watched: Some(watched), inexact: true, base: None };
            }
        };
        record.convert_ms = ms(t0.elapsed());
        record.counts = conv.report.counts.clone();
        record.findings = watch::htaccess_errors(&cfg, &changed);
        record.findings.extend(watch::findings_in(&conv.report, &changed));
        let inexact = conv.report.inexact();
        let (outcome, reason) = self.put_in_force(&cfg, &model, &conv, &mut record);
        record.outcome = outcome;
        record.reason = reason;
        record.enforce_ms = ms(t0.elapsed());
        let base = (outcome != Outcome::Refused).then(|| site::Base::new(cfg, model, &conv, &self.out_dir));
        Step { record, watched: Some(watched), inexact, base }
    }

    /// The whole conversion's files that differ from the output's, checked, written and
    /// read by the running lighttpd.
    fn put_in_force(
        &self,
        cfg: &crate::config::Config,
        model: &crate::model::Model,
        conv: &crate::translate::Conversion,
        record: &mut Record,
    ) -> (Outcome, Option<String>) {
        if self.strict && conv.report.inexact() {
            return (Outcome::Refused, Some("--strict, and some directives are not exact".into()));
        }
        // Only what differs is checked and written (a server's site data can be tens of
        // megabytes; a byte comparison, no diff).
        let changed: Vec<(PathBuf, String)> = conv
            .files
            .iter()
            .filter(|(rel, text)| !same_bytes(&self.out_dir.join(rel), text))
            .cloned()
            .collect();
        if changed.is_empty() {
            return (Outcome::Unchanged, None);
        }
        // The runtime folder (created, and given to lighttpd's user) is what the checks
        // look at too.
        if let Err(e) = super::convert::give_runtime_dir(conv, &self.runtime_dir) {
            return (Outcome::Refused, Some(format!("{e:#}")));
        }
        if let Err(e) = self.check_staged(conv, &changed) {
            return (Outcome::Refused, Some(e));
        }
        // The reports alone (the whole conversion after site-only steps) answer nothing.
        if !changed.iter().all(|(rel, _)| site::is_report(rel)) {
            match self.check_answers(cfg, model, &record.changed, true) {
                Ok(n) => record.checked = n,
                Err(e) => return (Outcome::Refused, Some(e)),
            }
        }
        if let Err(e) = plan::apply(&self.out_dir, &changed) {
            return (Outcome::Refused, Some(format!("writing {}: {e:#}", self.out_dir.display())));
        }
        record.written = changed.iter().map(|(rel, _)| rel.display().to_string()).collect();
        // lighttpd.conf and the fixed runtime unchanged: the hook scripts reload the rest
        // (translate::conf::OUTPUT_ID); else lighttpd restarts.
        let restart = changed
            .iter()
            .any(|(rel, _)| rel.as_os_str() == "lighttpd.conf" || crate::translate::is_runtime(rel));
        record.reload = self.reload(restart);
        if changed.iter().any(|(rel, _)| {
            rel.starts_with(crate::translate::fpm::DIR) || rel.as_os_str() == crate::translate::fpm::MASTER
        }) {
            self.reload_fpm();
        }
        (Outcome::Converted, None)
    }

    /// The files that change written to the staging folder and checked there: what would
    /// keep the running lighttpd from restarting on them, or break a request. lighttpd.conf,
    /// when it changes, gets `lighttpd -tt` and the preflight of everything it needs.
    fn check_staged(
        &self,
        conv: &crate::translate::Conversion,
        changed: &[(PathBuf, String)],
    ) -> Result<(), String> {
        let staging = self.out_dir.join(STAGING);
        let _ = std::fs::remove_dir_all(&staging);
        let result = (|| {
            crate::output::write_files(&staging, changed)
                .map_err(|e| format!("staging in {}: {e}", staging.display()))?;
            if self.luac {
                for (rel, _) in changed.iter().filter(|(rel, _)| rel.extension().is_some_and(|e| e == "lua"))
                {
                    lighttpd::check_lua(&staging.join(rel)).map_err(|e| format!("{}: {e}", rel.display()))?;
                }
            }
            if changed.iter().any(|(rel, _)| rel.as_os_str() == "lighttpd.conf") {
                let files: Vec<PathBuf> = changed.iter().map(|(rel, _)| staging.join(rel)).collect();
                let problems = super::convert::check_setup(conv, files, &staging, &self.runtime_dir);
                let errors: Vec<String> =
                    problems.iter().filter(|p| p.level == Level::Error).map(|p| p.line()).collect();
                if !errors.is_empty() {
                    return Err(errors.join("; "));
                }
            }
            Ok(())
        })();
        let _ = std::fs::remove_dir_all(&staging);
        result
    }

    /// The new output answering the requests derived from the configuration whose
    /// evaluation meets a changed file (`eval`: Apache's answer), on a lighttpd of its own
    /// in a sandbox on a free loopback port: a request Apache refuses (4xx) that it serves
    /// (2xx) refuses the change. Plain-http requests only, 200 at most; returns how many
    /// were sent.
    /// `whole`: the model is the whole configuration's, and only the sites the change
    /// concerns are checked (on a conversion of them alone); else it is those sites'.
    fn check_answers(
        &self,
        cfg: &crate::config::Config,
        model: &crate::model::Model,
        changed: &[String],
        whole: bool,
    ) -> Result<usize, String> {
        use crate::verify::{self, derive};
        if changed.is_empty() {
            return Ok(0);
        }
        let meets = |sp: crate::source::Span| {
            let f = cfg.sources.file(sp.file);
            let p = absolute(std::path::Path::new(&f.display)).unwrap_or_default();
            changed.iter().any(|c| p.starts_with(c))
        };
        let host = verify::default_host(model);
        // The sites the change can concern: those whose document root holds every changed
        // file (an .htaccess edit in one account of a big server); a change anywhere else
        // concerns them all. Only their requests are checked, on a conversion of only them.
        let sites = if whole { affected_sites(cfg, model, changed) } else { None };
        let mut picked = Vec::new();
        for req in derive::requests(model, &cfg.sysroot, &derive::Limits::default()) {
            if req.scheme != "http" || picked.len() >= 200 {
                continue;
            }
            let h = req.host.clone().unwrap_or_else(|| host.clone());
            if let Some(Affected { names, .. }) = &sites {
                let bare = h.rsplit_once(':').map_or(h.as_str(), |(n, _)| n).to_ascii_lowercase();
                if !names.contains(&bare) {
                    continue;
                }
            }
            let mut r = req.clone();
            r.host = req.host_header(&h);
            let ev = crate::eval::evaluate(model, &cfg.sysroot, &r, 80);
            // What answers, as a path here: under a changed file's folder, the change can
            // concern it (a deleted .htaccess leaves no trace to meet).
            let served = match &ev.outcome.served {
                crate::eval::Served::File { path } => Some(path.as_str()),
                crate::eval::Served::Php { script, .. } => Some(script.as_str()),
                crate::eval::Served::Listing { dir } => Some(dir.as_str()),
                _ => None,
            };
            let below = served.is_some_and(|p| {
                let host = absolute(&cfg.sysroot.host_path(p)).unwrap_or_default();
                changed.iter().any(|c| std::path::Path::new(c).parent().is_some_and(|d| host.starts_with(d)))
            });
            if below || ev.trace.iter().any(|s| s.at.is_some_and(meets)) {
                picked.push((req, h, ev.outcome));
            }
        }
        if picked.is_empty() {
            return Ok(0);
        }
        let fail = |e: &dyn std::fmt::Display| format!("checking the new output's answers: {e}");
        let sb = run::sandbox::Sandbox::new("lighten-watch-check-").map_err(|e| fail(&e))?;
        let port = run::sandbox::free_port().map_err(|e| fail(&e))?;
        let out = sb.path().join("lighttpd");
        let only = match &sites {
            Some(Affected { primary, .. }) => Some(
                super::convert::load_sites(&self.config, &self.load, primary, false).map_err(|e| fail(&e))?,
            ),
            None => None,
        };
        let (cfg, model) = match &only {
            Some((c, m)) => (c, m),
            None => (cfg, model),
        };
        // a sandbox: its probes are logged in its own folder, never in the site's logs
        let p = super::convert::prepare_model(
            cfg,
            model,
            &out,
            &[format!("127.0.0.1:{port}")],
            Some(&out.join("run")),
            self.php.as_deref(),
            false,
        )
        .map_err(|e| fail(&e))?;
        crate::output::write_files(&out, &p.conv.files).map_err(|e| fail(&e))?;
        std::fs::create_dir_all(out.join("run")).map_err(|e| fail(&e))?;
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(out.join("run"), std::fs::Permissions::from_mode(0o777))
                .map_err(|e| fail(&e))?;
        }
        // The configuration was checked with -tt already; the sandbox's copy differs only
        // in its listener and folders.
        let l = lighttpd::start_quick(&out.join("lighttpd.conf"), &sb, port).map_err(|e| fail(&e))?;
        let mut open = Vec::new();
        for (req, h, expect) in &picked {
            let mut headers = vec![("Host".to_string(), h.clone())];
            headers.extend(req.headers.iter().cloned());
            let sent = verify::Sent::new(req, h, headers);
            // No answer is no proof: the change is refused.
            let resp =
                verify::send(port, false, &sent).map_err(|e| fail(&format!("{}: {e}", req.to_line())))?;
            if (400..500).contains(&expect.status) && (200..300).contains(&resp.status) {
                open.push(format!("{} (Apache {}, converted {})", req.to_line(), expect.status, resp.status));
            }
        }
        // Stopping waits for lighttpd's graceful shutdown (up to seconds): not on the way
        // to putting the change in force.
        std::thread::spawn(move || {
            let mut l = l;
            l.stop();
            drop(sb);
        });
        if open.is_empty() {
            Ok(picked.len())
        } else {
            Err(format!("the new output serves what Apache refuses: {}", open.join(", ")))
        }
    }

    /// A graceful restart of the lighttpd running from the output for the static lane
    /// going `on` or off, said on stderr.
    fn lane_restart(&self, on: &str) {
        match self.reload(true) {
            Reload::NotRunning => {}
            Reload::Restarted { pid } => {
                eprintln!("lighten watch: the static lane is {on} (lighttpd {pid} restarted)")
            }
            r => eprintln!("lighten watch: the static lane is {on} ({r:?})"),
        }
    }

    /// Restarts the lighttpd running from the output, if one does and `restart` says so.
    fn reload(&self, restart: bool) -> Reload {
        let conf = self.out_dir.join("lighttpd.conf");
        let Some(pid) = lighttpd::running_from(&conf, &self.runtime_dir.join("lighttpd.pid")) else {
            return Reload::NotRunning;
        };
        if !restart {
            // Each hook script looks for a new output once a tick: in force after one.
            std::thread::sleep(HOOK_TICK);
            return Reload::Reloaded { pid };
        }
        match lighttpd::graceful_restart(pid, &self.runtime_dir.join("error.log"), RESTART_TIMEOUT) {
            Ok(Restart::Done) => Reload::Restarted { pid },
            Ok(Restart::NotSeen) => Reload::Signalled { pid },
            Err(e) => {
                eprintln!("lighten watch: signalling lighttpd {pid}: {e}");
                Reload::NotRunning
            }
        }
    }

    /// The php-fpm running the output's pools reads them again (SIGUSR2: it restarts its
    /// workers gracefully), if it runs.
    fn reload_fpm(&self) {
        let pid = std::fs::read_to_string(self.runtime_dir.join("php-fpm.pid"))
            .ok()
            .and_then(|p| p.trim().parse::<libc::pid_t>().ok())
            .filter(|&p| p > 1);
        let Some(pid) = pid else { return };
        // SAFETY: kill has no memory preconditions; the pid comes from php-fpm's own pid file.
        if unsafe { libc::kill(pid, libc::SIGUSR2) } == 0 {
            eprintln!("lighten watch: php-fpm {pid} reloads its pools (they changed)");
        }
    }

    fn log(&self, r: &Record) {
        eprintln!("lighten watch: {}", r.text());
        if self.json {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{}", r.json());
            let _ = out.flush();
        }
    }

    /// What to watch when the configuration could not be read at all: its file's folder,
    /// or the folder given, so that fixing it is seen.
    fn fallback_watch(&self) -> Watched {
        let path = absolute(&self.config).unwrap_or_else(|_| self.config.clone());
        let mut w = Watched { ignored: self.ignored(), ..Watched::default() };
        w.names.insert(".htaccess".into());
        if path.is_dir() {
            w.trees.insert(path.clone());
            w.config_dirs.insert(path);
        } else if let Some(d) = path.parent() {
            w.config_files.insert(path.clone());
            w.config_dirs.insert(d.to_path_buf());
        }
        w
    }

    fn watcher(&self, w: &Watched) -> anyhow::Result<tree::Trees> {
        let mut t = tree::Trees::new().context("starting inotify")?;
        for d in &w.config_dirs {
            if !w.trees.iter().any(|t| d.starts_with(t)) && d.is_dir() {
                t.watch_dir(d).with_context(|| format!("watching {}", d.display()))?;
            }
        }
        for root in &w.trees {
            t.watch_tree(root).with_context(|| format!("watching {}", root.display()))?;
        }
        Ok(t)
    }
}

/// Whether the file at `path` holds exactly `text`.
/// Writes the file that turns the static lane on (`translate::lane::WATCHING`) and
/// restarts lighttpd for it.
fn lane_on(job: &Job, lane: &std::path::Path) {
    let text = crate::translate::lane::WATCHING_TEXT.to_string();
    match crate::plan::apply(&job.out_dir, &[(PathBuf::from(crate::translate::lane::WATCHING), text)]) {
        Ok(_) => job.lane_restart("on"),
        Err(e) => eprintln!("lighten watch: writing {}: {e:#} (the static lane stays off)", lane.display()),
    }
}

/// The static lane after a step that was refused or converted everything. A refused
/// change leaves the output in force, whose Lua safety net answers for the .htaccess it
/// could not convert (503): the lane, which skips that net, goes off until a whole
/// conversion of everything succeeds again, and then on.
fn lane_after(job: &Job, lane: &std::path::Path, outcome: Outcome) {
    if outcome == Outcome::Refused {
        if std::fs::remove_file(lane).is_ok() {
            job.lane_restart("off (a change was refused: the safety net answers for it)");
        }
    } else if !lane.exists() {
        lane_on(job, lane);
    }
}

/// The paths a record names.
fn changed_paths(r: &Record) -> Vec<PathBuf> {
    r.changed.iter().map(PathBuf::from).collect()
}

fn same_bytes(path: &std::path::Path, text: &str) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.len() == text.len() as u64)
        && std::fs::read(path).is_ok_and(|b| b == text.as_bytes())
}

fn which(cmd: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(cmd).is_file()))
}

/// The virtual hosts whose document root holds every changed path, with every vhost that
/// reaches an .htaccess there another way: their names and aliases (lower case), and one
/// name each (what `--vhost` takes). `None` when a change lies outside every document root,
/// the main server reaches it, or a site has no name to pick it by: every site is
/// concerned.
fn affected_sites(
    cfg: &crate::config::Config,
    model: &crate::model::Model,
    changed: &[String],
) -> Option<Affected> {
    let roots: Vec<(usize, PathBuf)> = model
        .vhosts
        .iter()
        .enumerate()
        .filter_map(|(i, v)| {
            let root = v.document_root.as_ref()?;
            Some((i, absolute(&cfg.sysroot.host_path(root)).ok()?))
        })
        .collect();
    let files: Vec<(PathBuf, &Vec<Option<usize>>)> = model
        .htaccess
        .iter()
        .map(|h| (absolute(&cfg.sysroot.host_path(&h.path)).unwrap_or_default(), &h.host_ids))
        .collect();
    let mut hit = BTreeSet::new();
    for c in changed {
        let c = std::path::Path::new(c);
        let mut mine: Vec<usize> = roots.iter().filter(|(_, r)| c.starts_with(r)).map(|(i, _)| *i).collect();
        if mine.is_empty() {
            return None;
        }
        // and every server that reaches an .htaccess at or below it another way (an Alias
        // into this tree); the main server's reach concerns every site
        for (file, hosts) in &files {
            if file.starts_with(c) || c.starts_with(file) {
                for id in hosts.iter() {
                    mine.push((*id)?);
                }
            }
        }
        hit.extend(mine);
    }
    let (mut names, mut primary) = (Vec::new(), Vec::new());
    let indices: Vec<usize> = hit.iter().copied().collect();
    for &i in &hit {
        let v = &model.vhosts[i];
        let name = v.server_name.clone()?;
        names.extend(std::iter::once(&name).chain(&v.aliases).map(|n| n.to_ascii_lowercase()));
        if !primary.contains(&name) {
            primary.push(name);
        }
    }
    Some(Affected { names, primary, indices })
}

/// The sites a change concerns ([`affected_sites`]).
struct Affected {
    /// Their names and aliases, lower case.
    names: Vec<String>,
    /// One name each (what `--vhost` takes).
    primary: Vec<String>,
    /// The vhosts whose document root holds a changed path or that reach a changed file
    /// (indices into `Model::vhosts`).
    indices: Vec<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn an_htaccess_edit_concerns_its_site_and_a_server_file_every_site() {
        let opts =
            LoadOptions { sysroot: crate::source::Sysroot::at("fixtures/plesk"), ..LoadOptions::default() };
        let (cfg, model) =
            crate::cli::load::checked(Path::new("fixtures/plesk/var/www/vhosts"), &opts, false).unwrap();
        let at =
            |rel: &str| absolute(Path::new(&format!("fixtures/plesk/{rel}"))).unwrap().display().to_string();
        let Affected { names, primary, .. } =
            affected_sites(&cfg, &model, &[at("var/www/vhosts/shop.example/httpdocs/.htaccess")]).unwrap();
        assert_eq!(primary, ["shop.example"]);
        assert!(names.contains(&"www.shop.example".to_string()), "{names:?}");
        assert!(!names.iter().any(|n| n.contains("blog")), "{names:?}");
        assert!(
            affected_sites(&cfg, &model, &[at("var/www/vhosts/system/shop.example/conf/vhost.conf")])
                .is_none()
        );
    }
}
