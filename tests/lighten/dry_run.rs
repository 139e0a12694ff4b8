//! `convert --dry-run` and `lighten diff`: a dry run writes nothing (every byte of the
//! output folder the same before and after) and shows what a real run would change; a
//! real run keeps what it replaces; `diff` compares two outputs with diff's statuses.

use crate::helpers::lighten;
use std::collections::BTreeMap;
use std::path::Path;

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            (e.path().strip_prefix(dir).unwrap().display().to_string(), std::fs::read(e.path()).unwrap())
        })
        .collect()
}

fn convert(out: &Path, extra: &[&str]) -> crate::helpers::Output {
    let out = out.to_string_lossy().into_owned();
    let mut args = vec![
        "convert",
        "--sysroot",
        "fixtures/wordpress",
        "--server-name",
        "example.test",
        "fixtures/wordpress/var/www/html",
        "--out",
        &out,
    ];
    args.extend(extra);
    lighten(&args)
}

#[test]
fn a_dry_run_writes_nothing_and_shows_the_change() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // Into a folder that does not exist yet: nothing is created.
    let r = convert(&out, &["--dry-run"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(!out.exists(), "a dry run created the folder");
    assert!(r.stdout.contains("+++ b/lighttpd.conf") && r.stdout.contains("added"), "{}", r.stdout);

    assert_eq!(convert(&out, &[]).code, 0, "the converted site answers like Apache: exit 0");
    let conf = out.join("lighttpd.conf");
    let edited = std::fs::read_to_string(&conf).unwrap() + "# an admin's local edit\n";
    std::fs::write(&conf, &edited).unwrap();
    std::fs::write(out.join("notes.txt"), "mine\n").unwrap();
    let before = snapshot(&out);
    let r = convert(&out, &["--dry-run"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(snapshot(&out), before, "the dry run changed the output folder");
    assert!(r.stdout.contains("-# an admin's local edit"), "{}", r.stdout);
    let last = r.stdout.lines().last().unwrap();
    assert!(last.starts_with("dry run, nothing written to") && last.contains("1 changed"), "{last}");

    // The real run replaces the edited file and keeps the edit as a backup; files it
    // does not write are left alone.
    let r = convert(&out, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("replaced 1 file(s)"), "{}", r.stdout);
    assert_eq!(std::fs::read_to_string(out.join("lighttpd.conf.lighten-bak")).unwrap(), edited);
    assert_eq!(std::fs::read_to_string(out.join("notes.txt")).unwrap(), "mine\n");
    let r = convert(&out, &["--dry-run"]);
    assert_eq!(r.code, 0, "nothing would change now: {}", r.stdout);
}

#[test]
fn diff_compares_two_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    assert_eq!(convert(&a, &[]).code, 0);
    assert_eq!(convert(&b, &[]).code, 0);
    let (sa, sb) = (a.to_string_lossy().into_owned(), b.to_string_lossy().into_owned());
    // Each output names its own folder in absolute paths: the same except for that.
    let r = lighten(&["diff", &sa, &sa]);
    assert_eq!((r.code, r.stdout.trim_end().ends_with("the same (+0 -0 lines)")), (0, true), "{}", r.stdout);
    let r = lighten(&["diff", &sa, &sb, "--stat"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert_eq!(r.stdout.lines().count(), 1, "--stat: the summary only: {}", r.stdout);
    let r = lighten(&["diff", &sa, "/nonexistent/folder"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("/nonexistent/folder: not a folder"), "{}", r.stderr);
}
