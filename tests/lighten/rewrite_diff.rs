//! The evaluator against real Apache: every fixture with a `requests.txt` is served by
//! Apache in a sandbox, each request is sent, and Apache's answer must be what the
//! evaluator predicts.

use crate::helpers::{fixtures, have};
use lighten::eval::{self, Request};
use lighten::run::{apache, observe, sandbox::Sandbox};
use lighten::verify;

/// Differences the evaluator knowingly does not reproduce: (fixture, request line, why).
const KNOWN: &[(&str, &str, &str)] = &[
    ("filters-that-narrow-what-goes-out", "GET /a/page.shtml", OUTPUT_FILTER),
    ("filters-that-narrow-what-goes-out", "GET /b/page.html", OUTPUT_FILTER),
    ("filters-that-narrow-what-goes-out", "GET /b/plain.txt", OUTPUT_FILTER),
    ("filters-that-narrow-what-goes-out", "GET /c/page.txt", OUTPUT_FILTER),
    ("filters-that-narrow-what-goes-out", "GET /c/other.html", OUTPUT_FILTER),
    ("output-filter-never-unfiltered", "GET /page.shtml", OUTPUT_FILTER),
    ("output-filter-never-unfiltered", "GET /page.shtml/x", OUTPUT_FILTER),
    (
        "httpd-tests-rewrite",
        "GET http://merge-disabled:8532/CVE-2020-1927/%0D%0Ahttp://127.0.0.1/",
        KEEP_SLASHES,
    ),
    ("merge-slashes-off-sees-double-slashes", "GET //c/page.txt", KEEP_SLASHES),
    ("merge-slashes-off-sees-double-slashes-interpreted", "GET //c/page.txt", KEEP_SLASHES),
    ("action-never-sends-source", "GET /config.php", NOT_MODELLED),
    ("action-never-sends-source", "GET /other.php", NOT_MODELLED),
    ("action-never-sends-source", "GET /index.html", NOT_MODELLED),
    ("access-not-carried-fails-closed", "DELETE http://methods.test/ro/page.txt", NOT_MODELLED),
    ("access-not-carried-fails-closed", "GET http://macro.test/page.txt", NOT_MODELLED),
    ("access-not-carried-fails-closed", "GET http://macro.test/private/", NOT_MODELLED),
    ("access-not-carried-fails-closed", "GET http://macro.test/private/page.txt", NOT_MODELLED),
    ("access-not-carried-fails-closed", "GET http://methods.test/ro/page.txt", NOT_MODELLED),
    ("access-not-carried-fails-closed", "GET http://proxied.test/admin/page.txt", NOT_MODELLED),
    (
        "access-not-carried-fails-closed",
        "GET http://proxied.test/admin/page.txt | X-Forwarded-For: 127.0.0.1, 203.0.113.9",
        NOT_MODELLED,
    ),
    (
        "access-not-carried-fails-closed",
        "GET http://proxied.test/admin/page.txt | X-Forwarded-For: 203.0.113.9",
        NOT_MODELLED,
    ),
    ("access-not-carried-fails-closed", "GET http://proxied.test/page.txt", NOT_MODELLED),
    ("access-not-carried-fails-closed", "POST http://methods.test/ro/page.txt", NOT_MODELLED),
    ("access-not-carried-fails-closed", "PUT http://methods.test/ro/page.txt", NOT_MODELLED),
    ("require-not-host-refuses", "GET /d1/page.txt", DNS),
    ("require-not-host-refuses", "GET /d3/page.txt", REQUIRE_HOST),
    ("require-not-host-refuses", "GET /d5/page.txt", DNS),
    ("php-source-leak", "GET /config.php.save", LIMIT_EXTENSIONS),
    ("php-source-leak", "GET /db.php.txt", LIMIT_EXTENSIONS),
    ("php-source-leak", "GET /db.php.txt/extra", LIMIT_EXTENSIONS),
    ("php-source-leak", "GET /upper.PHP", LIMIT_EXTENSIONS),
    ("wordfence", "GET /wp-content/uploads/2024/shell.phtml", LIMIT_EXTENSIONS),
    ("mediawiki", "GET /w/images/thumb/a/ab/Example.jpg/120px-Example.jpg?y.htm", LINK_LOOP),
    ("mediawiki", "GET /w/cache/l10n_cache-en.cdb", LINK_LOOP),
    ("httpd-tests-rewrite", "GET http://localhost:8529/modules/rewrite/1 | Accept: PRG", PRG),
    ("httpd-tests-rewrite", "GET http://localhost:8529/modules/rewrite/2 | Accept: PRG", PRG),
    ("httpd-tests-rewrite", "GET http://localhost:8529/modules/rewrite/3 | Accept: PRG", PRG),
    ("httpd-tests-rewrite", "GET http://localhost:8529/modules/rewrite/4 | Accept: PRG", PRG),
    ("httpd-tests-rewrite", "GET http://localhost:8529/modules/rewrite/5 | Accept: PRG", PRG),
    ("httpd-tests-rewrite", "GET http://localhost:8529/modules/rewrite/6 | Accept: PRG", PRG),
    (
        "alias-redirect-compiled",
        "GET http://cgi.test/cgi-bin/hello.cgi",
        "a ScriptAlias program run by mod_cgid; the evaluator says which file but not what it prints",
    ),
    (
        "alias-redirect-compiled",
        "GET http://cgi-i.test/cgi-bin/hello.cgi",
        "a ScriptAlias program run by mod_cgid; the evaluator says which file but not what it prints",
    ),
    (
        "httpd-tests-rewrite",
        "GET http://localhost:8529/modules/rewrite/qsa.html?baz=bee",
        "the rule hands the request to a CGI script (env.pl); the evaluator says which script but not what it prints",
    ),
    (
        "httpd-tests-rewrite",
        "GET http://localhost:8530/modules/rewrite/prefixstat/query/index.html?/var/www/httpd-tests/htdocs/index.html",
        HOST_PATH,
    ),
    (
        "httpd-tests-rewrite",
        "GET http://localhost:8530/modules/rewrite/prefixstat/query-optin/index.html?/etc/apache2/conf/core.conf",
        HOST_PATH,
    ),
    ("host-rules-as-apr-reads-them", "GET /dns/page.txt", DNS),
    ("environment-as-apache-tables-keep-it", "GET /port/page.txt", PORT),
    ("environment-as-apache-tables-keep-it", "GET /rb/page.txt", PORT),
];

const OUTPUT_FILTER: &str = "an output filter other than DEFLATE (SSI's INCLUDES, XBitHack, a Substitute by \
     type) is not carried over: the files it applies to (or the folder, for XBitHack and a filter by type) answer 403 (Apache runs the filter, or answers 404 for a name that is no file), \
     never unfiltered: stricter";

const KEEP_SLASHES: &str = "MergeSlashes Off: Apache's rules see the '//' the translation merges, so a request \
     with '//' anywhere in its path answers 403 (merge-slashes-off), also where no rule matches (Apache 404) and \
     for leading ones, which Apache merges in an origin-form target (200): stricter";
const NOT_MODELLED: &str = "RemoteIPHeader, AllowMethods, a mod_macro Use and Action change answers in ways the \
     evaluator does not model: it says so (Unknown); the conversion answers 403 there";
const REQUIRE_HOST: &str = "Require host needs DNS (Apache finds localhost for 127.0.0.1); the evaluator \
     resolves nothing, so the line never grants: stricter";

const PORT: &str = "%{REMOTE_PORT}: the client's port is the test client's, which the evaluator does not know \
     (Unknown)";
const DNS: &str = "Deny from a host name: Apache asks DNS (127.0.0.1 is localhost: 403); the evaluator does \
     not, and says the answer is decided by DNS (Unknown)";
const LIMIT_EXTENSIONS: &str = "Apache hands the script to PHP (mod_mime: .php among the extensions), where the \
     evaluator stops; php-fpm's security.limit_extensions (.php .phar) then answers 403";
const LINK_LOOP: &str = "w is a symbolic link to the document root: Apache reads w/cache/.htaccess and \
     w/images/.htaccess under /w/, while .htaccess discovery stops at the loop and reads each file once, so \
     the evaluator applies neither under /w/ (the converted site's safety net answers 503 there)";
const PRG: &str = "a prg: RewriteMap is a program the evaluator does not run: it answers Unknown";
const HOST_PATH: &str = "the query string names a filesystem path that becomes the rewrite target; in the \
     sandbox that path is the host's, not the fixture copy's";

pub struct Report {
    pub total: usize,
    pub agreed: usize,
    /// Differences listed in KNOWN.
    pub known: usize,
    pub differences: Vec<String>,
}

/// Runs one fixture's requests against Apache and the evaluator.
pub fn run_fixture(f: &crate::helpers::Fixture, requests: &[Request]) -> Report {
    let (opts, cfg_for_run, cfg, model) = f.load();
    let mut sb = Sandbox::new("lighten-diff-").unwrap();
    // LIGHTEN_KEEP=1 keeps the sandbox folder for a look at Apache's config and logs.
    if std::env::var_os("LIGHTEN_KEEP").is_some() {
        eprintln!("{}: sandbox kept at {}", f.name, sb.keep().display());
    }
    // LIGHTEN_REWRITE_TRACE=N writes mod_rewrite's trace to the sandbox's error log.
    let trace = std::env::var("LIGHTEN_REWRITE_TRACE").ok().and_then(|v| v.parse().ok());
    let a = apache::start(&cfg_for_run, &sb, &apache::ApacheOptions { php_echo: true, rewrite_trace: trace })
        .unwrap_or_else(|e| panic!("{}: {e}", f.name));
    let paths = apache::PathMap { root: a.root.clone() };
    let default_host =
        model.vhosts.first().and_then(|v| v.server_name.clone()).unwrap_or_else(|| opts.server_name.clone());
    let mut report = Report { total: 0, agreed: 0, known: 0, differences: Vec::new() };
    for req in requests {
        // A port in the URL names the configuration's listener (http://localhost:8530/).
        let port = req
            .host
            .as_deref()
            .and_then(|h| lighten::model::server::split_host_port(h).1.and_then(|p| p.parse::<u16>().ok()))
            .unwrap_or(if req.scheme == "https" { 443 } else { 80 });
        let Some(sport) = a.port_for(port).or(if port == 80 { a.http_port() } else { None }) else {
            continue;
        };
        let host = req.host.clone().unwrap_or_else(|| default_host.clone());
        let mut headers: Vec<(String, String)> = vec![("Host".into(), host.clone())];
        headers.extend(req.headers.iter().cloned());
        let mut r = req.clone();
        r.host = req.host_header(&host);
        let ev = eval::evaluate(&model, &cfg.sysroot, &r, port);
        report.total += 1;
        let sent = verify::send(sport, req.scheme == "https", &verify::Sent::new(req, &host, headers));
        let resp = match sent {
            Ok(r) => r,
            Err(e) => {
                report.differences.push(format!("{}: {} -> no answer: {e}", f.name, req.to_line()));
                continue;
            }
        };
        let seen = observe::observe(&resp, &paths, &cfg.sysroot, Some(&ev.outcome), req.method == "HEAD");
        let line = req.to_line();
        let known = KNOWN.iter().any(|(fx, l, _)| *fx == f.name && *l == line);
        match observe::agree(&ev.outcome, &seen) {
            Ok(()) if known => {
                report.differences.push(format!("{}: {line} is listed in KNOWN but now agrees", f.name))
            }
            Ok(()) => report.agreed += 1,
            Err(d) => {
                if known {
                    report.known += 1;
                } else {
                    let trace: Vec<String> = ev
                        .trace
                        .iter()
                        .map(|s| format!("      {}{}", "  ".repeat(s.depth as usize), s.text))
                        .collect();
                    report.differences.push(format!("{}: {line}\n    {d}\n{}", f.name, trace.join("\n")));
                }
            }
        }
    }
    report
}

#[test]
fn evaluator_agrees_with_apache() {
    if !have("apache2") {
        // CI installs Apache (scripts/setup.sh); only a developer's machine may lack it.
        assert!(std::env::var_os("CI").is_none(), "apache2 is not installed");
        eprintln!("skipped: apache2 is not installed");
        return;
    }
    let mut total = 0;
    let mut known = 0;
    let mut sets = 0;
    let mut all_diffs = Vec::new();
    // The real-world fixtures, then the regressions (fixtures/regress/<what-broke>/).
    for f in fixtures("fixtures").into_iter().chain(fixtures("fixtures/regress")) {
        // LIGHTEN_FIXTURE=name runs one fixture (then the totals are not checked).
        if std::env::var("LIGHTEN_FIXTURE").is_ok_and(|n| n != f.name) {
            continue;
        }
        let path = f.dir.join("requests.txt");
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        let requests =
            lighten::eval::request::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let r = run_fixture(&f, &requests);
        eprintln!("{}: {}/{} agree, {} known", f.name, r.agreed, r.total, r.known);
        total += r.total;
        known += r.known;
        sets += 1;
        all_diffs.extend(r.differences);
    }
    assert!(all_diffs.is_empty(), "{} difference(s):\n{}", all_diffs.len(), all_diffs.join("\n"));
    eprintln!("{total} requests over {sets} rule sets, {known} known differences");
    if std::env::var_os("LIGHTEN_FIXTURE").is_some() {
        return;
    }
    // The corpus is the evidence: it must not shrink unnoticed.
    assert!(sets >= 12 && total >= 400, "only {total} requests over {sets} rule sets");
}
