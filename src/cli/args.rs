//! The command line as clap reads it.  Nothing below `cli` sees these types: each command
//! resolves them once into the settings its library call takes.

use crate::settings::Given;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "lighten",
    version,
    about = "Move websites from Apache httpd to lighttpd, and prove and measure the move",
    after_help = "Examples:\n  lighten inspect /etc/apache2/apache2.conf\n  lighten inspect --sysroot fixtures/plesk fixtures/plesk/var/www/vhosts\n  lighten directives --status unsupported"
)]
pub struct Cli {
    /// When to colour diagnostics
    #[arg(long, value_enum, default_value = "auto", global = true)]
    pub color: ColorChoice,
    /// The settings file (TOML) with defaults for flags [default: the first of
    /// $LIGHTEN_SETTINGS, ./lighten.toml, ~/.config/lighten/lighten.toml,
    /// /etc/lighten/lighten.toml]
    #[arg(long, value_name = "FILE", global = true)]
    pub settings: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Copy, Clone, Debug, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Read an Apache configuration and show what lighten understands of it
    #[command(after_help = "\
Examples:
  lighten inspect /etc/apache2/apache2.conf
  lighten inspect --json /etc/httpd/conf/httpd.conf > model.json
  lighten inspect --sysroot fixtures/plesk fixtures/plesk/var/www/vhosts
  lighten inspect --server-name example.test /var/www/html

CONFIG is an httpd.conf/apache2.conf, a Plesk vhosts root (the folder holding
system/<domain>/conf/httpd.conf), or a document root with .htaccess files.

Exit status: 0 read cleanly; 1 read, but some .htaccess would make Apache answer 500;
2 the server configuration has errors or could not be read.")]
    Inspect(InspectArgs),
    /// Show what Apache does with one request: every rule and condition tried, and the outcome
    #[command(after_help = "\
Examples:
  lighten explain /etc/apache2/apache2.conf http://example.com/2024/hello-world/
  lighten explain --sysroot fixtures/wp-super-cache --server-name example.test \\
      fixtures/wp-super-cache/var/www/html / -H 'Accept-Encoding: gzip'
  lighten explain /var/www/vhosts http://shop.example/wp-login.php -X POST

URL is what a browser sends (http://host/path?query); a bare /path uses the first virtual
host's name. Nothing is started: the answer comes from lighten's model of Apache, which the
test suite checks against real Apache.")]
    Explain(ExplainArgs),
    /// Write a lighttpd configuration and mod_magnet Lua that answer like the Apache one
    #[command(after_help = "\
Examples:
  lighten convert /etc/apache2/apache2.conf --out /etc/lighttpd/from-apache
  lighten convert --sysroot fixtures/wp-super-cache --server-name example.test \\
      fixtures/wp-super-cache/var/www/html --out /tmp/wpsc --listen 127.0.0.1:8080
  lighten convert /var/www/vhosts --out out --listen 80=127.0.0.1:8080 --listen 443=127.0.0.1:8443
  lighten convert /etc/apache2/apache2.conf --out /etc/lighttpd/from-apache --dry-run

The output folder receives lighttpd.conf (run it with lighttpd -D -f OUT/lighttpd.conf),
lua/ (the runtime and the site as data), report.md and report.json. Files are replaced
one by one, atomically; a file replaced with other content is kept as NAME.lighten-bak;
other files in the folder are left alone. --dry-run writes nothing and prints the diff
between the folder and what would be written.

After writing, lighttpd -tt runs on the output, and every file and program it names
(certificates, keys, password files, PHP sockets, php-cgi, document roots, the Lua
scripts, the runtime folder) is checked as the user lighttpd will run as: Apache's User
when started as root (lighten then gives it the runtime folder), else whoever starts it.
Each problem names the Apache file:line it comes from and the Debian package that fixes
it where there is one; the run: line is printed only for a setup that starts.

Exit status: 0 the converted site answers like Apache (differences in logging are notes);
1 something that changes answers is approximated or unsupported (see report.md;
unsupported parts fail closed with 403); 2 failure: Apache would refuse the configuration
(nothing is written), the written setup would not start (the errors say why), or
--strict with anything inexact (nothing is written). With --dry-run, diff's: 0 nothing
would change, 1 something would, 2 trouble.")]
    Convert(ConvertArgs),
    /// Keep a conversion in step with Apache's files: reconvert on every .htaccess edit
    #[command(after_help = "\
Examples:
  lighten watch /etc/apache2/apache2.conf --out /etc/lighttpd/from-apache
  lighten watch --sysroot fixtures/wordpress --server-name example.test \\
      fixtures/wordpress/var/www/html --out /tmp/wp --listen 127.0.0.1:8080 --once
  lighten watch /var/www/vhosts --out out --json >> watch.log

Takes the same input and settings as lighten convert. First converts once if OUT is not
what a conversion now writes; then watches every Apache file the conversion read and,
recursively, every folder Apache reads .htaccess files in (edits, new files, deletions,
renames, editors that write a copy and rename it). On a change it converts again, checks
the new output (lighttpd -tt, luac5.4 -p, every file it needs) before writing it, writes
the files that changed atomically, and gracefully restarts the lighttpd running from
OUT/lighttpd.conf (found by its pid file; SIGUSR1: no connection is refused). Each change
is one line on stderr (what changed, converted or refused, file:line of what is not exact,
the time until it was in force); --json also prints it as a JSON line on stdout.

A change that cannot be written (Apache would refuse the configuration, the output fails
its checks, --strict and something is inexact) is refused: the output in force stays, and
its safety net answers 503 to requests that meet a changed .htaccess, never the old
answer. Stops cleanly on SIGINT or SIGTERM.

Exit status: 0 stopped (or, with --once, OUT is current); 1 --once, and the conversion is
inexact (see report.md); 2 failure (with --once: the change was refused).")]
    Watch(WatchArgs),
    /// Convert every hosting account of a Plesk server: one folder each, and all together
    #[command(after_help = "\
Examples:
  lighten batch /var/www/vhosts --out /srv/lighttpd
  lighten batch /var/www/vhosts --out /srv/lighttpd --jobs 4 \\
      --server-config /etc/apache2/apache2.conf
  lighten batch --sysroot ./copy ./copy/var/www/vhosts --out out --json > summary.json
  lighten batch /var/www/vhosts --out /srv/lighttpd --dry-run
  lighten batch /var/www/vhosts --out /srv/lighttpd --shard 2/3   # on the second of three machines

ROOT is a Plesk vhosts root (the folder holding system/<domain>/conf/httpd.conf). Each
account is read alone inside the server-wide configuration (--server-config, else
/etc/apache2/apache2.conf or /etc/httpd/conf/httpd.conf; without one, lighten's stand-in
for Plesk's defaults, said so) and converted into OUT/<domain>/ as lighten convert writes
it. The accounts that converted are also converted together into OUT/combined/, served by
OUT/lighttpd.conf (run it with lighttpd -D -f OUT/lighttpd.conf). OUT/batch-summary.md and
OUT/batch-summary.json give each account's status (exact, approximated, failed), its
directives by fate, and its worst finding or the error that stopped it, with file:line.
An account Apache would refuse (a syntax error, an unreadable file, an include cycle) is
reported and the others go on. --shard K/N converts the accounts whose FNV-1a hash of the
domain modulo N is K-1 and suffixes the shared names (batch-summary-shard-K-of-N.md, ...).

Exit status: 0 every account exact; 1 some approximated or unsupported (they fail closed
with 403); 2 some account failed. With --dry-run (nothing is written; the diffs are
printed): 0 nothing would change, 1 something would, 2 trouble.")]
    Batch(BatchArgs),
    /// Compare two conversion outputs, file by file (a unified diff)
    #[command(after_help = "\
Examples:
  lighten diff /srv/lighttpd.old /srv/lighttpd
  lighten convert site/ --out new/ && lighten diff current/ new/ --stat

Exit status, as diff's: 0 the same, 1 different, 2 trouble.")]
    Diff(DiffArgs),
    /// Run Apache and the converted lighttpd side by side and prove they answer the same
    #[command(after_help = "\
Examples:
  lighten verify /etc/apache2/apache2.conf
  lighten verify --sysroot ./copy ./copy/etc/apache2/apache2.conf --requests urls.txt
  lighten verify /var/www/vhosts --from-log /var/log/apache2/access.log --json > verify.json

Both servers run from a temporary folder on loopback ports, with the same copy of the
files and the same PHP backend (in echo mode: every script answers with the variables it
was given, so routing is compared without the application's database). Without
--requests, requests are built from the configuration: each host by its names, the
files under each document root, each rewrite rule's pattern and conditions, each denied
or password-protected place.

A requests file has one request a line: METHOD URL [| Header: value]..., e.g.
  GET http://example.com/blog/?p=1 | Cookie: a=b

With --attack, each request Apache refuses (401, 403) is also sent the ways an attacker
would write it; those variants count only when lighttpd serves one Apache refuses.

Exit status: 0 every answer the same; 1 some differ; 3 a fail-open (Apache refused,
lighttpd served): never switch over then; 2 failure, or Apache would refuse the
configuration; 130 interrupted (the servers are stopped and reaped first).")]
    Verify(VerifyArgs),
    /// Load-test a URL with ab's flags and report, or compare Apache with the conversion
    #[command(after_help = "\
Examples:
  lighten bench -n 10000 -c 20 -k http://127.0.0.1:8080/index.html
  lighten bench -t 10 -c 50 --json http://127.0.0.1/ > run.json
  lighten bench -t 30 -c 20 -k --rate 2000 http://127.0.0.1/   # latency at a constant rate
  lighten bench --compare /etc/apache2/apache2.conf --path / --path /logo.png --repeat 3
  lighten bench --compare ./site --server-name example.com --matrix --out results/

The report has ab's layout (Server Software .. the percentage table) with times in
milliseconds to the microsecond; failures are counted by kind (connect, receive or short
body, length, exceptions, timeout) and non-2xx answers separately. Without -n or -t a run
lasts 10 seconds. With --rate, latencies count from the time each request was due, so a
stalled server is charged for the requests it held up (no coordinated omission).

--compare starts the original Apache and the converted lighttpd in a sandbox (as verify
does, with the real PHP backend), warms each up, runs the same load against each in
turns (A B A B ...), samples each server's whole process tree (memory, CPU) during the
runs, and writes compare.md, compare.json and SVG charts to --out.

Exit status: 0 done; 1 done, but some requests failed; 2 failure; 130 interrupted (a
plain run still prints what it measured).")]
    Bench(BenchArgs),
    /// The whole scenario on bundled sites: convert, verify, then benchmark
    #[command(after_help = "\
Example:
  lighten demo

Converts the bundled Plesk-style server (WordPress + WP Super Cache, a static site),
verifies the conversion against Apache side by side, then benchmarks both on this machine
the way the published comparisons did: the WP Super Cache homepage (-n 1000 -c 5, and a
keep-alive run), a 30 KB image over -n 100/1,000/10,000 x -c 5/50/100, and a 1,795-byte
file with 20 keep-alive clients, each table beside the published figures. Takes a few
minutes; --quick runs each load once, briefly.

Exit status: 0 done; 1 some benchmark requests failed; 3 verify found a fail-open; 2 failure.")]
    Demo(DemoArgs),
    /// Walk through a migration: pick the configuration and sites, preview, write, verify
    #[command(after_help = "\
Examples:
  lighten wizard
  lighten wizard --sysroot ./copy        # finds ./copy/etc/apache2/apache2.conf and the like
  lighten wizard --config /var/www/vhosts --vhost shop.example --vhost blog.example \\
      --out /etc/lighttpd/from-apache --yes --no-verify --no-bench

Asks, in order: which Apache configuration (Debian/Ubuntu's apache2.conf, RHEL's
httpd.conf or a Plesk vhosts root, looked for under --sysroot), which sites to migrate,
where to write; then shows what cannot be carried over exactly (and how it fails closed)
and the diff against the output folder, asks before writing, offers verify and a short
benchmark (when apache2 and lighttpd are installed), and ends with the commands to switch
over and to roll back (printed, never run). Every question has a flag; --yes takes the
default answer of every question no flag answers. Without a terminal, a question no flag
answers is an error that names the flags (exit 2).

Exit status: 0 written, and the site answers like Apache; 1 written, but something that
changes answers is approximated or unsupported, verify found differences or benchmark
requests failed; 3 verify found a fail-open; 2 failure, Apache would refuse the
configuration, the written setup would not start, or a question left unanswered; 130
cancelled or interrupted.")]
    Wizard(WizardArgs),
    /// Print shell completions (bash, zsh, fish, elvish, powershell)
    #[command(after_help = "\
Examples:
  lighten completions bash > /etc/bash_completion.d/lighten
  lighten completions zsh > \"${fpath[1]}/_lighten\"
  lighten completions fish > ~/.config/fish/completions/lighten.fish")]
    Completions(CompletionsArgs),
    /// Write the man pages (lighten.1 and one per command)
    #[command(after_help = "\
Examples:
  lighten man --out /usr/local/share/man/man1 && mandb -q
  lighten man | man -l -")]
    Man(ManArgs),
    /// List the Apache directives lighten knows and what the lighttpd target does with each
    #[command(after_help = "\
Examples:
  lighten directives
  lighten directives --module mod_rewrite.c
  lighten directives --status unsupported --json")]
    Directives(DirectivesArgs),
}

#[derive(Args, Debug)]
pub struct LoadArgs {
    /// Read absolute paths in the configuration under this folder (a copy of a server's files)
    #[arg(long, value_name = "DIR")]
    pub sysroot: Option<PathBuf>,
    /// ServerRoot to start from, instead of the configuration file's folder
    #[arg(long, value_name = "DIR")]
    pub server_root: Option<String>,
    /// Define a variable, as `apache2 -D NAME` or `Define NAME VALUE` would
    #[arg(short = 'D', long = "define", value_name = "NAME[=VALUE]")]
    pub defines: Vec<String>,
    /// The Apache version <IfVersion> compares against
    #[arg(long, value_name = "VERSION", default_value = crate::config::DEFAULT_APACHE_VERSION)]
    pub apache_version: String,
    /// For a Plesk vhosts root: the server-wide apache2.conf or httpd.conf
    #[arg(long, value_name = "FILE")]
    pub server_config: Option<String>,
    /// For a document root: the host name it is served as
    #[arg(long, value_name = "NAME", default_value = "localhost")]
    pub server_name: String,
    /// Visit at most this many directory entries looking for .htaccess files
    #[arg(long, value_name = "N", default_value_t = crate::config::DEFAULT_WALK_LIMIT)]
    pub walk_limit: usize,
}

impl LoadArgs {
    /// These flags as words for another command line (defaults left out), so a command
    /// lighten prints reads the configuration as this one did.
    pub fn to_args(&self) -> Vec<String> {
        let mut v = Vec::new();
        let mut flag = |name: &str, value: String| {
            v.push(name.to_string());
            v.push(value);
        };
        if let Some(s) = &self.sysroot {
            flag("--sysroot", s.display().to_string());
        }
        if let Some(r) = &self.server_root {
            flag("--server-root", r.clone());
        }
        for d in &self.defines {
            flag("-D", d.clone());
        }
        if self.apache_version != crate::config::DEFAULT_APACHE_VERSION {
            flag("--apache-version", self.apache_version.clone());
        }
        if let Some(c) = &self.server_config {
            flag("--server-config", c.clone());
        }
        if self.server_name != "localhost" {
            flag("--server-name", self.server_name.clone());
        }
        if self.walk_limit != crate::config::DEFAULT_WALK_LIMIT {
            flag("--walk-limit", self.walk_limit.to_string());
        }
        v
    }
}

#[derive(Args, Debug)]
pub struct InspectArgs {
    /// httpd.conf / apache2.conf, a Plesk vhosts root, or a document root
    pub config: PathBuf,
    /// Print the model as JSON (see docs/inspect-json.md)
    #[arg(long, conflicts_with = "summary")]
    pub json: bool,
    /// One line per virtual host, the coverage table and one line per diagnostic, for
    /// servers with many accounts
    #[arg(long)]
    pub summary: bool,
    #[command(flatten)]
    pub load: LoadArgs,
}

#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// httpd.conf / apache2.conf, a Plesk vhosts root, or a document root
    pub config: PathBuf,
    /// The URL as a browser sends it, or a path
    pub url: String,
    /// The request method
    #[arg(short = 'X', long = "method", default_value = "GET")]
    pub method: String,
    /// A request header, `Name: value` (repeatable)
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// The client address
    #[arg(long, default_value = "127.0.0.1")]
    pub remote: std::net::IpAddr,
    /// Print the evaluation as JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub load: LoadArgs,
}

#[derive(Copy, Clone, Debug, ValueEnum)]
pub enum Target {
    Lighttpd,
}

/// Where and how a conversion is written and served: `convert` and `watch` take the same.
#[derive(Args, Debug)]
pub struct SiteArgs {
    /// The folder to write to (created if missing) [default: `out` in the settings file]
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Listen here instead of Apache's listeners: ADDR:PORT for all, or APACHEPORT=ADDR:PORT
    /// for one of them (repeatable)
    #[arg(long, value_name = "[PORT=]ADDR:PORT")]
    pub listen: Vec<String>,
    /// Send PHP here instead of the backend the configuration names: a socket path
    /// (`unix:/run/php/php8.2-fpm.sock` or `/run/...`) or HOST:PORT
    #[arg(long, value_name = "ADDR")]
    pub php_backend: Option<String>,
    /// Where lighttpd keeps its pid file, logs and sockets [default: OUT/run]
    #[arg(long, value_name = "DIR")]
    pub runtime_dir: Option<PathBuf>,
    /// Write nothing unless everything translates exactly (convert: exit 2; watch: the
    /// change is refused and the output in force stays)
    #[arg(long)]
    pub strict: bool,
    /// Only this site, by ServerName or ServerAlias (repeatable) [default: all]
    #[arg(long = "vhost", value_name = "NAME", conflicts_with = "all_vhosts")]
    pub vhosts: Vec<String>,
    /// Every site (the default; for scripts that say so)
    #[arg(long)]
    pub all_vhosts: bool,
}

#[derive(Args, Debug)]
pub struct ConvertArgs {
    /// httpd.conf / apache2.conf, a Plesk vhosts root, or a document root
    pub config: PathBuf,
    /// The server to convert to
    #[arg(long, value_enum, default_value = "lighttpd")]
    pub target: Target,
    #[command(flatten)]
    pub site: SiteArgs,
    /// Print the report as JSON on standard output
    #[arg(long)]
    pub json: bool,
    /// Write nothing: show the diff between --out now and what would be written
    /// (exit 0 the same, 1 different, 2 trouble)
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub load: LoadArgs,
}

#[derive(Args, Debug)]
pub struct WatchArgs {
    /// httpd.conf / apache2.conf, a Plesk vhosts root, or a document root
    pub config: PathBuf,
    #[command(flatten)]
    pub site: SiteArgs,
    /// Also print each change as a JSON line on standard output
    #[arg(long)]
    pub json: bool,
    /// Bring OUT up to date once and exit (for cron)
    #[arg(long)]
    pub once: bool,
    /// Quiet time after an event before converting, in milliseconds (editors write in
    /// several steps)
    #[arg(long, value_name = "MS", default_value_t = 20)]
    pub settle_ms: u64,
    #[command(flatten)]
    pub load: LoadArgs,
}

#[derive(Args, Debug)]
pub struct BatchArgs {
    /// A Plesk vhosts root (the folder holding system/<domain>/conf/httpd.conf)
    pub root: PathBuf,
    /// The folder to write to: one folder per account, lighttpd.conf for them all, the
    /// summary (created if missing) [default: `out` in the settings file]
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Accounts converted at once [default: the number of cores]
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Print the summary (batch-summary.json) on standard output
    #[arg(long, conflicts_with = "dry_run")]
    pub json: bool,
    /// Write nothing: print each account's diff and a summary line (exit 0 nothing would
    /// change, 1 something would, 2 trouble)
    #[arg(long)]
    pub dry_run: bool,
    /// Convert only shard K of N (1-based): the accounts whose FNV-1a hash of the domain
    /// modulo N is K-1
    #[arg(long, value_name = "K/N")]
    pub shard: Option<crate::batch::Shard>,
    /// Only this account, by its domain (the DOMAIN of system/DOMAIN/, or www.DOMAIN)
    /// (repeatable) [default: all]
    #[arg(long = "vhost", value_name = "NAME", conflicts_with = "all_vhosts")]
    pub vhosts: Vec<String>,
    /// Every site (the default; for scripts that say so)
    #[arg(long)]
    pub all_vhosts: bool,
    /// Listen here instead of Apache's listeners: ADDR:PORT for all, or APACHEPORT=ADDR:PORT
    /// for one of them (repeatable) [default: `listen` in the settings file]
    #[arg(long, value_name = "[PORT=]ADDR:PORT")]
    pub listen: Vec<String>,
    /// Send PHP here instead of the backend each account names: a socket path
    /// (`unix:/run/php/php8.2-fpm.sock` or `/run/...`) or HOST:PORT [default:
    /// `php_backend` in the settings file]
    #[arg(long, value_name = "ADDR")]
    pub php_backend: Option<String>,
    /// An account that does not translate exactly is not written: it fails, stays on
    /// Apache, and is left out of the combined configuration (also `approximations =
    /// "refuse"` in the settings file)
    #[arg(long)]
    pub strict: bool,
    /// The accounts that stay on Apache are served by the Apache kept at this address: the
    /// combined lighttpd.conf proxies their hosts there over plain HTTP (mod_proxy, with
    /// X-Forwarded-For) and answers them 503 over TLS
    #[arg(long, value_name = "ADDR:PORT")]
    pub fallback_apache: Option<crate::batch::fallback::Backend>,
    #[command(flatten)]
    pub load: LoadArgs,
}

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Args, Debug)]
pub struct ManArgs {
    /// Write lighten.1 and lighten-<command>.1 into this folder [default: lighten.1 to
    /// standard output]
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct DiffArgs {
    /// The older output folder
    pub old: PathBuf,
    /// The newer output folder
    pub new: PathBuf,
    /// Only the summary line
    #[arg(long)]
    pub stat: bool,
}

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// httpd.conf / apache2.conf, a Plesk vhosts root, or a document root
    pub config: PathBuf,
    /// The server to convert to
    #[arg(long, value_enum, default_value = "lighttpd")]
    pub target: Target,
    /// Requests to send, one a line (repeatable); replaces the derived ones
    #[arg(long, value_name = "FILE")]
    pub requests: Vec<PathBuf>,
    /// Replay GET and HEAD requests from an Apache access log (common or combined format)
    #[arg(long, value_name = "FILE")]
    pub from_log: Option<PathBuf>,
    /// At most this many requests
    #[arg(long, value_name = "N", default_value_t = 2000)]
    pub limit: usize,
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,
    /// Keep the sandbox (configurations, logs) and say where
    #[arg(long)]
    pub keep: bool,
    /// Also send, for every request Apache refuses (401, 403), the ways an attacker would
    /// write it: percent-encoded letters and slashes, dot segments, doubled slashes,
    /// trailing bytes, case, PATH_INFO, a # fragment, other methods, Host variants
    #[arg(long)]
    pub attack: bool,
    /// Only this site, by ServerName or ServerAlias (repeatable): the conversion holds
    /// only the sites named, and the derived requests are theirs [default: all]
    #[arg(long = "vhost", value_name = "NAME", conflicts_with = "all_vhosts")]
    pub vhosts: Vec<String>,
    /// Every site (the default; for scripts that say so)
    #[arg(long)]
    pub all_vhosts: bool,
    #[command(flatten)]
    pub load: LoadArgs,
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// The URL to load (http://host[:port]/path?query); not with --compare
    #[arg(required_unless_present = "compare", conflicts_with = "compare")]
    pub url: Option<String>,
    /// Number of requests in all
    #[arg(short = 'n', long = "requests", value_name = "N", conflicts_with = "seconds")]
    pub requests: Option<u64>,
    /// Stop sending after this many seconds [default: 10, when -n is not given]
    #[arg(short = 't', long = "timelimit", value_name = "SECONDS")]
    pub seconds: Option<f64>,
    /// Connections open at once
    #[arg(short = 'c', long = "concurrency", value_name = "C", default_value_t = 1)]
    pub concurrency: usize,
    /// Keep connections open between requests (HTTP/1.1 keep-alive)
    #[arg(short = 'k', long = "keepalive")]
    pub keep_alive: bool,
    /// The request method
    #[arg(short = 'X', long = "method", default_value = "GET")]
    pub method: String,
    /// A request header, `Name: value` (repeatable)
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// Send at this constant rate (requests per second in all)
    #[arg(long, value_name = "R")]
    pub rate: Option<f64>,
    /// Event-loop threads [default: 1 on a machine of two cores or fewer, else half the cores]
    #[arg(long, value_name = "T")]
    pub threads: Option<usize>,
    /// Seconds to wait for an answer before a request counts as failed
    #[arg(short = 's', long = "timeout", value_name = "SECONDS", default_value_t = 30.0)]
    pub timeout: f64,
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,
    /// Write ab's percentage table (0..100 %, time in ms) as CSV to this file
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Compare the Apache configuration with its conversion, side by side
    #[arg(long, value_name = "CONFIG")]
    pub compare: Option<PathBuf>,
    /// The server to convert to (with --compare)
    #[arg(long, value_enum, default_value = "lighttpd")]
    pub target: Target,
    /// A path (or full URL) to load, with --compare (repeatable) [default: /]
    #[arg(long = "path", value_name = "P")]
    pub paths: Vec<String>,
    /// With --compare: only this site, by ServerName or ServerAlias (repeatable): the
    /// conversion holds only the sites named, and paths go to the first [default: all]
    #[arg(long = "vhost", value_name = "NAME", requires = "compare", conflicts_with = "all_vhosts")]
    pub vhosts: Vec<String>,
    /// Every site (the default; for scripts that say so)
    #[arg(long)]
    pub all_vhosts: bool,
    /// With --compare: the published grid, -n 100 / 1,000 / 10,000 x -c 5 / 50 / 100
    #[arg(long)]
    pub matrix: bool,
    /// With --compare: runs per server and path; the report gives the median and range
    /// [default: 3, or `repeat` under [bench] in the settings file]
    #[arg(long, value_name = "K")]
    pub repeat: Option<usize>,
    /// With --compare: seconds of warm-up load before each run [default: 1, or `warmup`
    /// under [bench] in the settings file]
    #[arg(long, value_name = "SECONDS")]
    pub warmup: Option<f64>,
    /// With --compare: where compare.md, compare.json and the charts go
    #[arg(long, value_name = "DIR", default_value = "lighten-compare")]
    pub out: PathBuf,
    /// With --compare: a hand-written lighttpd configuration to run in the same turns
    /// (an expert's translation, for reference). It is included after var.docroot (the
    /// loaded host's document root in the sandbox copy), var.port, var.rundir (a folder for
    /// its logs) and var.confdir (its own folder) are set
    #[arg(long, value_name = "CONF", requires = "compare")]
    pub reference: Option<PathBuf>,
    #[command(flatten)]
    pub load: LoadArgs,
}

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Where to write the conversion [default: a new folder under the temporary folder]
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Short benchmark runs, one each (a check that everything works, not a measurement)
    #[arg(long)]
    pub quick: bool,
}

/// Each question of the wizard has its flag here; a flag given is a question not asked.
#[derive(Args, Debug)]
pub struct WizardArgs {
    /// The Apache configuration: httpd.conf / apache2.conf, a Plesk vhosts root, or a
    /// document root [asked; --yes: the first one found]
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// A site to migrate, by ServerName or ServerAlias (repeatable) [asked; --yes: all]
    #[arg(long = "vhost", value_name = "NAME", conflicts_with = "all_vhosts")]
    pub vhosts: Vec<String>,
    /// Migrate every site
    #[arg(long)]
    pub all_vhosts: bool,
    /// The folder to write the lighttpd setup to [asked; --yes: `out` in the settings
    /// file, else lighten-out under --sysroot, else /etc/lighttpd/from-apache]
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Listen here instead of Apache's listeners: ADDR:PORT, or APACHEPORT=ADDR:PORT
    /// (repeatable; as convert's)
    #[arg(long, value_name = "[PORT=]ADDR:PORT")]
    pub listen: Vec<String>,
    /// Accept the default answer of every question no flag answers, and write
    #[arg(short = 'y', long)]
    pub yes: bool,
    /// After writing, run Apache and the conversion side by side and compare their answers
    /// [asked; --yes: verify]
    #[arg(long, overrides_with = "no_verify")]
    pub verify: bool,
    /// Do not verify
    #[arg(long, overrides_with = "verify")]
    pub no_verify: bool,
    /// After writing, a short benchmark of both servers [asked; --yes: no benchmark]
    #[arg(long, overrides_with = "no_bench")]
    pub bench: bool,
    /// Do not benchmark
    #[arg(long, overrides_with = "bench")]
    pub no_bench: bool,
    #[command(flatten)]
    pub load: LoadArgs,
}

#[derive(Args, Debug)]
pub struct DirectivesArgs {
    /// Only directives with this status
    #[arg(long, value_enum)]
    pub status: Option<StatusArg>,
    /// Only directives of this module (its source file name, e.g. mod_rewrite.c)
    #[arg(long)]
    pub module: Option<String>,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Copy, Clone, Debug, ValueEnum)]
pub enum StatusArg {
    Translated,
    Approximated,
    Ignored,
    Unsupported,
}

impl SiteArgs {
    fn given(&self) -> Given {
        Given {
            out: self.out.clone(),
            listen: self.listen.clone(),
            runtime_dir: self.runtime_dir.clone(),
            php_backend: self.php_backend.clone(),
            strict: self.strict,
            ..Given::default()
        }
    }
}

impl Command {
    /// What this command's flags say of the settings a settings file can also give.
    pub fn given(&self) -> Given {
        match self {
            Command::Convert(a) => a.site.given(),
            Command::Watch(a) => a.site.given(),
            Command::Batch(a) => Given {
                out: a.out.clone(),
                listen: a.listen.clone(),
                php_backend: a.php_backend.clone(),
                strict: a.strict,
                ..Given::default()
            },
            Command::Bench(a) => Given { repeat: a.repeat, warmup: a.warmup, ..Given::default() },
            Command::Wizard(a) => Given { out: a.out.clone(), listen: a.listen.clone(), ..Given::default() },
            Command::Inspect(_)
            | Command::Explain(_)
            | Command::Directives(_)
            | Command::Completions(_)
            | Command::Man(_)
            | Command::Diff(_)
            | Command::Verify(_)
            | Command::Demo(_) => Given::default(),
        }
    }
}
