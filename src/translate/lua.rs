//! Writing Lua source: string literals that survive any byte, and tables laid out the
//! way a person would write them.  Every generated Lua file goes through here, so the
//! output is deterministic.

use std::fmt::Write;

/// A Lua string literal for any bytes: printable ASCII as is, the rest as `\ddd`.
pub fn string(s: &str) -> String {
    bytes(s.as_bytes())
}

pub fn bytes(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len() + 2);
    out.push('"');
    for &c in b {
        match c {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            0x20..=0x7e => out.push(c as char),
            _ => {
                let _ = write!(out, "\\{c:03}");
            }
        }
    }
    out.push('"');
    out
}

/// A table key: a bare name when Lua allows one, else `["..."]`.
pub fn key(k: &str) -> String {
    const RESERVED: &[&str] = &[
        "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if", "in",
        "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
    ];
    let ident = !k.is_empty()
        && !k.as_bytes()[0].is_ascii_digit()
        && k.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
        && !RESERVED.contains(&k);
    if ident { k.to_string() } else { format!("[{}]", string(k)) }
}

/// A value being written: scalars inline, tables field by field.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Nil,
    Bool(bool),
    Int(i64),
    Str(String),
    /// Lua source placed as is (a reference such as `R[3]`, a function).
    Raw(String),
    /// Fields in order; a `None` key is a positional entry.
    Table(Vec<(Option<String>, Value)>),
}

impl Value {
    pub fn table() -> Value {
        Value::Table(Vec::new())
    }

    /// Adds `k = v` unless `v` is nil or an empty table (what is absent reads as nil).
    pub fn set(&mut self, k: &str, v: impl Into<Value>) -> &mut Value {
        let v = v.into();
        if let Value::Table(fields) = self
            && !v.is_empty()
        {
            fields.push((Some(k.to_string()), v));
        }
        self
    }

    /// Adds a positional entry.
    pub fn push(&mut self, v: impl Into<Value>) -> &mut Value {
        if let Value::Table(fields) = self {
            fields.push((None, v.into()));
        }
        self
    }

    pub fn is_empty(&self) -> bool {
        match self {
            Value::Nil => true,
            Value::Table(f) => f.is_empty(),
            _ => false,
        }
    }

    /// Lua source, indented from `indent` spaces; short tables stay on one line.
    pub fn render(&self, indent: usize) -> String {
        match self {
            Value::Nil => "nil".into(),
            Value::Bool(b) => b.to_string(),
            Value::Int(i) => i.to_string(),
            Value::Str(s) => string(s),
            Value::Raw(r) => r.clone(),
            Value::Table(fields) => {
                if fields.is_empty() {
                    return "{}".into();
                }
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(k, v)| match k {
                        Some(k) => format!("{} = {}", key(k), v.render(indent + 2)),
                        None => v.render(indent + 2),
                    })
                    .collect();
                let one_line = format!("{{ {} }}", parts.join(", "));
                if one_line.len() + indent <= 100 && !one_line.contains('\n') {
                    return one_line;
                }
                let pad = " ".repeat(indent + 2);
                let mut out = String::from("{\n");
                for p in parts {
                    let _ = writeln!(out, "{pad}{p},");
                }
                out.push_str(&" ".repeat(indent));
                out.push('}');
                out
            }
        }
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        if b { Value::Bool(true) } else { Value::Nil }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::Str(s.to_string())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::Str(s)
    }
}

impl From<&String> for Value {
    fn from(s: &String) -> Value {
        Value::Str(s.clone())
    }
}

impl From<i64> for Value {
    fn from(i: i64) -> Value {
        Value::Int(i)
    }
}

impl From<u16> for Value {
    fn from(i: u16) -> Value {
        Value::Int(i as i64)
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(o: Option<T>) -> Value {
        o.map(Into::into).unwrap_or(Value::Nil)
    }
}

impl<T: Into<Value>> From<Vec<T>> for Value {
    fn from(v: Vec<T>) -> Value {
        Value::Table(v.into_iter().map(|x| (None, x.into())).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_keep_every_byte() {
        assert_eq!(string("a\"b\\c\n\u{e9}"), "\"a\\\"b\\\\c\\n\\195\\169\"");
        assert_eq!(bytes(&[0, 31, 127]), "\"\\000\\031\\127\"");
    }

    #[test]
    fn tables_read_like_hand_written_ones() {
        let mut t = Value::table();
        t.set("pattern", "^index\\.php$").set("last", true).set("skip", Value::Nil).set("end", false);
        t.set("and", 1i64);
        assert_eq!(t.render(0), "{ pattern = \"^index\\\\.php$\", last = true, [\"and\"] = 1 }");
        let mut long = Value::table();
        for i in 0..20 {
            long.push(format!("item number {i}"));
        }
        assert!(long.render(0).starts_with("{\n  \"item number 0\",\n"));
    }
}
