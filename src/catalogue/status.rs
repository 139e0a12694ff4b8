//! What the lighttpd target does with a directive.

use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Carried over exactly (native lighttpd directive or generated Lua).
    Translated,
    /// Carried over with a documented difference.
    Approximated,
    /// Deliberately not carried over: it does not change how requests are answered, or
    /// lighttpd has its own setting for it (process limits, module loading, ...).
    Ignored,
    /// Cannot be carried over; the translation fails closed and reports it.
    Unsupported,
}

impl Status {
    pub const ALL: [Status; 4] =
        [Status::Translated, Status::Approximated, Status::Ignored, Status::Unsupported];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Translated => "translated",
            Status::Approximated => "approximated",
            Status::Ignored => "ignored",
            Status::Unsupported => "unsupported",
        }
    }

    fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|st| st.as_str() == s)
    }
}

/// `name<TAB>status<TAB>note` lines; keys lowercased.
pub fn parse_table(text: &str) -> BTreeMap<String, (Status, String)> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut f = line.splitn(3, '\t');
        let name = f.next().unwrap_or_default();
        let status = f.next().and_then(Status::parse).unwrap_or_else(|| panic!("bad status line: {line}"));
        let note = f.next().unwrap_or_default().to_string();
        out.insert(name.to_lowercase(), (status, note));
    }
    out
}
