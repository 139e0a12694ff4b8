//! What a real server answered, reduced to what the evaluator predicts: the status, the
//! Location, and what was served (a file, PHP with its variables, a listing, an error).

use super::apache::PathMap;
use super::http::HttpResponse;
use crate::eval::{Outcome, Served};
use crate::source::Sysroot;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    pub status: u16,
    pub location: Option<String>,
    pub served: Served,
}

/// Reads a response.  `expect` is the evaluator's prediction, used only to decide which
/// file a 200 body is (the body is compared with that file's bytes).
pub fn observe(
    resp: &HttpResponse,
    paths: &PathMap,
    fs: &Sysroot,
    expect: Option<&Outcome>,
    head: bool,
) -> Observed {
    let location = resp.header("Location").map(str::to_string);
    let served = if resp.header("X-Lighten-Echo").is_some() && head {
        // PHP answered, but a HEAD response has no body to read the variables from.
        match expect.map(|e| &e.served) {
            Some(s @ Served::Php { .. }) => s.clone(),
            _ => Served::Unknown { reason: "PHP answered a HEAD request".into() },
        }
    } else if resp.header("X-Lighten-Echo").is_some() {
        let v: serde_json::Value = serde_json::from_slice(&resp.body).unwrap_or_default();
        let get = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_string);
        Served::Php {
            script: get("SCRIPT_FILENAME").map(|s| paths.unmap(&s)).unwrap_or_default(),
            script_name: get("SCRIPT_NAME").unwrap_or_default(),
            path_info: get("PATH_INFO").filter(|p| !p.is_empty()),
            query_string: get("QUERY_STRING").unwrap_or_default(),
            request_uri: get("REQUEST_URI").unwrap_or_default(),
        }
    } else if resp.status == 200 && resp.header("Content-Type").is_some_and(|t| t.starts_with("message/http"))
    {
        Served::Trace
    } else if resp.status == 200 && resp.header("Allow").is_some() && resp.body.is_empty() && !head {
        Served::Options
    } else if (300..400).contains(&resp.status) && location.is_some() {
        Served::Redirect
    } else if resp.status >= 400 {
        // A local ErrorDocument that is a file shows as that file under the error status.
        match expect.map(|e| &e.served) {
            Some(Served::File { path }) if !head && fs.read(path).is_ok_and(|b| b == resp.body) => {
                Served::File { path: path.clone() }
            }
            _ => Served::Error,
        }
    } else if head {
        // No body to compare: trust the status.
        match expect.map(|e| &e.served) {
            Some(s @ Served::File { .. }) | Some(s @ Served::Listing { .. }) => s.clone(),
            _ => Served::Unknown { reason: "HEAD response without body".into() },
        }
    } else {
        match expect.map(|e| &e.served) {
            Some(Served::File { path }) => {
                let want = fs.read(path).unwrap_or_default();
                if want == resp.body {
                    Served::File { path: path.clone() }
                } else {
                    Served::Unknown {
                        reason: format!("a body that is not {path} ({} bytes)", resp.body.len()),
                    }
                }
            }
            _ if String::from_utf8_lossy(&resp.body).contains("Index of") => {
                Served::Listing { dir: String::new() }
            }
            _ => Served::Unknown { reason: format!("a {} byte body", resp.body.len()) },
        }
    };
    Observed { status: resp.status, location, served }
}

/// Whether a prediction agrees with an observation; `Err` says how they differ.  A
/// proxied request agrees with any 502/503: the sandbox has no backend behind it, so the
/// answer only shows that Apache tried to proxy.
pub fn agree(expect: &Outcome, seen: &Observed) -> Result<(), String> {
    if let Served::Proxy { .. } = expect.served {
        return if matches!(seen.status, 502 | 503) {
            Ok(())
        } else {
            Err(format!("proxy expected, Apache answered {}", seen.status))
        };
    }
    let mut diffs = Vec::new();
    if expect.status != seen.status {
        diffs.push(format!("status {} vs {}", expect.status, seen.status));
    }
    if (300..400).contains(&seen.status) && expect.location != seen.location {
        diffs.push(format!("Location {:?} vs {:?}", expect.location, seen.location));
    }
    let served_agrees = match (&expect.served, &seen.served) {
        (Served::Error, Served::Error) => true,
        // A listing's directory is not visible in its body.
        (Served::Listing { .. }, Served::Listing { .. }) => true,
        (a, b) => a == b,
    };
    if !served_agrees && expect.status == seen.status {
        diffs.push(format!("served {:?} vs {:?}", expect.served, seen.served));
    }
    if diffs.is_empty() { Ok(()) } else { Err(diffs.join("; ")) }
}
