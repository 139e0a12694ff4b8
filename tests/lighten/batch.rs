//! `lighten batch` on a generated Plesk server of 200 WordPress + WP Super Cache accounts,
//! three of them broken in the ways a real server breaks: an unclosed section, a
//! `vhost.conf` nobody can read (a socket: unlike `chmod 000`, that stops root too), and
//! an include cycle.  The broken ones are reported with `file:line:column` and the others
//! converted; a second run and a dry run leave every byte as it was; two shards cover
//! every account exactly once.

use crate::helpers::{have, lighten};
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::path::Path;

const ACCOUNTS: usize = 200;
const UNCLOSED: &str = "d050.example";
const UNREADABLE: &str = "d100.example";
const CYCLE: &str = "d150.example";

/// Writes the server under `root` (a sysroot): `var/www/vhosts/system/<domain>/conf/`
/// with Plesk's generated httpd.conf (reduced to what routing needs) including the
/// admin's vhost.conf, and the document root with WordPress + WP Super Cache's files.
fn generate(root: &Path) {
    generate_n(root, ACCOUNTS)
}

/// [`generate`] with `accounts` accounts (the broken ones among them when there are enough).
fn generate_n(root: &Path, accounts: usize) {
    let wp =
        std::fs::read_to_string("fixtures/plesk/var/www/vhosts/shop.example/httpdocs/.htaccess").unwrap();
    let cache =
        std::fs::read_to_string("fixtures/wp-super-cache/var/www/html/wp-content/cache/.htaccess").unwrap();
    for i in 0..accounts {
        let d = format!("d{i:03}.example");
        let conf = root.join(format!("var/www/vhosts/system/{d}/conf"));
        let docroot = root.join(format!("var/www/vhosts/{d}/httpdocs"));
        std::fs::create_dir_all(&conf).unwrap();
        std::fs::create_dir_all(docroot.join("wp-content/cache")).unwrap();
        let httpd = format!(
            "#ATTENTION!\n#\n#DO NOT MODIFY THIS FILE BECAUSE IT WAS GENERATED AUTOMATICALLY\n\n\
             <VirtualHost *:80>\n\
             \tServerName \"{d}\"\n\
             \tServerAlias \"www.{d}\"\n\
             \tUseCanonicalName Off\n\
             \tDocumentRoot \"/var/www/vhosts/{d}/httpdocs\"\n\
             \t<Directory /var/www/vhosts/{d}/httpdocs>\n\
             \t\t<Files ~ (\\.php$)>\n\
             \t\t\tSetHandler proxy:unix:/var/www/vhosts/system/{d}/php-fpm.sock|fcgi://127.0.0.1:9000\n\
             \t\t</Files>\n\
             \t\tOptions -Includes -ExecCGI\n\
             \t</Directory>\n\
             \tDirectoryIndex \"index.html\" \"index.php\"\n\
             \t<Directory /var/www/vhosts/{d}>\n\
             \t\tAllowOverride AuthConfig FileInfo Indexes Limit Options=Indexes,SymLinksIfOwnerMatch,FollowSymLinks\n\
             \t</Directory>\n\
             \tInclude \"/var/www/vhosts/system/{d}/conf/vhost.conf\"\n\
             </VirtualHost>\n"
        );
        std::fs::write(conf.join("httpd.conf"), httpd).unwrap();
        let vhost = conf.join("vhost.conf");
        match d.as_str() {
            UNCLOSED => {
                std::fs::write(
                    &vhost,
                    format!("<Directory /var/www/vhosts/{d}/httpdocs>\n    Options -Indexes\n"),
                )
                .unwrap();
            }
            UNREADABLE => {
                std::os::unix::net::UnixListener::bind(&vhost).expect("a socket where vhost.conf belongs");
            }
            CYCLE => {
                std::fs::write(&vhost, format!("Include \"/var/www/vhosts/system/{d}/conf/httpd.conf\"\n"))
                    .unwrap()
            }
            _ => std::fs::write(&vhost, "Header set X-Frame-Options SAMEORIGIN\n").unwrap(),
        }
        std::fs::write(docroot.join(".htaccess"), &wp).unwrap();
        std::fs::write(docroot.join("wp-content/cache/.htaccess"), &cache).unwrap();
        std::fs::write(docroot.join("index.php"), "<?php echo 'hi';\n").unwrap();
    }
}

/// Every file under `dir` with a checksum of its bytes.
fn checksums(dir: &Path) -> BTreeMap<String, u64> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            std::fs::read(e.path()).unwrap().hash(&mut h);
            (e.path().strip_prefix(dir).unwrap().display().to_string(), h.finish())
        })
        .collect()
}

fn batch(sysroot: &Path, out: &Path, extra: &[&str]) -> crate::helpers::Output {
    let root = sysroot.join("var/www/vhosts");
    let (sysroot, root, out) = (sysroot.to_str().unwrap(), root.to_str().unwrap(), out.to_str().unwrap());
    let mut args = vec!["batch", "--sysroot", sysroot, root, "--out", out];
    args.extend(extra);
    lighten(&args)
}

fn summary(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `lighttpd -tt` on each configuration, on two threads.
fn check_configs(confs: &[std::path::PathBuf]) {
    if !have("lighttpd") {
        eprintln!("skipped: lighttpd is not installed");
        return;
    }
    let (a, b) = confs.split_at(confs.len() / 2);
    std::thread::scope(|s| {
        for part in [a, b] {
            s.spawn(move || {
                for c in part {
                    lighten::run::lighttpd::check_config(c).unwrap_or_else(|e| panic!("{e}"));
                }
            });
        }
    });
}

#[test]
fn a_server_of_200_accounts_with_3_broken() {
    let dir = tempfile::tempdir().unwrap();
    let server = dir.path().join("server");
    let out = dir.path().join("out");
    generate(&server);

    let r = batch(&server, &out, &["--json"]);
    assert_eq!(r.code, 2, "a failed account makes the exit status 2: {}", r.stderr);
    assert!(r.stderr.contains("lighten: note: no server configuration found"), "{}", r.stderr);
    let s: serde_json::Value = serde_json::from_str(&r.stdout).expect("--json prints the summary");
    assert_eq!(s, summary(&out.join("batch-summary.json")), "--json prints what batch-summary.json holds");
    assert_eq!(s["assumed_defaults"], true);
    assert_eq!(s["totals"]["accounts"], ACCOUNTS);
    assert_eq!(s["totals"]["failed"], 3, "{:#}", s["totals"]);
    let converted = s["totals"]["exact"].as_u64().unwrap() + s["totals"]["approximated"].as_u64().unwrap();
    assert_eq!(converted, 197);
    let accounts = s["accounts"].as_array().unwrap();
    let domains: Vec<&str> = accounts.iter().map(|a| a["domain"].as_str().unwrap()).collect();
    let mut sorted = domains.clone();
    sorted.sort();
    assert_eq!(domains, sorted, "accounts in domain order");

    // Each broken account with its error where it is: file:line:column.
    let system = server.join("var/www/vhosts/system").display().to_string();
    for (domain, code, at) in [
        (UNCLOSED, "unclosed-section", format!("{system}/{UNCLOSED}/conf/vhost.conf:1:1")),
        (UNREADABLE, "unreadable-file", format!("{system}/{UNREADABLE}/conf/httpd.conf:20:2")),
        (CYCLE, "include-cycle", format!("{system}/{CYCLE}/conf/vhost.conf:1:1")),
    ] {
        let a = accounts.iter().find(|a| a["domain"] == domain).unwrap();
        assert_eq!(a["status"], "failed", "{a:#}");
        assert_eq!(
            (a["error"]["code"].as_str(), a["error"]["at"].as_str()),
            (Some(code), Some(at.as_str())),
            "{a:#}"
        );
        assert!(r.stderr.contains(&format!("lighten: {domain} failed: {at}: error[{code}]")), "{}", r.stderr);
        assert!(!out.join(domain).exists(), "nothing written for a failed account");
    }
    for a in accounts.iter().filter(|a| a["status"] != "failed") {
        let d = a["domain"].as_str().unwrap();
        assert_eq!(a["output"], d);
        assert!(a["counts"]["exact"].as_u64().unwrap() > 0, "{a:#}");
        assert!(
            out.join(d).join("lua/lighten_core.lua").is_file()
                || out.join(d).join("lua/lighten_site.lua").is_file()
        );
    }
    assert_eq!(s["combined"]["accounts"], 197);
    assert_eq!(s["combined"]["config"], "lighttpd.conf");
    let md = std::fs::read_to_string(out.join("batch-summary.md")).unwrap();
    assert!(
        md.contains(&format!("- {CYCLE}: {system}/{CYCLE}/conf/vhost.conf:1:1: error[include-cycle]")),
        "{md}"
    );

    // The combined configuration serves every converted account, and every generated
    // configuration passes lighttpd -tt.
    let combined = std::fs::read_to_string(out.join("combined/lighttpd.conf")).unwrap();
    // lighttpd takes at most 4,096 conditionals in one configuration: each account here (one
    // vhost, no password area) takes its $HTTP["host"] block and nothing more (a response
    // hook gate in every host block once made 1,000 Plesk accounts 5,005).
    let conditionals = combined.matches("$HTTP[").count() + combined.matches("$SERVER[").count();
    assert!(conditionals <= 197 + 8, "{conditionals} conditionals for 197 accounts");
    for a in accounts {
        let d = a["domain"].as_str().unwrap();
        let served = combined.contains(&format!("# vhost {d} ("));
        assert_eq!(served, a["status"] != "failed", "{d} in the combined configuration: {served}");
    }
    // The combined report lists only what the accounts' own reports do not say the same
    // way; its counts are still the whole server's.
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("combined/report.json")).unwrap()).unwrap();
    let total: u64 = report["counts"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
    let listed = report["entries"].as_array().unwrap().len() as u64;
    let left_out =
        report["elsewhere"]["entries"].as_u64().expect("the combined report says what it leaves out");
    assert_eq!(listed + left_out, total, "{:#}", report["elsewhere"]);
    assert!(left_out > total / 2, "{left_out} entries left out of {total}");
    let combined_md = std::fs::read_to_string(out.join("combined/report.md")).unwrap();
    assert!(
        combined_md.contains(&format!("{left_out} of these are not listed below: each stands"))
            && combined_md.contains("in an account's own report (<domain>/report.md)"),
        "{}",
        &combined_md[..combined_md.len().min(2000)]
    );
    // The same bytes in many folders are one file on disk: the runtime every account
    // carries, and each account's module again in the combined folder.
    {
        use std::os::unix::fs::MetadataExt;
        let ino = |p: std::path::PathBuf| {
            std::fs::metadata(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())).ino()
        };
        // (accounts written at the same moment on --jobs threads may each write one copy)
        let cores: BTreeSet<u64> = accounts
            .iter()
            .filter(|a| a["status"] != "failed")
            .map(|a| ino(out.join(a["domain"].as_str().unwrap()).join("lua/lighten_core.lua")))
            .collect();
        assert!(cores.len() <= 8, "{} copies of lighten_core.lua for 197 accounts", cores.len());
        assert!(cores.contains(&ino(out.join("combined/lua/lighten_core.lua"))));
        let module = std::fs::read_dir(out.join("d000.example/lua"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .find(|n| n.starts_with("d000_example"))
            .expect("d000.example's compiled module");
        assert_eq!(
            ino(out.join("d000.example/lua").join(&module)),
            ino(out.join("combined/lua").join(&module))
        );
    }
    let mut confs = vec![out.join("lighttpd.conf")];
    confs.extend(
        accounts
            .iter()
            .filter(|a| a["status"] != "failed")
            .map(|a| out.join(a["domain"].as_str().unwrap()).join("lighttpd.conf")),
    );
    check_configs(&confs);
    if have("luac5.4") {
        for dir in [out.join("combined/lua"), out.join("d000.example/lua")] {
            for e in std::fs::read_dir(&dir).unwrap() {
                let p = e.unwrap().path();
                if p.extension().is_some_and(|x| x == "lua") {
                    lighten::run::lighttpd::check_lua(&p).unwrap_or_else(|e| panic!("{e}"));
                }
            }
        }
    } else {
        eprintln!("skipped: luac5.4 is not installed");
    }

    // Again on the unchanged server: the same bytes, and no backups.
    let before = checksums(&out);
    let again = batch(&server, &out, &["--jobs", "3"]);
    assert_eq!(again.code, 2, "{}", again.stderr);
    assert_eq!(checksums(&out), before, "a second run changed the output");

    // A dry run writes nothing and shows what a run would change.
    std::fs::write(
        server.join("var/www/vhosts/d007.example/httpdocs/wp-content/cache/.htaccess"),
        "Options -Indexes\n",
    )
    .unwrap();
    let dry = batch(&server, &out, &["--dry-run"]);
    assert_eq!(checksums(&out), before, "the dry run changed the output");
    assert_eq!(dry.code, 2, "failed accounts are trouble: {}", dry.stderr);
    assert!(
        dry.stdout.contains("--- a/d007.example/report.md\n+++ b/d007.example/report.md"),
        "{}",
        dry.stdout
    );
    assert!(!dry.stdout.contains("a/d008.example/"), "an unchanged account shows no diff");
    let last = dry.stdout.lines().last().unwrap();
    assert!(last.starts_with(&format!("dry run, nothing written to {}", out.display())), "{last}");
    assert!(last.contains("200 accounts") && last.contains("changed"), "{last}");
}

#[test]
fn two_shards_cover_every_account_once() {
    let dir = tempfile::tempdir().unwrap();
    let server = dir.path().join("server");
    let out = dir.path().join("out");
    generate(&server);
    let mut seen = BTreeSet::new();
    for k in 1..=2 {
        let r = batch(&server, &out, &["--shard", &format!("{k}/2")]);
        assert_eq!(r.code, 2, "{}", r.stderr);
        let s = summary(&out.join(format!("batch-summary-shard-{k}-of-2.json")));
        assert_eq!((s["shard"]["index"].as_u64(), s["shard"]["count"].as_u64()), (Some(k), Some(2)));
        let accounts = s["accounts"].as_array().unwrap();
        assert!(accounts.len() > ACCOUNTS / 4, "shard {k} has {} accounts", accounts.len());
        for a in accounts {
            let d = a["domain"].as_str().unwrap().to_string();
            assert!(seen.insert(d.clone()), "{d} converted by both shards");
        }
        assert!(out.join(format!("lighttpd-shard-{k}-of-2.conf")).is_file());
    }
    let all: BTreeSet<String> = (0..ACCOUNTS).map(|i| format!("d{i:03}.example")).collect();
    assert_eq!(seen, all, "the shards together are the server");
    assert!(!out.join("batch-summary.json").exists(), "a shard writes only its own summary");
}

/// `--fallback-apache`: an account that stays on Apache (under `--strict`, its `Header echo`
/// does not translate) is answered by a real Apache behind the combined lighttpd, with the
/// Host as sent and the client's address in X-Forwarded-For; the other accounts by lighttpd
/// itself, as Apache answers them; over TLS the kept host would be refused, and plain-HTTP
/// is what the test can reach.
#[test]
fn an_account_that_stays_on_apache_is_served_by_it_through_the_combined_lighttpd() {
    use lighten::run::{apache, http, lighttpd, sandbox};
    if !crate::helpers::servers_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    crate::helpers::set_mode(dir.path(), 0o755);
    let tree = dir.path().join("server");
    generate_n(&tree, 3);
    const KEPT: &str = "d001.example";
    std::fs::write(
        tree.join(format!("var/www/vhosts/system/{KEPT}/conf/vhost.conf")),
        // an alias split over two lines, which the text scan of names does not see
        "Header echo ^X-(Echo|Forwarded-For)\nServerAlias first.example \\\n    hidden.example\n",
    )
    .unwrap();
    for i in 0..3 {
        let d = format!("d{i:03}.example");
        std::fs::write(tree.join(format!("var/www/vhosts/{d}/httpdocs/page.html")), format!("<p>{d}</p>\n"))
            .unwrap();
    }

    // Apache on the whole server (its own sandboxed copy), the fallback's backend.
    let root = tree.join("var/www/vhosts");
    let load =
        lighten::config::LoadOptions { sysroot: lighten::source::Sysroot::at(&tree), ..Default::default() };
    let cfg = lighten::config::load(&root, &load).unwrap();
    let sb = sandbox::Sandbox::new("lighten-fallback-test-").unwrap();
    let a = apache::start(&cfg, &sb, &apache::ApacheOptions { php_echo: true, rewrite_trace: None }).unwrap();
    let aport = a.port_for(80).expect("Apache on port 80's stand-in");

    let out = dir.path().join("out");
    let lport = sandbox::free_port().unwrap();
    let (listen, backend) = (format!("127.0.0.1:{lport}"), format!("127.0.0.1:{aport}"));
    let r = batch(&tree, &out, &["--strict", "--fallback-apache", &backend, "--listen", &listen]);
    assert_eq!(r.code, 2, "the kept account failed under --strict: {}", r.stderr);
    let s = summary(&out.join("batch-summary.json"));
    let kept = s["accounts"].as_array().unwrap().iter().find(|a| a["domain"] == KEPT).unwrap();
    assert_eq!(kept["verdict"], "stays on Apache", "{kept:#}");
    assert_eq!(s["fallback"], backend.as_str());
    assert!(r.stderr.contains("mod_remoteip"), "the admin is told what that Apache needs: {}", r.stderr);
    let md = std::fs::read_to_string(out.join("batch-summary.md")).unwrap();
    assert!(md.contains("RemoteIPHeader X-Forwarded-For"), "{md}");
    assert!(
        kept["next"].as_str().unwrap().starts_with(&format!("served by the Apache kept at {backend}")),
        "{kept:#}"
    );
    let conf = std::fs::read_to_string(out.join("lighttpd.conf")).unwrap();
    assert!(conf.contains("proxy.server"), "{conf}");
    lighttpd::check_config(&out.join("lighttpd.conf")).unwrap();

    let lsb = sandbox::Sandbox::new("lighten-fallback-lighttpd-").unwrap();
    let _l = lighttpd::start(&out.join("lighttpd.conf"), &lsb, lport).unwrap();
    let ask = |port: u16, host: &str, path: &str| {
        let headers =
            vec![("Host".to_string(), host.to_string()), ("X-Echo-Test".to_string(), "yes".to_string())];
        http::send(([127, 0, 0, 1], port).into(), "GET", path, &headers, b"").unwrap()
    };
    // the kept account's names, also one the scan missed; a Host no account has and none
    // at all: Apache decides (its first vhost answers those), never the converted side alone
    for host in [KEPT, "www.d001.example", "D001.example:80", "hidden.example"] {
        let (viaproxy, apache) = (ask(lport, host, "/page.html"), ask(aport, host, "/page.html"));
        assert_eq!((viaproxy.status, &viaproxy.body), (apache.status, &apache.body), "{host}");
        assert_eq!(viaproxy.body, b"<p>d001.example</p>\n", "{host}");
        // only the kept account's Apache vhost echoes the header: Apache chose it by the Host sent
        assert_eq!(viaproxy.header("X-Echo-Test"), Some("yes"), "{host}: {:?}", viaproxy.headers);
        assert!(viaproxy.header("X-Echo-Test").is_some() && apache.header("X-Echo-Test").is_some());
    }
    for host in ["unknown.example", "127.0.0.1"] {
        let (viaproxy, apache) = (ask(lport, host, "/page.html"), ask(aport, host, "/page.html"));
        assert_eq!((viaproxy.status, &viaproxy.body), (apache.status, &apache.body), "{host}");
    }
    let http10 = |port: u16| {
        http::send_version(([127, 0, 0, 1], port).into(), "HTTP/1.0", "GET", "/page.html", &[], b"").unwrap()
    };
    assert_eq!((http10(lport).status, http10(lport).body), (http10(aport).status, http10(aport).body));
    // the client's address reaches Apache in X-Forwarded-For (what mod_remoteip takes);
    // Apache echoes it back, and asked directly it has none to echo
    let (viaproxy, direct) = (ask(lport, KEPT, "/page.html"), ask(aport, KEPT, "/page.html"));
    assert_eq!(viaproxy.header("X-Forwarded-For"), Some("127.0.0.1"), "{:?}", viaproxy.headers);
    assert_eq!(direct.header("X-Forwarded-For"), None);
    // a client's own X-Forwarded-For stays to the left of the address lighttpd saw, where
    // mod_remoteip (trusting only lighttpd) does not take it from
    let headers =
        vec![("Host".to_string(), KEPT.to_string()), ("X-Forwarded-For".to_string(), "10.9.9.9".to_string())];
    let spoofed = http::send(([127, 0, 0, 1], lport).into(), "GET", "/page.html", &headers, b"").unwrap();
    let xff = spoofed.header_joined("X-Forwarded-For").unwrap_or_default();
    assert!(xff.ends_with("127.0.0.1"), "X-Forwarded-For as Apache got it: {xff:?}");
    lighttpd::check_lua(&out.join("stays-on-apache.lua")).unwrap();
    // a converted account is lighttpd's own answer, the same as Apache's
    for d in ["d000.example", "d002.example"] {
        let (l, ap) = (ask(lport, d, "/page.html"), ask(aport, d, "/page.html"));
        assert_eq!((l.status, &l.body), (ap.status, &ap.body), "{d}");
        assert_eq!(l.body, format!("<p>{d}</p>\n").into_bytes(), "{d}");
        assert_eq!(l.header("X-Echo-Test"), None, "{d} is not the kept account");
    }
}

/// A Plesk account whose PHP mod_fcgid ran through suexec as `user:group` (Plesk's
/// "FastCGI application served by Apache"), with the php.ini Plesk's wrapper loads for it.
fn fcgid_account(tree: &Path, d: &str, user: &str, group: &str, memory_limit: &str) {
    let system = tree.join(format!("var/www/vhosts/system/{d}"));
    std::fs::create_dir_all(system.join("etc")).unwrap();
    std::fs::write(system.join("etc/php.ini"), format!("[PHP]\nmemory_limit = {memory_limit}\n")).unwrap();
    std::fs::write(
        system.join("conf/httpd.conf"),
        format!(
            "<VirtualHost *:80>\n\
             \tServerName \"{d}\"\n\
             \tServerAlias \"www.{d}\"\n\
             \tUseCanonicalName Off\n\
             \tDocumentRoot \"/var/www/vhosts/{d}/httpdocs\"\n\
             \t<IfModule mod_suexec.c>\n\t\tSuexecUserGroup \"{user}\" \"{group}\"\n\t</IfModule>\n\
             \t<IfModule mod_fcgid.c>\n\
             \t\tFcgidInitialEnv PP_CUSTOM_PHP_INI \"/var/www/vhosts/system/{d}/etc/php.ini\"\n\
             \t\tFcgidMaxProcessesPerClass 4\n\
             \t</IfModule>\n\
             \t<Directory /var/www/vhosts/{d}/httpdocs>\n\
             \t\t<IfModule mod_fcgid.c>\n\
             \t\t\t<Files ~ (\\.php$)>\n\
             \t\t\t\tSetHandler fcgid-script\n\
             \t\t\t\tFCGIWrapper /var/www/cgi-bin/cgi_wrapper/cgi_wrapper .php\n\
             \t\t\t\tOptions +ExecCGI\n\
             \t\t\t</Files>\n\
             \t\t</IfModule>\n\
             \t\tOptions -Includes -ExecCGI\n\
             \t</Directory>\n\
             \tDirectoryIndex \"index.html\" \"index.php\"\n\
             \tInclude \"/var/www/vhosts/system/{d}/conf/vhost.conf\"\n\
             </VirtualHost>\n"
        ),
    )
    .unwrap();
}

/// Stops the php-fpm master a test started (daemonized: by its pid file).
struct FpmMaster(std::path::PathBuf);

impl Drop for FpmMaster {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(&self.0) {
            let _ = std::process::Command::new("kill").arg(pid.trim()).status();
        }
    }
}

#[test]
fn accounts_whose_php_ran_as_their_own_user_get_a_php_fpm_pool_as_that_user() {
    use lighten::run::{apache, http, lighttpd, sandbox};
    if !crate::helpers::servers_present() {
        return;
    }
    let fpm = lighten::translate::fpm::binary();
    if !Path::new(&fpm).exists() {
        assert!(std::env::var_os("CI").is_none(), "{fpm} must be installed (scripts/setup.sh)");
        eprintln!("skipped: {fpm} is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    crate::helpers::set_mode(dir.path(), 0o755);
    let tree = dir.path().join("server");
    generate_n(&tree, 4);
    // two accounts of identities of every Debian machine that suexec would take (ids of 100
    // and more); d002 keeps Plesk's own php-fpm socket, and d003 names a system group
    // (shadow), which suexec refuses and so does the conversion
    let accounts = [("d000.example", "nobody", "nogroup", "96M"), ("d001.example", "nobody", "users", "64M")];
    fcgid_account(&tree, "d003.example", "nobody", "shadow", "32M");
    for (d, user, group, mem) in accounts {
        fcgid_account(&tree, d, user, group, mem);
    }
    for i in 0..4 {
        let d = format!("d{i:03}.example");
        let docroot = tree.join(format!("var/www/vhosts/{d}/httpdocs"));
        std::fs::write(docroot.join("page.html"), format!("<p>{d}</p>\n")).unwrap();
        std::fs::write(
            docroot.join("whoami.php"),
            "<?php echo posix_getpwuid(posix_geteuid())['name'], ':', posix_getgrgid(posix_getegid())['name'], ' ', \
             ini_get('memory_limit'), \"\\n\";\n",
        )
        .unwrap();
    }

    let out = dir.path().join("out");
    let lport = sandbox::free_port().unwrap();
    let listen = format!("127.0.0.1:{lport}");
    let r = batch(&tree, &out, &["--listen", &listen]);
    assert!(r.code <= 1, "{}", r.stderr);
    let combined = out.join("combined");
    // one pool per account that ran as its user, none for the account with a socket
    for (d, user, group, mem) in accounts {
        let pool = std::fs::read_to_string(combined.join(format!("php-fpm/{d}.conf"))).unwrap_or_else(|e| {
            panic!(
                "{d}: {e}; {}\n{}\n{}",
                r.stdout,
                r.stderr,
                std::fs::read_to_string(combined.join("report.md")).unwrap_or_default()
            )
        });
        for line in [
            format!("[{d}]"),
            format!("user = {user}"),
            format!("group = {group}"),
            format!("listen = {}/php-fpm/run/{d}.sock", combined.display()),
            "listen.owner = root".into(),
            "listen.mode = 0660".into(),
            "pm.max_children = 4".into(),
            format!("php_value[memory_limit] = {mem}"),
        ] {
            assert!(pool.lines().any(|l| l == line), "{d}: no {line:?} in\n{pool}");
        }
        // and the account's own output has its pool as well
        assert!(out.join(format!("{d}/php-fpm/{d}.conf")).exists());
    }
    assert!(!combined.join("php-fpm/d002.example.conf").exists());
    let conf = std::fs::read_to_string(combined.join("lighttpd.conf")).unwrap();
    assert!(conf.contains("/var/www/vhosts/system/d002.example/php-fpm.sock"), "{conf}");
    // convert of one such account: the same pool, its unit, and lighttpd's service wanting it
    let (sysroot, vhosts) = (tree.to_str().unwrap(), tree.join("var/www/vhosts"));
    let convert_d000 = |out: &Path, extra: &[&str]| {
        let mut args =
            vec!["convert", "--sysroot", sysroot, vhosts.to_str().unwrap(), "--vhost", "d000.example"];
        args.extend(["--out", out.to_str().unwrap()]);
        args.extend(extra);
        lighten(&args)
    };
    let one = dir.path().join("one");
    let c = convert_d000(&one, &[]);
    assert!(c.code <= 1, "{}", c.stderr);
    assert!(one.join("php-fpm/d000.example.conf").exists());
    assert!(
        c.stdout.contains(&format!("run: {fpm} -y {}/php-fpm.conf && lighttpd -D -f", one.display())),
        "{}",
        c.stdout
    );
    assert!(
        c.stdout.contains("systemctl enable --now lighten-php-fpm.service lighten-watch.service"),
        "{}",
        c.stdout
    );
    let unit = std::fs::read_to_string(one.join("systemd/lighten-php-fpm.service")).unwrap();
    assert!(unit.contains(&format!("--nodaemonize -y {}/php-fpm.conf", one.display())), "{unit}");
    let drop_in = std::fs::read_to_string(one.join("systemd/lighttpd.service.d/lighten.conf")).unwrap();
    assert!(drop_in.contains("Wants=lighten-php-fpm.service"), "{drop_in}");
    // a runtime folder (lighttpd's user's) around php-fpm's pools is refused
    let around = dir.path().join("around");
    let c = convert_d000(&around, &["--runtime-dir", around.to_str().unwrap()]);
    assert!(c.code == 2 && c.stderr.contains("choose another --runtime-dir"), "{}: {}", c.code, c.stderr);
    let t =
        std::process::Command::new(&fpm).args(["-t", "-y"]).arg(one.join("php-fpm.conf")).output().unwrap();
    assert!(t.status.success(), "php-fpm -t: {}", String::from_utf8_lossy(&t.stderr));

    // the printed command line: php-fpm first, then lighttpd; php-fpm's part is run as printed
    let run = r.stdout.lines().find_map(|l| l.strip_prefix("run them all: ")).expect("a run line");
    let (start_fpm, start_lighttpd) = run.split_once(" && ").expect("php-fpm && lighttpd");
    assert!(start_lighttpd.starts_with(&format!("lighttpd -D -f {}", out.join("lighttpd.conf").display())));
    let _master = FpmMaster(combined.join("php-fpm/run/php-fpm.pid"));
    let st = std::process::Command::new("sh").arg("-c").arg(start_fpm).status().unwrap();
    assert!(
        st.success(),
        "{start_fpm}: {st}; {:?}",
        std::fs::read_to_string(combined.join("php-fpm/run/php-fpm.log"))
    );

    let lsb = sandbox::Sandbox::new("lighten-fpm-lighttpd-").unwrap();
    let _l = lighttpd::start(&out.join("lighttpd.conf"), &lsb, lport).unwrap();
    let ask = |port: u16, host: &str, path: &str| {
        http::send(([127, 0, 0, 1], port).into(), "GET", path, &[("Host".to_string(), host.to_string())], b"")
            .unwrap()
    };
    let root = unsafe { libc::geteuid() } == 0;
    for (d, user, group, mem) in accounts {
        let a = ask(lport, d, "/whoami.php");
        // (as a normal user php-fpm runs every pool as that user)
        let me = if root {
            format!("{user}:{group}")
        } else {
            let id = |f: &str| {
                String::from_utf8(std::process::Command::new("id").arg(f).output().unwrap().stdout).unwrap()
            };
            format!("{}:{}", id("-un").trim(), id("-gn").trim())
        };
        assert_eq!(
            (a.status, String::from_utf8_lossy(&a.body).trim()),
            (200, format!("{me} {mem}").as_str()),
            "{d}"
        );
    }

    // the system group's PHP is not run at all (Apache's suexec refuses it too)
    let refused = ask(lport, "d003.example", "/whoami.php");
    assert_eq!(refused.status, 403, "{:?}", String::from_utf8_lossy(&refused.body));
    assert!(!combined.join("php-fpm/d003.example.conf").exists());
    // the sockets and php-fpm's own files are in root's folder, the socket lighttpd's group's
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let me = unsafe { libc::geteuid() };
        let sock = std::fs::metadata(combined.join("php-fpm/run/d000.example.sock")).unwrap();
        assert_eq!((sock.uid(), sock.mode() & 0o777), (me, if root { 0o660 } else { 0o600 }));
        let run = std::fs::metadata(combined.join("php-fpm/run")).unwrap();
        assert_eq!((run.uid(), run.permissions().mode() & 0o022), (me, 0));
    }

    // the static pages of every account as Apache answers them
    let root_dir = tree.join("var/www/vhosts");
    let load =
        lighten::config::LoadOptions { sysroot: lighten::source::Sysroot::at(&tree), ..Default::default() };
    let cfg = lighten::config::load(&root_dir, &load).unwrap();
    let sb = sandbox::Sandbox::new("lighten-fpm-apache-").unwrap();
    let ap =
        apache::start(&cfg, &sb, &apache::ApacheOptions { php_echo: false, rewrite_trace: None }).unwrap();
    let aport = ap.port_for(80).unwrap();
    for i in 0..4 {
        let d = format!("d{i:03}.example");
        let (l, a) = (ask(lport, &d, "/page.html"), ask(aport, &d, "/page.html"));
        assert_eq!((l.status, &l.body), (a.status, &a.body), "{d}");
        assert_eq!(l.body, format!("<p>{d}</p>\n").into_bytes());
    }
}
