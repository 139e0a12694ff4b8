//! PHP as the site's own user.
//!
//! Under mod_suexec (Plesk's "FastCGI application served by Apache"), mod_fcgid starts a
//! site's PHP as the user and group its `SuexecUserGroup` names, so that one hosting
//! account's scripts cannot read another's files (wp-config.php and its database
//! password).  lighttpd's mod_fastcgi would spawn php-cgi as lighttpd's own user: every
//! account as www-data.  Such a host gets a php-fpm pool of its own instead, written
//! beside lighttpd.conf as `php-fpm/<pool>.conf` and included by `php-fpm.conf`, which
//! php-fpm runs as root (it starts each pool's workers as the pool's user):
//!
//! - `user`, `group`: SuexecUserGroup's (a name that is no plain user name, or root, gets
//!   no pool: php-fpm refuses root, and the name is written into an INI file);
//! - `listen`: a socket in the runtime folder that only lighttpd's user may connect to;
//! - mod_fcgid's process management: `FcgidMaxProcessesPerClass` (100), `FcgidIdleTimeout`
//!   (300 s) and `FcgidMaxRequestsPerProcess` (0, unlimited) as an `ondemand` pool;
//! - `FcgidInitialEnv` as `env[...]`, and the php.ini Plesk's wrapper loads for the site
//!   (the `PP_CUSTOM_PHP_INI` variable) as `php_value[...]`: values a script may still
//!   change with ini_set(), as it may those of a php.ini;
//! - `security.limit_extensions`: the extensions lighttpd.conf hands to PHP.
//!
//! A host whose PHP Apache hands to a FastCGI socket keeps that socket (Plesk's own
//! php-fpm pools already run as the account's user); `--php-backend` replaces both.

use super::conf::comment;
use super::{Code, Finding, Options, conf};
use crate::config::Config;
use crate::model::Model;
use crate::model::mime::Handler;
use crate::source::Span;

/// One pool: its name (also its file's, `php-fpm/<name>.conf`), socket, identity, and text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pool {
    pub name: String,
    pub socket: String,
    pub user: String,
    pub group: String,
    /// SuexecUserGroup's place.
    pub at: Span,
    pub text: String,
    /// The identity and settings: hosts with the same share the pool.
    key: String,
}

/// The pools of a conversion, and which one each host (as `conf::hosts` numbers them) uses.
#[derive(Clone, Debug, Default)]
pub struct Pools {
    pub by_host: Vec<Option<usize>>,
    pub pools: Vec<Pool>,
    /// Per host: PHP that Apache ran through suexec under an identity no pool may take
    /// (root, a system account): refused (lighttpd.conf gives the host no PHP backend).
    pub refused: Vec<bool>,
}

/// The master configuration's path in the output, and the pools' folder.
pub const MASTER: &str = "php-fpm.conf";
pub const DIR: &str = "php-fpm";

/// php-fpm's binary on this machine (Debian names it by version: `/usr/sbin/php-fpm8.2`),
/// the newest when there are several; looked for once.
pub fn installed() -> Option<&'static str> {
    static FOUND: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    FOUND
        .get_or_init(|| {
            let mut found: Vec<String> = std::fs::read_dir("/usr/sbin")
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("php-fpm"))
                .collect();
            found.sort();
            found.pop().map(|n| format!("/usr/sbin/{n}"))
        })
        .as_deref()
}

/// [`installed`], or Debian 12's name when there is none (what the output names).
pub fn binary() -> String {
    installed().unwrap_or("/usr/sbin/php-fpm8.2").to_string()
}

/// A user or group name as useradd takes it (and nothing an INI file would read otherwise;
/// not a number, which php-fpm would take as a uid).
fn plain_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 32
        && !n.starts_with('-')
        && !n.bytes().all(|b| b.is_ascii_digit())
        && n.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

/// `v` as an INI value php-fpm reads back unchanged: bare when it is plain, else in double
/// quotes; None for what its INI parser would change inside quotes too (`"`, `\`, `$`,
/// control characters).
fn ini_value(v: &str) -> Option<String> {
    if v.chars().any(|c| c.is_control() || "\"\\$".contains(c)) {
        return None;
    }
    if !v.is_empty() && v.chars().all(|c| c.is_ascii_alphanumeric() || "/._-:,+@".contains(c)) {
        Some(v.to_string())
    } else {
        Some(format!("\"{v}\""))
    }
}

fn ini_key(k: &str) -> bool {
    !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || "._".contains(c))
}

/// A php.ini value as php-fpm's configuration is to hold it: one quoted in php.ini stays
/// a quoted string; one bare stays bare, for the INI parser to read the same way (a
/// constant expression such as `E_ALL & ~E_NOTICE`), when it holds nothing that parser
/// reads as syntax of its own.  None for anything else.
fn ini_entry_value(v: &IniValue) -> Option<String> {
    match v {
        IniValue::Quoted(inner) => ini_value(inner).map(|_| format!("\"{inner}\"")),
        // one word, or constants and numbers joined by the INI parser's operators
        // (`E_ALL & ~E_NOTICE`): php-fpm refuses what its parser cannot read (`E_ALL & ~`),
        // and so every pool, where PHP would skip the one line
        IniValue::Bare(raw) => {
            let word = |w: &str| {
                !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || "_.:/,+@-".contains(c))
            };
            let expression = raw.split(['&', '|', '^']).all(|term| {
                let t = term.trim().trim_start_matches(['~', '!']).trim();
                !t.is_empty() && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            });
            (word(raw) || expression).then(|| raw.clone())
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum IniValue {
    Quoted(String),
    Bare(String),
}

/// The entries of a php.ini, as PHP reads the plain ones: `key = value`, `;` comments,
/// `[section]` headers skipped, a value quoted or bare.  A `[PATH=...]` or `[HOST=...]`
/// section applies only to some requests: its entries are counted apart.
fn php_ini(text: &str) -> (Vec<(String, IniValue)>, usize) {
    let mut out = Vec::new();
    let mut scoped = 0;
    let mut in_scoped = false;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
            continue;
        }
        if line.starts_with('[') {
            let up = line.to_ascii_uppercase();
            in_scoped = up.starts_with("[PATH=") || up.starts_with("[HOST=");
            continue;
        }
        let Some((k, v)) = line.split_once('=') else { continue };
        if in_scoped {
            scoped += 1;
            continue;
        }
        let v = v.trim();
        let v = if let Some(inner) = v.strip_prefix('"').and_then(|r| r.split_once('"')) {
            IniValue::Quoted(inner.0.to_string())
        } else if let Some(inner) = v.strip_prefix('\'').and_then(|r| r.split_once('\'')) {
            IniValue::Quoted(inner.0.to_string())
        } else {
            IniValue::Bare(v.split(';').next().unwrap_or("").trim().to_string())
        };
        out.push((k.trim().to_string(), v));
    }
    (out, scoped)
}

/// The last enabled use of a server-context directive among `scopes`, with its words.
fn last<'a>(
    scopes: &[&'a crate::model::Scope],
    name: &str,
) -> Option<(&'a crate::model::DirectiveUse, Vec<String>)> {
    scopes
        .iter()
        .flat_map(|s| s.directives.iter())
        .rfind(|d| d.enabled && d.name.eq_ignore_ascii_case(name))
        .map(|d| (d, crate::syntax::words::split(&d.args).into_iter().map(|w| w.value).collect()))
}

/// Which hosts get a pool, and the pools.  `run_as`: lighttpd's user and group (the
/// socket's owner, nobody else may connect), when it drops to them.
pub fn plan(
    model: &Model,
    cfg: &Config,
    opts: &Options,
    run_as: (Option<&str>, Option<&str>),
    findings: &mut Vec<Finding>,
) -> Pools {
    let hosts = conf::hosts(model);
    let mut pools =
        Pools { by_host: vec![None; hosts.len()], pools: Vec::new(), refused: vec![false; hosts.len()] };
    if opts.php_backend.is_some() {
        return pools;
    }
    let exts = conf::php_extensions(model);
    for (n, &h) in hosts.iter().enumerate() {
        let mut scopes: Vec<&crate::model::Scope> = vec![&model.server];
        if let Some(i) = h {
            scopes.push(&model.vhosts[i].scope);
        }
        let suexec = scopes.iter().rev().find_map(|s| s.settings.host().suexec.as_ref());
        let Some(suexec) = suexec else { continue };
        match conf::php_handler(model, h) {
            Some((Handler::Fcgid, _)) => {}
            // mod_proxy_fcgi does not run PHP through suexec: its pool has its own user,
            // and lighttpd.conf sends PHP to the same socket
            Some((Handler::FastCgi { .. }, _)) => {
                findings.push(Finding::exact(suexec.span));
                continue;
            }
            _ => continue,
        }
        let (user, group) = match suexec.value.as_slice() {
            [u, g] => (u.as_str(), g.as_str()),
            _ => continue,
        };
        // suexec runs nothing below its minimum uid and gid (AP_UID_MIN, AP_GID_MIN: 100 in
        // Debian's build): neither does a pool (`shadow`, `disk`, www-data's own)
        let system = ids(user, group).is_some_and(|(u, g)| {
            u.is_some_and(|u| u < SUEXEC_MIN_ID) || g.is_some_and(|g| g < SUEXEC_MIN_ID)
        });
        if !plain_name(user) || !plain_name(group) || user == "root" || group == "root" || system {
            findings.push(Finding::approximated(
                Code::PhpUser,
                suexec.span,
                format!(
                    "no php-fpm pool runs as {:?}:{:?} (root, a system account below suexec's minimum id \
                     {SUEXEC_MIN_ID}, or no plain name): the site's PHP is refused (403), where suexec \
                     refuses to run it too",
                    comment(user),
                    comment(group)
                ),
            ));
            pools.refused[n] = true;
            continue;
        }
        let mut carried: Vec<Span> = vec![suexec.span];
        let mut body = String::new();
        // mod_fcgid's process management, as an ondemand pool
        let number = |name: &str, default: u64, carried: &mut Vec<Span>| -> u64 {
            match last(&scopes, name) {
                Some((d, w)) => match w.first().and_then(|v| v.parse::<u64>().ok()) {
                    Some(v) => {
                        carried.push(d.at);
                        v
                    }
                    None => default,
                },
                None => default,
            }
        };
        // (bounded as php-fpm takes them: one account's huge value must not stop every pool;
        // mod_fcgid's FcgidMaxProcesses, 1,000 by default, bounds a class in Apache)
        let children = number("FcgidMaxProcessesPerClass", 100, &mut carried).clamp(1, 1000);
        let idle = number("FcgidIdleTimeout", 300, &mut carried).clamp(1, 86_400);
        let requests = number("FcgidMaxRequestsPerProcess", 0, &mut carried).min(i32::MAX as u64);
        body.push_str(&format!(
            "; mod_fcgid's process management (FcgidMaxProcessesPerClass, FcgidIdleTimeout,\n\
             ; FcgidMaxRequestsPerProcess; their defaults where the configuration has none)\n\
             pm = ondemand\npm.max_children = {children}\npm.process_idle_timeout = {idle}s\n\
             pm.max_requests = {requests}\n"
        ));
        let limit: Vec<&str> = exts.iter().map(String::as_str).filter(|e| ini_key(&e[1..])).collect();
        body.push_str(&format!(
            "; the extensions lighttpd.conf hands to PHP\nsecurity.limit_extensions = {}\n",
            limit.join(" ")
        ));
        // FcgidInitialEnv: PHP's environment
        let mut ini_path: Option<(String, Span)> = None;
        for d in scopes
            .iter()
            .flat_map(|s| s.directives.iter())
            .filter(|d| d.enabled && d.name.eq_ignore_ascii_case("FcgidInitialEnv"))
        {
            let w: Vec<String> = crate::syntax::words::split(&d.args).into_iter().map(|w| w.value).collect();
            let (name, value) =
                (w.first().cloned().unwrap_or_default(), w.get(1).cloned().unwrap_or_default());
            let ok = name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !name.is_empty();
            match (ok, ini_value(&value)) {
                (true, Some(v)) => {
                    body.push_str(&format!(
                        "; {}\nenv[{name}] = {v}\n",
                        comment(&cfg.sources.line_ref(d.at))
                    ));
                    carried.push(d.at);
                    if name == "PP_CUSTOM_PHP_INI" {
                        ini_path = Some((value.clone(), d.at));
                    }
                }
                _ => findings.push(Finding::approximated(
                    Code::PhpUser,
                    d.at,
                    "this variable is not given to the php-fpm pool (its name or value cannot be written \
                     into php-fpm's configuration as it is)"
                        .into(),
                )),
            }
        }
        // Plesk's wrapper loads the site's own php.ini: its values, for this pool
        if let Some((path, at)) = ini_path {
            match cfg.sysroot.read(&path) {
                Ok(bytes) => {
                    let (entries, scoped) = php_ini(&String::from_utf8_lossy(&bytes));
                    body.push_str(&format!("; {path} (PP_CUSTOM_PHP_INI), as values a script may change\n"));
                    let mut left = 0;
                    for (k, v) in entries {
                        // (extensions are loaded by php-fpm's own php.ini, for every pool)
                        let ext =
                            k.eq_ignore_ascii_case("extension") || k.eq_ignore_ascii_case("zend_extension");
                        match (ini_key(&k) && !ext, ini_entry_value(&v)) {
                            (true, Some(v)) => body.push_str(&format!("php_value[{k}] = {v}\n")),
                            _ => left += 1,
                        }
                    }
                    let n = left + scoped;
                    if n > 0 {
                        findings.push(Finding::approximated(
                            Code::PhpUser,
                            at,
                            format!(
                                "{n} entr{} of {path} (extensions, [PATH=]/[HOST=] sections, values php-fpm's \
                                 configuration cannot hold) {} not in the pool: php-fpm's own php.ini decides them",
                                if n == 1 { "y" } else { "ies" },
                                if n == 1 { "is" } else { "are" }
                            ),
                        ));
                    }
                }
                Err(_) => findings.push(Finding::approximated(
                    Code::PhpUser,
                    at,
                    format!(
                        "{path} cannot be read here: its PHP settings are not in the site's php-fpm pool"
                    ),
                )),
            }
        }
        // one pool per identity and settings (a site's http and https hosts share it)
        let key = format!("{user}\0{group}\0{body}");
        let existing = pools.pools.iter().position(|p| p.key == key);
        let index = match existing {
            Some(i) => i,
            None => {
                let base = match h {
                    Some(i) => {
                        model.vhosts[i].server_name.clone().unwrap_or_else(|| format!("vhost{}", n + 1))
                    }
                    None => "main".to_string(),
                };
                let mut name: String = base
                    .chars()
                    .map(|c| {
                        if c.is_ascii_alphanumeric() || "._-".contains(c) {
                            c.to_ascii_lowercase()
                        } else {
                            '_'
                        }
                    })
                    .collect();
                // ([global] is php-fpm's own section)
                if name.is_empty() || name.starts_with('.') || name.eq_ignore_ascii_case("global") {
                    name.insert_str(0, "site-");
                }
                let mut k = 2;
                let stem = name.clone();
                while pools.pools.iter().any(|p| p.name == name) {
                    name = format!("{stem}-{k}");
                    k += 1;
                }
                // A socket's path holds at most 107 bytes (sun_path): a long name would stop
                // php-fpm, and every pool with it; the pool's number then names it.
                let mut socket = run_dir(opts).join(format!("{name}.sock")).to_string_lossy().into_owned();
                let mut k = pools.pools.len() + 1;
                while socket.len() <= 100 && pools.pools.iter().any(|p| p.socket == socket)
                    || socket.len() > 100 && !socket.ends_with(&format!("/pool-{}.sock", k - 1))
                {
                    // (a numbered name too long means every one is: then the loop ends)
                    socket = run_dir(opts).join(format!("pool-{k}.sock")).to_string_lossy().into_owned();
                    k += 1;
                }
                if socket.len() > 100 {
                    findings.push(Finding::approximated(
                        Code::PhpUser,
                        suexec.span,
                        format!(
                            "the output folder's path is too long for a socket of php-fpm ({} bytes of 107): \
                             the site's PHP is refused (403); convert into a shorter folder",
                            socket.len()
                        ),
                    ));
                    pools.refused[n] = true;
                    continue;
                }
                let Some(listen) = ini_value(&socket) else {
                    findings.push(Finding::approximated(
                        Code::PhpUser,
                        suexec.span,
                        format!("the runtime folder {} cannot be named in php-fpm's configuration", socket),
                    ));
                    continue;
                };
                let what = comment(&match h {
                    Some(i) => model.vhosts[i].label(i),
                    None => "the main server".to_string(),
                });
                let owner = match run_as {
                    // root's socket in root's folder, lighttpd's group may connect: lighttpd's
                    // user can neither replace it nor open it to others
                    (Some(u), g) if plain_name(u) => format!(
                        "; only lighttpd's group may connect\nlisten.owner = root\nlisten.group = {}\nlisten.mode = 0660\n",
                        g.filter(|g| plain_name(g)).unwrap_or(u)
                    ),
                    _ => {
                        "; converted as a normal user, who runs php-fpm and lighttpd: the socket is theirs\n\
                          listen.mode = 0600\n"
                            .to_string()
                    }
                };
                let text = format!(
                    "; Generated by lighten: the PHP of {what}, as {user}:{group}, as Apache's mod_fcgid ran\n\
                     ; it through suexec (SuexecUserGroup, {at}). {master} includes this file;\n\
                     ; lighttpd.conf's fastcgi.server for the site names the socket.\n\
                     [{name}]\nuser = {user}\ngroup = {group}\nlisten = {listen}\n{owner}{body}",
                    at = comment(&cfg.sources.line_ref(suexec.span)),
                    master = MASTER,
                );
                pools.pools.push(Pool {
                    name,
                    socket,
                    user: user.to_string(),
                    group: group.to_string(),
                    at: suexec.span,
                    text,
                    key,
                });
                pools.pools.len() - 1
            }
        };
        pools.by_host[n] = Some(index);
        findings.extend(carried.into_iter().map(Finding::exact));
    }
    pools
}

/// Where php-fpm keeps its pid file, log and sockets: a folder of the output, root's when
/// lighten runs as root (the runtime folder is lighttpd's user's, who could swap a log for
/// a link to a file root then appends to, or a socket for its own).
pub fn run_dir(opts: &Options) -> std::path::PathBuf {
    opts.out_dir.join(DIR).join("run")
}

/// The uid of `user` and the gid of `group` on this machine, each where it exists (None for
/// a name that cannot be asked about).
fn ids(user: &str, group: &str) -> Option<(Option<u32>, Option<u32>)> {
    let (u, g) = (std::ffi::CString::new(user).ok()?, std::ffi::CString::new(group).ok()?);
    // SAFETY: getpwnam and getgrnam return static storage or null; the id is read at once.
    unsafe {
        let pw = libc::getpwnam(u.as_ptr());
        let uid = (!pw.is_null()).then(|| (*pw).pw_uid);
        let gr = libc::getgrnam(g.as_ptr());
        let gid = (!gr.is_null()).then(|| (*gr).gr_gid);
        Some((uid, gid))
    }
}

/// suexec's AP_UID_MIN and AP_GID_MIN as Debian builds it.
const SUEXEC_MIN_ID: u32 = 100;

/// `php-fpm.conf`: the master process, which includes each pool of this conversion by
/// name (a pool file an earlier conversion left behind is not run).
pub fn master(opts: &Options, pools: &[Pool]) -> String {
    let rt = run_dir(opts).to_string_lossy().into_owned();
    let v = |p: String| ini_value(&p).unwrap_or(p);
    let includes: String = pools
        .iter()
        .map(|p| {
            format!(
                "include = {}\n",
                v(opts.out_dir.join(DIR).join(format!("{}.conf", p.name)).display().to_string())
            )
        })
        .collect();
    format!(
        "; Generated by lighten: php-fpm for the sites whose PHP Apache ran as their own user (one\n\
         ; pool each in {DIR}/). Started as root, it runs each pool's PHP as the pool's user:\n\
         ;   {bin} -y {conf}\n\
         ; (systemd/lighten-php-fpm.service runs it as a service.)\n\
         [global]\npid = {pid}\nerror_log = {log}\ndaemonize = yes\n{includes}",
        bin = binary(),
        conf = opts.out_dir.join(MASTER).display(),
        pid = v(format!("{rt}/php-fpm.pid")),
        log = v(format!("{rt}/php-fpm.log")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn php_ini_entries_as_php_reads_them() {
        let (e, scoped) = php_ini(
            "[PHP]\n; a comment\nmemory_limit = 128M ; trailing\nerror_log = \"/var/log/php x.log\"\n\
             extension=gd\n[PATH=/var/www/a]\nupload_max_filesize = 1M\n[Date]\ndate.timezone = UTC\n",
        );
        let bare = |v: &str| IniValue::Bare(v.into());
        assert_eq!(
            e,
            vec![
                ("memory_limit".into(), bare("128M")),
                ("error_log".into(), IniValue::Quoted("/var/log/php x.log".into())),
                ("extension".into(), bare("gd")),
                ("date.timezone".into(), bare("UTC")),
            ]
        );
        assert_eq!(scoped, 1);
        // a constant expression stays one, a quoted word stays a string
        assert_eq!(ini_entry_value(&bare("E_ALL & ~E_NOTICE")).as_deref(), Some("E_ALL & ~E_NOTICE"));
        assert_eq!(ini_entry_value(&IniValue::Quoted("none".into())).as_deref(), Some("\"none\""));
        assert_eq!(ini_entry_value(&bare("${HOME}")), None);
        assert_eq!(ini_entry_value(&bare("a[b]")), None);
        for broken in ["E_ALL & ~", "(E_ALL", "yes no", "On Off", "!", "a & & b"] {
            assert_eq!(ini_entry_value(&bare(broken)), None, "{broken}");
        }
    }

    #[test]
    fn only_what_php_fpm_reads_back_unchanged_is_written() {
        assert_eq!(ini_value("128M").as_deref(), Some("128M"));
        assert_eq!(ini_value("/a b").as_deref(), Some("\"/a b\""));
        assert_eq!(ini_value("${HOME}"), None);
        assert_eq!(ini_value("a\"\ninclude=/tmp/x"), None);
        assert_eq!(ini_value("a\\b"), None);
        assert!(plain_name("blog.example_p8m4t1v6cx") && plain_name("psacln"));
        assert!(!plain_name("a b") && !plain_name("-x") && !plain_name("a\nb") && !plain_name(""));
    }
}
