//! Checks on the project itself, run as ordinary tests.

use crate::helpers::{fixtures, lighten};
use lighten::catalogue::catalogue;
use lighten::diagnostic::Code;
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
