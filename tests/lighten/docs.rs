//! Every `lighten` command in README.md and docs/*.md is one lighten takes, and each one
//! that can run here runs: a server path is read from the fixture that has it (`--sysroot`
//! and the path as on the server, the one path rule), every `--out` goes to a temporary
//! folder. What cannot run here (a load on a server of one's own, the wizard at a terminal,
//! a watch that runs until stopped) is still parsed, and the test says why it did not run.

use crate::helpers::{lighten, servers_present};
use std::path::Path;

/// A documented command: where it is written, and its words (shell quoting undone, a
/// comment or redirection after it dropped).
struct Doc {
    at: String,
    words: Vec<String>,
}

/// The server paths the documentation uses, and the fixture that holds each.
const SERVER_PATHS: &[(&str, &str)] = &[
    ("/etc/apache2/apache2.conf", "fixtures/debian-stock"),
    ("/var/www/vhosts", "fixtures/plesk"),
    ("/var/www/html", "fixtures/debian-stock"),
];

/// A copy of a server, as the documentation names one: a fixture here.
const COPY: (&str, &str) = ("./copy", "fixtures/debian-stock");

/// Flags whose value is a file that must be there for the command to run.
const FILE_FLAGS: &[&str] = &["--requests", "--from-log", "--server-config", "--settings"];

fn documents() -> Vec<String> {
    let mut files = vec!["README.md".to_string()];
    let mut docs: Vec<String> = std::fs::read_dir("docs")
        .expect("docs/")
        .filter_map(|e| e.ok())
        .map(|e| format!("docs/{}", e.file_name().to_string_lossy()))
        .filter(|f| f.ends_with(".md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// The commands of fenced `sh` blocks (a line that starts with `lighten`, continuation
/// lines joined) and of `text` blocks (a `$ lighten` line: a transcript).
fn commands() -> Vec<Doc> {
    let mut out = Vec::new();
    for file in documents() {
        let text = std::fs::read_to_string(&file).unwrap();
        let mut fence: Option<String> = None;
        let mut pending: Option<(usize, String)> = None;
        for (i, line) in text.lines().enumerate() {
            let t = line.trim_start();
            if let Some(lang) = t.strip_prefix("```") {
                fence = if fence.is_some() { None } else { Some(lang.trim().to_string()) };
                continue;
            }
            let Some(lang) = &fence else { continue };
            let (start, joined) = match pending.take() {
                Some((n, head)) => (n, format!("{head} {t}")),
                None => (i + 1, t.to_string()),
            };
            if let Some(head) = joined.strip_suffix('\\') {
                pending = Some((start, head.trim_end().to_string()));
                continue;
            }
            let cmd = match lang.as_str() {
                "sh" | "bash" | "shell" | "console" => joined.strip_prefix("$ ").unwrap_or(&joined),
                "text" => match joined.strip_prefix("$ ") {
                    Some(c) => c,
                    None => continue,
                },
                _ => continue,
            };
            if cmd.starts_with("lighten ") {
                out.push(Doc { at: format!("{file}:{start}"), words: words(cmd) });
            }
        }
    }
    out
}

/// The examples of each command's `--help` (what lighten prints is documentation too).
fn help_examples() -> Vec<Doc> {
    const COMMANDS: &[&str] = &[
        "inspect",
        "explain",
        "convert",
        "watch",
        "batch",
        "diff",
        "verify",
        "bench",
        "demo",
        "wizard",
        "completions",
        "man",
        "directives",
    ];
    let mut out = Vec::new();
    for sub in COMMANDS {
        let help = lighten(&[sub, "--help"]).stdout;
        let Some((_, examples)) = help.split_once("Examples:\n") else { continue };
        let mut joined = String::new();
        for line in examples.lines().take_while(|l| l.starts_with("  ") || l.is_empty()) {
            let t = line.trim();
            if let Some(head) = t.strip_suffix('\\') {
                joined.push_str(head);
                continue;
            }
            joined.push_str(t);
            if joined.starts_with("lighten ") {
                out.push(Doc { at: format!("lighten {sub} --help"), words: words(&joined) });
            }
            joined.clear();
        }
    }
    out
}

/// Shell words of `line` up to a comment or an operator (`>`, `|`, `&&`, `;`).
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut has = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                has = true;
                for d in chars.by_ref() {
                    if d == '\'' {
                        break;
                    }
                    cur.push(d);
                }
            }
            '"' => {
                has = true;
                while let Some(d) = chars.next() {
                    match d {
                        '"' => break,
                        '\\' => cur.extend(chars.next()),
                        d => cur.push(d),
                    }
                }
            }
            c if c.is_whitespace() => {
                if has {
                    out.push(std::mem::take(&mut cur));
                    has = false;
                }
            }
            '#' | '>' | '|' | ';' | '&' if !has => break,
            c => {
                has = true;
                cur.push(c);
            }
        }
    }
    if has {
        out.push(cur);
    }
    out
}

/// A usage synopsis (`lighten batch ROOT --out DIR [--jobs N]...`): its flags, bare.
fn synopsis_flags(words: &[String]) -> Option<Vec<String>> {
    if !words.iter().any(|w| w.starts_with('[')) {
        return None;
    }
    let flags = words
        .iter()
        .map(|w| w.trim_start_matches('[').trim_end_matches("...").trim_end_matches(']'))
        .filter(|w| w.starts_with("--"))
        .map(|w| w.split(['=', ']']).next().unwrap().to_string())
        .collect();
    Some(flags)
}

/// The fixture a copy's path (`./copy/var/www/vhosts`) is read from.
fn copy_fixture(rest: &str) -> &'static str {
    SERVER_PATHS.iter().find(|(p, _)| rest.starts_with(p)).map(|(_, f)| *f).unwrap_or(COPY.1)
}

/// The fixture whose tree holds the command's server paths, if any.
fn fixture_of(words: &[String]) -> Option<&'static str> {
    words.iter().find_map(|w| {
        SERVER_PATHS
            .iter()
            .find(|(p, _)| w == p)
            .map(|(_, f)| *f)
            .or_else(|| w.strip_prefix(COPY.0).filter(|r| r.starts_with('/')).map(copy_fixture))
    })
}

/// A word as it is read here: `./copy` is the fixture.
fn here(word: &str, fixture: Option<&str>) -> String {
    match (word.strip_prefix(COPY.0), fixture) {
        (Some(rest), Some(f)) => format!("{f}{rest}"),
        _ => word.to_string(),
    }
}

/// Why `words` cannot run here, or None. `fixture` is the sysroot its server paths are
/// read from.
fn not_here(words: &[String], fixture: Option<&str>) -> Option<String> {
    let sub = words[1].as_str();
    match sub {
        "bench" => return Some("a load on a server of one's own (bench.rs runs lighten bench)".into()),
        "wizard" if !words.iter().any(|w| w == "--yes") => {
            return Some("asks at a terminal (wizard.rs runs it in a pseudo-terminal)".into());
        }
        "wizard" | "verify" if !servers_present() => return Some("apache2 or lighttpd missing".into()),
        "diff" => return Some("compares two earlier outputs (dry_run.rs runs lighten diff)".into()),
        "watch" if !words.iter().any(|w| w == "--once") => {
            return Some("runs until stopped (`--once` runs here; watch.rs runs watch)".into());
        }
        _ => {}
    }
    // Every file or folder it names must be here: a server path in the fixture, a copy's
    // path in the fixture, a relative one in the repository (an --out folder is made).
    for i in 2..words.len() {
        let (w, before) = (&words[i], words[i - 1].as_str());
        if before == "--out" || w.starts_with('-') {
            continue;
        }
        let file_flag = FILE_FLAGS.contains(&before);
        if w.starts_with('/') {
            let server = SERVER_PATHS.iter().any(|(p, _)| w.starts_with(p)) || file_flag;
            match fixture {
                _ if !server && fixture.is_some() => {}
                Some(f) if Path::new(f).join(w.trim_start_matches('/')).exists() => {}
                _ if !server && words.iter().any(|x| x == "--sysroot") => {}
                _ => return Some(format!("no fixture holds {w}")),
            }
        } else if (file_flag || w.contains('/'))
            && !w.contains("://")
            && !w.contains(['=', ':'])
            && !w.chars().all(|c| c.is_ascii_digit() || c == '/')
            && !Path::new(&here(w, fixture)).exists()
        {
            return Some(format!("no fixture holds {w}"));
        }
    }
    None
}

/// The command as it runs here: the fixture as `--sysroot` (server paths stay as
/// written), `./copy` the fixture, each `--out` in `tmp`.
fn runnable(words: &[String], fixture: Option<&str>, tmp: &Path, n: usize) -> Vec<String> {
    let mut out = vec![words[1].clone()];
    if let Some(f) = fixture
        && !words.iter().any(|w| w == "--sysroot")
    {
        out.extend(["--sysroot".to_string(), f.to_string()]);
    }
    let mut i = 2;
    while i < words.len() {
        out.push(here(&words[i], fixture));
        if words[i] == "--out" && i + 1 < words.len() {
            out.push(tmp.join(format!("out{n}")).to_string_lossy().into_owned());
            i += 1;
        }
        i += 1;
    }
    out
}

#[test]
fn every_documented_command_is_one_lighten_takes_and_runs_here_where_it_can() {
    let mut docs = commands();
    let n_docs = docs.len();
    assert!(n_docs >= 40, "only {n_docs} commands found in README.md and docs/: is the extraction broken?");
    docs.extend(help_examples());
    assert!(docs.len() >= n_docs + 15, "only {} --help examples found", docs.len() - n_docs);
    let tmp = tempfile::tempdir().unwrap();
    let mut problems = Vec::new();
    let (mut ran, mut parsed) = (0, Vec::new());
    for (n, doc) in docs.iter().enumerate() {
        let w = &doc.words;
        if let Some(flags) = synopsis_flags(w) {
            let help = lighten(&[w[1].as_str(), "--help"]);
            for f in flags {
                if !help.stdout.contains(&format!("{f} ")) && !help.stdout.contains(&format!("{f}\n")) {
                    problems.push(format!("{}: `lighten {}` has no flag {f}", doc.at, w[1]));
                }
            }
            continue;
        }
        if let Err(e) = lighten::cli::check_args(w) {
            problems.push(format!("{}: {} does not parse: {e}", doc.at, w.join(" ")));
            continue;
        }
        let fixture = fixture_of(w);
        if let Some(why) = not_here(w, fixture) {
            parsed.push(format!("{}: {} (parsed only: {why})", doc.at, w.join(" ")));
            continue;
        }
        let args = runnable(w, fixture, tmp.path(), n);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = lighten(&args);
        ran += 1;
        // 0, or 1: something approximated, an .htaccess Apache answers 500 for, answers
        // that differ; never 2 (failed) or 3 (a fail-open), but for --strict's documented
        // refusal of an inexact conversion
        let refused =
            w.iter().any(|x| x == "--strict") && out.code == 2 && out.stderr.contains("nothing written");
        if !(out.code == 0 || out.code == 1 || refused) || out.stderr.contains("panicked") {
            problems.push(format!(
                "{}: lighten {} exited {}: {}",
                doc.at,
                args.join(" "),
                out.code,
                out.stderr.lines().rev().take(5).collect::<Vec<_>>().join(" / ")
            ));
        }
    }
    for p in &parsed {
        eprintln!("{p}");
    }
    eprintln!("{} documented commands: {ran} ran, {} parsed only", docs.len(), parsed.len());
    assert!(problems.is_empty(), "documented commands that do not work:\n{}", problems.join("\n"));
    assert!(ran >= 20, "only {ran} documented commands ran here");
}

#[test]
fn the_shell_words_of_a_documented_line() {
    assert_eq!(
        words(r#"lighten explain 'http://x/?a=1' -H "Cookie: a b"   # why"#),
        ["lighten", "explain", "http://x/?a=1", "-H", "Cookie: a b"]
    );
    assert_eq!(
        words("lighten bench --json http://h/ > run.json"),
        ["lighten", "bench", "--json", "http://h/"]
    );
    assert_eq!(
        synopsis_flags(&words("lighten batch ROOT --out DIR [--jobs N] [--listen [PORT=]ADDR:PORT]...")),
        Some(vec!["--out".to_string(), "--jobs".to_string(), "--listen".to_string()])
    );
}

/// docs/batch.md's first playbook, as written, with this machine as the one web server
/// and the Plesk fixture as its accounts (`--sysroot`, through the playbook's
/// `lighten_flags`); the install task (a .deb from the admin's mirror) is skipped by its
/// tag. Every task must run: the batch (exit 2: an account broken here stays on Apache),
/// the list of those accounts, and `lighttpd -tt` of the combined configuration.
#[test]
fn the_ansible_playbook_runs_as_written() {
    if !servers_present() {
        return;
    }
    if std::process::Command::new("ansible-playbook").arg("--version").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "ansible-core must be installed (scripts/setup.sh)");
        return;
    }
    let text = std::fs::read_to_string("docs/batch.md").unwrap();
    let start = text.find("```yaml\n").expect("a yaml block in docs/batch.md") + "```yaml\n".len();
    let playbook = &text[start..start + text[start..].find("```").unwrap()];
    assert!(playbook.contains("tags: install"), "{playbook}");
    // (open_copy puts the lighten binary beside the copy: the playbook finds it on PATH)
    let (tmp, site) = crate::helpers::open_copy("plesk");
    std::fs::write(tmp.path().join("lighten.yml"), playbook).unwrap();
    std::fs::write(
        tmp.path().join("inventory"),
        "[webservers]\nlocalhost ansible_connection=local ansible_python_interpreter=/usr/bin/python3\n",
    )
    .unwrap();
    // One account Apache would refuse to start with (a section never closed): it stays
    // on Apache, and the playbook lists it.
    let broken = site.join("var/www/vhosts/system/static.example/conf/vhost.conf");
    let text = std::fs::read_to_string(&broken).unwrap_or_default();
    std::fs::write(&broken, text + "\n<Directory /nowhere>\n").unwrap();
    let out = tmp.path().join("out");
    // (the playbook's become: root already, or the test's own user: no sudo asked)
    let vars = serde_json::json!({
        "vhosts": site.join("var/www/vhosts"),
        "out": out,
        "lighten_flags": ["--sysroot", site],
        "ansible_become": false,
    });
    let path = format!("{}:{}", tmp.path().display(), std::env::var("PATH").unwrap_or_default());
    let run = std::process::Command::new("ansible-playbook")
        .args(["-i", "inventory", "lighten.yml", "--skip-tags", "install", "-e"])
        .arg(vars.to_string())
        .current_dir(tmp.path())
        .env("PATH", path)
        .env("ANSIBLE_NOCOLOR", "1")
        .env("ANSIBLE_LOCAL_TEMP", tmp.path().join("ansible-tmp"))
        .env("ANSIBLE_HOME", tmp.path().join("ansible-home"))
        .output()
        .unwrap();
    let log = format!("{}{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    assert!(run.status.success(), "{log}");
    assert!(log.contains("ok=4") && log.contains("failed=0") && log.contains("skipped=0"), "{log}");
    // The account that stays on Apache is named; the combined configuration is there.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("batch-summary.json")).unwrap()).unwrap();
    let stays: Vec<&str> = summary["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["status"] == "failed")
        .map(|a| a["domain"].as_str().unwrap())
        .collect();
    assert_eq!(stays, ["static.example"], "{summary}");
    let listed =
        log.split("TASK [Accounts that stay on Apache").nth(1).and_then(|t| t.split("TASK [").next());
    assert!(listed.is_some_and(|t| t.contains("\"static.example\"")), "not listed by the playbook:\n{log}");
    assert!(out.join("lighttpd.conf").exists());
}
