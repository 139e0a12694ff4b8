//! `lighten explain`.

use super::args::ExplainArgs;
use super::inspect::load_options;
use crate::eval::{self, Request};
use crate::source::with_source_map;
use crate::{config, model};
use std::io::Write;

pub fn run(a: ExplainArgs) -> anyhow::Result<i32> {
    let opts = load_options(&a.load);
    let mut cfg = config::load(&a.config, &opts)?;
    let (model, _) = model::build(&mut cfg);
    let mut req = Request::parse_url(&a.method.to_ascii_uppercase(), &a.url).map_err(anyhow::Error::msg)?;
    for h in &a.headers {
        req = req.with_header(h).map_err(anyhow::Error::msg)?;
    }
    req.remote = a.remote;
    let port = req
        .host
        .as_deref()
        .and_then(|h| crate::model::server::split_host_port(h).1.and_then(|p| p.parse::<u16>().ok()))
        .unwrap_or(if req.scheme == "https" { 443 } else { 80 });
    if req.host.is_none() {
        // A bare path is asked of the first virtual host, by its name.
        req.host = model
            .vhosts
            .iter()
            .find(|v| v.scope.enabled)
            .and_then(|v| v.server_name.clone())
            .or_else(|| (!opts.server_name.is_empty()).then(|| opts.server_name.clone()));
    }
    let ev = eval::evaluate(&model, &cfg.sysroot, &req, port);
    let mut out = std::io::stdout().lock();
    if a.json {
        let text = with_source_map(&cfg.sources, || serde_json::to_string_pretty(&ev))?;
        writeln!(out, "{text}")?;
    } else {
        out.write_all(eval::render::text(&req, &ev, &cfg.sources).as_bytes())?;
    }
    Ok(0)
}
