//! The evaluation as text for `lighten explain`: every step with its `file:line`, then the
//! outcome in an admin's words.  Pure: returns a string.

use super::{Evaluation, Request, Served};
use crate::source::SourceMap;
use std::fmt::Write;

pub fn text(req: &Request, ev: &Evaluation, map: &SourceMap) -> String {
    let mut out = String::new();
    let host = req.host.as_deref().unwrap_or("");
    let _ = writeln!(out, "{} {}://{}{}", req.method, req.scheme, host, req.target());
    for (n, v) in &req.headers {
        let _ = writeln!(out, "  {n}: {v}");
    }
    out.push('\n');
    for s in &ev.trace {
        let text = format!("{}{}", "  ".repeat(s.depth as usize + 1), s.text);
        match s.at {
            Some(at) => {
                let loc = map.line_ref(at);
                let pad = 72usize.saturating_sub(text.chars().count()).max(2);
                let _ = writeln!(out, "{text}{}{loc}", " ".repeat(pad));
            }
            None => {
                let _ = writeln!(out, "{text}");
            }
        }
    }
    out.push('\n');
    let o = &ev.outcome;
    let what = match &o.served {
        Served::File { path } => format!("serves the file {path}"),
        Served::Php { script, script_name, path_info, query_string, request_uri } => format!(
            "hands {script} to PHP: SCRIPT_NAME={script_name} PATH_INFO={} QUERY_STRING={query_string} REQUEST_URI={request_uri}",
            path_info.as_deref().unwrap_or("(none)")
        ),
        Served::Listing { dir } => format!("lists the directory {dir}"),
        Served::Redirect => format!("redirects to {}", o.location.as_deref().unwrap_or("?")),
        Served::Error => "answers with Apache's error page".to_string(),
        Served::Proxy { url } => format!("proxies to {url}"),
        Served::Trace => "echoes the TRACE request".to_string(),
        Served::Options => "answers OPTIONS with the methods it takes (no body)".to_string(),
        Served::Unknown { reason } => format!("cannot be predicted: {reason}"),
    };
    let _ = writeln!(out, "outcome: {} {what}", o.status);
    if let Some(t) = &o.content_type {
        let _ = writeln!(out, "  Content-Type: {t}");
    }
    let env: Vec<String> = o.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if !env.is_empty() {
        let _ = writeln!(out, "  environment: {}", env.join(" "));
    }
    let _ = writeln!(
        out,
        "  ({} round{} of request processing)",
        ev.rounds,
        if ev.rounds == 1 { "" } else { "s" }
    );
    out
}
