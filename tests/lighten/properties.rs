//! Properties over generated input: reading never panics, whatever the bytes.

use crate::roundtrip::round_trip;
use lighten::config::{self, LoadOptions};
use lighten::source::{FileId, Sysroot};
use proptest::prelude::*;

/// Lines built from the pieces that make Apache's grammar interesting.
fn config_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("<Directory /var/www>".to_string()),
        Just("</Directory>".to_string()),
        Just("<IfModule mod_rewrite.c>".to_string()),
        Just("</IfModule>".to_string()),
        Just("<VirtualHost *:80>".to_string()),
        Just("</VirtualHost>".to_string()),
        Just("<Files ~ \"\\.php$\">".to_string()),
        Just("</Files>".to_string()),
        Just("<If \"%{HTTPS} == 'on'\">".to_string()),
        Just("<Else>".to_string()),
        Just("RewriteEngine On".to_string()),
        Just("RewriteCond %{REQUEST_FILENAME} !-f".to_string()),
        Just("RewriteRule ^(.*)$ /index.php?q=$1 [L,QSA]".to_string()),
        Just("Require all denied".to_string()),
        Just("Order deny,allow".to_string()),
        Just("Define X value".to_string()),
        Just("ServerName ${X}".to_string()),
        Just("Include /etc/apache2/conf.d/*.conf".to_string()),
        Just("# comment \\".to_string()),
        Just("\"".to_string()),
        Just("'".to_string()),
        Just("\\".to_string()),
        Just(">".to_string()),
        Just("<".to_string()),
        "[ -~]{0,20}",
        "\\PC{0,8}",
    ];
    prop::collection::vec(prop::collection::vec(piece, 0..4).prop_map(|p| p.join(" ")), 0..30)
        .prop_map(|lines| lines.join("\n"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn parsing_arbitrary_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let text = String::from_utf8_lossy(&bytes);
        let _ = lighten::syntax::parse(FileId(0), &text);
        prop_assert!(round_trip(&text).is_ok());
    }

    #[test]
    fn config_like_text_round_trips(text in config_text()) {
        if let Err(e) = round_trip(&text) {
            return Err(TestCaseError::fail(e));
        }
    }

    #[test]
    fn loading_and_modelling_never_panics(text in config_text()) {
        let dir = tempfile::tempdir().unwrap();
        let opts = LoadOptions { sysroot: Sysroot::at(dir.path()), ..LoadOptions::default() };
        let mut cfg = config::load_source("generated.conf", &text, &opts);
        let (model, _) = lighten::model::build(&mut cfg);
        let _ = lighten::inspect::text(&model, &cfg.sources);
    }
}

/// Inputs the fuzzer once crashed on (fixtures/regress/fuzz/, named after what broke) go
/// through the fuzz target's pipeline on every test run.
#[test]
fn fuzz_regressions_stay_fixed() {
    let dir = std::path::Path::new("fixtures/regress/fuzz");
    let files = crate::helpers::files_under(dir);
    assert!(!files.is_empty(), "no regression inputs");
    for path in files {
        let bytes = std::fs::read(&path).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        round_trip(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let opts =
            LoadOptions { sysroot: Sysroot::at("/nonexistent-lighten-root"), ..LoadOptions::default() };
        let mut cfg = config::load_source("regress.conf", &text, &opts);
        let (model, diags) = lighten::model::build(&mut cfg);
        let _ = lighten::inspect::text(&model, &cfg.sources);
        let _ = lighten::inspect::json(&model, &diags, &cfg.sources);
    }
}
