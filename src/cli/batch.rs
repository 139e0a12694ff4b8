//! `lighten batch`: every hosting account of a Plesk vhosts root converted on its own
//! (`OUT/<domain>/`, what `convert` writes), the accounts that converted served together
//! by one lighttpd (`OUT/lighttpd.conf` -> `OUT/combined/`), and a summary
//! (`OUT/batch-summary.md`, `.json`).
//!
//! Each account is read alone, inside the server-wide configuration
//! ([`config::LoadOptions::plesk_domains`]), on `--jobs` threads; one that Apache would
//! refuse (a syntax error, an unreadable file, an include cycle) is reported with its
//! `file:line:column` and never stops the others.  The combined configuration is a second
//! conversion of the accounts that converted, as one model, so that virtual host
//! selection, listeners and the main server are Apache's for the whole server.  Output is
//! in domain order and carries no time, so an unchanged server gives the same bytes.

use super::args::BatchArgs;
use super::convert::{check_setup, give_runtime_dir, parse_listen, prepare_model};
use super::inspect::load_options;
use crate::batch::fallback::{self, Backend};
use crate::batch::{Account, Combined, Counts, Failure, Shard, Status, Summary, Worst};
use crate::config::{self, InputKind, LoadOptions};
use crate::run::preflight::{Level, Problem};
use crate::translate::Report;
use crate::{model, plan};
use anyhow::Context;
use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The flags, resolved.
struct Settings {
    root: PathBuf,
    /// The root made absolute, for what is written.
    root_shown: String,
    /// Absolute.
    out: PathBuf,
    load: LoadOptions,
    listen: Vec<String>,
    /// The PHP backend for every account (`--php-backend`), else each account's own.
    php: Option<String>,
    /// An inexact account fails (`--strict`, `approximations = "refuse"`).
    strict: bool,
    /// Where the accounts that stay on Apache are served (`--fallback-apache`).
    fallback: Option<Backend>,
    /// Every file written, by content: the same bytes again (the runtime in every
    /// account, each account's modules in the combined folder) are one file on disk.
    written: plan::Shared,
    jobs: usize,
    shard: Shard,
    dry_run: bool,
    json: bool,
    /// Colour the dry run's diffs.
    color: bool,
}

/// The names of what a run writes at the top of the output folder; a sharded run suffixes
/// them so that shards can share one folder.
struct Names {
    conf: String,
    combined: String,
    markdown: String,
    json: String,
    /// The Lua answering 503 for kept hosts over TLS (`--fallback-apache`).
    refusal: String,
}

impl Names {
    fn of(shard: Shard) -> Names {
        let s =
            if shard.is_all() { String::new() } else { format!("-shard-{}-of-{}", shard.index, shard.count) };
        Names {
            conf: format!("lighttpd{s}.conf"),
            combined: format!("combined{s}"),
            markdown: format!("batch-summary{s}.md"),
            json: format!("batch-summary{s}.json"),
            refusal: format!("stays-on-apache{s}.lua"),
        }
    }

    fn clashes(&self, domain: &str) -> bool {
        [&self.conf, &self.combined, &self.markdown, &self.json, &self.refusal]
            .iter()
            .any(|n| n.as_str() == domain)
    }
}

/// One conversion (an account, or the combined accounts) done.
struct Done {
    report: Report,
    /// The dry run's changes, paths relative to the output folder.
    changes: Vec<plan::FileChange>,
    /// What keeps the written setup from starting (checked for the combined one only:
    /// `lighttpd -tt` once per account would be most of a large server's run).
    problems: Vec<Problem>,
    /// The lighttpd modules its lighttpd.conf loads.
    modules: Vec<String>,
    /// Every ServerName and ServerAlias of its virtual hosts.
    names: Vec<String>,
    /// It has php-fpm pools (PHP as each account's user), run by its php-fpm.conf.
    fpm: bool,
}

pub fn run(a: BatchArgs, settings: &crate::settings::Resolved, color: bool) -> anyhow::Result<i32> {
    let listen = settings.listen.clone();
    for l in &listen {
        parse_listen(l).map_err(anyhow::Error::msg)?;
    }
    let out = settings.out()?;
    let out = std::path::absolute(out).with_context(|| format!("{}", out.display()))?;
    let s = Settings {
        root: a.root.clone(),
        root_shown: std::path::absolute(&a.root).unwrap_or_else(|_| a.root.clone()).display().to_string(),
        out,
        // every account reads the same server configuration: its includes are expanded once
        load: LoadOptions { shared: Some(Default::default()), ..load_options(&a.load) },
        listen,
        php: settings.php_backend.clone(),
        strict: settings.strict,
        fallback: a.fallback_apache.clone(),
        written: plan::Shared::default(),
        jobs: a.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).max(1),
        shard: a.shard.unwrap_or(Shard::ALL),
        dry_run: a.dry_run,
        json: a.json,
        color,
    };
    let input = config::classify(&s.root, &s.load)?;
    if input.kind != InputKind::PleskRoot {
        anyhow::bail!(
            "{}: not a Plesk vhosts root (no system/<domain>/conf/httpd.conf under it); use lighten convert for one configuration",
            s.root.display()
        );
    }
    let server_config = config::plesk_server_config(&s.load);
    if server_config.is_none() {
        eprintln!(
            "lighten: note: no server configuration found (/etc/apache2/apache2.conf, /etc/httpd/conf/httpd.conf): \
             every account is read inside lighten's stand-in for Plesk's usual server settings \
             (templates/defaults/plesk.conf); pass --server-config FILE to use the server's"
        );
    }
    let names = Names::of(s.shard);
    let named = named_accounts(&input.domains, &a.vhosts).map_err(anyhow::Error::msg)?;
    let domains: Vec<String> =
        input.domains.iter().filter(|d| s.shard.contains(d) && named(d)).cloned().collect();

    // Every account on its own, in parallel; the dry run's diffs are printed in domain
    // order as soon as the accounts before them are done.
    let bar =
        super::progress::bar(!s.json, domains.len() as u64, "{bar:40} {pos}/{len} accounts {elapsed} {msg}");
    let mut rows: Vec<Option<Account>> = vec![None; domains.len()];
    let mut changes: Vec<plan::FileChange> = Vec::new();
    let mut pending: BTreeMap<usize, Vec<plan::FileChange>> = BTreeMap::new();
    let mut next_shown = 0;
    let mut failed = 0;
    let mut stdout = std::io::stdout().lock();
    let mut io_error: Option<std::io::Error> = None;
    // every entry of the accounts' own reports, which the combined report need not repeat
    let mut held: HashSet<u64> = HashSet::new();
    parallel(
        domains.len(),
        s.jobs,
        |i| {
            let d = &domains[i];
            if names.clashes(d) {
                let f = Failure::other(format!("the folder {d} would clash with batch's own {d}"));
                return (Account::failed(d, f), Vec::new(), Vec::new());
            }
            guarded(|| convert(&s, std::slice::from_ref(d), d, None))
                .map(|done| {
                    let prints = done.report.entries.iter().map(|e| e.fingerprint()).collect();
                    (Account::converted(d, &done.report), done.changes, prints)
                })
                .unwrap_or_else(|f| (Account::failed(d, f), Vec::new(), Vec::new()))
        },
        |i, (row, ch, prints)| {
            held.extend(prints);
            if row.status == Status::Failed {
                failed += 1;
            }
            if let Some(b) = &bar {
                b.inc(1);
                b.set_message(if failed > 0 { format!("{failed} failed") } else { String::new() });
            }
            rows[i] = Some(row);
            if s.dry_run {
                pending.insert(i, ch);
                while let Some(ch) = pending.remove(&next_shown) {
                    let text = plan::render(&ch, s.color);
                    let shown = match &bar {
                        Some(b) => b.suspend(|| stdout.write_all(text.as_bytes())),
                        None => stdout.write_all(text.as_bytes()),
                    };
                    if let Err(e) = shown {
                        io_error.get_or_insert(e);
                    }
                    // Only the counts are kept for the summary line: a first dry run
                    // holds every file as an addition.
                    changes.extend(ch.into_iter().map(|c| plan::FileChange { diff: String::new(), ..c }));
                    next_shown += 1;
                }
            }
        },
    );
    if let Some(e) = io_error {
        return Err(e.into());
    }
    let mut rows: Vec<Account> = rows.into_iter().map(|r| r.expect("every account done")).collect();

    // The accounts that converted, together.
    let converted: Vec<String> =
        rows.iter().filter(|r| r.status != Status::Failed).map(|r| r.domain.clone()).collect();
    let mut top: Vec<(PathBuf, String)> = Vec::new();
    let mut combined_diff = String::new();
    let mut combined_problems: Vec<Problem> = Vec::new();
    // the Apache the failed accounts are sent to, once the combined configuration does
    let mut proxied: Option<&Backend> = None;
    let mut combined_fpm = false;
    let combined = if converted.is_empty() {
        None
    } else {
        if let Some(b) = &bar {
            b.set_message(format!("then the {} converted accounts together", converted.len()));
        }
        let c = guarded(|| convert(&s, &converted, &names.combined, Some(&held)));
        Some(match c {
            Ok(done) => {
                combined_problems = done.problems;
                combined_fpm = done.fpm;
                let mut conf = combined_conf(&s, &names, converted.len());
                if let Some(backend) = &s.fallback {
                    // the accounts that stay on Apache, served by it
                    let kept: Vec<fallback::Kept> = rows
                        .iter()
                        .filter(|r| r.status == Status::Failed)
                        .map(|r| fallback::Kept {
                            domain: r.domain.clone(),
                            names: fallback::names(&s.root, &r.domain),
                            why: r.error.as_ref().map(Failure::line).unwrap_or_default(),
                        })
                        .collect();
                    if !kept.is_empty() {
                        proxied = Some(backend);
                        let refusal = s.out.join(&names.refusal);
                        conf.push_str(&fallback::conf(&kept, &done.names, backend, &refusal, &done.modules));
                        top.push((PathBuf::from(&names.refusal), fallback::TLS_REFUSAL.to_string()));
                    }
                }
                top.push((PathBuf::from(&names.conf), conf));
                combined_diff = plan::render(&done.changes, s.color);
                changes
                    .extend(done.changes.into_iter().map(|c| plan::FileChange { diff: String::new(), ..c }));
                Combined {
                    config: names.conf.clone(),
                    folder: names.combined.clone(),
                    accounts: converted.len(),
                    status: if done.report.inexact() { Status::Approximated } else { Status::Exact },
                    counts: Some(Counts::of(&done.report)),
                    worst: Worst::of(&done.report),
                    error: None,
                }
            }
            Err(f) => Combined {
                config: names.conf.clone(),
                folder: names.combined.clone(),
                accounts: converted.len(),
                status: Status::Failed,
                counts: None,
                worst: None,
                error: Some(f),
            },
        })
    };

    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    if let Some(backend) = proxied {
        for r in rows.iter_mut().filter(|r| r.status == Status::Failed) {
            r.next = format!(
                "served by the Apache kept at {backend} (over plain HTTP; 503 over TLS); to move it, fix what stops it and convert again"
            );
        }
    }
    stdout.write_all(combined_diff.as_bytes())?;
    let mut summary =
        Summary::new(s.root_shown.clone(), server_config, s.shard, input.domains.len(), rows, combined);
    summary.fallback = proxied.map(Backend::to_string);
    top.push((PathBuf::from(&names.markdown), summary.to_markdown()));
    top.push((PathBuf::from(&names.json), summary.to_json()));

    let mut err = std::io::stderr().lock();
    for r in summary.accounts.iter().filter(|r| r.status == Status::Failed) {
        let line = r.error.as_ref().map(Failure::line).unwrap_or_default();
        writeln!(err, "lighten: {} failed: {line}", r.domain)?;
    }
    if let Some(f) = &summary.fallback {
        writeln!(
            err,
            "lighten: note: the accounts that stay on Apache are sent to {f}; that Apache must take the \
             client's address from lighttpd (mod_remoteip: {}), or its Require ip and Allow/Deny rules \
             see lighttpd's address",
            crate::batch::summary::REMOTEIP.replace('\n', "; ")
        )?;
    }
    if let Some(Combined { error: Some(f), .. }) = &summary.combined {
        writeln!(err, "lighten: the combined configuration failed: {}", f.line())?;
    }
    let t = &summary.totals;
    let counts = t.verdicts.iter().map(|(v, n)| format!("{n} {v}")).collect::<Vec<_>>().join(", ");
    if s.dry_run {
        let top_changes = plan::diff_files(&s.out, &top)?;
        stdout.write_all(plan::render(&top_changes, s.color).as_bytes())?;
        changes.extend(top_changes);
        writeln!(
            stdout,
            "dry run, nothing written to {}: {} accounts ({counts}); {}",
            s.out.display(),
            t.accounts,
            plan::summary(&changes)
        )?;
        return Ok(if summary.exit_status == 2 {
            2
        } else if changes.iter().any(|c| c.kind != plan::Kind::Same) {
            1
        } else {
            0
        });
    }
    plan::apply(&s.out, &top)?;
    if proxied.is_some() {
        // the entry point now says more than the combined configuration checked above
        if let Err(e) = crate::run::lighttpd::check_config(&s.out.join(&names.conf)) {
            combined_problems.push(Problem { level: Level::Error, at: String::new(), message: e, fix: None });
        }
    }
    for p in &combined_problems {
        writeln!(err, "lighten: the combined configuration: {}", p.line())?;
    }
    let starts = !combined_problems.iter().any(|p| p.level == Level::Error);
    if s.json {
        stdout.write_all(summary.to_json().as_bytes())?;
    } else {
        writeln!(stdout, "wrote {}: {} accounts ({counts})", s.out.display(), t.accounts)?;
        if let Some(c) = summary.combined.as_ref().filter(|c| c.status != Status::Failed && starts) {
            let master = s.out.join(&names.combined).join(crate::translate::fpm::MASTER);
            let run =
                super::service::run_line(&s.out.join(&c.config), combined_fpm.then_some(master.as_path()));
            writeln!(stdout, "run them all: {run} ({} accounts)", c.accounts)?;
        }
        writeln!(stdout, "summary: {}", s.out.join(&names.markdown).display())?;
    }
    if !starts {
        writeln!(err, "lighten: the combined configuration was written but will not start as it is")?;
        return Ok(2);
    }
    Ok(summary.exit_status)
}

/// Which accounts `--vhost` keeps (all when it names none): by domain, or the domain with
/// `www.` before it, case aside. A name no account has is an error that lists them.
fn named_accounts<'a>(domains: &[String], names: &'a [String]) -> Result<impl Fn(&str) -> bool + 'a, String> {
    let account = |name: &str| {
        let n = name.trim_end_matches('.').to_ascii_lowercase();
        let bare = n.strip_prefix("www.").map(str::to_string);
        domains
            .iter()
            .find(|d| {
                d.eq_ignore_ascii_case(&n) || bare.as_deref().is_some_and(|b| d.eq_ignore_ascii_case(b))
            })
            .cloned()
    };
    let mut kept = Vec::new();
    for n in names {
        match account(n) {
            Some(d) => kept.push(d),
            None => {
                return Err(format!(
                    "--vhost {n}: no account of that domain (accounts: {})",
                    domains.join(", ")
                ));
            }
        }
    }
    Ok(move |d: &str| names.is_empty() || kept.iter().any(|k| k == d))
}

/// Loads `domains` of the root (alone, inside the server-wide configuration), converts
/// them for `OUT/folder`, and writes the files (or, in a dry run, diffs them).  An error
/// Apache would refuse the configuration for stops here, before anything is written.
/// The combined conversion (`held`: the fingerprints of the accounts' report entries)
/// is checked as a whole, and its report lists only what the accounts' reports do not.
fn convert(
    s: &Settings,
    domains: &[String],
    folder: &str,
    held: Option<&HashSet<u64>>,
) -> Result<Done, Failure> {
    let check = held.is_some();
    let mut opts = s.load.clone();
    opts.plesk_domains = Some(domains.to_vec());
    let mut cfg = config::load(&s.root, &opts).map_err(|e| Failure::other(e.to_string()))?;
    let (model, model_diags) = model::build(&mut cfg);
    let mut diags = std::mem::take(&mut cfg.diagnostics).into_vec();
    diags.extend(model_diags);
    if let Some(f) = Failure::of(&cfg.sources, &diags) {
        return Err(f);
    }
    let p = prepare_model(&cfg, &model, &s.out.join(folder), &s.listen, None, s.php.as_deref(), true)
        .map_err(|e| Failure::other(format!("{e:#}")))?;
    let names: Vec<String> =
        model.vhosts.iter().flat_map(|v| v.server_name.iter().chain(v.aliases.iter()).cloned()).collect();
    drop(model);
    drop(cfg);
    // Paths relative to the output folder, so diffs and backups name the account.
    let mut conv = p.conv;
    if s.strict && conv.report.inexact() {
        let inexact: Vec<_> = conv.report.inexact_entries().collect();
        let first = inexact.first().map(|e| format!(": {} {} ({})", e.directive, e.args, e.fate.label()));
        return Err(Failure {
            at: inexact.first().map(|e| e.at.clone()),
            code: None,
            message: format!(
                "--strict: {} directive(s) approximated or unsupported{}; nothing written, the account stays on Apache",
                inexact.len(),
                first.unwrap_or_default()
            ),
            errors: 1,
        });
    }
    let report = std::mem::take(&mut conv.report);
    if let Some(held) = held {
        let shown = report.leaving_out(held, "an account's own report (<domain>/report.md)");
        for (rel, text) in conv.files.iter_mut() {
            if rel == Path::new("report.md") {
                *text = shown.to_markdown();
            } else if rel == Path::new("report.json") {
                *text = shown.to_json();
            }
        }
    }
    let fpm = !conv.pools.is_empty();
    let modules = conv
        .files
        .iter()
        .find(|(rel, _)| rel == Path::new("lighttpd.conf"))
        .map(|(_, text)| fallback::modules_of(text))
        .unwrap_or_default();
    let written: Vec<PathBuf> = conv.files.iter().map(|(rel, _)| p.out_dir.join(rel)).collect();
    let files: Vec<(PathBuf, String)> = std::mem::take(&mut conv.files)
        .into_iter()
        .map(|(rel, text)| (Path::new(folder).join(rel), text))
        .collect();
    let write_error = |e: std::io::Error| Failure::other(e.to_string());
    let mut problems = Vec::new();
    let changes = if s.dry_run {
        plan::diff_files(&s.out, &files).map_err(write_error)?
    } else {
        plan::apply_shared(&s.out, &files, &s.written).map_err(write_error)?;
        give_runtime_dir(&conv, &p.runtime_dir).map_err(|e| Failure::other(format!("{e:#}")))?;
        if check {
            problems = check_setup(&conv, written, &p.out_dir, &p.runtime_dir);
        }
        Vec::new()
    };
    Ok(Done { report, changes, problems, modules, names, fpm })
}

/// `OUT/lighttpd.conf`: the entry point that serves every converted account.
fn combined_conf(s: &Settings, names: &Names, accounts: usize) -> String {
    let own = s.out.join(&names.conf);
    let target = s.out.join(&names.combined).join("lighttpd.conf");
    let quote =
        |p: &Path| format!("\"{}\"", p.display().to_string().replace('\\', "\\\\").replace('"', "\\\""));
    format!(
        "# Generated by lighten batch from {root}: the {accounts} account(s) that converted, in one\n\
         # lighttpd. Virtual hosts are chosen by Host as Apache chose them among these accounts;\n\
         # {combined}/report.md says what became of each directive, {summary} lists the accounts.\n\
         # Each account alone: {out}/<domain>/lighttpd.conf.\n\
         # Run: lighttpd -D -f {own}\n\
         include {target}\n",
        root = s.root_shown,
        combined = names.combined,
        summary = names.markdown,
        out = s.out.display(),
        own = own.display(),
        target = quote(&target),
    )
}

/// Runs `f`, turning a panic into a failure of this account alone.
fn guarded(f: impl FnOnce() -> Result<Done, Failure>) -> Result<Done, Failure> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let what = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(Failure::other(format!("internal error (please report): {what}")))
    })
}

/// `work(i)` for `i` in `0..n` on `jobs` threads, each taking the next index when it is
/// free; `done(i, result)` runs on the calling thread as results arrive.
fn parallel<T: Send>(
    n: usize,
    jobs: usize,
    work: impl Fn(usize) -> T + Sync,
    mut done: impl FnMut(usize, T),
) {
    let next = AtomicUsize::new(0);
    let (tx, rx) = std::sync::mpsc::channel::<(usize, T)>();
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(n) {
            let (tx, next, work) = (tx.clone(), &next, &work);
            scope.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n || tx.send((i, work(i))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for (i, r) in rx {
            done(i, r);
        }
    });
}
