//! `lighten demo`: the seed scenario on the bundled demo server, end to end.

use super::args::DemoArgs;
use crate::bench::compare::{Load, Plan};
use crate::config::{self, LoadOptions};
use crate::output;
use crate::source::Sysroot;
use crate::translate;
use crate::verify::derive;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

/// Where the Debian package puts the demo server's files (scripts/deb.sh).
const INSTALLED_DEMO: &str = "/usr/share/lighten/demo";

/// The demo server's files: beside the binary's sources (a clone of the repository), or
/// where the package installed them.
fn demo_root() -> anyhow::Result<PathBuf> {
    let candidates = [
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/demo"),
        std::env::current_dir()?.join("fixtures/demo"),
        PathBuf::from(INSTALLED_DEMO),
    ];
    candidates.into_iter().find(|p| p.join("var/www/vhosts").is_dir()).ok_or_else(|| {
        anyhow::anyhow!(
            "the demo server is not here (fixtures/demo of a clone, or {INSTALLED_DEMO} of the package)"
        )
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
    let (cfg, model) = super::load::checked(&input, &opts, color)?;
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
        apache_log_paths: false,
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
    let v = super::verify::run_with_progress(&for_run, &cfg, &model, &requests, false, false)?;
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

    // 4. benchmark: the three published experiments, on this machine
    writeln!(
        stdout,
        "\n4. benchmark: Apache and the converted lighttpd side by side (real PHP), the published experiments"
    )?;
    stdout.flush()?;
    let bench_dir = out_dir.join("bench");
    let pair = crate::verify::launch(&for_run, &cfg, &model, &crate::verify::Options::quiet(), false)?;
    let servers = super::compare::servers(&pair, 80)?;
    let mut failed = false;
    for e in experiments(a.quick) {
        writeln!(stdout, "\n{}\n   published: {}", e.title, e.published)?;
        stdout.flush()?;
        let c = super::compare::run_plan(&e.plan, &servers)?;
        failed |= c.loads.iter().flat_map(|l| &l.servers).any(|s| s.failed > 0);
        for line in crate::bench::compare::text(&c).lines() {
            writeln!(stdout, "   {line}")?;
        }
        let dir = bench_dir.join(e.slug);
        super::compare::write(&c, &dir, e.title, &format!("Published, for context: {}", e.published))?;
        writeln!(stdout, "   report and charts: {}", dir.join("compare.md").display())?;
    }
    drop(pair);
    writeln!(stdout, "\noutput: {}", out_dir.display())?;
    Ok(if v.fail_open() > 0 {
        3
    } else if failed {
        1
    } else {
        0
    })
}

/// One of the published comparisons, as loads on the demo server.
struct Experiment {
    title: &'static str,
    slug: &'static str,
    published: &'static str,
    plan: Plan,
}

/// The WP Super Cache homepage (ab -n 1000 -c 5, and a time-bounded keep-alive run),
/// the ~30 KB image over the n x c grid, and the 1,795-byte file with 20 keep-alive
/// clients. `quick` shortens every run (for the test suite).
fn experiments(quick: bool) -> Vec<Experiment> {
    let (repeat, warmup, seconds) = if quick { (1, 0.1, 0.5) } else { (3, 1.0, 5.0) };
    let load = |label: String, host: &str, path: &str, n: Option<u64>, c: usize, k: bool| Load {
        label,
        path: path.into(),
        host: host.into(),
        method: "GET".into(),
        headers: Vec::new(),
        requests: n,
        duration: if n.is_some() { None } else { Some(Duration::from_secs_f64(seconds)) },
        concurrency: c,
        keep_alive: k,
        rate: None,
    };
    let plan = |loads: Vec<Load>, warm: f64| Plan {
        loads,
        repeat,
        warmup: Duration::from_secs_f64(warm),
        threads: None,
        timeout: Duration::from_secs(30),
        sample_every: Duration::from_millis(100),
    };
    let image = "/wp-content/uploads/2024/beach.jpg";
    let mut grid = Vec::new();
    for n in [100u64, 1000, 10_000] {
        for c in [5usize, 50, 100] {
            grid.push(load(format!("n={n} c={c}"), "shop.example", image, Some(n), c, false));
        }
    }
    vec![
        Experiment {
            title: "WP Super Cache homepage (shop.example /, served from the cache by the rewrite rules)",
            slug: "1-wpsc-homepage",
            published: "ab -n 1000 -c 5: Apache 11.56 req/s, Max Load 6.4, Max Memory 87 MB; \
                        lighttpd 12.33 req/s, Max Load 3.0, Max Memory 6 MB",
            plan: plan(
                vec![
                    load("-n 1000 -c 5".into(), "shop.example", "/", Some(1000), 5, false),
                    load(format!("-t {seconds} -c 5 -k"), "shop.example", "/", None, 5, true),
                ],
                warmup,
            ),
        },
        Experiment {
            title: "A 30 KB image (shop.example beach.jpg), requests x concurrency, no keep-alive",
            slug: "2-image-matrix",
            published: "25 KB image: lighttpd 12-25% faster than Apache 2.2 over n = 100 / 1,000 / 10,000 \
                        x c = 5 / 50 / 100",
            plan: plan(grid, warmup.min(0.5)),
        },
        Experiment {
            title: "A 1,795-byte static file (static.example /page.html), 20 keep-alive clients",
            slug: "3-static-1795",
            published: "Cherokee 28,058 req/s, lighttpd 23,531, nginx 21,059, Apache 14,108",
            plan: plan(
                vec![load(format!("-t {seconds} -c 20 -k"), "static.example", "/page.html", None, 20, true)],
                warmup,
            ),
        },
    ]
}
