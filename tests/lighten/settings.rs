//! The settings file supplies defaults that flags override; a bad one is an error with
//! file, line and column. Completions and man pages come from the clap definitions.

use crate::helpers::lighten;

const SITE: [&str; 5] =
    ["--sysroot", "fixtures/wordpress", "--server-name", "example.test", "fixtures/wordpress/var/www/html"];

#[test]
fn settings_give_defaults_and_flags_win() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("from-settings");
    let file = dir.path().join("lighten.toml");
    std::fs::write(
        &file,
        format!("out = {:?}\nphp_backend = \"unix:/run/php/test.sock\"\n", out.display().to_string()),
    )
    .unwrap();
    let f = file.to_string_lossy().into_owned();
    let mut args = vec!["--settings", &f, "convert"];
    args.extend(SITE);
    let r = lighten(&args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // The socket is not there: said, with the Apache line that asks for PHP.
    assert!(
        r.stderr.contains(
            "warning: <lighten:docroot-defaults>:80: PHP FastCGI socket /run/php/test.sock does not exist"
        ),
        "{}",
        r.stderr
    );
    let conf = std::fs::read_to_string(out.join("lighttpd.conf")).expect("written where the settings say");
    assert!(conf.contains("\"socket\" => \"/run/php/test.sock\""), "the settings' PHP backend:\n{conf}");

    // A flag wins over the file.
    let other = dir.path().join("from-flag");
    let o = other.to_string_lossy().into_owned();
    let mut args = vec!["--settings", &f, "convert", "--out", &o, "--php-backend", "127.0.0.1:9001"];
    args.extend(SITE);
    assert_eq!(lighten(&args).code, 0);
    let conf = std::fs::read_to_string(other.join("lighttpd.conf")).unwrap();
    assert!(conf.contains("\"host\" => \"127.0.0.1\", \"port\" => 9001"), "{conf}");

    // approximations = "refuse" is --strict: WordPress converts exactly (log formats are
    // notes), so it is written; magento2 approximates, so nothing is written, exit 2.
    std::fs::write(&file, "approximations = \"refuse\"\n").unwrap();
    let strict = dir.path().join("strict");
    let s = strict.to_string_lossy().into_owned();
    let mut args = vec!["--settings", &f, "convert", "--out", &s];
    args.extend(SITE);
    let r = lighten(&args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(strict.join("lighttpd.conf").is_file());
    let refused = dir.path().join("refused");
    let s = refused.to_string_lossy().into_owned();
    let r = lighten(&[
        "--settings",
        &f,
        "convert",
        "--out",
        &s,
        "--sysroot",
        "fixtures/magento2",
        "fixtures/magento2/var/www/html",
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(!refused.exists());

    // Without --out anywhere: a clear error.
    std::fs::write(&file, "").unwrap();
    let mut args = vec!["--settings", &f, "convert"];
    args.extend(SITE);
    let r = lighten(&args);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--out is needed"), "{}", r.stderr);
}

#[test]
fn a_bad_settings_file_names_the_place() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lighten.toml");
    std::fs::write(&file, "target = \"lighttpd\"\napproximations = \"sometimes\"\n").unwrap();
    let f = file.to_string_lossy().into_owned();
    let r = lighten(&["--settings", &f, "directives"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains(&format!("{f}:2:18: unknown variant `sometimes`")), "{}", r.stderr);
    let r = lighten(&["--settings", "/nonexistent/lighten.toml", "directives"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("/nonexistent/lighten.toml"), "{}", r.stderr);
}

#[test]
fn completions_and_man_pages_are_generated() {
    for shell in ["bash", "zsh", "fish"] {
        let r = lighten(&["completions", shell]);
        assert_eq!(r.code, 0, "{shell}: {}", r.stderr);
        assert!(r.stdout.contains("lighten") && r.stdout.contains("convert"), "{shell}");
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_string_lossy().into_owned();
    let r = lighten(&["man", "--out", &d]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for page in ["lighten.1", "lighten-convert.1", "lighten-bench.1", "lighten-verify.1"] {
        let text = std::fs::read_to_string(dir.path().join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(text.starts_with(".ie") || text.contains(".TH"), "{page} is not a man page");
    }
    let convert = std::fs::read_to_string(dir.path().join("lighten-convert.1")).unwrap();
    assert!(convert.contains("dry\\-run"), "the page lists the flags");
}
