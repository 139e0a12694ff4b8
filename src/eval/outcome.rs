//! What a server does with a request, and the trace of how the evaluator got there.

use crate::source::Span;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Served {
    /// A file sent as it is (the Apache path).
    File { path: String },
    /// Handed to PHP through FastCGI, with the variables PHP gets.
    Php {
        script: String,
        script_name: String,
        path_info: Option<String>,
        query_string: String,
        request_uri: String,
    },
    /// A generated directory listing.
    Listing { dir: String },
    /// A redirect (status and Location in the outcome).
    Redirect,
    /// Apache's own error page (or a text ErrorDocument).  A local ErrorDocument is
    /// served as what it is (a file, PHP) under the error's status.
    Error,
    /// The core's echo of a TRACE request (`message/http`).
    Trace,
    /// The default handler's answer to OPTIONS: an Allow header, no body.
    Options,
    /// Handed to mod_proxy (a `[P]` rule).
    Proxy { url: String },
    /// The evaluator cannot say (an `<If>` it does not evaluate, a `prg:` map, ...).
    Unknown { reason: String },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Outcome {
    pub status: u16,
    pub location: Option<String>,
    pub served: Served,
    /// `Content-Type` forced by `[T=...]` or ForceType, when known.
    pub content_type: Option<String>,
    /// The environment handed to a CGI/FastCGI script (E= variables, REDIRECT_*).
    pub env: BTreeMap<String, String>,
}

/// One step of the evaluation, for `lighten explain`.
#[derive(Clone, Debug, Serialize)]
pub struct Step {
    /// The directive or section responsible.
    pub at: Option<Span>,
    /// Nesting for display (a condition under its rule).
    pub depth: u8,
    pub text: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct Evaluation {
    pub outcome: Outcome,
    pub trace: Vec<Step>,
    /// Rounds of request processing (1 + internal redirects).
    pub rounds: usize,
}
