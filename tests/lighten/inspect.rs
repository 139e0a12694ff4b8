//! `lighten inspect` on every fixture, against reviewed snapshots.

use crate::helpers::{fixtures, lighten};

fn snapshot_all(dir: &str, prefix: &str) {
    let all = fixtures(dir);
    assert!(!all.is_empty(), "no fixtures under {dir}");
    for f in all {
        let args = f.inspect_args();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let first = lighten(&args);
        let second = lighten(&args);
        assert_eq!(first.stdout, second.stdout, "{}: output differs between two runs", f.name);
        assert_eq!(first.stderr, second.stderr, "{}: diagnostics differ between two runs", f.name);
        insta::with_settings!({ description => f.manifest.description.clone(), omit_expression => true }, {
            insta::assert_snapshot!(format!("{prefix}{}", f.name), first.transcript());
        });
    }
}

#[test]
fn every_site_fixture_matches_its_snapshot() {
    snapshot_all("fixtures", "site-");
}

#[test]
fn every_diagnostic_fixture_matches_its_snapshot() {
    snapshot_all("fixtures/diagnostics", "diagnostic-");
}

#[test]
fn json_is_versioned_and_complete() {
    for name in ["wordpress", "plesk"] {
        let f = fixtures("fixtures").into_iter().find(|f| f.name == name).expect("fixture");
        let mut args = f.inspect_args();
        args.insert(1, "--json".into());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = lighten(&args);
        assert_eq!(out.code, 0, "{name}: {}", out.stderr);
        assert_eq!(out.stderr, "", "JSON mode keeps stderr quiet");
        let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("valid JSON");
        for key in [
            "version",
            "input",
            "apache_version",
            "server_root",
            "modules",
            "server",
            "vhosts",
            "htaccess",
            "coverage",
            "diagnostics",
        ] {
            assert!(v.get(key).is_some(), "{name}: missing top-level key {key}");
        }
        assert_eq!(v["version"], 1);
        if name == "wordpress" {
            insta::assert_snapshot!(format!("json-{name}"), out.stdout);
        }
    }
}

#[test]
fn plesk_tree_shows_every_domain_with_names_docroot_php_and_rules() {
    let f = fixtures("fixtures").into_iter().find(|f| f.name == "plesk").expect("plesk fixture");
    let args = f.inspect_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = lighten(&args);
    for (domain, php) in [
        ("shop.example", "FastCGI (php-fpm) unix:/var/www/vhosts/system/shop.example/php-fpm.sock"),
        ("blog.example", "mod_fcgid"),
        ("static.example", "php: none"),
    ] {
        let block: String = out
            .stdout
            .split("\nvhost ")
            .filter(|b| b.split_whitespace().nth(1) == Some(domain))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(!block.is_empty(), "{domain} is listed as a vhost");
        assert!(
            block.contains(&format!("document root: /var/www/vhosts/{domain}/httpdocs")),
            "{domain} docroot"
        );
        assert!(block.contains("aliases: "), "{domain} aliases");
        assert!(block.contains(php), "{domain} php handler {php}");
    }
    assert!(out.stdout.contains("/var/www/vhosts/shop.example/httpdocs/.htaccess (applied)"));
    assert!(out.stdout.contains("RewriteRule . /index.php [L]"));
}

#[test]
fn a_missing_input_is_a_clear_error() {
    let out = lighten(&["inspect", "fixtures/no-such-thing"]);
    assert_eq!(out.code, 2);
    assert_eq!(out.stderr, "lighten: fixtures/no-such-thing: no such file or directory\n");
}

#[test]
fn help_shows_examples() {
    for args in [&["--help"][..], &["inspect", "--help"], &["directives", "--help"]] {
        let out = lighten(args);
        assert_eq!(out.code, 0);
        assert!(out.stdout.contains("Examples:"), "{args:?} help has examples");
    }
}

/// A directive has one fate: inspect counts what convert reports for the same input
/// (issue 15: inspect said 8 unsupported where convert said 24 for the Plesk fixture).
#[test]
fn inspect_counts_what_convert_reports() {
    for name in ["plesk", "magento2", "wordpress"] {
        let f = fixtures("fixtures").into_iter().find(|f| f.name == name).expect("fixture");
        let args = f.inspect_args();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let inspect = lighten(&args);
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().to_string_lossy().into_owned();
        let mut conv: Vec<&str> = vec!["convert", "--out", &out];
        conv.extend(&args[1..]);
        let convert = lighten(&conv);
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap()).unwrap();
        let counts = report["counts"].as_object().expect("counts");
        assert!(!counts.is_empty(), "{name}: {}", convert.stderr);
        for fate in ["exact", "approximated", "noted", "ignored", "unsupported"] {
            let n = counts.get(fate).and_then(|v| v.as_u64()).unwrap_or(0);
            let line = format!("\n  {fate:<14}{n:>6}\n");
            assert!(inspect.stdout.contains(&line), "{name}: inspect has no {line:?}:\n{}", inspect.stdout);
            // and convert's own line says the same
            if n > 0 {
                assert!(convert.stdout.contains(&format!("{n} {fate}")), "{name}: {}", convert.stdout);
            }
        }
        let marks = inspect.stdout.matches("  [approximated]").count() as u64;
        assert_eq!(marks, counts.get("approximated").and_then(|v| v.as_u64()).unwrap_or(0), "{name}");
    }
}
