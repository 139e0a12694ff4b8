//! Deciding `<IfModule>`, `<IfDefine>`, `<IfVersion>`, `<IfFile>`, `<IfDirective>` and
//! `<IfSection>` while reading, as Apache does; `<If>`/`<ElseIf>`/`<Else>` stay for each
//! request.
//!
//! Each takes one argument, optionally negated with `!`.  `<IfVersion>` compares against
//! the Apache version being replaced (`--apache-version`), with httpd's operators
//! (`=`/`==`, `<`, `<=`, `>`, `>=`, `~` or `/regex/`); a missing operator means `=`.

use super::item::{Condition, ConditionKind, Item};
use super::loader::Reader;
use crate::catalogue::catalogue;
use crate::diagnostic::{Code, Diagnostic};
use crate::source::join;

pub fn evaluate(reader: &mut Reader, item: &Item) -> Option<Condition> {
    let kind = ConditionKind::of_section(&item.name.value)?;
    if kind == ConditionKind::Expression {
        let expr = item.raw.text.clone();
        let reason = if expr.is_empty() { "otherwise".to_string() } else { format!("per request: {expr}") };
        return Some(Condition { kind, value: None, reason });
    }
    let first = item.arg(0).unwrap_or("");
    if kind == ConditionKind::IfVersion {
        return Some(version_condition(reader, item));
    }
    let (negated, name) = match first.strip_prefix('!') {
        Some(rest) => (true, rest),
        None => (false, first),
    };
    let (holds, what) = match kind {
        ConditionKind::IfModule => (reader.modules.has(name), format!("{name} is loaded")),
        ConditionKind::IfDefine => (reader.defines.is_defined(name), format!("{name} is defined")),
        ConditionKind::IfFile => {
            let path = join(&reader.server_root, name);
            (reader.fs.exists(&path), format!("{path} exists"))
        }
        ConditionKind::IfDirective => {
            let known =
                catalogue().get(name).is_some_and(|i| i.modules().any(|m| reader.modules.provides(m)));
            (known, format!("directive {name} is available"))
        }
        ConditionKind::IfSection => {
            let known =
                catalogue().section(name).is_some_and(|i| i.modules().any(|m| reader.modules.provides(m)));
            (known, format!("section <{name}> is available"))
        }
        ConditionKind::IfVersion | ConditionKind::Expression => unreachable!("handled above"),
    };
    let value = holds != negated;
    let reason = if holds { what } else { format!("not: {what}") };
    let reason = if negated { format!("{reason}, negated") } else { reason };
    Some(Condition { kind, value: Some(value), reason })
}

fn version_condition(reader: &mut Reader, item: &Item) -> Condition {
    let kind = ConditionKind::IfVersion;
    let args = item.values();
    let (op, wanted) = match args.as_slice() {
        [v] => ("=", *v),
        [op, v] => (*op, *v),
        _ => ("=", ""),
    };
    let (negated, op) = match op.strip_prefix('!') {
        Some(o) => (true, o),
        None => (false, op),
    };
    let have = reader.version.clone();
    let result = if op == "~" || (wanted.starts_with('/') && wanted.ends_with('/') && wanted.len() > 1) {
        let pattern = wanted.trim_matches('/');
        match pcre2::bytes::Regex::new(pattern) {
            Ok(re) => re.is_match(have.as_bytes()).unwrap_or(false),
            Err(e) => {
                reader.diags.push(Diagnostic::new(
                    Code::BadRegex,
                    item.span,
                    format!("bad <IfVersion> regex: {e}"),
                ));
                false
            }
        }
    } else {
        let ord = compare_versions(&have, wanted);
        match op {
            "=" | "==" => ord.is_eq(),
            "<" => ord.is_lt(),
            "<=" => ord.is_le(),
            ">" => ord.is_gt(),
            ">=" => ord.is_ge(),
            _ => {
                reader.diags.push(Diagnostic::new(
                    Code::BadArgument,
                    item.span,
                    format!("<IfVersion> has an invalid operator '{op}'"),
                ));
                false
            }
        }
    };
    let value = result != negated;
    Condition {
        kind,
        value: Some(value),
        reason: format!("Apache {have} {}{op} {wanted}", if negated { "!" } else { "" }),
    }
}

/// Compares dotted versions numerically; missing parts count as 0.
fn compare_versions(a: &str, b: &str) -> std::cmp::Ordering {
    let parse = |s: &str| -> Vec<u64> { s.split('.').map(|p| p.parse().unwrap_or(0)).collect() };
    let (x, y) = (parse(a), parse(b));
    for i in 0..x.len().max(y.len()) {
        let o = x.get(i).unwrap_or(&0).cmp(y.get(i).unwrap_or(&0));
        if o.is_ne() {
            return o;
        }
    }
    std::cmp::Ordering::Equal
}

#[cfg(test)]
mod tests {
    use super::compare_versions;

    #[test]
    fn versions_compare_numerically() {
        assert!(compare_versions("2.4.71", "2.4.9").is_gt());
        assert!(compare_versions("2.4", "2.4.0").is_eq());
        assert!(compare_versions("2.2.31", "2.4").is_lt());
    }
}
