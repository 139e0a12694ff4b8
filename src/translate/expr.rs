//! `ap_expr` conditions to Lua functions.
//!
//! An expression becomes `function(cx) ... end` returning true or false; `cx` is the
//! runtime's request context (`cx:var(name)`, `cx:header(name)`, `cx.env`).  Regexes go
//! through the same compiled programs as rewrite patterns.  What has no exact Lua
//! counterpart is an error, and the caller makes the section fail closed.

use super::Site;
use crate::expr::{BinaryOp, CompareOp, Cond, List, Part, UnaryOp, Word};

/// Lua source of a function deciding `e`.
pub fn function(site: &mut Site, e: &crate::expr::Expr) -> Result<String, String> {
    let mut g = Gen { site, uses_caps: false };
    let body = g.cond(e.root())?;
    Ok(format!("function(cx) local st = {{ caps = {{}} }} return {body} end"))
}

struct Gen<'a, 'b> {
    site: &'a mut Site<'b>,
    uses_caps: bool,
}

impl Gen<'_, '_> {
    fn cond(&mut self, c: &Cond) -> Result<String, String> {
        Ok(match c {
            Cond::True => "true".into(),
            Cond::False => "false".into(),
            Cond::Not(x) => format!("(not {})", self.cond(x)?),
            Cond::And(xs) => {
                let parts: Result<Vec<String>, String> = xs.iter().map(|x| self.cond(x)).collect();
                format!("({})", parts?.join(" and "))
            }
            Cond::Or(xs) => {
                let parts: Result<Vec<String>, String> = xs.iter().map(|x| self.cond(x)).collect();
                format!("({})", parts?.join(" or "))
            }
            Cond::Compare(a, op, b) => {
                let (a, b) = (self.word(a)?, self.word(b)?);
                if op.is_integer() {
                    let o = match op {
                        CompareOp::IntEq => "==",
                        CompareOp::IntNe => "~=",
                        CompareOp::IntLt => "<",
                        CompareOp::IntLe => "<=",
                        CompareOp::IntGt => ">",
                        _ => ">=",
                    };
                    format!("(X.atoi({a}) {o} X.atoi({b}))")
                } else {
                    let o = match op {
                        CompareOp::StrEq => "==",
                        CompareOp::StrNe => "~=",
                        CompareOp::StrLt => "<",
                        CompareOp::StrLe => "<=",
                        CompareOp::StrGt => ">",
                        _ => ">=",
                    };
                    // Lua compares strings with strcoll; the runtime sets the C locale,
                    // where that is strcmp, as Apache's comparison.
                    format!("({a} {o} {b})")
                }
            }
            Cond::In(w, List::Words(ws)) => {
                let w = self.word(w)?;
                let items: Result<Vec<String>, String> = ws.iter().map(|x| self.word(x)).collect();
                format!("X.is_in({w}, {{ {} }})", items?.join(", "))
            }
            Cond::In(_, List::Call { name, .. }) => {
                return Err(format!("the list function {name}() has no Lua form"));
            }
            Cond::Match { word, regex, negated } => {
                let w = self.word(word)?;
                let prog = self.site.regex_ref(regex.pattern(), regex.caseless())?;
                let groups = regex.has_groups();
                if groups {
                    self.uses_caps = true;
                }
                let m = format!("X.match(st, {prog}, {w}, {groups})");
                if *negated { format!("(not {m})") } else { m }
            }
            Cond::Unary(op, w) => {
                let w = self.word(w)?;
                match op {
                    UnaryOp::NotEmpty => format!("({w} ~= \"\")"),
                    UnaryOp::Empty => format!("({w} == \"\")"),
                    UnaryOp::Truthy => format!("X.truthy({w})"),
                    UnaryOp::Remote(net) => {
                        format!("X.ipmatch(cx.remote, {})", super::lua::string(&net.lua_form()))
                    }
                    UnaryOp::File(c) => match c {
                        'd' | 'e' | 'f' | 's' | 'x' => format!("X.file_test(\"{c}\", {w})"),
                        other => {
                            return Err(format!("the file test -{other} has no exact lighttpd counterpart"));
                        }
                    },
                }
            }
            Cond::Binary(left, BinaryOp::IpMatch(net), _) => {
                let left = self.word(left)?;
                format!("X.ipmatch({left}, {})", super::lua::string(&net.lua_form()))
            }
            Cond::Binary(_, op, _) => {
                return Err(format!("-{} is not translated", op_name(op)));
            }
        })
    }

    fn word(&mut self, w: &Word) -> Result<String, String> {
        Ok(match w {
            Word::Digits(d) => super::lua::string(d),
            Word::Str(parts) => {
                if parts.is_empty() {
                    "\"\"".into()
                } else {
                    let ps: Result<Vec<String>, String> = parts.iter().map(|p| self.part(p)).collect();
                    format!("({})", ps?.join(" .. "))
                }
            }
            Word::Var(name) => var(name),
            Word::VarFunc { name, arg } => func(name, &super::lua::string(arg))?,
            Word::Call { name, arg } => {
                let a = self.word(arg)?;
                func(name, &a)?
            }
            Word::Backref(n) => {
                self.uses_caps = true;
                format!("(st.caps[{n}] or \"\")")
            }
            Word::Concat(ws) => {
                let ps: Result<Vec<String>, String> = ws.iter().map(|x| self.word(x)).collect();
                format!("({})", ps?.join(" .. "))
            }
        })
    }

    fn part(&mut self, p: &Part) -> Result<String, String> {
        Ok(match p {
            Part::Text(t) => super::lua::string(t),
            Part::Var(v) => var(v),
            Part::Func { name, arg } => func(name, &super::lua::string(arg))?,
            Part::Backref(n) => {
                self.uses_caps = true;
                format!("(st.caps[{n}] or \"\")")
            }
        })
    }
}

fn op_name(op: &BinaryOp) -> &'static str {
    op.name()
}

fn var(name: &str) -> String {
    format!("cx:var({})", super::lua::string(&name.to_ascii_uppercase()))
}

fn func(name: &str, arg: &str) -> Result<String, String> {
    Ok(match name.to_ascii_lowercase().as_str() {
        "req" | "http" | "req_novary" => format!("(cx:header({arg}) or \"\")"),
        // (Apache's environment table finds a name in any case)
        "reqenv" | "env" => format!("(X.env(cx, {arg}) or \"\")"),
        "tolower" => format!("string.lower({arg})"),
        "toupper" => format!("string.upper({arg})"),
        "escape" => format!("X.escape({arg})"),
        other => return Err(format!("the function {other}() is not translated")),
    })
}
