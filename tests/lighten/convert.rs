//! `lighten convert` on every fixture: lighttpd accepts the configuration (`-tt`), Lua
//! compiles every script (`luac5.4 -p`, one file at a time), converting twice gives the
//! same bytes, and the output matches reviewed snapshots.

use crate::helpers::{fixtures, have, lighten};
use lighten::run::lighttpd;
use std::path::Path;

/// Converts `f` into `out`; returns the exit status.
fn convert(f: &crate::helpers::Fixture, out: &Path) -> i32 {
    let mut args = f.inspect_args();
    args[0] = "convert".into();
    args.extend([
        "--out".into(),
        out.to_string_lossy().into_owned(),
        "--listen".into(),
        "127.0.0.1:8080".into(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = lighten(&args);
    assert!(r.code == 0 || r.code == 1, "{}: exit {}: {}", f.name, r.code, r.stderr);
    // lighttpd -tt has nothing to say about any output (it warned about Basic auth
    // without mod_authn_file, and a missing plugin is only a message).
    assert!(!r.stderr.contains("lighttpd -tt"), "{}: {}", f.name, r.stderr);
    r.code
}

/// A file of the output with the machine-specific folders named.
fn read_normalized(out: &Path, rel: &str) -> String {
    let text = std::fs::read_to_string(out.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    let repo = std::env::current_dir().unwrap().to_string_lossy().into_owned();
    let text = text
        .replace(&out.to_string_lossy().into_owned(), "$OUT")
        .replace(env!("CARGO_BIN_EXE_lighten"), "$LIGHTEN")
        .replace(&repo, "$REPO");
    relative_depths(&text, repo.matches('/').count())
}

/// The Lua tables give each `<Directory>` its depth in path components, which
/// for a folder inside the checkout depends on where the checkout is; name it
/// relative to the checkout (`depth = $REPO+3`) so the snapshot holds anywhere.
fn relative_depths(text: &str, repo_depth: usize) -> String {
    let mut in_repo = false;
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        if t.starts_with("path = ") {
            in_repo = t.starts_with("path = \"$REPO/");
        }
        let n = t.strip_prefix("depth = ").and_then(|r| r.trim_end().strip_suffix(','));
        match n.and_then(|n| n.parse::<usize>().ok()) {
            Some(n) if in_repo && n > repo_depth => {
                let indent = &line[..line.len() - t.len()];
                out.push_str(&format!("{indent}depth = $REPO+{},\n", n - repo_depth));
            }
            _ => out.push_str(line),
        }
    }
    out
}

#[test]
fn every_fixture_converts_to_a_setup_lighttpd_and_lua_accept() {
    let checks = have("lighttpd") && have("luac5.4");
    if !checks {
        assert!(std::env::var_os("CI").is_none(), "lighttpd and luac5.4 must be installed");
        eprintln!("lighttpd or luac5.4 missing: checking determinism and snapshots only");
    }
    for f in fixtures("fixtures") {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let code = convert(&f, a.path());
        convert(&f, b.path());
        let files = crate::helpers::files_under(a.path());
        assert!(files.iter().any(|p| p.ends_with("lighttpd.conf")), "{}: no lighttpd.conf", f.name);
        for p in &files {
            let rel = p.strip_prefix(a.path()).unwrap().to_string_lossy().into_owned();
            if rel.starts_with("run/") {
                continue;
            }
            assert_eq!(
                read_normalized(a.path(), &rel),
                read_normalized(b.path(), &rel),
                "{}: {rel} differs between two conversions",
                f.name
            );
            if checks && rel.ends_with(".lua") {
                lighttpd::check_lua(p).unwrap_or_else(|e| panic!("{}: {rel}: {e}", f.name));
            }
        }
        if checks {
            runtime_names_resolve(a.path()).unwrap_or_else(|e| panic!("{}: {e}", f.name));
            lighttpd::check_config(&a.path().join("lighttpd.conf"))
                .unwrap_or_else(|e| panic!("{}: lighttpd -tt: {e}", f.name));
        }
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(a.path().join("report.json")).unwrap()).unwrap();
        let inexact = report["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| matches!(e["fate"].as_str(), Some("approximated" | "unsupported")));
        assert_eq!(code, if inexact { 1 } else { 0 }, "{}: the exit status follows the report", f.name);
        insta::with_settings!({ description => f.manifest.description.clone(), omit_expression => true }, {
            insta::assert_snapshot!(format!("convert-{}-lighttpd.conf", f.name), read_normalized(a.path(), "lighttpd.conf"));
            insta::assert_snapshot!(format!("convert-{}-report.md", f.name), read_normalized(a.path(), "report.md"));
        });
        if f.name == "wp-super-cache" {
            // The compiled site, as an admin reads it after the move.
            insta::assert_snapshot!(
                "convert-wp-super-cache-example_test.lua",
                read_normalized(a.path(), "lua/example_test.lua")
            );
            // Which host a request is for, and the physical-path stage every host shares.
            insta::assert_snapshot!(
                "convert-wp-super-cache-lighten_hosts.lua",
                read_normalized(a.path(), "lua/lighten_hosts.lua")
            );
            insta::assert_snapshot!(
                "convert-wp-super-cache-physical.lua",
                read_normalized(a.path(), "lua/physical.lua")
            );
            // The services that run it and keep it in step (not installed).
            insta::assert_snapshot!(
                "convert-wp-super-cache-lighten-watch.service",
                read_normalized(a.path(), "systemd/lighten-watch.service")
            );
            insta::assert_snapshot!(
                "convert-wp-super-cache-lighttpd-drop-in.conf",
                read_normalized(a.path(), "systemd/lighttpd.service.d/lighten.conf")
            );
        }
    }
}

/// Every name the output's Lua reads from the runtime cut to its parts
/// (`translate::runtime`) is still there: each `core.NAME` a module names is defined in
/// lua/lighten_core.lua, each `plans.NAME(...)` it calls in lua/lighten_plans.lua, and the
/// runtime reads no global variable but Lua's own (a local left out with its part would be
/// one: `luac -l` lists every global read).
fn runtime_names_resolve(out: &std::path::Path) -> Result<(), String> {
    let lua = out.join("lua");
    let read = |name: &str| std::fs::read_to_string(lua.join(name)).ok();
    let defined = |text: &str| -> std::collections::BTreeSet<String> {
        let re = regex::Regex::new(r"(?m)^(?:function M\.(\w+)|M\.(\w+) =)").unwrap();
        re.captures_iter(text).map(|c| c.get(1).or(c.get(2)).unwrap().as_str().to_string()).collect()
    };
    let named = |text: &str, module: &str, calls: bool| -> std::collections::BTreeSet<String> {
        let re = regex::Regex::new(&format!(r"\b{module}\.(\w+){}", if calls { r"\(" } else { "" })).unwrap();
        re.captures_iter(text).map(|c| c[1].to_string()).collect()
    };
    const LUA_GLOBALS: [&str; 22] = [
        "string",
        "table",
        "require",
        "print",
        "error",
        "pairs",
        "ipairs",
        "tostring",
        "tonumber",
        "type",
        "select",
        "next",
        "os",
        "math",
        "collectgarbage",
        "package",
        "io",
        "setmetatable",
        "getmetatable",
        "rawget",
        "pcall",
        "utf8",
    ];
    if let Some(core) = read("lighten_core.lua") {
        let have = defined(&core);
        for entry in std::fs::read_dir(&lua).unwrap() {
            let p = entry.unwrap().path();
            let text = std::fs::read_to_string(&p).unwrap();
            if p.ends_with("lighten_core.lua") || !text.contains("require(\"lighten_core\")") {
                continue;
            }
            if let Some(n) = named(&text, "core", false).into_iter().find(|n| !have.contains(n)) {
                return Err(format!("{} names core.{n}, which lighten_core.lua leaves out", p.display()));
            }
        }
        let plans = read("lighten_plans.lua").ok_or("lighten_core.lua without lighten_plans.lua")?;
        let have = defined(&plans);
        if let Some(n) = named(&core, "plans", true).into_iter().find(|n| !have.contains(n)) {
            return Err(format!("lighten_core.lua calls plans.{n}, which lighten_plans.lua leaves out"));
        }
    }
    let global = regex::Regex::new(r#"[GS]ETTABUP.*_ENV "(\w+)""#).unwrap();
    for name in ["lighten_core.lua", "lighten_plans.lua"] {
        if !lua.join(name).exists() {
            continue;
        }
        let listing = std::process::Command::new("luac5.4")
            .args(["-l", "-l", "-p"])
            .arg(lua.join(name))
            .output()
            .map_err(|e| format!("luac5.4: {e}"))?;
        let text = String::from_utf8_lossy(&listing.stdout);
        if let Some(g) =
            global.captures_iter(&text).map(|c| c[1].to_string()).find(|g| !LUA_GLOBALS.contains(&g.as_str()))
        {
            return Err(format!("{name} reads or sets the global {g}"));
        }
    }
    Ok(())
}

/// Issue 11's target for what an admin reads and maintains after the move: the WP Super
/// Cache fixture's lighttpd.conf and Lua together at most 100 KB (100,000 bytes here),
/// without the parts of the runtime no host uses and without PCRE2 when no pattern needs
/// it, with no bytecode table.
#[test]
fn the_wp_super_cache_output_is_at_most_100_kb() {
    let f = fixtures("fixtures").into_iter().find(|f| f.name == "wp-super-cache").expect("fixture");
    let out = tempfile::tempdir().unwrap();
    convert(&f, out.path());
    let mut total = 0;
    let mut sizes = Vec::new();
    for p in crate::helpers::files_under(out.path()) {
        let rel = p.strip_prefix(out.path()).unwrap().to_string_lossy().into_owned();
        if rel == "lighttpd.conf" || (rel.starts_with("lua/") && rel.ends_with(".lua")) {
            let text = std::fs::read_to_string(&p).unwrap();
            assert!(!text.contains("code={"), "{rel} holds a bytecode table");
            total += text.len();
            sizes.push(format!("{rel} {}", text.len()));
        }
    }
    assert!(total <= 100_000, "{total} bytes:\n{}", sizes.join("\n"));
    assert!(!out.path().join("lua/lighten_re.lua").exists(), "no pattern of this site needs PCRE2");
    let core = std::fs::read_to_string(out.path().join("lua/lighten_core.lua")).unwrap();
    assert!(core.contains("-- Left out here, as no host of this conversion uses them: "), "{}", &core[..600]);
}

#[test]
fn strict_writes_nothing_when_anything_is_inexact() {
    let f = fixtures("fixtures").into_iter().find(|f| f.name == "magento2").expect("fixture");
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("site");
    let mut args = f.inspect_args();
    args[0] = "convert".into();
    args.extend(["--strict".into(), "--out".into(), target.to_string_lossy().into_owned()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = lighten(&args);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--strict"), "{}", r.stderr);
    assert!(!target.exists(), "--strict wrote files");
}

#[test]
fn converting_keeps_other_files_and_replaces_its_own() {
    let f = fixtures("fixtures").into_iter().find(|f| f.name == "wordpress").expect("fixture");
    let out = tempfile::tempdir().unwrap();
    std::fs::write(out.path().join("notes.txt"), "mine").unwrap();
    std::fs::write(out.path().join("lighttpd.conf"), "old").unwrap();
    convert(&f, out.path());
    assert_eq!(std::fs::read_to_string(out.path().join("notes.txt")).unwrap(), "mine");
    assert!(
        std::fs::read_to_string(out.path().join("lighttpd.conf"))
            .unwrap()
            .starts_with("# Generated by lighten")
    );
}

/// `lighten demo`: converts the bundled server, verifies it against Apache, benchmarks
/// both (briefly, with --quick), and says where everything went.
#[test]
fn the_demo_runs_end_to_end() {
    if !(have("apache2") && have("lighttpd")) {
        assert!(std::env::var_os("CI").is_none(), "apache2 and lighttpd must be installed");
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let r = lighten(&["demo", "--quick", "--out", &out.path().to_string_lossy()]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("0 fail-open"), "{}", r.stdout);
    for f in ["lighttpd.conf", "report.md", "verify.txt", "verify.json", "lua/lighten_core.lua"] {
        assert!(out.path().join(f).is_file(), "{f} missing:\n{}", r.stdout);
    }
    // Every site of the demo compiles: no interpreter in the output.
    assert!(!out.path().join("lua/lighten.lua").exists(), "lua/lighten.lua written:\n{}", r.stdout);
    let verify: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("verify.json")).unwrap()).unwrap();
    assert!(verify["comparisons"].as_array().unwrap().len() >= 100, "the demo verifies a real request set");
    // The three published experiments, each with its report, beside the published figures.
    for (dir, loads, published) in [
        ("1-wpsc-homepage", 2, "Apache 11.56 req/s"),
        ("2-image-matrix", 9, "12-25% faster"),
        ("3-static-1795", 1, "Cherokee 28,058"),
    ] {
        assert!(r.stdout.contains(published), "{}", r.stdout);
        let json = out.path().join("bench").join(dir).join("compare.json");
        let c: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let l = c["loads"].as_array().unwrap();
        assert_eq!(l.len(), loads, "{dir}");
        for s in l.iter().flat_map(|l| l["servers"].as_array().unwrap()) {
            assert_eq!(s["failed"], 0, "{dir}: {s}");
            assert_eq!(s["non_2xx"], 0, "{dir}: a benchmark of error pages: {s}");
        }
        assert!(out.path().join("bench").join(dir).join("rps.svg").is_file());
    }
    // Both servers answered each load with the same document.
    assert!(!r.stdout.contains("different documents"), "{}", r.stdout);
}
