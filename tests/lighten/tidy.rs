//! Checks on the project itself, run as ordinary tests.

use crate::helpers::{fixtures, lighten};
use lighten::catalogue::catalogue;
use lighten::diagnostic::Code;
use std::path::Path;
use std::process::Command;

#[test]
fn every_diagnostic_code_has_a_doc_and_a_fixture_that_triggers_it() {
    let docs = std::fs::read_to_string("docs/diagnostics.md").expect("docs/diagnostics.md");
    let fixtures = fixtures("fixtures/diagnostics");
    for code in Code::ALL {
        let name = code.name();
        assert!(docs.contains(&format!("\n## {name}\n")), "docs/diagnostics.md has no section for {name}");
        let f = fixtures
            .iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("no fixtures/diagnostics/{name}"));
        let args = f.inspect_args();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = lighten(&args);
        assert!(
            out.stderr.contains(&format!("[{name}]")),
            "fixtures/diagnostics/{name} does not trigger it:\n{}",
            out.stderr
        );
    }
    assert_eq!(fixtures.len(), Code::ALL.len(), "a diagnostics fixture names no code");
}

/// Every translation finding's code has a section in docs/diagnostics.md and a fixture in
/// fixtures/translation/<code>/ whose conversion reports it, with the code's fate, in
/// report.json and report.md alike.
#[test]
fn every_translation_code_has_a_doc_and_a_fixture_that_reports_it() {
    let docs = std::fs::read_to_string("docs/diagnostics.md").expect("docs/diagnostics.md");
    let (_, translation) =
        docs.split_once("\n# Translation findings\n").expect("a Translation findings part");
    let fixtures = fixtures("fixtures/translation");
    let out = tempfile::tempdir().unwrap();
    for code in lighten::translate::Code::ALL {
        let name = code.name();
        let section = translation
            .split_once(&format!("\n## {name}\n"))
            .map(|(_, rest)| rest.split("\n## ").next().unwrap_or(rest))
            .unwrap_or_else(|| panic!("docs/diagnostics.md has no section for {name}"));
        // the next step in the same words as report.md's
        let next = code.next();
        let next = format!("{}{}", next[..1].to_uppercase(), &next[1..]);
        assert!(
            section.contains(&format!("**Next step:** {next}.")),
            "docs/diagnostics.md, {name}: the next step differs"
        );
        assert!(
            section.starts_with(&format!("\n*{}* — ", code.fate())),
            "docs/diagnostics.md, {name}: the fate"
        );
        let f = fixtures
            .iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("no fixtures/translation/{name}"));
        let (_, _, cfg, model) = f.load();
        let listen: Vec<(Option<u16>, String, u16)> = if f.manifest.listen.is_empty() {
            vec![(None, "127.0.0.1".into(), 8080)]
        } else {
            f.manifest.listen.iter().map(|l| listen_of(l)).collect()
        };
        let opts = lighten::translate::Options {
            out_dir: out.path().to_path_buf(),
            listen,
            runtime_dir: out.path().join("run"),
            map_path: Box::new(|p: &str| p.to_string()),
            php_backend: None,
            // as verify converts: a stand-in for certificates not on this machine
            fallback_cert: Some((
                "/etc/ssl/certs/ssl-cert-snakeoil.pem".into(),
                "/etc/ssl/private/ssl-cert-snakeoil.key".into(),
            )),
            trace: false,
            apache_log_paths: false,
        };
        let report = lighten::translate::convert(&model, &cfg, &opts).report;
        let found: Vec<_> = report.entries.iter().filter(|e| e.fate.code() == Some(*code)).collect();
        assert!(
            !found.is_empty(),
            "fixtures/translation/{name} does not report it; it reports {:?}",
            report.entries.iter().filter_map(|e| e.fate.code()).map(|c| c.name()).collect::<Vec<_>>()
        );
        for e in &found {
            assert_eq!(e.fate.label(), code.fate(), "{name} at {}", e.at);
        }
        assert!(report.to_json().contains(&format!("\"code\": \"{name}\"")), "{name} in report.json");
        assert!(report.to_markdown().contains(&format!("\n### `{name}`: ")), "{name} in report.md");
    }
    assert_eq!(fixtures.len(), lighten::translate::Code::ALL.len(), "a translation fixture names no code");
}

/// `APACHEPORT=ADDR:PORT` or `ADDR:PORT`, as `--listen` takes it.
fn listen_of(l: &str) -> (Option<u16>, String, u16) {
    let (port, addr) = match l.split_once('=') {
        Some((p, a)) => (Some(p.parse().unwrap()), a),
        None => (None, l),
    };
    let (host, lport) = addr.rsplit_once(':').unwrap();
    (port, host.to_string(), lport.parse().unwrap())
}

/// The catalogue was generated from Apache; if Apache is here, it must still agree.
#[test]
fn catalogue_agrees_with_the_installed_apache() {
    if Command::new("apache2").arg("-v").output().is_err() {
        eprintln!("skipped: apache2 is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display().to_string();
    let mut conf = format!(
        "ServerRoot {root}\nDefaultRuntimeDir {root}\nPidFile {root}/pid\nErrorLog {root}/error.log\nServerName localhost\n"
    );
    let mut modules: Vec<_> = std::fs::read_dir("/usr/lib/apache2/modules")
        .expect("module folder")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("mod_") && n.ends_with(".so") && !n.starts_with("mod_mpm_"))
        .collect();
    modules.sort();
    conf.push_str("LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so\n");
    for m in modules {
        let id = m.trim_start_matches("mod_").trim_end_matches(".so");
        conf.push_str(&format!("LoadModule {id}_module /usr/lib/apache2/modules/{m}\n"));
    }
    let path = dir.path().join("all.conf");
    std::fs::write(&path, conf).unwrap();
    let out = Command::new("apache2").arg("-L").arg("-f").arg(&path).output().expect("apache2 -L");
    let listing = String::from_utf8_lossy(&out.stdout);
    let mut checked = 0;
    let mut current: Option<&lighten::catalogue::DirectiveInfo> = None;
    for line in listing.lines() {
        // Directive lines look like `Name (module.c)`; descriptions are indented and may
        // run over several lines.
        let is_directive = !line.starts_with('\t') && line.ends_with(".c)") && line.split(' ').count() == 2;
        if is_directive {
            let name = line.split(" (").next().unwrap_or("");
            let info = if let Some(s) = name.strip_prefix('<') {
                catalogue().section(s)
            } else {
                catalogue().get(name)
            };
            assert!(
                info.is_some(),
                "apache2 -L lists {name}, the catalogue does not: run scripts/gen-catalogue.py"
            );
            current = info;
            checked += 1;
        } else if let Some(info) = current {
            let l = line.trim();
            if l.starts_with("when AllowOverride") {
                assert!(info.htaccess.is_some(), "{} is allowed in .htaccess per apache2 -L", info.name);
            }
        }
    }
    assert!(checked > 700, "apache2 -L listed only {checked} directives");
}

#[test]
fn every_catalogue_status_names_a_directive() {
    assert_eq!(catalogue().orphan_statuses(), Vec::<String>::new());
}

/// The Debian packages `scripts/setup.sh` installs (its `PACKAGES=` line).
fn setup_packages() -> Vec<String> {
    let setup = std::fs::read_to_string("scripts/setup.sh").expect("scripts/setup.sh");
    let line = setup.lines().find_map(|l| l.strip_prefix("PACKAGES=")).expect("a PACKAGES= line");
    line.trim_matches('"').split_whitespace().map(str::to_string).collect()
}

/// Whether `module` is built into /usr/sbin/lighttpd: it loads with an empty module folder.
fn built_into_lighttpd(module: &str) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("m.conf");
    std::fs::write(
        &conf,
        format!("server.document-root = \"/\"\nserver.port = 1\nserver.modules = ( \"{module}\" )\n"),
    )
    .unwrap();
    let empty = dir.path().join("modules");
    std::fs::create_dir(&empty).unwrap();
    let out =
        Command::new("lighttpd").arg("-tt").arg("-m").arg(&empty).arg("-f").arg(&conf).output().unwrap();
    // 1.4.69 exits 0 for some plugins it cannot load (mod_deflate): the message tells.
    out.status.success() && !String::from_utf8_lossy(&out.stderr).contains("dlopen() failed")
}

/// A module the generated configuration loads but this machine lacks fails at startup, or
/// worse, is skipped with its directives (mod_deflate: `lighttpd -tt` still exits 0).  So
/// every module the emitter can write is in `conf::MODULES` with the package that ships
/// it, that package is what ships it here, and setup.sh installs it.
#[test]
fn every_lighttpd_module_the_emitter_loads_is_installed_by_setup() {
    use lighten::translate::conf::MODULES;
    let packages = setup_packages();
    // The emitter names modules only from the table.
    let emitter = std::fs::read_to_string("src/translate/conf.rs").unwrap();
    let re = regex_lite_modules(&emitter);
    for m in &re {
        assert!(
            MODULES.iter().any(|(n, _)| n == m),
            "src/translate/conf.rs writes {m}, which conf::MODULES lacks"
        );
    }
    for (module, package) in MODULES {
        assert!(
            packages.iter().any(|p| p == package),
            "{module} comes from the Debian package {package}, which scripts/setup.sh does not install"
        );
        if Command::new("lighttpd").arg("-v").output().is_err() {
            assert!(std::env::var_os("CI").is_none(), "lighttpd must be installed");
            continue;
        }
        if built_into_lighttpd(module) {
            assert_eq!(*package, "lighttpd", "{module} is built into lighttpd");
            continue;
        }
        let so = format!("/usr/lib/lighttpd/{module}.so");
        let owner = Command::new("dpkg").args(["-S", &so]).output().unwrap();
        let owner = String::from_utf8_lossy(&owner.stdout);
        assert_eq!(
            owner.split(':').next().map(str::trim),
            Some(*package),
            "{module} is neither built into lighttpd nor shipped by {package} here ({so}: {owner:?})"
        );
    }
}

/// Every `"mod_..."` string literal of a lighttpd module (no `.c`/`.so` suffix) in `text`.
fn regex_lite_modules(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in text.split('"').skip(1).step_by(2) {
        if part.starts_with("mod_") && part[4..].bytes().all(|b| b.is_ascii_lowercase() || b == b'_') {
            out.push(part.to_string());
        }
    }
    out.sort();
    out.dedup();
    out
}

/// A Lua library the runtime `require`s (besides its own modules) comes from a Debian
/// package setup.sh installs: without it every request answers 500.
#[test]
fn every_lua_library_the_runtime_loads_is_installed_by_setup() {
    let packages = setup_packages();
    let own = [
        "lighten",
        "lighten_re",
        "lighten_rewrite",
        "lighten_site",
        "lighten_mime",
        "lighten_plans",
        "lighten_htaccess",
    ];
    // The Debian package of each library the templates may load.
    let known = [("rex_pcre2", "lua-rex-pcre2")];
    for e in std::fs::read_dir("templates/lua").unwrap().flatten() {
        let text = std::fs::read_to_string(e.path()).unwrap();
        for part in text.split("require").skip(1) {
            let name = part.trim_start().trim_start_matches('(').trim_start();
            let Some(q) = name.chars().next().filter(|c| *c == '"' || *c == '\'') else { continue };
            let name: String = name[1..].chars().take_while(|c| *c != q).collect();
            if own.contains(&name.as_str()) {
                continue;
            }
            let (_, package) = known.iter().find(|(n, _)| *n == name).unwrap_or_else(|| {
                panic!("{}: require {name:?}: which Debian package ships it?", e.path().display())
            });
            assert!(
                packages.iter().any(|p| p == package),
                "{name} comes from {package}, which setup.sh does not install"
            );
        }
    }
}

/// Every program the tests and lighten start by name (`Command::new("...")`) comes from a
/// Debian package `scripts/setup.sh` installs (or one such a package depends on), or from
/// an essential one every Debian has: a fresh machine runs the tests after that command.
#[test]
fn every_program_the_tests_start_is_installed_by_setup() {
    let packages = setup_packages();
    let mut programs = std::collections::BTreeSet::new();
    let files = crate::helpers::files_under(Path::new("tests"))
        .into_iter()
        .chain(crate::helpers::files_under(Path::new("src")))
        .filter(|p| p.extension().is_some_and(|e| e == "rs"));
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
            for part in line.split("Command::new(\"").skip(1) {
                programs.insert(part.split('"').next().unwrap().to_string());
            }
        }
    }
    assert!(programs.contains("systemd-analyze") && programs.contains("lighttpd"), "{programs:?}");
    if Command::new("dpkg").arg("--version").output().is_err() {
        return;
    }
    // What the packages setup.sh names bring with them.
    let mut brought: Vec<String> = packages.clone();
    for p in &packages {
        let deps = Command::new("dpkg-query").args(["-W", "-f=${Depends}", p]).output().unwrap();
        for dep in String::from_utf8_lossy(&deps.stdout).split([',', '|']) {
            brought.extend(dep.split_whitespace().next().map(|d| d.split(':').next().unwrap().to_string()));
        }
    }
    for prog in &programs {
        let path = std::env::split_paths(&std::env::var_os("PATH").unwrap())
            .map(|d| d.join(prog))
            .find(|p| p.is_file());
        let Some(path) = path else {
            assert!(
                std::env::var_os("CI").is_none(),
                "{prog} is not installed: scripts/setup.sh must install it"
            );
            continue;
        };
        // dpkg names the file as the package installed it (/bin or /usr/bin, merged /usr).
        let real = std::fs::canonicalize(&path).unwrap();
        let unmerged =
            |p: &Path| p.strip_prefix("/usr").map(|r| Path::new("/").join(r)).unwrap_or(p.to_path_buf());
        let owner = [path.clone(), unmerged(&path), real.clone(), unmerged(&real)]
            .iter()
            .find_map(|p| {
                let o = Command::new("dpkg").args(["-S"]).arg(p).output().ok()?;
                let out = String::from_utf8_lossy(&o.stdout).into_owned();
                let line = out.lines().find(|l| !l.starts_with("diversion by"))?;
                o.status.success().then(|| line.split(':').next().unwrap_or("").trim().to_string())
            })
            .unwrap_or_else(|| panic!("no Debian package ships {}", path.display()));
        let essential = Command::new("dpkg-query").args(["-W", "-f=${Essential}", &owner]).output().unwrap();
        let essential = String::from_utf8_lossy(&essential.stdout).trim() == "yes";
        assert!(
            essential || brought.contains(&owner),
            "{prog} comes from the Debian package {owner}, which scripts/setup.sh does not install"
        );
    }
}

/// git keeps no empty folder, so a fixture's empty folder exists on the machine it was made
/// on and not in a clone, and the fixture answers otherwise in CI (it did:
/// directoryindex-above-the-root's /up/ folders). Every folder under fixtures/ holds a file.
#[test]
fn no_fixture_folder_is_empty() {
    fn walk(dir: &std::path::Path, empty: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        let mut any = false;
        for e in entries.flatten() {
            any = true;
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                walk(&p, empty);
            }
        }
        if !any {
            empty.push(dir.display().to_string());
        }
    }
    let mut empty = Vec::new();
    walk(std::path::Path::new("fixtures"), &mut empty);
    assert!(empty.is_empty(), "empty folders under fixtures/ (put a file in each): {empty:?}");
}
