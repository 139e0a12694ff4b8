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
    push_bytes(&mut out, b);
    out
}

/// Appends the literal `bytes` makes.
fn push_bytes(out: &mut String, b: &[u8]) {
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
}

/// The length of the literal `bytes` makes, if it is at most `budget`.
fn bytes_len(b: &[u8], budget: usize) -> Option<usize> {
    let mut n = 2;
    for &c in b {
        n += match c {
            b'"' | b'\\' | b'\n' | b'\t' => 2,
            0x20..=0x7e => 1,
            _ => 4,
        };
        if n > budget {
            return None;
        }
    }
    (n <= budget).then_some(n)
}

/// Whether `k` can be a bare table key.
fn bare_key(k: &str) -> bool {
    const RESERVED: &[&str] = &[
        "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if", "in",
        "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
    ];
    !k.is_empty()
        && !k.as_bytes()[0].is_ascii_digit()
        && k.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
        && !RESERVED.contains(&k)
}

/// A table key: a bare name when Lua allows one, else `["..."]`.
pub fn key(k: &str) -> String {
    if bare_key(k) { k.to_string() } else { format!("[{}]", string(k)) }
}

fn push_key(out: &mut String, k: &str) {
    if bare_key(k) {
        out.push_str(k);
    } else {
        out.push('[');
        push_bytes(out, k.as_bytes());
        out.push(']');
    }
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

    /// Lua source, indented from `indent` spaces; short tables stay on one line (when the
    /// line, from `indent`, is at most 100 columns).
    pub fn render(&self, indent: usize) -> String {
        let mut out = String::new();
        self.render_into(&mut out, indent);
        out
    }

    /// `render`, appended to `out`: each byte written once (a server's site data is tens
    /// of megabytes).
    pub fn render_into(&self, out: &mut String, indent: usize) {
        let Value::Table(fields) = self else {
            return self.write_flat(out);
        };
        if fields.is_empty() || self.flat_len(100usize.saturating_sub(indent)).is_some() {
            return self.write_flat(out);
        }
        out.push_str("{\n");
        for (k, v) in fields {
            out.extend(std::iter::repeat_n(' ', indent + 2));
            if let Some(k) = k {
                push_key(out, k);
                out.push_str(" = ");
            }
            v.render_into(out, indent + 2);
            out.push_str(",\n");
        }
        out.extend(std::iter::repeat_n(' ', indent));
        out.push('}');
    }

    /// The length of the one-line form, if it has no line break and is at most `budget`.
    fn flat_len(&self, budget: usize) -> Option<usize> {
        let n = match self {
            Value::Nil => 3,
            Value::Bool(b) => {
                if *b {
                    4
                } else {
                    5
                }
            }
            Value::Int(i) => i.to_string().len(),
            Value::Str(s) => bytes_len(s.as_bytes(), budget)?,
            Value::Raw(r) if r.contains('\n') => return None,
            Value::Raw(r) => r.len(),
            Value::Table(fields) if fields.is_empty() => 2,
            Value::Table(fields) => {
                // "{ " fields joined by ", " " }"
                let mut n = 2;
                for (i, (k, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        n += 2;
                    }
                    if let Some(k) = k {
                        n += if bare_key(k) { k.len() } else { bytes_len(k.as_bytes(), budget)? + 2 } + 3;
                    }
                    n += v.flat_len(budget.checked_sub(n)?)?;
                    if n > budget {
                        return None;
                    }
                }
                n + 2
            }
        };
        (n <= budget).then_some(n)
    }

    /// The one-line form.
    fn write_flat(&self, out: &mut String) {
        match self {
            Value::Nil => out.push_str("nil"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Value::Str(s) => push_bytes(out, s.as_bytes()),
            Value::Raw(r) => out.push_str(r),
            Value::Table(fields) if fields.is_empty() => out.push_str("{}"),
            Value::Table(fields) => {
                out.push_str("{ ");
                for (i, (k, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    if let Some(k) = k {
                        push_key(out, k);
                        out.push_str(" = ");
                    }
                    v.write_flat(out);
                }
                out.push_str(" }");
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

/// Runs `script` with lua5.4 and gives the lines it prints, or `None` (skipped, said on
/// stderr) when lua5.4 is missing outside CI: for the tests that hold generated Lua to
/// what the Rust side means.
#[cfg(test)]
pub fn run_lua5_4(script: &str) -> Option<Vec<String>> {
    let out = match std::process::Command::new("lua5.4").args(["-e", script]).output() {
        Ok(out) => out,
        Err(_) => {
            assert!(std::env::var_os("CI").is_none(), "lua5.4 must be installed");
            eprintln!("lua5.4 missing: skipped");
            return None;
        }
    };
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    Some(String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect())
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
