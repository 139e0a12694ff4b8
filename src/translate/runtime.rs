//! The fixed Lua a conversion ships (templates/lua/), cut to what its compiled hosts use.
//!
//! `lighten_core.lua` and `lighten_plans.lua` hold every phase of Apache's request
//! processing that some configuration needs: mod_alias, Basic authentication, error
//! documents, symbolic links, the rewrite variables and comparisons. Most sites use a few.
//! Each optional part of a template sits between two marker lines:
//!
//! ```lua
//! --@ alias: translate redirects alias_match
//! ...
//! --@ end
//! ```
//!
//! and is kept when a compiled module's text holds one of the words after the part's name
//! (the field of the site record or of a folder's record that its code reads, or the
//! function of lighten_core a compiled rule calls), comments and strings aside. A word
//! that names something else keeps a part that is not needed, which costs bytes and nothing
//! else; a part a module needs is never left out, because a module names what it needs. The shipped file says which parts
//! it leaves out at the end of its first comment, where `lighten watch` reads them back
//! ([`left_out`]).
//!
//! This module does not decide what a site needs (the compiler writes the modules) and
//! writes no file.

use std::collections::BTreeSet;

/// The prefix of a marker line (after the indentation).
const MARK: &str = "--@ ";
/// The line that names the parts a file leaves out.
const LEFT_OUT: &str = "-- Left out here, as no host of this conversion uses them: ";

/// One optional part of a template: its name and the words that keep it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub name: String,
    pub words: Vec<String>,
}

/// The optional parts of `template`, in order of first appearance, each once: read once
/// for lighten_core.lua and lighten_plans.lua (every module of a conversion asks, 2,000 on
/// a big server).
pub fn parts(template: &'static str) -> std::sync::Arc<Vec<Part>> {
    static READ: std::sync::Mutex<Vec<(usize, std::sync::Arc<Vec<Part>>)>> =
        std::sync::Mutex::new(Vec::new());
    let key = template.as_ptr() as usize;
    let mut read = READ.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, p)) = read.iter().find(|(k, _)| *k == key) {
        return p.clone();
    }
    let p = std::sync::Arc::new(read_parts(template));
    read.push((key, p.clone()));
    p
}

fn read_parts(template: &str) -> Vec<Part> {
    let mut out: Vec<Part> = Vec::new();
    for line in template.lines() {
        let Some(p) = marker(line) else { continue };
        if let Some(p) = p
            && !out.iter().any(|o| o.name == p.name)
        {
            out.push(p);
        }
    }
    out
}

/// A marker line: `Some(Some(part))` opens a part, `Some(None)` closes one.
fn marker(line: &str) -> Option<Option<Part>> {
    let rest = line.trim_start().strip_prefix(MARK)?;
    if rest.trim() == "end" {
        return Some(None);
    }
    let (name, words) = rest.split_once(':').unwrap_or((rest, ""));
    Some(Some(Part {
        name: name.trim().to_string(),
        words: words.split_whitespace().map(str::to_string).collect(),
    }))
}

/// What one compiled module needs of the runtime: the parts of lighten_core.lua and of
/// lighten_plans.lua its code names, and whether it loads PCRE2 (lighten_re.lua).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    pub core: BTreeSet<String>,
    pub plans: BTreeSet<String>,
    pub re: bool,
}

impl Needs {
    /// What the module `code` needs.
    pub fn of(code: &str) -> Needs {
        let w = words(code);
        Needs {
            core: needed(super::CORE, &w),
            plans: needed(super::PLANS, &w),
            re: code.contains("require(\"lighten_re\")"),
        }
    }
}

/// What an output's runtime is cut to: the needs of each compiled module file, and
/// whether a host is interpreted (lighten.lua reads every part of lighten_plans.lua and
/// PCRE2). Kept by `lighten watch`, whose site steps replace one site's modules and work
/// out the parts again without reading the others.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Runtime {
    pub modules: std::collections::BTreeMap<std::path::PathBuf, Needs>,
    pub interpreted: bool,
}

impl Runtime {
    /// The parts of lighten_core.lua the output ships.
    pub fn core(&self) -> BTreeSet<String> {
        self.modules.values().flat_map(|n| n.core.iter().cloned()).collect()
    }

    /// The parts of lighten_plans.lua the output ships.
    pub fn plans(&self) -> BTreeSet<String> {
        if self.interpreted {
            return all(super::PLANS);
        }
        self.modules.values().flat_map(|n| n.plans.iter().cloned()).collect()
    }

    /// Whether the output ships lighten_re.lua.
    pub fn re(&self) -> bool {
        self.interpreted || self.modules.values().any(|n| n.re)
    }

    /// The parts of `template` (lighten_core.lua's or lighten_plans.lua's) the output ships.
    pub fn parts_of(&self, template: &str) -> BTreeSet<String> {
        if std::ptr::eq(template, super::CORE) { self.core() } else { self.plans() }
    }
}

/// The template a file of the output is cut from (lua/lighten_core.lua,
/// lua/lighten_plans.lua), if it is one.
pub fn template_of(rel: &std::path::Path) -> Option<&'static str> {
    match rel.to_str()? {
        "lua/lighten_core.lua" => Some(super::CORE),
        "lua/lighten_plans.lua" => Some(super::PLANS),
        _ => None,
    }
}

/// The identifiers in Lua `code` (letters, digits and `_`, not starting with a digit),
/// outside its comments and strings (`"/var/www"` names no `var`).
pub fn words(code: &str) -> BTreeSet<&str> {
    let b = code.as_bytes();
    let mut out = BTreeSet::new();
    let mut i = 0;
    // The end of a long bracket `[==[ ... ]==]` opening at `i`, if one opens there.
    let long = |i: usize| -> Option<usize> {
        let eq = b[i + 1..].iter().take_while(|&&c| c == b'=').count();
        (b.get(i + 1 + eq) == Some(&b'[')).then(|| {
            let close = format!("]{}]", "=".repeat(eq));
            code[i..].find(&close).map_or(b.len(), |k| i + k + close.len())
        })
    };
    while i < b.len() {
        let c = b[i];
        if c == b'-' && b.get(i + 1) == Some(&b'-') {
            i = match (b.get(i + 2) == Some(&b'[')).then(|| long(i + 2)).flatten() {
                Some(end) => end,
                None => code[i..].find('\n').map_or(b.len(), |k| i + k),
            };
        } else if c == b'"' || c == b'\'' {
            i += 1;
            while i < b.len() && b[i] != c && b[i] != b'\n' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c == b'['
            && let Some(end) = long(i)
        {
            i = end;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.insert(&code[start..i]);
        } else if c.is_ascii_digit() {
            // (a number, hexadecimal ones too: `0xff` names no `xff`)
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    out
}

/// The names of every part of `template`.
pub fn all(template: &'static str) -> BTreeSet<String> {
    parts(template).iter().map(|p| p.name.clone()).collect()
}

/// The names of the parts of `template` the modules' `words` need.
pub fn needed(template: &'static str, words: &BTreeSet<&str>) -> BTreeSet<String> {
    parts(template)
        .iter()
        .filter(|p| p.words.iter().any(|w| words.contains(w.as_str())))
        .map(|p| p.name.clone())
        .collect()
}

/// `template` with the parts not in `keep` left out, the marker lines removed, and the
/// names of the parts left out at the end of its first comment.
pub fn cut(template: &str, keep: &BTreeSet<String>) -> String {
    let mut out = String::with_capacity(template.len());
    // (a part inside a part left out is left out too)
    let mut open: Vec<bool> = Vec::new();
    let mut dropped: Vec<String> = Vec::new();
    for (n, line) in template.split_inclusive('\n').enumerate() {
        match marker(line) {
            Some(Some(p)) => {
                let kept = keep.contains(&p.name);
                if !kept && !dropped.contains(&p.name) {
                    dropped.push(p.name);
                }
                open.push(kept);
            }
            Some(None) => {
                open.pop();
            }
            None if open.iter().all(|k| *k) => out.push_str(line),
            None => {}
        }
        debug_assert!(n > 0 || marker(line).is_none(), "a template starts with its title line");
    }
    debug_assert!(open.is_empty(), "a part of a template is not closed");
    if dropped.is_empty() {
        return out;
    }
    // (at the end of the comment the file starts with)
    let mut at = 0;
    for line in out.split_inclusive('\n') {
        if !line.starts_with("--") {
            break;
        }
        at += line.len();
    }
    out.insert_str(at, &format!("--\n{LEFT_OUT}{}.\n", dropped.join(", ")));
    out
}

/// The parts a shipped file says it leaves out (none when it does not say).
pub fn left_out(shipped: &str) -> BTreeSet<String> {
    let said = shipped.lines().take_while(|l| l.starts_with("--")).find_map(|l| l.strip_prefix(LEFT_OUT));
    said.map(|l| l.trim_end_matches('.').split(", ").map(str::to_string).collect()).unwrap_or_default()
}

/// The parts a shipped copy of `template` keeps.
pub fn kept(template: &'static str, shipped: &str) -> BTreeSet<String> {
    let out = left_out(shipped);
    parts(template).iter().map(|p| p.name.clone()).filter(|n| !out.contains(n)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "-- title\nlocal a = 1\n--@ alias: translate redirects\nlocal b = 2\n  --@ inner: xyz\n  c()\n  --@ end\n--@ end\n--@ auth: auth\nlocal d = 4\n--@ end\nreturn a\n";

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parts_are_kept_by_the_words_modules_use() {
        let words = words("local x = site.translate -- auth in a comment does not count");
        assert_eq!(needed(T, &words), set(&["alias"]));
        let words = super::words("f(\"/var/auth\", 'x\\'auth', [==[auth]==], 0xauth) --[[auth\n]] auth = 1");
        assert_eq!(needed(T, &words), set(&["auth"]));
        assert_eq!(super::words("s = \"a\" .. b --[[ c ]] d"), ["b", "d", "s"].into_iter().collect());
        assert_eq!(needed(T, &super::words("redirects = 1")), set(&["alias"]));
        assert_eq!(needed(T, &super::words("nothing_here(translated)")), set(&[]));
    }

    #[test]
    fn a_cut_leaves_out_what_is_not_kept_and_says_so() {
        let all = cut(T, &set(&["alias", "inner", "auth"]));
        assert_eq!(all, "-- title\nlocal a = 1\nlocal b = 2\n  c()\nlocal d = 4\nreturn a\n");
        assert_eq!(left_out(&all), set(&[]));
        let some = cut(T, &set(&["auth", "inner"]));
        assert_eq!(
            some,
            "-- title\n--\n-- Left out here, as no host of this conversion uses them: alias.\nlocal a = 1\nlocal d = 4\nreturn a\n"
        );
        assert_eq!(left_out(&some), set(&["alias"]));
        assert_eq!(kept(T, &some), set(&["auth", "inner"]));
        let none = cut(T, &set(&[]));
        assert_eq!(left_out(&none), set(&["alias", "inner", "auth"]));
        assert_eq!(cut(T, &kept(T, &none)), none);
    }
}
