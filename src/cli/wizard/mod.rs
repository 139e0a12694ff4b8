//! `lighten wizard`: a migration step by step, for an admin at a terminal or scripted with
//! flags.
//!
//! Every question is answered first (by its flag, by `--yes` taking the default, or at the
//! terminal) and resolved into one [`Migration`]; only then is anything written, verified
//! or measured.  What is shown on the way (the sites, what cannot be carried over exactly,
//! the diff against the output folder) is computed without writing.  The commands that
//! switch the sites over are printed, never run.  Without a terminal the wizard asks
//! nothing: a question no flag answers is an error naming the flags, before any work.

mod found;
mod migration;
mod prompt;
mod site;
mod switch;
pub(super) use site::keep_named;
pub(super) use switch::quote;

use super::args::{LoadArgs, WizardArgs};
use super::convert::{self, Prepared};
use super::inspect::load_options;
use crate::bench::compare::{Load, Plan};
use crate::config::{self, Config, InputKind, LoadOptions};
use crate::diagnostic::Severity;
use crate::model::{Model, vhost::name_matches};
use crate::plan::{self, FileChange, Kind};
use crate::settings::Resolved;
use crate::translate::Report;
use crate::verify::derive;
use found::Found;
use migration::{Check, Migration, either};
use prompt::{Cancelled, Prompt};
use site::Site;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Entries of each kind listed before pointing at report.md.
const LISTED: usize = 25;

/// Sites listed one line each above this many.
const COMPACT_OVER: usize = 20;

/// Lines of each file's diff shown in the preview.
const DIFF_LINES: usize = 60;

/// Sites loaded by the benchmark, at most.
const BENCH_SITES: usize = 3;

pub fn run(a: WizardArgs, settings: &Resolved, color: bool) -> anyhow::Result<i32> {
    // A SIGINT outside a raw-mode prompt (while a line is typed, while verify runs) goes
    // through the handler, which shows the cursor again before exiting 130.
    crate::run::process::stop_all_on_interrupt();
    match wizard(a, settings, color) {
        Err(e) if e.is::<Cancelled>() => {
            eprintln!("lighten wizard: cancelled; nothing written");
            Ok(130)
        }
        r => r,
    }
}

fn wizard(a: WizardArgs, settings: &Resolved, color: bool) -> anyhow::Result<i32> {
    let tty = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let color = color && tty;
    let load = load_options(&a.load);
    let found = found::configs(&load.sysroot);
    let missing = missing_tools();
    if !tty {
        let open = migration::unanswered(&a, &found, missing.is_none());
        if !open.is_empty() {
            eprint!("{}", migration::refusal(&open, &found));
            return Ok(2);
        }
    }
    let prompt = if tty { Prompt::terminal(color) } else { Prompt::none() };
    println!("lighten wizard: from Apache httpd to lighttpd (nothing is written before you confirm)");

    println!("\n1. The Apache configuration");
    let config = ask_config(&a, &found, &prompt)?;
    let command_line = later_line(&a.load, None, &config, &[]);
    // What Apache would refuse at startup ends the wizard here, before any question more.
    let (cfg, mut model) = super::load::checked(&config, &load, color)?;
    let errors = cfg.diagnostics.iter().filter(|d| d.severity == Severity::Error).count();
    println!(
        "   read {}: {} virtual hosts, {} .htaccess files applied",
        config.display(),
        model.vhosts.len(),
        model.htaccess.iter().filter(|h| h.scope.is_some()).count()
    );
    if errors > 0 {
        println!(
            "   {errors} error(s) Apache would refuse or answer 500 for: `lighten inspect {command_line}` shows them"
        );
    }

    let sites = site::sites(&model, &cfg.sources);
    println!("\n2. The sites ({})", sites.len());
    let compact = sites.len() > COMPACT_OVER;
    for (i, s) in sites.iter().enumerate() {
        for (n, l) in s.describe(compact).iter().enumerate() {
            if n == 0 { println!("   {:>2}. {l}", i + 1) } else { println!("       {l}") }
        }
    }
    let picked = ask_sites(&a, &sites, &prompt)?;
    let keep = (picked.len() < sites.len())
        .then(|| picked.iter().flat_map(|&i| sites[i].vhosts.iter().copied()).collect::<Vec<usize>>());
    let out = ask_out(&a, settings, load.sysroot.root().is_some(), &prompt)?;

    // Sites the benchmark and curl can reach (vhost indices are the full model's).
    let http: Vec<(String, String)> = picked
        .iter()
        .map(|&i| &sites[i])
        .filter_map(|s| Some((s.name.clone()?, http_address(&model, s)?)))
        .collect();
    // The conversion, in memory: what the next two steps show is what would be written.
    if let Some(k) = &keep {
        model.keep_vhosts(k);
    }
    let listen = settings.listen.clone();
    let mut prepared = convert::prepare_model(
        &cfg,
        &model,
        &out,
        &listen,
        settings.runtime_dir.as_deref(),
        settings.php_backend.as_deref(),
        true,
    )?;
    // The services that run it and keep it in step, for the sites picked by name (a site
    // without a ServerName cannot be named: then every site is kept in step).
    let names: Vec<String> = if keep.is_some() {
        picked.iter().filter_map(|&i| sites[i].name.clone()).collect()
    } else {
        Vec::new()
    };
    let watch = convert::watch_command(&convert::WatchLine {
        load: &a.load,
        config: &config,
        out_dir: &prepared.out_dir,
        runtime_dir: &prepared.runtime_dir,
        listen: &listen,
        php: settings.php_backend.as_deref(),
        vhosts: &names,
        strict: false,
    })?;
    let cwd = std::env::current_dir()?;
    let fpm = !prepared.conv.pools.is_empty();
    prepared.conv.files.extend(super::service::units(
        &prepared.out_dir,
        &prepared.runtime_dir,
        &watch,
        &cwd,
        fpm,
    ));

    println!("\n3. What cannot be carried over exactly");
    print!("{}", inexact(&prepared.conv.report, &prepared.out_dir));

    println!("\n4. What writing changes in {}", prepared.out_dir.display());
    let changes = plan::diff_files(&prepared.out_dir, &prepared.conv.files)?;
    print!("{}", preview(&changes, color));
    let question = format!("Write these {} files into {}?", changes.len(), prepared.out_dir.display());
    if !(a.yes || prompt.confirm(&question, true, "--yes")?) {
        println!("nothing written");
        return Ok(0);
    }
    if a.yes {
        println!("   writing (--yes)");
    }

    let verify = ask_check(
        either(a.verify, a.no_verify),
        &a,
        true,
        &missing,
        &prompt,
        "After writing, verify: Apache and the conversion side by side, answering the same requests?",
        "--verify or --no-verify",
    )?;
    let bench = ask_check(
        either(a.bench, a.no_bench),
        &a,
        false,
        &missing,
        &prompt,
        "After that, a short benchmark of both servers (a few seconds per site)?",
        "--bench or --no-bench",
    )?;
    let chosen: Vec<&Site> = picked.iter().map(|&i| &sites[i]).collect();
    // what verify and the benchmark run later take: only the sites picked (by name; a
    // nameless default site cannot be named, and then every site goes)
    let names: Option<Vec<&String>> = chosen.iter().map(|s| s.name.as_ref()).collect();
    let only: Vec<String> = match (&keep, names) {
        (Some(_), Some(names)) => {
            names.into_iter().flat_map(|n| ["--vhost".to_string(), n.clone()]).collect()
        }
        _ => Vec::new(),
    };
    let verify_later = format!("lighten verify {}", later_line(&a.load, None, &config, &only));
    let bench_later = format!("lighten bench {}", later_line(&a.load, Some("--compare"), &config, &only));
    let m = Migration {
        config: config.clone(),
        keep,
        hosts: chosen.iter().flat_map(|s| s.name.iter().chain(&s.aliases).cloned()).collect(),
        sites: (picked.len(), sites.len()),
        http,
        out: prepared.out_dir.clone(),
        runtime_dir: prepared.runtime_dir.clone(),
        listen,
        verify,
        bench,
        verify_later,
        bench_later,
    };
    act(&m, &load, &cfg, &model, prepared, color)
}

/// Writes, runs the checks chosen, prints the switch-over; returns the exit status.
fn act(
    m: &Migration,
    load: &LoadOptions,
    cfg: &Config,
    model: &Model,
    p: Prepared,
    color: bool,
) -> anyhow::Result<i32> {
    let applied = plan::apply(&m.out, &p.conv.files)?;
    let problems = convert::ready_to_run(&p.conv, &m.out, &m.runtime_dir)?;
    println!(
        "   wrote {} ({} written, {} unchanged{})",
        m.out.display(),
        applied.written.len(),
        applied.unchanged.len(),
        if applied.backups.is_empty() {
            String::new()
        } else {
            format!(", {} replaced kept as *{}", applied.backups.len(), plan::apply::BACKUP_SUFFIX)
        }
    );
    println!("   report: {}", m.out.join("report.md").display());
    let mut status = if p.conv.report.inexact() { 1 } else { 0 };
    for pr in &problems {
        println!("   {}", pr.line());
    }
    if problems.iter().any(|pr| pr.level == crate::run::preflight::Level::Error) {
        println!("\n   The setup will not start as it is: fix the errors above, then run the wizard again.");
        return Ok(2);
    }

    println!("\n5. Checks");
    let for_run = match (&m.verify, &m.bench) {
        (Check::Run, _) | (_, Check::Run) => Some(config::load(&m.config, load)?),
        _ => None,
    };
    match (&m.verify, &for_run) {
        (Check::Run, Some(for_run)) => match verify(m, for_run, cfg, model, color) {
            Ok(code) => status = status.max(code),
            Err(e) => println!("   verify could not run: {e:#}"),
        },
        (Check::Unavailable(why), _) => println!("   verify: skipped, {why}"),
        _ => println!("   verify: skipped (later: {})", m.verify_later),
    }
    match (&m.bench, &for_run) {
        (Check::Run, Some(for_run)) => match bench(m, for_run, cfg, model) {
            Ok(code) => status = status.max(code),
            Err(e) => println!("   benchmark could not run: {e:#}"),
        },
        (Check::Unavailable(why), _) => println!("   benchmark: skipped, {why}"),
        _ => println!("   benchmark: skipped (later: {})", m.bench_later),
    }
    if status == 3 {
        println!(
            "\n   verify found a fail-open: lighttpd serves what Apache refuses. Do not switch over yet."
        );
    }

    println!("\n6. Switching over (run these yourself, as root; lighten runs none of them)\n");
    let host = model.server.settings.host();
    let user = host.user.as_ref().filter(|u| u.value != "root").map(|u| {
        (u.value.clone(), host.group.as_ref().filter(|g| g.value != "root").map(|g| g.value.clone()))
    });
    let text = switch::text(&switch::Switch {
        out_dir: &m.out,
        runtime_dir: &m.runtime_dir,
        apache: found::apache_service(&load.sysroot, &m.config),
        user,
        sites: m.sites,
        probe: if m.listen.is_empty() { m.http.first().cloned() } else { None },
        backups: &applied.backups,
        sysroot: load.sysroot.root(),
        plesk: cfg.input.kind == InputKind::PleskRoot,
        fpm: !p.conv.pools.is_empty(),
    });
    print!("{text}");
    Ok(status)
}

/// Both servers on the picked sites' requests; the verify exit status.
fn verify(m: &Migration, for_run: &Config, cfg: &Config, model: &Model, color: bool) -> anyhow::Result<i32> {
    let mut requests = derive::requests(model, &cfg.sysroot, &derive::Limits::default());
    if m.keep.is_some() {
        // Requests for other names would reach the sites not migrated on Apache's side.
        requests.retain(|r| r.host.as_deref().is_none_or(|h| serves(&m.hosts, h)));
    }
    println!(
        "   verify: Apache and lighttpd side by side, {} requests built from the configuration",
        requests.len()
    );
    let v = super::verify::run_with_progress(for_run, cfg, model, &requests, false, false)?;
    let full = crate::verify::report::text(&v, false);
    crate::output::write_files(&m.out, &[(PathBuf::from("verify.txt"), full)])?;
    let shown = crate::verify::report::text(&v, color);
    // The verdict and the differences; the tallies per host and rule are in the file.
    let head: Vec<&str> = shown.lines().take_while(|l| !l.contains("Per virtual host")).collect();
    for l in head.iter().take(40) {
        println!("{}", indent(l));
    }
    if head.len() > 40 {
        println!("   ...");
    }
    println!("   full report: {}", m.out.join("verify.txt").display());
    Ok(super::verify::exit_status(&v))
}

/// A few seconds of keep-alive load on each picked site's home page, both servers in turn;
/// 1 when requests failed.
fn bench(m: &Migration, for_run: &Config, cfg: &Config, model: &Model) -> anyhow::Result<i32> {
    if m.http.is_empty() {
        println!("   benchmark: skipped, no site picked answers plain http on port 80");
        return Ok(0);
    }
    let loads: Vec<Load> = m
        .http
        .iter()
        .take(BENCH_SITES)
        .map(|(h, _)| Load {
            label: format!("{h} / -t 3 -c 10 -k"),
            path: "/".into(),
            host: h.clone(),
            method: "GET".into(),
            headers: Vec::new(),
            requests: None,
            duration: Some(Duration::from_secs(3)),
            concurrency: 10,
            keep_alive: true,
            rate: None,
        })
        .collect();
    let plan = Plan {
        loads,
        repeat: 1,
        warmup: Duration::from_millis(500),
        threads: None,
        timeout: Duration::from_secs(10),
        sample_every: Duration::from_millis(100),
    };
    println!("   benchmark: Apache and lighttpd in turns (real PHP), {} load(s)", plan.loads.len());
    let pair = crate::verify::launch(for_run, cfg, model, &crate::verify::Options::quiet(), false)?;
    let servers = super::compare::servers(&pair, 80)?;
    let c = super::compare::run_plan(&plan, &servers)?;
    drop(pair);
    for l in crate::bench::compare::text(&c).lines() {
        println!("{}", indent(l));
    }
    let dir = m.out.join("bench");
    super::compare::write(&c, &dir, "lighten wizard: Apache and the converted lighttpd", "")?;
    println!("   report and charts: {}", dir.join("compare.md").display());
    let failed = c.loads.iter().flat_map(|l| &l.servers).any(|s| s.failed > 0);
    Ok(if failed { 1 } else { 0 })
}

fn ask_config(a: &WizardArgs, found: &[Found], prompt: &Prompt) -> anyhow::Result<PathBuf> {
    if let Some(c) = &a.config {
        println!("   {} (--config)", c.display());
        return Ok(c.clone());
    }
    if a.yes
        && let Some(f) = found.first()
    {
        println!("   {} (--yes: the first found)", f.label);
        return Ok(f.path.clone());
    }
    let other = "another path ...";
    if !found.is_empty() {
        let mut items: Vec<String> = found.iter().map(|f| f.label.clone()).collect();
        items.push(other.to_string());
        let i = prompt.select("Which configuration?", &items, 0, "--config PATH")?;
        if let Some(f) = found.get(i) {
            return Ok(f.path.clone());
        }
    } else {
        println!(
            "   none in the usual places (/etc/apache2/apache2.conf, /etc/httpd/conf/httpd.conf, /var/www/vhosts)"
        );
    }
    let path = prompt.text(
        "httpd.conf / apache2.conf, a Plesk vhosts root or a document root",
        None,
        "--config PATH",
        |s| if Path::new(s).exists() { Ok(()) } else { Err(format!("{s}: no such file or folder")) },
    )?;
    Ok(PathBuf::from(path))
}

/// Indices into `sites`.
fn ask_sites(a: &WizardArgs, sites: &[Site], prompt: &Prompt) -> anyhow::Result<Vec<usize>> {
    let all: Vec<usize> = (0..sites.len()).collect();
    let picked = if a.all_vhosts {
        all
    } else if !a.vhosts.is_empty() {
        site::pick(sites, &a.vhosts).map_err(anyhow::Error::msg)?
    } else if a.yes || sites.len() <= 1 {
        all
    } else {
        let items: Vec<String> = sites.iter().map(Site::item).collect();
        prompt.pick("Which sites to migrate?", &items, "--vhost NAME or --all-vhosts")?
    };
    let names: Vec<String> = picked.iter().map(|&i| sites[i].title()).collect();
    match (picked.len(), sites.len()) {
        (_, 0) => println!("   no <VirtualHost>: the main server is migrated"),
        (n, t) if n == t => println!("   migrating every site: {}", names.join(", ")),
        (n, t) => println!("   migrating {n} of {t}: {}", names.join(", ")),
    }
    Ok(picked)
}

fn ask_out(a: &WizardArgs, settings: &Resolved, sysroot: bool, prompt: &Prompt) -> anyhow::Result<PathBuf> {
    if let (Some(o), true) = (&settings.out, settings.out_given) {
        println!("   output folder: {} (--out)", o.display());
        return Ok(o.clone());
    }
    let default = migration::default_out(settings.out.as_deref(), sysroot);
    if a.yes {
        println!("   output folder: {} (--yes)", default.display());
        return Ok(default);
    }
    let answer = prompt.text(
        "Where should the lighttpd setup be written?",
        Some(&default.display().to_string()),
        "--out DIR",
        |s| if s.is_empty() { Err("a folder is needed".into()) } else { Ok(()) },
    )?;
    Ok(PathBuf::from(answer))
}

/// A check's answer: its flag, else `--yes`'s default, else the admin's; never asked when
/// it cannot run here.
fn ask_check(
    flag: Option<bool>,
    a: &WizardArgs,
    default: bool,
    missing: &Option<String>,
    prompt: &Prompt,
    question: &str,
    flags: &str,
) -> anyhow::Result<Check> {
    if let Some(why) = missing {
        return Ok(Check::Unavailable(why.clone()));
    }
    let run = match flag {
        Some(b) => b,
        None if a.yes => default,
        None => prompt.confirm(question, default, flags)?,
    };
    Ok(if run { Check::Run } else { Check::Skip })
}

/// The configuration and the flags it was read with, as the other commands take them:
/// `--sysroot DIR --server-name NAME [FLAG] CONFIG EXTRA...` (bench's CONFIG is the value
/// of `--compare`).
fn later_line(l: &LoadArgs, flag: Option<&str>, config: &Path, extra: &[String]) -> String {
    let mut words = l.to_args();
    words.extend(flag.map(String::from));
    words.push(config.display().to_string());
    words.extend(extra.iter().cloned());
    super::convert::shell_line(&words)
}

/// What verify and the benchmark need that is not installed, in words.
fn missing_tools() -> Option<String> {
    let on_path = |name: &str| {
        std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
    };
    let missing: Vec<&str> = ["apache2", "lighttpd"].into_iter().filter(|t| !on_path(t)).collect();
    (!missing.is_empty()).then(|| {
        format!(
            "they need apache2 and lighttpd: {} not installed (scripts/setup.sh installs them)",
            missing.join(" and ")
        )
    })
}

/// The address a site answers plain http on, port 80 (the benchmark's and curl's way in):
/// its vhost's IP, or the loopback for `*`.
fn http_address(model: &Model, s: &Site) -> Option<String> {
    let v = s.vhosts.iter().filter_map(|&i| model.vhosts.get(i)).filter(|v| !v.tls);
    let a = v.flat_map(|v| &v.addresses).find(|a| a.port.is_none_or(|p| p == 80))?;
    Some(if matches!(a.host.as_str(), "*" | "_default_") { "127.0.0.1".into() } else { a.host.clone() })
}

/// Whether a Host header (maybe with a port) names one of `hosts`.
fn serves(hosts: &[String], host: &str) -> bool {
    let name =
        host.rsplit_once(':').filter(|(_, p)| p.bytes().all(|b| b.is_ascii_digit())).map_or(host, |(n, _)| n);
    hosts.iter().any(|h| h.eq_ignore_ascii_case(name) || name_matches(h, name))
}

/// A report line under a step (empty lines stay empty).
fn indent(line: &str) -> String {
    if line.trim().is_empty() { String::new() } else { format!("   {line}") }
}

/// `a:1` or `a:1, b:2` or `a:1, b:2 and 3 more places`.
fn places(p: &[&str]) -> String {
    match p.len() {
        0..=2 => p.join(", "),
        n => format!("{} and {} more places", p[..2].join(", "), n - 2),
    }
}

/// Step 3: the approximated and unsupported entries with `file:line`, worst first.
fn inexact(report: &Report, out_dir: &Path) -> String {
    let mut s = String::new();
    let counts: Vec<String> = report.counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
    s.push_str(&format!("   directives: {}\n", counts.join(", ")));
    // report.md's verdicts, in its words
    for v in &report.sites {
        s.push_str(&format!("   {}: {} ({})\n", v.site, v.verdict, v.next));
    }
    let (unsupported, approximated) = (report.grouped("unsupported"), report.grouped("approximated"));
    if unsupported.is_empty() && approximated.is_empty() {
        s.push_str("   everything is carried over exactly\n");
        return s;
    }
    for (title, list) in [
        ("unsupported: left out, and the site fails closed (how, after the ';')", unsupported),
        ("approximated: carried over with the difference said", approximated),
    ] {
        if list.is_empty() {
            continue;
        }
        s.push_str(&format!("   {title}\n"));
        // as report.md: one line per finding, with every place it is in
        for g in list.iter().take(LISTED) {
            let args: String = if g.args.chars().count() > 50 {
                format!("{}...", g.args.chars().take(50).collect::<String>())
            } else {
                g.args.clone()
            };
            let code = g.fate.code().map(|c| format!(" [{c}]")).unwrap_or_default();
            s.push_str(&format!(
                "     {}  {} {}: {}{code}\n",
                places(&g.places),
                g.directive,
                args,
                g.fate.why()
            ));
        }
        if list.len() > LISTED {
            s.push_str(&format!("     ... and {} more in report.md\n", list.len() - LISTED));
        }
    }

    s.push_str(&format!(
        "   every directive and its fate: {} (written with the setup)\n",
        out_dir.join("report.md").display()
    ));
    s
}

/// Step 4: each file's fate, and the diff of the files that change.
fn preview(changes: &[FileChange], color: bool) -> String {
    let mut s = String::new();
    for c in changes {
        match c.kind {
            Kind::Added => s.push_str(&format!("   new      {} ({} lines)\n", c.path.display(), c.added)),
            Kind::Changed => {
                s.push_str(&format!("   changed  {} (+{} -{})\n", c.path.display(), c.added, c.removed))
            }
            Kind::Removed => s.push_str(&format!("   removed  {}\n", c.path.display())),
            Kind::Same => {}
        }
    }
    // Each changed file's diff, the first lines of it: a server of many sites changes
    // thousands of lines of report at once.
    for c in changes.iter().filter(|c| c.kind == Kind::Changed) {
        let text = plan::render(std::slice::from_ref(c), color);
        let lines: Vec<&str> = text.lines().collect();
        s.push('\n');
        for l in lines.iter().take(DIFF_LINES) {
            s.push_str(l);
            s.push('\n');
        }
        if lines.len() > DIFF_LINES {
            s.push_str(&format!("   ... {} more lines of this diff\n", lines.len() - DIFF_LINES));
        }
    }
    s.push_str(&format!("   {}\n", plan::summary(changes)));
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn host_headers_are_matched_without_their_port() {
        let hosts = vec!["shop.example".to_string(), "*.shop.example".to_string()];
        assert!(super::serves(&hosts, "SHOP.example:8080"));
        assert!(super::serves(&hosts, "www.shop.example"));
        assert!(!super::serves(&hosts, "blog.example"));
    }
}
