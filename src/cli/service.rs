//! The systemd units `convert` writes beside a conversion (OUT/systemd/, not installed):
//! a drop-in that points Debian's packaged `lighttpd.service` at OUT/lighttpd.conf (the
//! packaged unit and /etc/lighttpd stay as they are, and the rollback is removing one
//! file; the wizard prints the same drop-in; the packaged `ExecReload`, SIGUSR1, is the
//! graceful restart watch uses too), and `lighten-watch.service`, which runs
//! `lighten watch` with the arguments of the conversion so the output follows .htaccess
//! edits, restarting itself if it dies.  `systemctl` is only ever printed.

use std::path::{Path, PathBuf};

/// Debian's lighttpd binary (the packaged unit names it so too).
const LIGHTTPD: &str = "/usr/sbin/lighttpd";
/// Where the units are written, relative to the output folder.
pub const DIR: &str = "systemd";
pub const WATCH_UNIT: &str = "lighten-watch.service";
pub const DROP_IN: &str = "lighttpd.service.d/lighten.conf";
pub const FPM_UNIT: &str = "lighten-php-fpm.service";

/// The unit files, relative to the output folder. `watch` is the `lighten watch`
/// command line (program first).
/// `cwd` is the folder the paths in `watch` are relative to.  `fpm`: the conversion has
/// php-fpm pools (`php-fpm.conf`), which `lighten-php-fpm.service` runs before lighttpd.
pub fn units(
    out_dir: &Path,
    runtime_dir: &Path,
    watch: &[String],
    cwd: &Path,
    fpm: bool,
) -> Vec<(PathBuf, String)> {
    let conf = out_dir.join("lighttpd.conf");
    let conf = exec_word(&conf.display().to_string());
    let install = install_command(out_dir);
    let wants = if fpm { format!("[Unit]\nWants={FPM_UNIT}\nAfter={FPM_UNIT}\n\n") } else { String::new() };
    let drop_in = format!(
        "# Debian's lighttpd.service running the conversion in {out} (written by lighten convert).\n\
         # Install: {install}\n\
         {wants}\
         [Service]\n\
         PIDFile={pid}\n\
         ExecStartPre=\n\
         # The static lane starts off: lighten-watch.service (PartOf this unit, so restarted\n\
         # with it) turns it on; a file a killed watch left must not.\n\
         ExecStartPre=/bin/rm -f {watching}\n\
         ExecStartPre={LIGHTTPD} -tt -f {conf}\n\
         ExecStart=\n\
         ExecStart={LIGHTTPD} -D -f {conf}\n",
        out = out_dir.display(),
        pid = unit_value(&runtime_dir.join("lighttpd.pid").display().to_string()),
        watching = exec_word(&out_dir.join(crate::translate::lane::WATCHING).display().to_string()),
    );
    let exec: Vec<String> = watch.iter().map(|w| exec_word(w)).collect();
    let watch_unit = format!(
        "# lighten watch: keeps the conversion in {out} in step with Apache's files (a\n\
         # .htaccess a plugin or an admin edits) and restarts lighttpd gracefully on each change.\n\
         # Written by lighten convert. Install: {install}\n\
         # then: systemctl enable --now {WATCH_UNIT}\n\
         [Unit]\n\
         Description=lighten watch: {desc} follows Apache's configuration\n\
         After=lighttpd.service\n\
         PartOf=lighttpd.service\n\
         \n\
         [Service]\n\
         Type=simple\n\
         WorkingDirectory={cwd}\n\
         ExecStart={cmd}\n\
         # However watch ends, the static lane goes off (watch removes {watching} when it\n\
         # stops; not when it is killed) and lighttpd takes that in (a graceful restart).\n\
         ExecStopPost=/bin/rm -f {watching}\n\
         # (--no-block: when lighttpd's own restart stops this unit, it must not wait on it)\n\
         ExecStopPost=-/bin/systemctl --no-block try-reload-or-restart lighttpd.service\n\
         Restart=on-failure\n\
         RestartSec=2\n\
         \n\
         [Install]\n\
         WantedBy=multi-user.target\n",
        out = out_dir.display(),
        desc = unit_value(&out_dir.display().to_string()),
        cmd = exec.join(" "),
        cwd = unit_value(&cwd.display().to_string()),
        watching = exec_word(&out_dir.join(crate::translate::lane::WATCHING).display().to_string()),
    );
    let mut units =
        vec![(Path::new(DIR).join(DROP_IN), drop_in), (Path::new(DIR).join(WATCH_UNIT), watch_unit)];
    if fpm {
        let fpm_conf = exec_word(&out_dir.join(crate::translate::fpm::MASTER).display().to_string());
        let bin = crate::translate::fpm::binary();
        units.push((
            Path::new(DIR).join(FPM_UNIT),
            format!(
                "# php-fpm for the sites of {out} whose PHP Apache ran as their own user (SuexecUserGroup):\n\
                 # one pool each in php-fpm/, started as root, each pool's PHP as its user.\n\
                 # Written by lighten convert. Install: {install}\n\
                 # (lighttpd.service, through its drop-in, starts it first)\n\
                 [Unit]\n\
                 Description=php-fpm for {desc}\n\
                 Before=lighttpd.service\n\
                 \n\
                 [Service]\n\
                 Type=simple\n\
                 ExecStartPre={bin} -t -y {fpm_conf}\n\
                 ExecStart={bin} --nodaemonize -y {fpm_conf}\n\
                 ExecReload=/bin/kill -USR2 $MAINPID\n\
                 Restart=on-failure\n\
                 \n\
                 [Install]\n\
                 WantedBy=multi-user.target\n",
                out = out_dir.display(),
                desc = unit_value(&out_dir.display().to_string()),
            ),
        ));
    }
    units
}

/// The shell line that starts a lighttpd configuration by hand: php-fpm's master first
/// when the conversion has pools.
pub fn run_line(conf: &Path, fpm_master: Option<&Path>) -> String {
    let q = |p: &Path| super::wizard::quote(&p.display().to_string());
    let lighttpd = format!("lighttpd -D -f {}", q(conf));
    match fpm_master {
        Some(m) => format!("{} -y {} && {lighttpd}", crate::translate::fpm::binary(), q(m)),
        None => lighttpd,
    }
}

/// The command that installs the units (as root), printed, never run.
pub fn install_command(out_dir: &Path) -> String {
    let from = out_dir.join(DIR).join(".");
    format!(
        "cp -r {} /etc/systemd/system/ && systemctl daemon-reload",
        super::wizard::quote(&from.display().to_string())
    )
}

/// A word of an `Exec*=` line: systemd splits on spaces and reads quotes and backslashes
/// (systemd.syntax), expands `%` specifiers and `$` variables; each is escaped.
fn exec_word(w: &str) -> String {
    let escaped = unit_value(w).replace('$', "$$");
    let plain = !escaped.is_empty()
        && escaped.chars().all(|c| c.is_ascii_alphanumeric() || "_./:=@%+-,$".contains(c));
    if plain { escaped } else { format!("\"{}\"", escaped.replace('\\', "\\\\").replace('"', "\\\"")) }
}

/// A value where systemd expands `%` specifiers.
fn unit_value(v: &str) -> String {
    v.replace('%', "%%")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_words_survive_systemd_parsing() {
        assert_eq!(exec_word("/srv/out"), "/srv/out");
        assert_eq!(exec_word("/srv/my site"), "\"/srv/my site\"");
        assert_eq!(exec_word("100%"), "100%%");
        assert_eq!(exec_word("a$b"), "a$$b");
        assert_eq!(exec_word("say \"hi\""), "\"say \\\"hi\\\"\"");
        assert_eq!(exec_word(""), "\"\"");
    }
}
