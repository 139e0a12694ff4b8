//! `lighten wizard` as an admin meets it: in a pseudo-terminal, answering its prompts
//! (expectrl), and scripted with flags, without a terminal.

use crate::helpers::lighten;
use expectrl::process::unix::WaitStatus;
use expectrl::session::OsSession as Session;
use expectrl::{Eof, Expect};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Whether verify can run here (the wizard only offers it then).
fn have_servers() -> bool {
    let on_path = |name: &str| {
        std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
    };
    on_path("apache2") && on_path("lighttpd")
}

/// The wizard in a terminal of 200 x 60, colours off.
fn spawn(args: &[&str]) -> Session {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lighten"));
    cmd.args(["--color", "never", "wizard"]).args(args);
    cmd.current_dir(env!("CARGO_MANIFEST_DIR")).env("TERM", "xterm").env_remove("NO_COLOR");
    let mut s = Session::spawn(cmd).expect("the wizard starts in a pty");
    s.get_process_mut().set_window_size(200, 60).expect("window size");
    s.set_expect_timeout(Some(Duration::from_secs(90)));
    s
}

/// What the terminal showed, escape sequences (cursor moves, clearing) removed.
fn plain(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            if chars.peek() == Some(&'[') {
                chars.next();
                // Parameters, then one final letter.
                for d in chars.by_ref() {
                    if d.is_ascii_alphabetic() || d == '~' {
                        break;
                    }
                }
            }
            continue;
        }
        if c != '\r' {
            out.push(c);
        }
    }
    out
}

/// Waits for `prompt` and answers `keys`; keeps what the terminal showed.
fn answer(s: &mut Session, shown: &mut Vec<u8>, prompt: &str, keys: &str) {
    match s.expect(prompt) {
        Ok(c) => shown.extend_from_slice(c.as_bytes()),
        Err(e) => panic!("waiting for {prompt:?}: {e}\n--- shown so far:\n{}", plain(shown)),
    }
    s.send(keys).expect("keys sent");
}

fn exit_code(s: &Session) -> i32 {
    match s.get_process().wait().expect("the wizard ends") {
        WaitStatus::Exited(_, code) => code,
        other => panic!("the wizard did not exit: {other:?}"),
    }
}

#[test]
fn wizard_in_a_terminal_migrates_the_sites_picked() {
    let out = tempfile::tempdir().unwrap();
    let out_dir = out.path().join("lighttpd");
    let verify = have_servers();
    let mut s = spawn(&["--sysroot", "fixtures/plesk"]);
    let mut shown = Vec::new();
    // 1. the Plesk root found under the sysroot, first in the list
    answer(&mut s, &mut shown, "Which configuration?", "\r");
    // 2. every site ticked: untick all, then tick blog.example (4th) and static.example (6th)
    answer(&mut s, &mut shown, "Which sites to migrate?", "ajjj jj \r");
    answer(
        &mut s,
        &mut shown,
        "Where should the lighttpd setup be written?",
        &format!("{}\r", out_dir.display()),
    );
    // 3-4. what cannot be carried over, the preview, then writing
    answer(&mut s, &mut shown, "Write these", "y");
    if verify {
        // 5. verify (a second on this fixture), no benchmark
        answer(&mut s, &mut shown, "After writing, verify", "y");
        answer(&mut s, &mut shown, "short benchmark", "n");
    }
    match s.expect(Eof) {
        Ok(c) => shown.extend_from_slice(c.as_bytes()),
        Err(e) => panic!("waiting for the end: {e}\n--- shown so far:\n{}", plain(&shown)),
    }
    let code = exit_code(&s);
    let text = plain(&shown);
    // The transcript, for `cargo test wizard -- --nocapture`.
    println!("{text}");
    assert_eq!(code, 1, "the fixture has approximations (exit 1)\n{text}");

    assert!(
        text.contains("Plesk vhosts root: /var/www/vhosts (blog.example, shop.example, static.example)"),
        "{text}"
    );
    assert!(text.contains("migrating 2 of 6: blog.example, static.example"), "{text}");
    assert!(text.contains("unsupported: left out, and the site fails closed"), "{text}");
    assert!(text.contains("plesk.conf.d/vhosts/blog.example.conf:27  RewriteRule"), "{text}");
    assert!(text.contains("new      lighttpd.conf"), "{text}");
    let conf = std::fs::read_to_string(out_dir.join("lighttpd.conf")).expect("lighttpd.conf written");
    assert!(conf.contains("blog\\.example") && conf.contains("static\\.example"), "{conf}");
    assert!(!conf.contains("shop\\.example"), "shop.example was not picked:\n{conf}");
    // Both sites picked compile (no interpreter in the output).
    assert!(!out_dir.join("lua/lighten.lua").exists(), "lua/lighten.lua written for compiled sites");
    for f in
        ["report.md", "report.json", "lua/lighten_core.lua", "lua/blog_example.lua", "lua/static_example.lua"]
    {
        assert!(out_dir.join(f).is_file(), "{f} missing");
    }
    if verify {
        assert!(text.contains("lighten verify: "), "{text}");
        assert!(text.contains("0 fail-open"), "{text}");
        assert!(out_dir.join("verify.txt").is_file());
    } else {
        assert!(text.contains("verify: skipped, they need apache2 and lighttpd"), "{text}");
    }
    assert!(text.contains("benchmark: skipped"), "{text}");
    // 6. the commands, printed
    let conf_path = out_dir.join("lighttpd.conf");
    for line in [
        format!("lighttpd -tt -f {}", conf_path.display()),
        format!("ExecStart=/usr/sbin/lighttpd -D -f {}", conf_path.display()),
        "systemctl stop apache2 && { systemctl start lighttpd || systemctl start apache2; }".to_string(),
        "Rolling back:".to_string(),
        "systemctl stop lighttpd && systemctl start apache2".to_string(),
        "rm /etc/systemd/system/lighttpd.service.d/lighten.conf && systemctl daemon-reload".to_string(),
        "2 of the 6 sites are in this setup".to_string(),
    ] {
        assert!(text.contains(&line), "missing {line:?} in\n{text}");
    }
}

#[test]
fn wizard_cancelled_at_a_question_writes_nothing() {
    let mut s = spawn(&["--sysroot", "fixtures/plesk"]);
    let mut shown = Vec::new();
    answer(&mut s, &mut shown, "Which configuration?", "q");
    let end = s.expect(Eof).expect("the wizard ends");
    shown.extend_from_slice(end.as_bytes());
    assert_eq!(exit_code(&s), 130);
    assert!(plain(&shown).contains("cancelled; nothing written"), "{}", plain(&shown));
}

/// Ctrl-C at a prompt: the wizard ends with 130 and leaves the cursor visible (dialoguer
/// hides it while a prompt is open).
#[test]
fn wizard_interrupted_at_a_question_restores_the_terminal() {
    let mut s = spawn(&["--sysroot", "fixtures/plesk"]);
    let mut shown = Vec::new();
    answer(&mut s, &mut shown, "Which configuration?", "\x03");
    let end = s.expect(Eof).expect("the wizard ends");
    shown.extend_from_slice(end.as_bytes());
    assert_eq!(exit_code(&s), 130);
    let text = String::from_utf8_lossy(&shown);
    let hidden = text.rfind("\x1b[?25l").expect("the prompt hid the cursor");
    assert!(text[hidden..].contains("\x1b[?25h"), "the cursor stays hidden:\n{text:?}");
    // Read by the prompt in raw mode (a cancel), or a SIGINT before the prompt reads.
    let said = plain(&shown);
    assert!(said.contains("cancelled; nothing written") || said.contains("lighten: interrupted"), "{said}");
}

#[test]
fn wizard_without_a_terminal_names_the_flags_it_needs() {
    let r = lighten(&["wizard", "--sysroot", "fixtures/plesk"]);
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(r.stdout.is_empty(), "nothing done: {}", r.stdout);
    for flag in ["--config PATH", "--vhost NAME (repeatable) or --all-vhosts", "--out DIR", "--yes"] {
        assert!(r.stderr.contains(flag), "{flag} not named:\n{}", r.stderr);
    }
    assert!(r.stderr.contains("configurations found: fixtures/plesk/var/www/vhosts"), "{}", r.stderr);

    // Flags answer some questions: only the others are named.
    let r = lighten(&[
        "wizard",
        "--sysroot",
        "fixtures/plesk",
        "--all-vhosts",
        "--out",
        "x",
        "--no-verify",
        "--no-bench",
    ]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--config PATH") && r.stderr.contains("--yes"), "{}", r.stderr);
    assert!(!r.stderr.contains("--out DIR") && !r.stderr.contains("--all-vhosts"), "{}", r.stderr);
}

#[test]
fn wizard_scripted_with_flags_completes_without_a_terminal() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().to_string_lossy().into_owned();
    let args =
        ["wizard", "--sysroot", "fixtures/plesk", "--yes", "--vhost", "www.shop.example", "--out", &dir];
    let r = lighten(&[&args[..], &["--no-verify", "--no-bench"]].concat());
    assert_eq!(r.code, 1, "{}", r.transcript());
    assert!(r.stdout.contains("(--yes: the first found)"), "{}", r.stdout);
    assert!(r.stdout.contains("migrating 1 of 6: shop.example"), "{}", r.stdout);
    // report.md's verdict for the one site picked, in its words
    assert!(
        r.stdout.contains("   shop.example: needs you (10 line(s) cannot be carried over"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("blog.example: needs you"), "{}", r.stdout);
    assert!(r.stdout.contains("verify: skipped (later: lighten verify"), "{}", r.stdout);
    assert!(r.stdout.contains(&format!("lighttpd -tt -f {dir}/lighttpd.conf")), "{}", r.stdout);
    // What it says to run later runs as printed, for the site picked only.
    let later: Vec<Vec<String>> = r
        .stdout
        .lines()
        .filter_map(|l| l.split_once("(later: ")?.1.strip_suffix(')'))
        .map(|c| c.split(' ').map(String::from).collect())
        .collect();
    assert_eq!(later.len(), 2, "{}", r.stdout);
    for words in &later {
        lighten::cli::check_args(words).unwrap_or_else(|e| panic!("{}: {e}", words.join(" ")));
        assert!(words.join(" ").ends_with("/var/www/vhosts --vhost shop.example"), "{words:?}");
    }
    if have_servers() {
        let words: Vec<&str> = later[0][1..].iter().map(String::as_str).collect();
        assert_eq!(words[0], "verify");
        let v = lighten(&words);
        assert!(v.code <= 1, "{}", v.transcript());
        assert!(v.stdout.contains("0 fail-open") && !v.stdout.contains("blog.example"), "{}", v.stdout);
    }
    let conf = std::fs::read_to_string(Path::new(&dir).join("lighttpd.conf")).unwrap();
    // The one site left answers on its addresses whatever the Host: no host conditions.
    assert!(conf.contains("vhosts/shop.example/httpdocs") && !conf.contains("blog.example"), "{conf}");

    // The same again: nothing changes, and nothing is kept as a backup.
    let r = lighten(&[&args[..], &["--no-verify", "--no-bench"]].concat());
    assert_eq!(r.code, 1, "{}", r.transcript());
    assert!(
        r.stdout.contains("(+0 -0 lines)") && r.stdout.contains("this run replaced no earlier file"),
        "{}",
        r.stdout
    );

    // A name no site has is refused before anything is written.
    let r = lighten(&[
        "wizard",
        "--sysroot",
        "fixtures/plesk",
        "--yes",
        "--vhost",
        "nope.example",
        "--out",
        &dir,
    ]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--vhost nope.example: no site has this name or alias"), "{}", r.stderr);
}
