//! The static lane: the files of a compiled host that lighttpd can serve alone, exactly as
//! Apache would, without entering Lua.
//!
//! A request enters the lane when lighttpd's own view of it proves Apache's answer is
//! "this file, as the default handler sends it": a GET, a Host Apache takes, and
//! a URL-path (decoded and normalised by lighttpd) that names, by its folder and its
//! name, a file for which the per-directory configuration Apache would merge holds no
//! access control, no rule that could act on an existing file, no header, expiry,
//! compression, environment or redirect, and no handler but the default one; its type is
//! the one Apache's mod_mime gives the name (`mimetype.assign` inside the block). A name
//! the configuration has no exact answer for is not in the lane. Whether the file exists
//! is asked by lighttpd (`url.rewrite-if-not-file`): a missing one, a folder, or a path
//! with PATH_INFO goes back through the Lua with the request as it was sent
//! (`request.orig-uri`), which decides it as Apache does (WordPress's index.php).
//!
//! The lane skips one thing the Lua does: the safety net that refuses what an .htaccess
//! written since the conversion governs. So it is switched on only while `lighten watch`
//! keeps the output in step (`var.lighten_lane`, [`WATCHING`]): watch converts such an
//! edit within a second and restarts lighttpd when the lane changes.
//!
//! `<Files>` sections are proven not to concern the lane's names by intersecting their
//! patterns with the lane's name language (DFAs, [`disjoint`]); a pattern that cannot be
//! read that way keeps its folder out of the lane.

use regex_automata::dfa::{Automaton, StartKind, dense};
use regex_automata::util::syntax;
use regex_automata::{Anchored, Input, MatchKind};
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// The file in the output folder `lighten watch` writes while it runs (it sets
/// `var.lighten_lane`, which lighttpd.conf sets to a pattern that never matches first).
/// Beside lighttpd.conf, whose folder only its owner writes: never in the runtime folder,
/// which lighttpd's user owns (lighttpd reads its configuration as root, and a file that
/// user could add there would be root's `include_shell`). A dot file, so `lighten diff`
/// leaves it out as it leaves out the runtime state.
pub const WATCHING: &str = ".watching.conf";
/// The text of [`WATCHING`].
pub const WATCHING_TEXT: &str = "# Written by `lighten watch` while it runs, removed when it stops: the static lane\n\
# of lighttpd.conf is on (an .htaccess edit is converted within a second).\n\
var.lighten_lane := \"\"\n";

/// The extensions the lane may serve: static assets whose answer is the file itself.
pub const EXTENSIONS: &[&str] = &[
    "avif", "bmp", "css", "eot", "gif", "ico", "jpeg", "jpg", "js", "map", "mjs", "mp3", "mp4", "ogg", "otf",
    "pdf", "png", "svg", "ttf", "txt", "webm", "webp", "woff", "woff2",
];

/// Whether Apache's default handler sends a file of type `t` as it is, with no module
/// taking it by its type: the families the lane's extensions have.
pub fn static_type(t: &str) -> bool {
    let t = t.to_ascii_lowercase();
    ["image/", "font/", "audio/", "video/"].iter().any(|p| t.starts_with(p))
        || [
            "text/css",
            "text/javascript",
            "text/plain",
            "application/javascript",
            "application/pdf",
            "application/vnd.ms-fontobject",
            "application/font-woff",
        ]
        .iter()
        .any(|x| t == *x || t.starts_with(&format!("{x};")))
}

/// What the lane of one folder with configuration of its own serves: extension to the
/// Content-Type Apache gives it there, and the extensions that must not appear before
/// the last one (they carry an encoding, a charset or a handler).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FolderLane {
    pub types: BTreeMap<String, String>,
    pub inner: BTreeSet<String>,
}

/// The lane of a host, as lighttpd.conf writes it.
#[derive(Clone, Debug, PartialEq)]
pub struct Lane {
    /// The `$HTTP["url"]` pattern (after `var.lighten_lane`).
    pub url: String,
    /// Extension to Content-Type.
    pub types: BTreeMap<String, String>,
    /// The folders in it and out of it, for the comment above the block.
    pub folders: Vec<String>,
    pub excluded: Vec<String>,
}

/// A Host Apache takes (`lighten_plans.lua`'s host_ok, a subset of it: names whose last
/// label starts with a letter, and ports 1 to 65535 written without leading zeros).
pub const HOST: &str = r"^(?:[a-z0-9_-]+\.)*[a-z][a-z0-9_-]*\.?(?::(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?$";

/// Escapes `s` for a PCRE pattern.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || c == '/' || c == '_' || c == '-' || !c.is_ascii() {
            out.push(c);
        } else {
            out.push('\\');
            out.push(c);
        }
    }
    out
}

/// The lane of a host: `folders` are the folders with configuration of their own, as
/// URL-paths ending in `/` ("/" for the document root), each with its lane or `None`
/// where nothing is in it; `excluded` are URL-path prefixes outside the lane whatever the
/// folder (a `<Location>`, an Alias or a Redirect: Apache decides them before the
/// folder). `None` when nothing is in the lane.
pub fn build(folders: &[(String, Option<FolderLane>)], excluded: &[String]) -> Option<Lane> {
    // One type per extension: an extension two folders type differently is left out.
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let mut conflicting: HashSet<String> = HashSet::new();
    for (_, f) in folders {
        for (e, t) in f.iter().flat_map(|f| &f.types) {
            match types.get(e) {
                Some(u) if u != t => {
                    conflicting.insert(e.clone());
                }
                _ => {
                    types.insert(e.clone(), t.clone());
                }
            }
        }
    }
    types.retain(|e, _| !conflicting.contains(e));
    let within = |d: &str, p: &str| d.starts_with(p);
    // Shallowest first: each folder's term owner, the folder whose term covers it (its
    // own, or its nearest folder above's when that one serves the same: a folder of its
    // own whose configuration changes nothing here leaves lighttpd.conf as it was).
    let mut order: Vec<usize> = (0..folders.len()).collect();
    order.sort_by_key(|&k| (folders[k].0.len(), k));
    let mut owner: Vec<Option<usize>> = vec![None; folders.len()];
    for &k in &order {
        let (dir, f) = &folders[k];
        let Some(f) = f else { continue };
        if excluded.iter().any(|x| within(dir, x)) || !f.types.keys().any(|e| types.contains_key(e)) {
            continue;
        }
        let parent = (0..folders.len())
            .filter(|&j| j != k && folders[j].0.len() < dir.len() && within(dir, &folders[j].0))
            .max_by_key(|&j| folders[j].0.len());
        owner[k] = match parent {
            Some(j) if owner[j].is_some() && folders[j].1.as_ref() == Some(f) => owner[j],
            _ => Some(k),
        };
    }
    let mut terms = Vec::new();
    let mut inside = Vec::new();
    for &k in &order {
        if owner[k] != Some(k) {
            continue;
        }
        let (dir, f) = &folders[k];
        let Some(f) = f else { continue };
        // Below it: the folders another term covers or none does, and the excluded
        // prefixes.
        let below: Vec<String> = (0..folders.len())
            .filter(|&j| owner[j] != Some(k))
            .map(|j| &folders[j].0)
            .chain(excluded)
            .filter(|d| d.len() > dir.len() && within(d, dir))
            .map(|d| escape(&d[dir.len()..]))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let not_below = if below.is_empty() { String::new() } else { format!("(?!{})", below.join("|")) };
        let exts: Vec<String> =
            f.types.keys().filter(|e| types.contains_key(*e)).map(|e| escape(e)).collect();
        // Folders, then the name, neither starting with a dot; the name without an extension of
        // `inner` before the last. (No `%` or control character gets here: lighttpd sends
        // them back through the Lua, `url.rewrite-once`, or refuses them; so the names
        // are those `disjoint` reasons about. One regex, kept simple: it runs on every
        // request the lane serves.)
        let name = if f.inner.is_empty() {
            "[^./][^/]*".to_string()
        } else {
            let list: Vec<String> = f.inner.iter().map(|e| escape(e)).collect();
            format!("[^./](?:(?!\\.(?i:{})\\.)[^/])*", list.join("|"))
        };
        // (folders starting with a dot stay out, .git and the like: the Lua's to answer)
        terms.push(format!("{}{not_below}(?:[^./][^/]*/)*{name}\\.(?:{})", escape(dir), exts.join("|")));
        inside.push(dir.clone());
    }
    if terms.is_empty() {
        return None;
    }
    let url = if terms.len() == 1 { format!("^{}$", terms[0]) } else { format!("^(?:{})$", terms.join("|")) };
    let excluded_dirs: Vec<String> = folders
        .iter()
        .enumerate()
        .filter(|(k, _)| owner[*k].is_none())
        .map(|(_, (d, _))| d.clone())
        .chain(excluded.iter().cloned())
        .collect();
    Some(Lane { url, types, folders: inside, excluded: excluded_dirs })
}

/// What `disjoint` decided, by pattern, glob or not, and extensions.
type Decided = std::collections::HashMap<(String, bool, String), bool>;

/// Whether no name of the lane (a name not starting with a dot, without `/`, `%` or
/// control characters, ending in one of `exts`) matches the `<Files>` section's pattern:
/// `glob` for `<Files name>` (shell wildcards), else a regular expression, searched as
/// Apache's PCRE does. `false` when that cannot be shown (a pattern the DFA does not
/// read: lookaround, backreferences, ...).
pub fn disjoint(pattern: &str, glob: bool, exts: &[&str]) -> bool {
    // The same patterns come back for every folder and every host (the server's own
    // `<FilesMatch "^\.ht">`): each is decided once.
    static SEEN: std::sync::Mutex<Option<Decided>> = std::sync::Mutex::new(None);
    let key = (pattern.to_string(), glob, exts.join(","));
    if let Some(d) = SEEN.lock().ok().and_then(|m| m.as_ref()?.get(&key).copied()) {
        return d;
    }
    let d = decide_disjoint(pattern, glob, exts);
    if let Ok(mut m) = SEEN.lock() {
        m.get_or_insert_with(Default::default).insert(key, d);
    }
    d
}

fn decide_disjoint(pattern: &str, glob: bool, exts: &[&str]) -> bool {
    // A `<Files>` glob as the interpreter's regex (its `(?!/)` before a class says what
    // a lane name, without `/`, never needs); either way only what regex-syntax reads
    // as PCRE2 does.
    let mask = if glob {
        super::site::glob_to_regex(pattern, true).replace("(?!/)", "")
    } else {
        pattern.to_string()
    };
    if !same_in_both(&mask) {
        return false;
    }
    let names = format!(
        r"^[^./%\x00-\x1f\x7f][^/%\x00-\x1f\x7f]*\.(?:{})$",
        exts.iter().map(|e| escape(e)).collect::<Vec<_>>().join("|")
    );
    let build = |p: &str, start: StartKind| {
        dense::Builder::new()
            .syntax(syntax::Config::new().unicode(false).utf8(false))
            .thompson(regex_automata::nfa::thompson::Config::new().utf8(false))
            .configure(
                dense::Config::new()
                    .start_kind(start)
                    .match_kind(MatchKind::All)
                    .dfa_size_limit(Some(4 << 20))
                    .determinize_size_limit(Some(4 << 20)),
            )
            .build(p)
            .map_err(|_| ())
    };
    let Ok(m) = build(&mask, if glob { StartKind::Anchored } else { StartKind::Unanchored }) else {
        return false;
    };
    let Ok(l) = build(&names, StartKind::Anchored) else { return false };
    let mode = if glob { Anchored::Yes } else { Anchored::No };
    let (Ok(sm), Ok(sl)) = (
        m.start_state_forward(&Input::new(&[][..]).anchored(mode)),
        l.start_state_forward(&Input::new(&[][..]).anchored(Anchored::Yes)),
    ) else {
        return false;
    };
    // Breadth-first over pairs of states: a name the lane takes (`l` accepts at its end)
    // that the pattern matches (a match state on the way, or at the end).
    let mut seen = HashSet::new();
    let mut todo = vec![(sm, sl, false)];
    while let Some((a, b, matched)) = todo.pop() {
        if !seen.insert((a, b, matched)) {
            continue;
        }
        if seen.len() > 200_000 || m.is_quit_state(a) || l.is_quit_state(b) {
            return false;
        }
        let ends = l.is_match_state(l.next_eoi_state(b));
        if ends && (matched || m.is_match_state(m.next_eoi_state(a))) {
            return false;
        }
        for byte in 0..=255u8 {
            let nb = l.next_state(b, byte);
            if l.is_dead_state(nb) {
                continue;
            }
            let na = if matched { a } else { m.next_state(a, byte) };
            let now = matched || m.is_match_state(na);
            if !now && m.is_dead_state(na) {
                continue;
            }
            todo.push((if now { sm } else { na }, nb, now));
        }
    }
    true
}

/// Whether regex-syntax reads `p` as PCRE2 does, as far as a simple scan can tell: no
/// `{,n}` (PCRE's text, a repetition to the DFA), no class holding `[`, `&&`, `--` or
/// `~~` (set operations to regex-syntax, characters to PCRE), no escape the two read
/// differently (`\<`, `\>`, `\b{`, `\B{`, `\v`, `\V`, `\h`, `\H`, `\R`, `\N`, `\X`, `\C`,
/// `\K`, `\G`, `\Q`), and no `x` flag (regex-syntax ignores blanks inside a class too).
fn same_in_both(p: &str) -> bool {
    if p.contains("{,") {
        return false;
    }
    let b = p.as_bytes();
    let mut i = 0;
    let mut class: Option<usize> = None;
    while i < b.len() {
        let c = b[i];
        if c == b'\\' {
            let Some(&n) = b.get(i + 1) else { return false };
            if b"<>vVhHRNXCKGQ".contains(&n) || (matches!(n, b'b' | b'B') && b.get(i + 2) == Some(&b'{')) {
                return false;
            }
            i += 2;
            continue;
        }
        match class {
            Some(start) => {
                if c == b']' && i > start + 1 && !(i == start + 2 && b[start + 1] == b'^') {
                    class = None;
                } else if c == b'[' || (matches!(c, b'&' | b'-' | b'~') && b.get(i + 1) == Some(&c)) {
                    return false;
                }
            }
            None => {
                if c == b'[' {
                    class = Some(i);
                } else if c == b'(' && b.get(i + 1) == Some(&b'?') {
                    // inline flags: (?x) or (?x: ...) and the like
                    let flags: Vec<u8> = b[i + 2..]
                        .iter()
                        .copied()
                        .take_while(|f| f.is_ascii_alphabetic() || *f == b'-')
                        .collect();
                    if flags.contains(&b'x') {
                        return false;
                    }
                }
            }
        }
        i += 1;
    }
    class.is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXTS: &[&str] = &["css", "jpg"];

    #[test]
    fn patterns_are_intersected_with_the_lanes_names() {
        // Debian's apache2.conf: .ht* names (the lane's never start with a dot)
        assert!(disjoint(r"^\.ht", false, EXTS));
        // PHP by name, anchored at the end
        assert!(disjoint(r".+\.ph(ar|p|tml)$", false, EXTS));
        assert!(disjoint("wp-config.php", true, EXTS));
        assert!(disjoint("*.log", true, EXTS));
        // unanchored: wp-config.css would match
        assert!(!disjoint("wp-config", false, EXTS));
        assert!(!disjoint(r"\.(css|js)$", false, EXTS));
        assert!(!disjoint("(?i)\\.CSS$", false, EXTS));
        assert!(!disjoint("secret.jpg", true, EXTS));
        assert!(!disjoint("*", true, EXTS));
        // what the DFA does not read is not shown disjoint
        assert!(!disjoint(r"^(?!x)\.ht", false, EXTS));
        assert!(!disjoint("a{,3}", false, EXTS));
        // class set operations regex-syntax reads and PCRE does not (the review's `[g&&x]`)
        assert!(!disjoint(r"\.pn[g&&x]$", false, EXTS));
        assert!(!disjoint(r"\.jp[g--x]$", false, EXTS));
        assert!(!disjoint(r"\.jp[[g]]$", false, EXTS));
        assert!(!disjoint("*.[p&&]ng", true, &["png"]));
        assert!(!disjoint("*.jp[g--x]", true, EXTS));
        assert!(!disjoint(r"(?x)\.jp[ g]$", false, EXTS));
        assert!(!disjoint(r"\v", false, EXTS));
        // a class that starts with `]` or `^]` is read alike
        assert!(disjoint(r"^[]x]\.log$", false, EXTS));
    }

    #[test]
    fn a_folder_out_of_the_lane_is_left_out_below_its_parent() {
        let f = FolderLane {
            types: [("css".to_string(), "text/css".to_string())].into(),
            inner: BTreeSet::new(),
        };
        let lane = build(
            &[("/".into(), Some(f.clone())), ("/wp-content/cache/".into(), None), ("/a/".into(), Some(f))],
            &["/icons/".into()],
        )
        .unwrap();
        // /a/ serves as / does: no term of its own
        assert_eq!(lane.folders, ["/"]);
        assert!(lane.url.starts_with("^/(?!icons/|wp-content/cache/)"), "{}", lane.url);
        let re = pcre2::bytes::Regex::new(&lane.url).unwrap();
        assert!(re.is_match(b"/a/b/style.css").unwrap());
        assert!(re.is_match(b"/style.min.css").unwrap());
        assert!(!re.is_match(b"/wp-content/cache/x.css").unwrap());
        assert!(!re.is_match(b"/icons/x.css").unwrap());
        assert!(!re.is_match(b"/.well-known/x.css").unwrap());
        assert!(!re.is_match(b"/x.CSS").unwrap());
        // (a `%` left in the target is url.rewrite-once's to send back through the Lua)
        assert!(re.is_match(b"/x%2Fy.css").unwrap());
        assert!(!re.is_match(b"/x.php").unwrap());
    }
}
