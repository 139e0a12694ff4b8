//! `Define`, `UnDefine` and `${VAR}` substitution.
//!
//! Apache substitutes variables in the whole logical line before splitting it into words
//! (`ap_resolve_env()` in `ap_build_config_sub()`), so a value with spaces becomes several
//! arguments.  A reference to an undefined name stays as written, with a warning, exactly
//! as Apache leaves it.  Apache also consults the process environment; lighten reads only
//! `Define`, a Debian `envvars` file and `--define`, so output never depends on the shell
//! it ran in.

use crate::source::{MappedText, Span};
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default)]
pub struct Defines {
    /// Name to value; `Define NAME` with no value maps to `None` (visible to `<IfDefine>`
    /// only).
    vars: BTreeMap<String, Option<String>>,
}

impl Defines {
    pub fn define(&mut self, name: &str, value: Option<&str>) {
        self.vars.insert(name.to_string(), value.map(str::to_string));
    }

    pub fn undefine(&mut self, name: &str) {
        self.vars.remove(name);
    }

    pub fn is_defined(&self, name: &str) -> bool {
        self.vars.contains_key(name)
    }

    pub fn value(&self, name: &str) -> Option<&str> {
        self.vars.get(name).and_then(|v| v.as_deref())
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, Option<&str>)> {
        self.vars.iter().map(|(k, v)| (k.as_str(), v.as_deref()))
    }

    /// Substitutes `${NAME}` in `text`; returns the new text and the spans of names that
    /// had no value.
    pub fn resolve(&self, text: &MappedText) -> (MappedText, Vec<(String, Span)>) {
        let s = &text.text;
        if !s.contains("${") {
            return (text.clone(), Vec::new());
        }
        let mut out = text.slice(0, 0);
        let mut missing = Vec::new();
        let mut pos = 0;
        let mut copied = 0;
        while let Some(rel) = s[pos..].find("${") {
            let start = pos + rel;
            let Some(close_rel) = s[start + 2..].find('}') else { break };
            let end = start + 2 + close_rel + 1;
            let name = &s[start + 2..end - 1];
            match self.value(name) {
                Some(value) => {
                    append_slice(&mut out, text, copied, start);
                    out.push_substitute(value, text.span(start, end));
                    copied = end;
                }
                None => missing.push((name.to_string(), text.span(start, end))),
            }
            pos = end;
        }
        append_slice(&mut out, text, copied, s.len());
        (out, missing)
    }
}

fn append_slice(out: &mut MappedText, text: &MappedText, start: usize, end: usize) {
    if start >= end {
        return;
    }
    // Copy byte by byte through the segment map so spans inside stay exact.
    let piece = text.slice(start, end);
    let mut i = 0;
    while i < piece.text.len() {
        let src = piece.source_offset(i);
        let mut j = i + 1;
        while j < piece.text.len() && piece.source_offset(j) == src + (j - i) {
            j += 1;
        }
        out.push_source(&piece.text[i..j], src);
        i = j;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::FileId;

    #[test]
    fn substitutes_and_keeps_unknown_names() {
        let mut d = Defines::default();
        d.define("DIR", Some("/var/www"));
        let t = MappedText::contiguous(FileId(0), "${DIR}/x ${NOPE} y", 10);
        let (r, missing) = d.resolve(&t);
        assert_eq!(r.text, "/var/www/x ${NOPE} y");
        assert_eq!(missing, vec![("NOPE".to_string(), Span::new(FileId(0), 19, 26))]);
        // "/x" came from the source right after the reference.
        let at = r.text.find("/x").unwrap();
        assert_eq!(r.span(at, at + 2), Span::new(FileId(0), 16, 18));
        // The substituted value maps onto the reference.
        assert_eq!(r.span(0, 8), Span::new(FileId(0), 10, 16));
    }
}
