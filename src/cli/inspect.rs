//! `lighten inspect`.

use super::args::{InspectArgs, LoadArgs};
use crate::config::{self, LoadOptions};
use crate::diagnostic::{Diagnostic, Diagnostics, Severity, render};
use crate::source::{FileKind, SourceMap, Sysroot};
use crate::{inspect, model};
use std::io::Write;
use std::path::Path;

pub fn load_options(a: &LoadArgs) -> LoadOptions {
    let sysroot = a.sysroot.as_ref().map(Sysroot::at).unwrap_or_else(Sysroot::host);
    // --server-config by CONFIG's rule: in the copy or as on the server (a path in
    // neither is kept, and reading it reports it)
    let server_config =
        a.server_config.as_ref().map(|c| sysroot.given(Path::new(c)).unwrap_or_else(|| c.clone()));
    LoadOptions {
        sysroot,
        server_root: a.server_root.clone(),
        defines: a
            .defines
            .iter()
            .map(|d| match d.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (d.clone(), None),
            })
            .collect(),
        apache_version: a.apache_version.clone(),
        server_config,
        server_name: a.server_name.clone(),
        walk_limit: a.walk_limit,
        plesk_domains: None,
        shared: None,
    }
}

pub fn run(a: InspectArgs, color: bool) -> anyhow::Result<i32> {
    let opts = load_options(&a.load);
    let mut config = config::load(&a.config, &opts)?;
    let (model, model_diags) = model::build(&mut config);
    let mut diags = Diagnostics::new();
    diags.extend(std::mem::take(&mut config.diagnostics));
    diags.extend(model_diags);
    diags.sort();
    let diags = diags.into_vec();
    let code = exit_code(&config.sources, &diags);
    let mut out = std::io::stdout().lock();
    if a.json {
        out.write_all(inspect::json(&model, &diags, &config.sources).as_bytes())?;
    } else {
        // What convert would report for each directive (nothing is written): the same
        // counts and words as report.md, convert and batch.
        // (not for a configuration Apache would refuse: convert stops there too)
        let fates = if code < 2 {
            super::convert::prepare_model(
                &config,
                &model,
                Path::new("lighten-inspect"),
                &[],
                None,
                None,
                false,
            )
            .ok()
            .map(|p| p.conv.report)
        } else {
            None
        };
        let body = if a.summary {
            inspect::summary(&model, &config.sources, fates.as_ref())
        } else {
            inspect::text_with(&model, &config.sources, fates.as_ref())
        };
        out.write_all(body.as_bytes())?;
        out.flush()?;
        let mut err = std::io::stderr().lock();
        if a.summary {
            for d in &diags {
                writeln!(err, "{}", render::short(&config.sources, d))?;
            }
        } else {
            err.write_all(render::text(&config.sources, &diags, color).as_bytes())?;
        }
        err.write_all(summary(&diags).as_bytes())?;
    }
    // The process ends right after; freeing a large model piece by piece would only cost
    // time (a tenth of the run on a thousand-domain server).
    std::mem::forget(model);
    std::mem::forget(config);
    Ok(code)
}

/// 2 when the server configuration has errors, 1 when only .htaccess files do, else 0.
pub fn exit_code(map: &SourceMap, diags: &[Diagnostic]) -> i32 {
    let mut code = 0;
    for d in diags.iter().filter(|d| d.severity == Severity::Error) {
        let in_htaccess = d.span.is_some_and(|s| map.file(s.file).kind == FileKind::Htaccess);
        code = code.max(if in_htaccess { 1 } else { 2 });
    }
    code
}

fn summary(diags: &[Diagnostic]) -> String {
    let count = |s| diags.iter().filter(|d| d.severity == s).count();
    let (e, w, n) = (count(Severity::Error), count(Severity::Warning), count(Severity::Note));
    if e + w + n == 0 {
        return String::new();
    }
    format!("{e} error(s), {w} warning(s), {n} note(s)\n")
}
