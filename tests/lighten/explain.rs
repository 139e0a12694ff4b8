//! `lighten explain` on the WP Super Cache site: the rule chain and outcome for the cases
//! an admin asks about, against reviewed snapshots.

use crate::helpers::lighten;

fn explain(extra: &[&str]) -> String {
    let mut args = vec![
        "explain",
        "--sysroot",
        "fixtures/wp-super-cache",
        "--server-name",
        "example.test",
        "fixtures/wp-super-cache/var/www/html",
    ];
    args.extend_from_slice(extra);
    let out = lighten(&args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.stdout
}

#[test]
fn cached_homepage_with_gzip() {
    let out = explain(&["/", "-H", "Accept-Encoding: gzip"]);
    assert!(out.contains(
        "outcome: 200 serves the file /var/www/html/wp-content/cache/supercache/example.test/index.html.gz"
    ));
    insta::assert_snapshot!("explain-wpsc-gzip", out);
}

#[test]
fn cached_homepage_without_gzip() {
    let out = explain(&["/"]);
    assert!(out.contains(
        "outcome: 200 serves the file /var/www/html/wp-content/cache/supercache/example.test/index.html\n"
    ));
    insta::assert_snapshot!("explain-wpsc-plain", out);
}

#[test]
fn logged_in_user_goes_to_php() {
    let out = explain(&["/", "-H", "Cookie: wordpress_logged_in_x=1"]);
    assert!(out.contains("outcome: 200 hands /var/www/html/index.php to PHP: SCRIPT_NAME=/index.php"));
    insta::assert_snapshot!("explain-wpsc-logged-in", out);
}

#[test]
fn explain_json_is_the_evaluation() {
    let out = explain(&["/no/such/page?x=1", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["outcome"]["status"], 200);
    assert_eq!(v["outcome"]["served"]["type"], "php");
    assert_eq!(v["outcome"]["served"]["query_string"], "x=1");
    assert!(v["trace"].as_array().is_some_and(|t| !t.is_empty()));
}
