//! `lighten demo`: the seed scenario on the bundled demo server, end to end.

use super::args::DemoArgs;
use crate::config::{self, LoadOptions};
use crate::source::Sysroot;
use crate::translate;
use crate::verify::derive;
use crate::{model, output};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

/// The demo server's files: beside the binary's sources (a clone of the repository).
fn demo_root() -> anyhow::Result<PathBuf> {
    let candidates = [
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/demo"),
        std::env::current_dir()?.join("fixtures/demo"),
    ];
    candidates.into_iter().find(|p| p.join("var/www/vhosts").is_dir()).ok_or_else(|| {
        anyhow::anyhow!("the demo server (fixtures/demo) is not here: run lighten demo from a clone")
    })
}

pub fn run(a: DemoArgs, color: bool) -> anyhow::Result<i32> {
    let root = demo_root()?;
    let out_dir = match a.out {
        Some(d) => d,
        None => tempfile::Builder::new().prefix("lighten-demo-").tempdir()?.keep(),
    };
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "lighten demo: a Plesk-style server with WordPress + WP Super Cache and a static site")?;
    writeln!(stdout, "  source: {}", root.display())?;

    // 1. read
    let opts = LoadOptions { sysroot: Sysroot::at(&root), ..LoadOptions::default() };
    let input = root.join("var/www/vhosts");
    let for_run = config::load(&input, &opts)?;
    let mut cfg = config::load(&input, &opts)?;
    let (model, _) = model::build(&mut cfg);
    writeln!(
        stdout,
        "\n1. read: {} virtual hosts, {} .htaccess files",
        model.vhosts.len(),
        model.htaccess.iter().filter(|h| h.scope.is_some()).count()
    )?;

    // 2. convert (paths stay the demo server's, under its folder)
    let sysroot = root.clone();
    let topts = translate::Options {
        out_dir: out_dir.clone(),
        listen: vec![(Some(80), "127.0.0.1".into(), 8080), (Some(443), "127.0.0.1".into(), 8443)],
        runtime_dir: out_dir.join("run"),
        map_path: Box::new(move |p: &str| {
            let inside = Sysroot::at(&sysroot).host_path(p);
            if inside.exists() || !std::path::Path::new(p).exists() {
                inside.to_string_lossy().into_owned()
            } else {
                p.to_string()
            }
        }),
        php_backend: None,
        fallback_cert: None,
        trace: false,
    };
    let conv = translate::convert(&model, &cfg, &topts);
    output::write_files(&out_dir, &conv.files)?;
    let counts: Vec<String> = conv.report.counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
    writeln!(stdout, "\n2. convert: {} ({})", out_dir.display(), counts.join(", "))?;
    writeln!(stdout, "   lighttpd.conf, lua/, report.md (every directive with its file:line and fate)")?;

    // 3. verify side by side
    let requests = derive::requests(&model, &cfg.sysroot, &derive::Limits::default());
    writeln!(
        stdout,
        "\n3. verify: Apache and lighttpd side by side, {} requests built from the configuration",
        requests.len()
    )?;
    stdout.flush()?;
    let v = super::verify::run_with_progress(&for_run, &cfg, &model, &requests, false)?;
    let text = crate::verify::report::text(&v, color && std::io::stdout().is_terminal());
    let report_path = out_dir.join("verify.txt");
    output::write_files(&out_dir, &[(PathBuf::from("verify.txt"), crate::verify::report::text(&v, false))])?;
    output::write_files(
        &out_dir,
        &[(PathBuf::from("verify.json"), serde_json::to_string_pretty(&v)? + "\n")],
    )?;
    for line in text.lines().take(2) {
        writeln!(stdout, "   {line}")?;
    }
    writeln!(stdout, "   full report: {}", report_path.display())?;

    // 4. benchmark
    writeln!(
        stdout,
        "\n4. benchmark: not available yet (the benchmark command is the next issue); stopping here"
    )?;
    writeln!(stdout, "\noutput: {}", out_dir.display())?;
    Ok(if v.fail_open() > 0 { 3 } else { 0 })
}
