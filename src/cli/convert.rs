//! `lighten convert`.

use super::args::ConvertArgs;
use super::inspect::load_options;
use crate::config::LoadOptions;
use crate::run::preflight::{self, Level, Problem};
use crate::settings::Resolved;
use crate::translate::{self, Options};
use crate::{config, model, plan};
use anyhow::Context;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

/// A conversion computed and not yet written.
pub struct Prepared {
    pub conv: translate::Conversion,
    pub out_dir: PathBuf,
    pub runtime_dir: PathBuf,
}

/// Loads and models `config` as Apache reads it, then keeps the sites `vhosts` names.
pub fn load_sites(
    config: &Path,
    load: &LoadOptions,
    vhosts: &[String],
    color: bool,
) -> anyhow::Result<(config::Config, model::Model)> {
    let (cfg, mut model) = super::load::checked(config, load, color)?;
    super::wizard::keep_named(&mut model, &cfg.sources, vhosts).map_err(anyhow::Error::msg)?;
    Ok((cfg, model))
}

/// Converts a loaded and modelled configuration for `out` (absolute paths in the output
/// point there), with PHP sent to `php_backend` (a socket path or HOST:PORT) when given
/// instead of the backend the configuration names; for the server itself (`for_server`: its
/// access logs where Apache writes them, when no --sysroot says the files are a copy) or for
/// a sandbox that only checks the output (every log in its runtime folder).
pub fn prepare_model(
    cfg: &config::Config,
    model: &model::Model,
    out: &Path,
    listen: &[String],
    runtime_dir: Option<&Path>,
    php_backend: Option<&str>,
    for_server: bool,
) -> anyhow::Result<Prepared> {
    let out_dir = absolute(out)?;
    let runtime_dir = match runtime_dir {
        Some(d) => absolute(d)?,
        None => out_dir.join("run"),
    };
    let mut listeners = Vec::new();
    for l in listen {
        listeners.push(parse_listen(l).map_err(anyhow::Error::msg)?);
    }
    let sysroot = match cfg.sysroot.root() {
        Some(r) => crate::source::Sysroot::at(absolute(r)?),
        None => cfg.sysroot.clone(),
    };
    let topts = Options {
        out_dir: out_dir.clone(),
        listen: listeners,
        runtime_dir: runtime_dir.clone(),
        map_path: Box::new(move |p: &str| {
            // Under --sysroot, paths point into the copy when it has them.
            if sysroot.root().is_none() || !p.starts_with('/') {
                return p.to_string();
            }
            let inside = sysroot.host_path(p);
            if inside.exists() || !on_host(Path::new(p)) {
                inside.to_string_lossy().into_owned()
            } else {
                p.to_string()
            }
        }),
        php_backend: php_backend.map(|b| b.strip_prefix("unix:").unwrap_or(b).to_string()),
        fallback_cert: None,
        trace: std::env::var_os("LIGHTEN_LUA_TRACE").is_some(),
        // a copy's log paths are not this server's: logs go to the runtime folder then
        apache_log_paths: for_server && cfg.sysroot.root().is_none(),
    };
    let conv = translate::convert(model, cfg, &topts);
    Ok(Prepared { conv, out_dir, runtime_dir })
}

pub fn run(a: ConvertArgs, settings: &Resolved, color: bool) -> anyhow::Result<i32> {
    let opts = load_options(&a.load);
    let (out, listen, strict) = (settings.out()?, &settings.listen, settings.strict);
    let (runtime_dir, php) = (settings.runtime_dir.as_deref(), settings.php_backend.as_deref());
    let (cfg, model) = load_sites(&a.config, &opts, &a.site.vhosts, color)?;
    let p = prepare_model(&cfg, &model, out, listen, runtime_dir, php, true)?;
    let (mut conv, out_dir, runtime_dir) = (p.conv, p.out_dir, p.runtime_dir);
    let watch = watch_command(&WatchLine {
        load: &a.load,
        config: &a.config,
        out_dir: &out_dir,
        runtime_dir: &runtime_dir,
        listen,
        php,
        vhosts: &a.site.vhosts,
        strict,
    })?;
    let fpm = !conv.pools.is_empty();
    conv.files.extend(super::service::units(&out_dir, &runtime_dir, &watch, &std::env::current_dir()?, fpm));
    if strict && conv.report.inexact() {
        eprintln!("lighten: --strict: some directives are approximated or unsupported; nothing written");
        for e in conv.report.inexact_entries() {
            eprintln!("  {} {} {}: {}", e.at, e.directive, e.args, e.fate.label());
        }
        return Ok(2);
    }
    if a.dry_run {
        // Nothing is written: the diff between the folder and what would be written.
        let changes = plan::diff_files(&out_dir, &conv.files)?;
        let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(plan::render(&changes, color).as_bytes())?;
        writeln!(stdout, "dry run, nothing written to {}: {}", out_dir.display(), plan::summary(&changes))?;
        return Ok(if changes.iter().all(|c| c.kind == plan::Kind::Same) { 0 } else { 1 });
    }
    let applied = plan::apply(&out_dir, &conv.files)?;
    let problems = ready_to_run(&conv, &out_dir, &runtime_dir)?;
    let mut stdout = std::io::stdout().lock();
    if !a.json && !applied.backups.is_empty() {
        writeln!(
            stdout,
            "replaced {} file(s); the previous versions are kept as *{}",
            applied.backups.len(),
            plan::apply::BACKUP_SUFFIX
        )?;
    }
    if a.json {
        stdout.write_all(conv.report.to_json().as_bytes())?;
    } else {
        let counts: Vec<String> = conv.report.counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
        writeln!(stdout, "wrote {} ({})", out_dir.display(), counts.join(", "))?;
        if !problems.iter().any(|p| p.level == Level::Error) {
            let master = out_dir.join(crate::translate::fpm::MASTER);
            let line =
                super::service::run_line(&out_dir.join("lighttpd.conf"), fpm.then_some(master.as_path()));
            writeln!(stdout, "run: {line}")?;
            writeln!(stdout, "keep it in step with .htaccess edits: {}", in_here(&a, &shell_line(&watch))?)?;
            let units = if fpm {
                format!("{} {}", super::service::FPM_UNIT, super::service::WATCH_UNIT)
            } else {
                super::service::WATCH_UNIT.to_string()
            };
            writeln!(
                stdout,
                "as services (root): {} && systemctl enable --now {units}",
                super::service::install_command(&out_dir),
            )?;
        }
        writeln!(stdout, "report: {}", out_dir.join("report.md").display())?;
    }
    stdout.flush()?;
    let mut stderr = std::io::stderr().lock();
    for p in &problems {
        writeln!(stderr, "lighten: {}", p.line())?;
    }
    let errors = problems.iter().filter(|p| p.level == Level::Error).count();
    if errors > 0 {
        writeln!(
            stderr,
            "lighten: {} was written but will not start as it is: {errors} error(s) above",
            out_dir.display()
        )?;
        return Ok(2);
    }
    Ok(if conv.report.inexact() { 1 } else { 0 })
}

/// The `lighten watch` command that keeps this conversion in step: the same input and
/// settings, the configuration's paths as given (they are in the output: a watch that
/// names them otherwise writes other bytes), so it runs from the folder convert ran in
/// (the unit's `WorkingDirectory`, a `cd` before the printed line).
pub struct WatchLine<'a> {
    pub load: &'a super::args::LoadArgs,
    pub config: &'a Path,
    pub out_dir: &'a Path,
    pub runtime_dir: &'a Path,
    pub listen: &'a [String],
    pub php: Option<&'a str>,
    pub vhosts: &'a [String],
    pub strict: bool,
}

pub fn watch_command(w: &WatchLine) -> anyhow::Result<Vec<String>> {
    let exe = std::env::current_exe().context("finding lighten's own path")?;
    let mut v = vec![exe.display().to_string(), "watch".to_string()];
    v.extend(w.load.to_args());
    let mut flag = |name: &str, value: String| {
        v.push(name.to_string());
        v.push(value);
    };
    flag("--out", w.out_dir.display().to_string());
    flag("--runtime-dir", w.runtime_dir.display().to_string());
    for x in w.listen {
        flag("--listen", x.clone());
    }
    if let Some(p) = w.php {
        flag("--php-backend", p.to_string());
    }
    for n in w.vhosts {
        flag("--vhost", n.clone());
    }
    if w.strict {
        v.push("--strict".into());
    }
    v.push(w.config.display().to_string());
    Ok(v)
}

/// `line`, after a `cd` to the current folder when the input's paths are relative.
fn in_here(a: &ConvertArgs, line: &str) -> anyhow::Result<String> {
    let relative = |p: &Path| !p.is_absolute();
    let rel = relative(&a.config)
        || a.load.sysroot.as_deref().is_some_and(relative)
        || a.load.server_config.as_deref().is_some_and(|c| relative(Path::new(c)));
    Ok(if rel {
        format!("cd {} && {line}", super::wizard::quote(&std::env::current_dir()?.display().to_string()))
    } else {
        line.to_string()
    })
}

/// A command line for the shell, each word quoted where it needs it.
pub fn shell_line(words: &[String]) -> String {
    words.iter().map(|w| super::wizard::quote(w)).collect::<Vec<_>>().join(" ")
}

/// Makes the runtime folder usable by the user lighttpd drops to (when lighten runs as
/// root, lighttpd opens its logs and PHP sockets there as `server.username`), then checks
/// what the output needs (`run::preflight`).
pub fn ready_to_run(
    conv: &translate::Conversion,
    out_dir: &Path,
    runtime_dir: &Path,
) -> anyhow::Result<Vec<Problem>> {
    give_runtime_dir(conv, runtime_dir)?;
    let files = conv.files.iter().map(|(rel, _)| out_dir.join(rel)).collect();
    Ok(check_setup(conv, files, out_dir, runtime_dir))
}

/// Creates the runtime folder and, when lighten runs as root and lighttpd will drop to
/// `server.username`, gives it (and the logs an earlier run left there) to that user.
pub fn give_runtime_dir(conv: &translate::Conversion, runtime_dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(runtime_dir).with_context(|| format!("creating {}", runtime_dir.display()))?;
    // php-fpm's folders (its pools, its sockets and log) stay the converting user's
    // (root's): not lighttpd's runtime folder or inside it or around it, not a link, and
    // taken back from whoever else owns them
    if let Some(d) = &conv.fpm_run {
        let pools = d.parent().unwrap_or(d);
        let rt = std::path::absolute(runtime_dir)?;
        if pools.starts_with(&rt) || rt.starts_with(pools) {
            anyhow::bail!(
                "the runtime folder {} holds or is inside {}, php-fpm's pools: lighttpd's user would own \
                 them; choose another --runtime-dir",
                rt.display(),
                pools.display()
            );
        }
        if std::fs::symlink_metadata(d).is_ok_and(|m| !m.is_dir()) {
            anyhow::bail!("{} is not a folder: not running php-fpm's sockets there", d.display());
        }
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
        let me = preflight::Identity::current();
        for f in [pools, d.as_path()] {
            use std::os::unix::fs::{MetadataExt, PermissionsExt};
            let m = std::fs::symlink_metadata(f)?;
            if !m.is_dir() {
                anyhow::bail!("{} is not a folder: not running php-fpm there", f.display());
            }
            if m.uid() != me.uid {
                std::os::unix::fs::lchown(f, Some(me.uid), Some(me.gid))
                    .with_context(|| format!("taking back {}", f.display()))?;
            }
            if m.mode() & 0o022 != 0 {
                std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o755))?;
            }
        }
    }
    if let Ok(id) = preflight::server_identity(conv.user.as_deref(), conv.group.as_deref())
        && id.uid != preflight::Identity::current().uid
    {
        // The folder, and the logs an earlier run as root may have left there. Never
        // through a symbolic link: root must not hand a link's target (another user's
        // `run/error.log -> /etc/shadow`) to the server's user.
        let logs = ["error.log", "access.log"].map(|l| runtime_dir.join(l));
        let plain = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| !m.file_type().is_symlink());
        if !plain(runtime_dir) {
            anyhow::bail!("{} is a symbolic link: not giving it to {}", runtime_dir.display(), id.name);
        }
        let paths = std::iter::once(runtime_dir.to_path_buf()).chain(logs.into_iter().filter(|p| plain(p)));
        for p in paths {
            std::os::unix::fs::lchown(&p, Some(id.uid), Some(id.gid))
                .with_context(|| format!("giving {} to {}", p.display(), id.name))?;
        }
    }
    Ok(())
}

/// What keeps the written setup from starting, or from answering as it should
/// (`run::preflight`).
/// `files` are the generated files, absolute.
pub fn check_setup(
    conv: &translate::Conversion,
    files: Vec<PathBuf>,
    out_dir: &Path,
    runtime_dir: &Path,
) -> Vec<Problem> {
    preflight::check(&preflight::Setup {
        conf: &out_dir.join("lighttpd.conf"),
        files,
        runtime_dir,
        needs: &conv.needs,
        user: conv.user.as_deref(),
        group: conv.group.as_deref(),
        user_at: &conv.user_at,
    })
}

/// Whether `p` exists on this machine, also when the caller may not look at it (a normal
/// user and `/etc/ssl/private/...`): the output then names it, and the preflight says who
/// cannot read it, instead of naming a copy that does not exist.
fn on_host(p: &Path) -> bool {
    match std::fs::symlink_metadata(p) {
        Ok(_) => true,
        Err(e) => e.kind() == std::io::ErrorKind::PermissionDenied,
    }
}

pub fn absolute(p: &Path) -> anyhow::Result<PathBuf> {
    Ok(if p.is_absolute() { p.to_path_buf() } else { std::env::current_dir()?.join(p) })
}

/// `ADDR:PORT` or `APACHEPORT=ADDR:PORT`.
pub fn parse_listen(s: &str) -> Result<(Option<u16>, String, u16), String> {
    let (orig, rest) = match s.split_once('=') {
        Some((o, r)) => (Some(o.parse::<u16>().map_err(|_| format!("--listen {s}: {o} is not a port"))?), r),
        None => (None, s),
    };
    let (addr, port) = rest.rsplit_once(':').ok_or_else(|| format!("--listen {s}: expected ADDR:PORT"))?;
    let port = port.parse::<u16>().map_err(|_| format!("--listen {s}: {port} is not a port"))?;
    Ok((orig, addr.trim_start_matches('[').trim_end_matches(']').to_string(), port))
}
