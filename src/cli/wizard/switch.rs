//! The commands that switch the sites from Apache to the generated lighttpd setup, and
//! back: printed for the admin, never run.  lighttpd's own service runs the generated
//! configuration through a systemd drop-in, so `/etc/lighttpd/lighttpd.conf` and the
//! packaged unit stay as they are and the rollback is removing one file.

use std::fmt::Write;
use std::path::{Path, PathBuf};

/// The drop-in that points lighttpd's service at the generated configuration.
const DROP_IN: &str = "/etc/systemd/system/lighttpd.service.d/lighten.conf";

pub struct Switch<'a> {
    pub out_dir: &'a Path,
    pub runtime_dir: &'a Path,
    /// Apache's service: `apache2` or `httpd`.
    pub apache: &'a str,
    /// The configuration's User and Group (lighttpd runs as them and writes its logs and
    /// sockets in the runtime folder).
    pub user: Option<(String, Option<String>)>,
    /// Sites in this setup, sites the configuration has.
    pub sites: (usize, usize),
    /// A host name of the setup and the address it answers plain http on (port 80), to try
    /// with curl.
    pub probe: Option<(String, String)>,
    /// Files of an earlier conversion this run replaced (relative to `out_dir`).
    pub backups: &'a [PathBuf],
    /// The configuration was read under --sysroot (a copy of a server).
    pub sysroot: Option<&'a Path>,
    /// Read from a Plesk vhosts root.
    pub plesk: bool,
    /// The setup has php-fpm pools (PHP as each site's user): lighttpd's service starts
    /// `lighten-php-fpm.service` first.
    pub fpm: bool,
}

/// A word for the shell: as it is when it is plain, else in single quotes.
pub fn quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_./:=@%+-,".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// The switch-over and rollback text.
pub fn text(s: &Switch) -> String {
    let conf_path = s.out_dir.join("lighttpd.conf");
    let conf = conf_path.display();
    let conf_word = quote(&conf.to_string());
    let mut o = String::new();
    if s.sites.0 < s.sites.1 {
        let _ = writeln!(
            o,
            "  Note: {} of the {} sites are in this setup; Apache keeps serving the others and both \
             servers cannot listen on the same addresses. Switch on another machine and move those \
             sites' DNS there, or run the wizard with every site.\n",
            s.sites.0, s.sites.1
        );
    }
    if let Some(root) = s.sysroot {
        let _ = writeln!(
            o,
            "  Note: read under --sysroot {}: the setup's paths point into that copy; on the server \
             itself, run the wizard there without --sysroot.\n",
            root.display()
        );
    }
    if s.plesk {
        let _ = writeln!(
            o,
            "  Note: Plesk manages {0} and rewrites its configuration: stop {0} in Plesk as well, and \
             run the wizard again after Plesk changes a site.\n",
            s.apache
        );
    }
    let _ = writeln!(o, "  # 1. check the generated configuration");
    let _ = writeln!(o, "  lighttpd -tt -f {conf_word}");
    let _ = writeln!(
        o,
        "  # 2. let lighttpd's service run it (the packaged unit and /etc/lighttpd stay as they are)"
    );
    let _ = writeln!(
        o,
        "  mkdir -p {}",
        Path::new(DROP_IN).parent().map(|p| p.display().to_string()).unwrap_or_default()
    );
    let fpm_unit = crate::cli::service::FPM_UNIT;
    if s.fpm {
        let unit = s.out_dir.join(crate::cli::service::DIR).join(fpm_unit);
        let _ = writeln!(o, "  cp {} /etc/systemd/system/", quote(&unit.display().to_string()));
    }
    let _ = writeln!(o, "  cat > {DROP_IN} <<'EOF'");
    if s.fpm {
        let _ = writeln!(o, "  [Unit]\n  Wants={fpm_unit}\n  After={fpm_unit}");
    }
    let _ = writeln!(o, "  [Service]");
    let _ = writeln!(o, "  PIDFile={}", s.runtime_dir.join("lighttpd.pid").display());
    let _ = writeln!(o, "  ExecStartPre=");
    // (the static lane starts off, as in OUT/systemd/: lighten watch turns it on)
    let _ = writeln!(
        o,
        "  ExecStartPre=/bin/rm -f {}",
        s.out_dir.join(crate::translate::lane::WATCHING).display()
    );
    let _ = writeln!(o, "  ExecStartPre=/usr/sbin/lighttpd -tt -f {conf}");
    let _ = writeln!(o, "  ExecStart=");
    let _ = writeln!(o, "  ExecStart=/usr/sbin/lighttpd -D -f {conf}");
    let _ = writeln!(o, "  EOF");
    let _ = writeln!(o, "  systemctl daemon-reload");
    if let Some((user, group)) = &s.user {
        let owner = match group {
            Some(g) => format!("{user}:{g}"),
            None => user.clone(),
        };
        let _ = writeln!(o, "  chown {owner} {}", quote(&s.runtime_dir.display().to_string()));
    }
    let _ =
        writeln!(o, "  # 3. switch: stop Apache, start lighttpd (Apache starts again if lighttpd does not)");
    let _ = writeln!(
        o,
        "  systemctl stop {0} && {{ systemctl start lighttpd || systemctl start {0}; }}",
        s.apache
    );
    let _ = writeln!(o, "  systemctl disable {} && systemctl enable lighttpd", s.apache);
    if let Some((host, addr)) = &s.probe {
        let _ = writeln!(o, "  curl -sI --resolve {host}:80:{addr} http://{host}/");
    }
    let _ = writeln!(o, "  # 4. keep it in step with .htaccess edits (lighten watch, restarted if it stops)");
    let watch_unit = s.out_dir.join(crate::cli::service::DIR).join(crate::cli::service::WATCH_UNIT);
    let _ = writeln!(
        o,
        "  cp {} /etc/systemd/system/ && systemctl daemon-reload && systemctl enable --now {}",
        quote(&watch_unit.display().to_string()),
        crate::cli::service::WATCH_UNIT
    );
    let _ =
        writeln!(o, "  # without it: after converting again, systemctl reload lighttpd (a graceful restart)");
    let _ = writeln!(o, "\nRolling back:\n");
    let _ = writeln!(
        o,
        "  systemctl disable --now {0} && rm /etc/systemd/system/{0}",
        crate::cli::service::WATCH_UNIT
    );
    let _ = writeln!(o, "  systemctl stop lighttpd && systemctl start {}", s.apache);
    let _ = writeln!(o, "  systemctl disable lighttpd && systemctl enable {}", s.apache);
    let _ = writeln!(o, "  rm {DROP_IN} && systemctl daemon-reload");
    if s.fpm {
        let _ = writeln!(
            o,
            "  systemctl stop {fpm_unit} && rm /etc/systemd/system/{fpm_unit} && systemctl daemon-reload"
        );
    }
    let bak = crate::plan::apply::BACKUP_SUFFIX;
    if s.backups.is_empty() {
        let _ = writeln!(
            o,
            "  # this run replaced no earlier file; a later conversion into {} keeps each file it \
             replaces as NAME{bak}",
            s.out_dir.display()
        );
    } else {
        let _ = writeln!(
            o,
            "  # this run replaced {} file(s) of an earlier conversion, kept as NAME{bak}; to put them back:",
            s.backups.len()
        );
        let _ = writeln!(
            o,
            "  find {} -name '*{bak}' -exec sh -c 'mv \"$1\" \"${{1%{bak}}}\"' _ {{}} \\;",
            quote(&s.out_dir.display().to_string())
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_for_a_debian_server() {
        let backups = [PathBuf::from("lighttpd.conf.lighten-bak")];
        let t = text(&Switch {
            out_dir: Path::new("/etc/lighttpd/from-apache"),
            runtime_dir: Path::new("/etc/lighttpd/from-apache/run"),
            apache: "apache2",
            user: Some(("www-data".into(), Some("www-data".into()))),
            sites: (2, 2),
            probe: Some(("example.com".into(), "203.0.113.10".into())),
            backups: &backups,
            sysroot: None,
            plesk: false,
            fpm: false,
        });
        let expected = "\
  lighttpd -tt -f /etc/lighttpd/from-apache/lighttpd.conf
  # 2. let lighttpd's service run it (the packaged unit and /etc/lighttpd stay as they are)
  mkdir -p /etc/systemd/system/lighttpd.service.d
  cat > /etc/systemd/system/lighttpd.service.d/lighten.conf <<'EOF'
  [Service]
  PIDFile=/etc/lighttpd/from-apache/run/lighttpd.pid
  ExecStartPre=
  ExecStartPre=/bin/rm -f /etc/lighttpd/from-apache/.watching.conf
  ExecStartPre=/usr/sbin/lighttpd -tt -f /etc/lighttpd/from-apache/lighttpd.conf
  ExecStart=
  ExecStart=/usr/sbin/lighttpd -D -f /etc/lighttpd/from-apache/lighttpd.conf
  EOF
  systemctl daemon-reload
  chown www-data:www-data /etc/lighttpd/from-apache/run
  # 3. switch: stop Apache, start lighttpd (Apache starts again if lighttpd does not)
  systemctl stop apache2 && { systemctl start lighttpd || systemctl start apache2; }
  systemctl disable apache2 && systemctl enable lighttpd
  curl -sI --resolve example.com:80:203.0.113.10 http://example.com/
";
        assert!(t.contains(expected), "{t}");
        assert!(t.contains(
            "  systemctl stop lighttpd && systemctl start apache2\n  systemctl disable lighttpd && systemctl enable apache2\n  rm /etc/systemd/system/lighttpd.service.d/lighten.conf && systemctl daemon-reload\n"
        ));
        assert!(t.contains(
            "find /etc/lighttpd/from-apache -name '*.lighten-bak' -exec sh -c 'mv \"$1\" \"${1%.lighten-bak}\"' _ {} \\;"
        ));
        assert!(!t.contains("Note:"));
        assert!(!t.contains("php-fpm"));
        // with php-fpm pools: their unit installed, wanted by lighttpd's, removed on rollback
        let t = text(&Switch {
            out_dir: Path::new("/srv/out"),
            runtime_dir: Path::new("/srv/out/run"),
            apache: "apache2",
            user: None,
            sites: (1, 1),
            probe: None,
            backups: &[],
            sysroot: None,
            plesk: true,
            fpm: true,
        });
        assert!(t.contains(
            "  cp /srv/out/systemd/lighten-php-fpm.service /etc/systemd/system/\n  cat > /etc/systemd/system/lighttpd.service.d/lighten.conf <<'EOF'\n  [Unit]\n  Wants=lighten-php-fpm.service\n  After=lighten-php-fpm.service\n  [Service]\n"
        ), "{t}");
        assert!(t.contains(
            "  systemctl stop lighten-php-fpm.service && rm /etc/systemd/system/lighten-php-fpm.service && systemctl daemon-reload\n"
        ), "{t}");
        assert_eq!(quote("/srv/my site"), "'/srv/my site'");
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote("/etc/lighttpd/from-apache"), "/etc/lighttpd/from-apache");
    }
}
