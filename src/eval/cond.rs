//! `ap_expr` conditions (`<If>`, `RewriteCond expr`) evaluated against the request the
//! engine is processing: variables are mod_rewrite's, functions read headers and the
//! environment, file tests go through the sysroot.

use super::Engine;
use super::expand::Lookup;
use super::fs;
use crate::expr::{self, Context, Value};
use std::collections::HashMap;
use std::rc::Rc;

impl Engine<'_> {
    /// Decides `text`; `Err` says why it cannot be decided.
    pub(super) fn decide_expr(&mut self, text: &str) -> Result<bool, String> {
        let parsed = parsed(text)?;
        match parsed.eval(&mut ExprCx(self)) {
            Value::True => Ok(true),
            Value::False => Ok(false),
            Value::Unknown(why) => Err(why),
        }
    }
}

/// Parsed expressions, kept per thread: the same few are met on every request.
fn parsed(text: &str) -> Result<Rc<expr::Expr>, String> {
    thread_local! {
        static CACHE: std::cell::RefCell<HashMap<String, Result<Rc<expr::Expr>, String>>> =
            std::cell::RefCell::new(HashMap::new());
    }
    CACHE.with(|c| {
        c.borrow_mut()
            .entry(text.to_string())
            .or_insert_with(|| {
                expr::parse(text)
                    .map(Rc::new)
                    .map_err(|e| format!("cannot parse the expression: {}", e.message))
            })
            .clone()
    })
}

struct ExprCx<'a, 'm>(&'a mut Engine<'m>);

impl Context for ExprCx<'_, '_> {
    fn var(&mut self, name: &str) -> String {
        self.0.var(name)
    }

    fn func(&mut self, name: &str, arg: &str) -> Option<String> {
        let e = &mut *self.0;
        match name.to_ascii_lowercase().as_str() {
            "req" | "http" => Some(e.req.header(arg).unwrap_or("").to_string()),
            "req_novary" => Some(e.req.header(arg).unwrap_or("").to_string()),
            "reqenv" | "env" => Some(super::access::env_get(&e.env, arg).cloned().unwrap_or_default()),
            "note" => Some(String::new()),
            _ => None,
        }
    }

    fn file_test(&mut self, op: char, path: &str) -> Option<bool> {
        let st = fs::stat(self.0.fs, path);
        match op {
            'd' => Some(st.kind == fs::Kind::Dir),
            'e' => Some(st.kind != fs::Kind::Missing),
            'f' => Some(st.kind == fs::Kind::File),
            's' => Some(st.kind == fs::Kind::File && st.size > 0),
            'L' | 'h' => Some(st.link),
            'x' => Some(st.kind != fs::Kind::Missing && st.executable),
            _ => None,
        }
    }
}
