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

/// batch reads the same settings file as convert: `out`, `listen`, `php_backend` and
/// `approximations = "refuse"` (each account that does not translate exactly fails and is
/// left out), and a flag still wins.
#[test]
fn batch_takes_its_defaults_from_the_settings_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("from-settings");
    let file = dir.path().join("lighten.toml");
    std::fs::write(
        &file,
        format!(
            "out = {:?}\nlisten = [\"127.0.0.1:18480\"]\nphp_backend = \"127.0.0.1:9001\"\n",
            out.display().to_string()
        ),
    )
    .unwrap();
    let f = file.to_string_lossy().into_owned();
    let batch = ["batch", "--sysroot", "fixtures/plesk", "fixtures/plesk/var/www/vhosts"];
    let mut args = vec!["--settings", &f];
    args.extend(batch);
    let r = lighten(&args);
    assert_eq!(r.code, 1, "approximated accounts, written: {}", r.stderr);
    let conf =
        std::fs::read_to_string(out.join("combined/lighttpd.conf")).expect("written where the settings say");
    assert!(conf.contains("$SERVER[\"socket\"] == \"127.0.0.1:18480\""), "the settings' listener:\n{conf}");
    assert!(!conf.contains("0.0.0.0:80"), "Apache's listener replaced:\n{conf}");
    assert!(
        conf.contains("\"host\" => \"127.0.0.1\", \"port\" => 9001"),
        "the settings' PHP backend:\n{conf}"
    );
    assert!(!conf.contains("php-fpm.sock"), "every account's PHP goes to the backend named:\n{conf}");

    // A flag wins over the file.
    let mut args = vec!["--settings", &f];
    args.extend(batch);
    args.extend(["--php-backend", "127.0.0.1:9002"]);
    lighten(&args);
    let conf = std::fs::read_to_string(out.join("combined/lighttpd.conf")).unwrap();
    assert!(conf.contains("\"port\" => 9002"), "{conf}");

    // approximations = "refuse": every Plesk account here approximates (Options
    // SymLinksIfOwnerMatch at least), so each fails with the first such line and nothing of
    // it is written.
    let refused = dir.path().join("refused");
    std::fs::write(
        &file,
        format!("out = {:?}\napproximations = \"refuse\"\n", refused.display().to_string()),
    )
    .unwrap();
    let mut args = vec!["--settings", &f];
    args.extend(batch);
    let r = lighten(&args);
    assert_eq!(r.code, 2, "{}", r.stderr);
    for d in ["blog.example", "shop.example", "static.example"] {
        assert!(
            r.stderr.contains(&format!("lighten: {d} failed: ")) && r.stderr.contains("--strict: "),
            "{}",
            r.stderr
        );
        assert!(!refused.join(d).exists(), "{d} written");
    }
    let summary = std::fs::read_to_string(refused.join("batch-summary.md")).unwrap();
    assert!(summary.contains("--strict"), "{summary}");
    assert!(!refused.join("lighttpd.conf").exists());
}
