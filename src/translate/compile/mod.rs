//! The compiled tier: a virtual host as a Lua module of its own (`lua/<site>.lua`), run by
//! `templates/lua/lighten_core.lua`, instead of lighten.lua interpreting the site as data.
//!
//! What Apache merges per directory is merged here, at conversion time: for every folder
//! that has a `<Directory>` section or a `.htaccess` file (an *anchor*), and for every
//! combination of the `<Files>` sections that can apply there, one constant table (a
//! *record*) with what the request needs: denied or not, the compiled rule set, Options,
//! DirectoryIndex, the handler, MIME settings, headers and expiry.  The request picks its
//! record with a few string comparisons.  Each rule set becomes one Lua function of
//! straight tests, each with the Apache line above it ([`rules`]).
//!
//! Only what this tier carries exactly is compiled; a host that uses anything else
//! (server-context rules other than [P] ones, `<If>`, `<Location>`, authentication,
//! SetEnvIf, RewriteMap, rule flags such as [C], [N], [S], [P], [B]) stays with the
//! interpreter, and [`host`] says why.  The same differential tests hold both against
//! Apache.

mod merge;
mod rules;

use super::Site;
use super::lua;
use crate::model::{Matcher, Model, Scope, ScopeKind};
use merge::{Merged, apply};

/// `Require all granted|denied` decided without a request (merge::static_authz).
pub fn merge_static_authz(z: &crate::model::access::Authz) -> Option<bool> {
    merge::static_authz(z)
}
use std::collections::BTreeMap;
use std::fmt::Write;

/// A compiled host.
pub struct Compiled {
    /// The host, for the module's first line ("the virtual host example.test (file:line)").
    pub what: String,
    /// The module's source after its first line.
    pub body: String,
    /// Whether the host needs the response-start hook (headers, expiry, mod_deflate's Vary).
    pub response: bool,
    /// The files lighttpd may serve alone while `lighten watch` runs (`translate::lane`).
    pub lane: Option<super::lane::Lane>,
}

/// The most `<Files>` sections that may apply in one folder: each one doubles the
/// records written for it (Drupal's .htaccess and the server's defaults make six).
const MAX_FILES: usize = 6;
/// The most `<Files>` and `<Location>` sections together (Plesk's vhost with PHP in
/// `<Files>` and its four statistics and Let's Encrypt `<Location>` sections has 7).
const MAX_SECTIONS: usize = 7;

/// What applies in one folder: the scopes in merge order, each with the directory its
/// rules are relative to.
struct Anchor<'m> {
    dir: String,
    /// This folder only (not the folders under it).
    exact: bool,
    chain: Vec<(&'m Scope, String, String)>,
    files: Vec<&'m Scope>,
    broken: bool,
}

/// What every host of a conversion shares: the extensions lighttpd's fastcgi.server takes
/// and the types mod_deflate compresses (`conf::php_extensions`, `conf::deflate_types`).
pub struct Shared {
    pub php_exts: Vec<String>,
    pub deflate: Vec<String>,
    /// Apache's TypesConfig: extension (lower case) to type.
    pub mime: BTreeMap<String, String>,
}

/// Compiles host `i` (a vhost, or the main server for `None`), or says why it cannot be.
pub fn host(model: &Model, site: &Site, i: Option<usize>, shared: &Shared) -> Result<Compiled, String> {
    let (name, docroot, canonical) = match i {
        Some(i) => {
            let v = &model.vhosts[i];
            (v.server_name.clone(), v.document_root.clone(), v.use_canonical_name.eq_ignore_ascii_case("on"))
        }
        None => {
            let h = model.server.settings.host();
            (
                h.server_name.as_ref().map(|s| s.value.clone()),
                h.document_root.as_ref().map(|d| d.value.clone()),
                h.use_canonical_name.as_ref().is_some_and(|u| u.value.eq_ignore_ascii_case("on")),
            )
        }
    };
    // Apache's compiled-in default when none is configured (as lighten.lua has it).
    let docroot = match docroot {
        Some(d) => (site.map_path)(&d).trim_end_matches('/').to_string(),
        None => "/var/www/html".to_string(),
    };
    if !crate::eval::rewrite_maps(model, i).is_empty() {
        return Err("RewriteMap".into());
    }
    let vscope = i.map(|i| &model.vhosts[i].scope);
    for top in std::iter::once(&model.server).chain(vscope) {
        check_scope(top, true)?;
    }
    let sections = crate::model::htaccess::directory_sections(&model.server, vscope);
    let mut dirs: Vec<(&Scope, String)> = Vec::new();
    for (sec, path) in &sections {
        let mapped = (site.map_path)(path).trim_end_matches('/').to_string();
        if mapped.contains(['*', '?', '[']) {
            return Err(format!("the wildcard <Directory {path}>"));
        }
        check_scope(sec, false)?;
        dirs.push((sec, mapped));
    }
    let mut htaccess: BTreeMap<String, (Option<&Scope>, bool)> = BTreeMap::new();
    for h in model.htaccess.iter().filter(|h| h.host_ids.contains(&i)) {
        let dir =
            (site.map_path)(if h.dir.is_empty() { "/" } else { &h.dir }).trim_end_matches('/').to_string();
        match h.status {
            crate::model::HtaccessStatus::Applied => {
                if let Some(s) = &h.scope {
                    check_scope(s, false)?;
                    htaccess.insert(dir, (Some(s), false));
                }
            }
            crate::model::HtaccessStatus::Broken => {
                htaccess.insert(dir, (None, true));
            }
            _ => {}
        }
    }

    // Where Alias and AliasMatch map to (up to the first `$` of a pattern's target).
    let alias_targets: Vec<String> = std::iter::once(&model.server)
        .chain(vscope)
        .flat_map(|top| top.settings.aliases.iter())
        .map(|a| {
            let to = (site.map_path)(&a.to);
            match to.find('$') {
                Some(k) => to[..k].rsplit_once('/').map(|(d, _)| d.to_string()).unwrap_or_default(),
                None => to.trim_end_matches('/').to_string(),
            }
        })
        .collect();
    // The folders they map into: their files have the configuration of where they are
    // (an Alias of one file has no folder of its own).
    let alias_roots: Vec<String> = alias_targets
        .iter()
        .filter(|t| t.len() > 1 && !std::path::Path::new(t.as_str()).is_file())
        .cloned()
        .collect();
    // The anchors: the document root, and every folder under it or under an alias's
    // folder with configuration of its own, deepest first.
    let below =
        |d: &str, root: &str| d.len() > root.len() && d.starts_with(root) && d.as_bytes()[root.len()] == b'/';
    let under = |d: &str| below(d, &docroot) || alias_roots.iter().any(|r| d == r || below(d, r));
    let mut anchor_dirs: Vec<String> = dirs
        .iter()
        .map(|(_, p)| p.clone())
        .chain(htaccess.keys().cloned())
        .chain(alias_roots.iter().cloned())
        .filter(|d| d != &docroot && under(d))
        .collect();
    anchor_dirs.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    anchor_dirs.dedup();
    anchor_dirs.push(docroot.clone());
    // Where the walk may end outside those folders: the nearest existing folder above an
    // alias target that does not exist (Plesk's Let's Encrypt folder before the first
    // certificate), and the folder of an Alias of one file.  Each has the configuration
    // of its own for that folder only; any other folder answers 404 (fails closed).
    let mut exact_dirs: Vec<String> = Vec::new();
    for fixed in &alias_targets {
        let mut stop = std::path::Path::new(fixed);
        if stop.is_dir() {
            continue;
        }
        // (the folder of a file, or the nearest existing one above a missing target)
        while !stop.is_dir() {
            match stop.parent() {
                Some(p) => stop = p,
                None => break,
            }
        }
        let stop = stop.to_string_lossy().trim_end_matches('/').to_string();
        if !stop.is_empty() && stop != docroot && !under(&stop) && !exact_dirs.contains(&stop) {
            exact_dirs.push(stop);
        }
    }
    let fenced = !alias_roots.is_empty() || !exact_dirs.is_empty();
    let exact_count = exact_dirs.len();
    let anchor_dirs: Vec<String> = exact_dirs.into_iter().chain(anchor_dirs).collect();
    let mut anchors = Vec::new();
    for (n, dir) in anchor_dirs.iter().enumerate() {
        let mut a = Anchor {
            dir: dir.clone(),
            exact: n < exact_count,
            chain: Vec::new(),
            files: Vec::new(),
            broken: false,
        };
        for level in levels(dir) {
            for (sec, p) in &dirs {
                if *p == level {
                    a.chain.push((sec, format!("{p}/"), describe(site, &docroot, sec)));
                }
            }
            if let Some((s, broken)) = htaccess.get(&level) {
                a.broken |= *broken;
                if let Some(s) = s {
                    a.chain.push((s, format!("{level}/"), short_at(&docroot, site.at(s.at))));
                }
            }
        }
        for top in std::iter::once(&model.server).chain(vscope) {
            a.files.extend(top.children.iter().filter(|c| c.enabled && is_files(c)));
        }
        for (s, _, _) in &a.chain {
            a.files.extend(s.children.iter().filter(|c| c.enabled && is_files(c)));
        }
        if a.files.len() > MAX_FILES {
            return Err(format!("{} <Files> sections apply in {dir}", a.files.len()));
        }
        anchors.push(a);
    }

    // <Location> and <LocationMatch> of the server, then of the virtual host (config order).
    let locations: Vec<&Scope> = std::iter::once(&model.server)
        .chain(vscope)
        .flat_map(|t| t.children.iter())
        .filter(|c| c.enabled && matches!(c.kind, ScopeKind::Location | ScopeKind::LocationMatch))
        .collect();
    if let Some(a) = anchors.iter().find(|a| a.files.len() + locations.len() > MAX_SECTIONS) {
        return Err(format!(
            "{} <Files> and {} <Location> sections apply in {}",
            a.files.len(),
            locations.len(),
            a.dir
        ));
    }

    // The <Location> sections a folder's URLs can match: the URLs that map into an
    // anchor's folders start with its folder's path under the document root, or with an
    // Alias's URL-path whose target is at, above or below it; a `<Location>` path that is
    // neither a prefix of such a start nor starts with it cannot match them.  A
    // `<LocationMatch>`, or a host with AliasMatch or ScriptAlias, keeps them all.
    let mut url_starts: Vec<Vec<String>> = Vec::new();
    let mut pattern_aliases = false;
    let mut plain_aliases: Vec<(String, String)> = Vec::new();
    for top in std::iter::once(&model.server).chain(vscope) {
        for a in &top.settings.aliases {
            match (&a.kind, &a.from) {
                (crate::model::alias::AliasKind::Alias, Some(from)) => plain_aliases
                    .push((from.clone(), (site.map_path)(&a.to).trim_end_matches('/').to_string())),
                _ => pattern_aliases = true,
            }
        }
    }
    for a in &anchors {
        let mut starts = Vec::new();
        if a.dir == docroot {
            starts.push(String::new());
        } else if let Some(rel) = a.dir.strip_prefix(&docroot).filter(|r| r.starts_with('/')) {
            starts.push(rel.to_string());
        }
        for (from, to) in &plain_aliases {
            let from = from.trim_end_matches('/');
            if let Some(rest) = a.dir.strip_prefix(to.as_str()).filter(|r| r.is_empty() || r.starts_with('/'))
            {
                starts.push(format!("{from}{rest}"));
            } else if to.starts_with(a.dir.as_str()) {
                starts.push(from.to_string());
            }
        }
        url_starts.push(starts);
    }
    let can_match = |ai: usize, l: &Scope| -> bool {
        let Some(Matcher::Path(p)) = &l.matcher else { return true };
        if pattern_aliases || anchors[ai].exact {
            return true;
        }
        let p = p.trim_end_matches('/');
        url_starts[ai].iter().any(|q| p.starts_with(q.as_str()) || q.starts_with(p))
    };

    let mut w = Writer::new(site, &docroot);
    // Whether an ErrorDocument can answer here (the header functions then take `errdoc`).
    fn has_errdocs(s: &Scope) -> bool {
        !s.settings.error_documents.is_empty() || s.children.iter().any(|c| c.enabled && has_errdocs(c))
    }
    w.errdocs = std::iter::once(&model.server)
        .chain(vscope)
        .chain(dirs.iter().map(|(s, _)| *s))
        .chain(htaccess.values().filter_map(|(s, _)| *s))
        .any(has_errdocs);
    let loaded = |m: &str| model.modules.iter().any(|x| x.id == m);
    // Records, by anchor and <Files> mask.
    let mut anchor_records: Vec<Vec<String>> = vec![Vec::new(); anchors.len()];
    let mut a_locs: Vec<Vec<&Scope>> = vec![Vec::new(); anchors.len()];
    let mut root_record: Option<String> = None;
    // The static lane: each folder's, and the URL-paths Apache decides before the folder.
    let mut lane_folders: Vec<(String, Option<super::lane::FolderLane>)> = Vec::new();
    let mut lane_excluded: Vec<String> = Vec::new();
    for (ai, a) in anchors.iter().enumerate().rev() {
        let mut names: Vec<String> = Vec::new();
        let nf = a.files.len();
        let locs: Vec<&Scope> = locations.iter().copied().filter(|l| can_match(ai, l)).collect();
        a_locs[ai] = locs.clone();
        // Two `<Location>` paths of which neither starts with the other never both match
        // (a URL they match starts with each): such masks take the record without the
        // later one, which no request asks for.
        let path_of = |l: &Scope| match &l.matcher {
            Some(Matcher::Path(p)) => Some(p.trim_end_matches('/').to_string()),
            _ => None,
        };
        let exclusive = |i: usize, j: usize| match (path_of(locs[i]), path_of(locs[j])) {
            (Some(p), Some(q)) => !p.starts_with(q.as_str()) && !q.starts_with(p.as_str()),
            _ => false,
        };
        // The folder's own merge (the server, the vhost, the sections and .htaccess files
        // of the chain), once; each mask adds its <Files> and <Location> sections to it.
        let mut folder = Merged::default();
        apply(&mut folder, &model.server, "/");
        if let Some(v) = vscope {
            apply(&mut folder, v, "/");
        }
        for (s, dir, _) in &a.chain {
            apply(&mut folder, s, dir);
        }
        if !a.exact
            && let Some(rel) = a.dir.strip_prefix(&docroot).filter(|r| r.is_empty() || r.starts_with('/'))
        {
            let mut out = false;
            for l in &locs {
                match &l.matcher {
                    Some(Matcher::Path(p))
                        if l.kind == ScopeKind::Location && !p.contains(['*', '?', '[']) =>
                    {
                        lane_excluded.push(p.clone())
                    }
                    _ => out = true,
                }
            }
            let lane = if out { None } else { folder_lane(&folder, a, shared, &loaded) };
            lane_folders.push((format!("{rel}/"), lane));
        }
        for mask in 0..(1usize << (nf + locs.len())) {
            let set: Vec<usize> = (0..locs.len()).filter(|j| mask & (1 << (nf + j)) != 0).collect();
            let never = set
                .iter()
                .enumerate()
                .find_map(|(x, &j)| set[..x].iter().any(|&i| exclusive(i, j)).then_some(j));
            if let Some(j) = never {
                let same = names[mask & !(1 << (nf + j))].clone();
                names.push(same);
                continue;
            }
            let mut m = folder.clone();
            let (mut applied, mut at_urls) = (Vec::new(), Vec::new());
            for (k, f) in a.files.iter().chain(&locs).enumerate() {
                if mask & (1 << k) != 0 {
                    apply(&mut m, f, &format!("{}/", a.dir));
                    if k < nf { &mut applied } else { &mut at_urls }.push(describe(w.site, &w.docroot, f));
                }
            }
            // (a record of several sections names them without their lines: each has a
            // record of its own above, with its line)
            if applied.len() + at_urls.len() > 1 {
                for d in applied.iter_mut().chain(at_urls.iter_mut()) {
                    if let Some((what, _)) = d.rsplit_once(" (") {
                        *d = what.to_string();
                    }
                }
            }
            let title = if applied.is_empty() && at_urls.is_empty() {
                let rel = match a.dir.strip_prefix(&docroot) {
                    Some("") => "DOCROOT".to_string(),
                    Some(r) => format!("DOCROOT{r}"),
                    None => a.dir.clone(),
                };
                let from: Vec<String> = a.chain.iter().map(|(_, _, at)| at.clone()).collect();
                let from =
                    if from.is_empty() { "the server's defaults".to_string() } else { from.join(", ") };
                let scope = if a.exact { "(this folder only)" } else { "and the folders under it" };
                format!("{rel} {scope}: {from}")
            } else {
                let names = if applied.is_empty() {
                    String::new()
                } else {
                    format!(" for names matching {}", applied.join(" and "))
                };
                let urls = if at_urls.is_empty() {
                    String::new()
                } else {
                    format!(" at URLs in {}", at_urls.join(" and "))
                };
                format!("  ...{names}{urls}")
            };
            let base_name = names.first().cloned().or(root_record.clone());
            let base_value = base_name.as_ref().and_then(|b| w.record_values.get(b).cloned());
            let base = base_name.as_deref().zip(base_value.as_ref());
            let name = w.record(&m, a.broken, &title, &loaded, base)?;
            names.push(name);
        }
        if root_record.is_none() {
            root_record = names.first().cloned();
        }
        anchor_records[ai] = names;
    }

    // The configuration of a folder and a file name in it.
    let mut f = String::new();
    f.push_str("-- The configuration of folder `dir` for the name `base` in it: the records above,\n");
    f.push_str("-- by the deepest folder with configuration of its own and the <Files> sections\n");
    if locations.is_empty() {
        f.push_str("-- that match the name.\n");
        f.push_str("local function dirconf(dir, base)\n");
    } else {
        f.push_str("-- that match the name, and the <Location> sections that match the URL-path `uri`\n");
        f.push_str("-- (none for nil: they hold only Options and access control).\n");
        f.push_str("local function dirconf(dir, base, uri)\n");
    }
    for ((a, names), locs) in anchors.iter().zip(&anchor_records).zip(&a_locs) {
        let is_root = a.dir == docroot;
        let indent = if is_root && !fenced { "  " } else { "    " };
        if !is_root {
            // The folder and its prefix, relative to the document root when under it.
            let k = match a.dir.strip_prefix(&docroot) {
                Some(rel) if rel.starts_with('/') => {
                    let rel = lua::string(rel);
                    w.constant(&format!("{{ DOCROOT .. {rel}, DOCROOT .. {rel} .. \"/\" }}"), "")
                }
                _ => {
                    let d = lua::string(&a.dir);
                    let p = lua::string(&format!("{}/", a.dir));
                    w.constant(&format!("{{ {d}, {p} }}"), "")
                }
            };
            if a.exact {
                let _ = writeln!(f, "  if dir == {k}[1] then");
            } else {
                let _ = writeln!(f, "  if dir == {k}[1] or sub(dir, 1, #{k}[2]) == {k}[2] then");
            }
        } else if fenced {
            f.push_str("  if dir == DOCROOT or sub(dir, 1, #DOCROOT + 1) == DOCROOT .. \"/\" then\n");
        }
        let is_root = is_root && !fenced;
        if names.iter().all(|n| *n == names[0]) {
            let _ = writeln!(f, "{indent}return {}", names[0]);
        } else {
            let _ = writeln!(f, "{indent}local m = 1");
            for (k, s) in a.files.iter().chain(locs).enumerate() {
                // (a bit that changes nothing here is not tested)
                if names.iter().enumerate().all(|(j, n)| *n == names[j & !(1 << k)]) {
                    continue;
                }
                let test = if k < a.files.len() { w.files_test(s)? } else { w.location_test(s)? };
                let _ = writeln!(f, "{indent}-- {}", describe(w.site, &w.docroot, s));
                let _ = writeln!(f, "{indent}if {test} then m = m + {} end", 1 << k);
            }
            let list: Vec<&str> = names.iter().map(String::as_str).collect();
            let c = format!("C[{}]", w.masks.len() + 1);
            w.masks.push(format!("{c} = {{ {} }}\n", list.join(", ")));
            let _ = writeln!(f, "{indent}return {c}[m]");
        }
        if !is_root {
            f.push_str("  end\n");
        }
    }
    if fenced {
        let mut m = Merged { outside: true, ..Merged::default() };
        apply(&mut m, &model.server, "/");
        if let Some(v) = vscope {
            apply(&mut m, v, "/");
        }
        let title = "A folder no URL of this host reaches but through a missing alias target: 404";
        let name = w.record(&m, false, title, &loaded, None)?;
        f.push_str("  -- (the walk ended outside the document root and the alias targets)\n");
        let _ = writeln!(f, "  return {name}");
    }
    f.push_str("end\n");

    // SetEnvIf of the server and the virtual host: once, before the first round.
    let mut early: Vec<&crate::model::env::EnvRule> = Vec::new();
    for top in std::iter::once(&model.server).chain(vscope) {
        early.extend(top.settings.env.iter().filter(|r| merge::is_setenvif(r)));
    }
    let early_present = !early.is_empty();
    let early = if early.is_empty() { None } else { Some(w.setenvif(&early, true)?) };
    // The ErrorDocuments of the server and the virtual host: those of an error answered
    // before the directory walk.
    let mut top_docs: BTreeMap<u16, &crate::model::dir::ErrorDocument> = BTreeMap::new();
    for top in std::iter::once(&model.server).chain(vscope) {
        for e in &top.settings.error_documents {
            top_docs.insert(e.status, e);
        }
    }
    let top_docs: Vec<_> = top_docs.into_values().collect();
    let top_docs = if top_docs.is_empty() { None } else { Some(w.error_docs(&top_docs)) };
    w.response |= top_docs.is_some();
    // mod_alias of the virtual host and the server, when the request is read
    // (translate_name): the vhost's redirects, the server's, then the aliases the same way.
    let mut redirects: Vec<&crate::model::alias::Redirect> = Vec::new();
    let mut aliases: Vec<&crate::model::alias::Alias> = Vec::new();
    for top in vscope.into_iter().chain(std::iter::once(&model.server)) {
        redirects.extend(top.settings.redirects.iter());
        aliases.extend(top.settings.aliases.iter());
    }
    let server_rules = crate::eval::server_rules(model, i);
    let server_rules_present = !server_rules.is_empty();
    let server_rules = if server_rules.is_empty() { None } else { Some(w.server_rule_set(&server_rules)?) };
    let translate = if redirects.is_empty() && aliases.is_empty() {
        None
    } else {
        let cgi = loaded("cgi_module") || loaded("cgid_module");
        Some(w.mod_alias(&redirects, &aliases, cgi, "of the virtual host and the server")?)
    };
    let response = w.response || !shared.deflate.is_empty();
    let mut out = String::new();
    let what = match i {
        Some(i) => format!(
            "the virtual host {} ({})",
            name.as_deref().unwrap_or("without a name"),
            w.site.at(model.vhosts[i].scope.at)
        ),
        None => "the main server".to_string(),
    };
    out.push_str("-- lighten_core.lua runs it (the order of Apache's phases); this file holds what this\n");
    out.push_str("-- site's configuration decides, each part with the Apache line it comes from.\n");
    out.push_str("-- Regenerate with `lighten convert`; edits here are lost then.\n\n");
    out.push_str("local core = require(\"lighten_core\")\n");
    if w.uses_re {
        out.push_str("local re = require(\"lighten_re\")\n");
        out.push_str("local exec = re.exec\n");
    }
    // (the helpers of lighten_core the code below calls, filled in once it is written: a
    // part of lighten_core no module names is left out of it, translate::runtime)
    let helpers_at = out.len();
    out.push_str("local byte, sub, find, lower = string.byte, string.sub, string.find, string.lower\n");
    out.push_str("local _ = byte, sub, find, lower\n");
    if w.uses_alias {
        out.push_str("local alias_match, escape_path = core.alias_match, core.escape_path\n");
    }
    out.push('\n');
    let _ = writeln!(out, "local DOCROOT = {}\n", lua::string(&docroot));
    out.push_str("-- R: regular expressions, S: byte sets and constants, F: functions, D: the\n");
    out.push_str("-- per-folder records, C: the records of a folder by <Files> mask.\n");
    out.push_str("local R, S, F, D, C = {}, {}, {}, {}, {}\n");
    out.push_str("local _ = R, S, F, D, C\n\n");
    if !w.regexes.is_empty() {
        out.push_str("-- Regular expressions, matched by PCRE2 with Apache's options (lighten_re).\n");
        for (n, (pattern, prog)) in w.regexes.iter().enumerate() {
            let _ = writeln!(out, "R[{}] = {prog} -- {}", n + 1, comment(pattern));
        }
        out.push('\n');
    }
    for s in &w.sets {
        out.push_str(s);
    }
    for body in &w.functions {
        out.push_str(body);
        out.push('\n');
    }
    for r in &w.records {
        out.push_str(r);
        out.push('\n');
    }
    if !w.masks.is_empty() {
        out.push_str("-- The records of a folder by the <Files> sections that match (1 + their bits).\n");
        for m in &w.masks {
            out.push_str(m);
        }
        out.push('\n');
    }
    out.push_str(&f);
    out.push('\n');
    let mut t = lua::Value::table();
    t.set("name", name.unwrap_or_else(|| "localhost".into()));
    t.set("canonical", canonical);
    if model.keeps_slashes(i) {
        // MergeSlashes Off (code merge-slashes-off)
        t.set("keep_slashes", true);
    }
    t.set("server_admin", crate::eval::server_admin(model, i));
    t.set("docroot", lua::Value::Raw("DOCROOT".into()));
    t.set("dirconf", lua::Value::Raw("dirconf".into()));
    t.set("early_env", early.map(lua::Value::Raw));
    t.set("error_docs", top_docs.map(lua::Value::Raw));
    t.set("server_rules", server_rules.map(lua::Value::Raw));
    t.set("translate", translate.map(lua::Value::Raw));
    t.set("autoindex", loaded("autoindex_module"));
    // Symbolic links Apache refuses (false) or, with lighttpd's follow-symlink off, the
    // targets of those it follows (translate::links).
    let host_links = site.links.get(i.unwrap_or(model.vhosts.len())).cloned().unwrap_or_default();
    let refuses = host_links.links.values().any(Option::is_none);
    t.set("links", host_links.lua());
    // IndexIgnore (conf::index_ignore): a listing showing such a name is refused
    let ignore = super::conf::index_ignore_list(model, i);
    t.set("may_hide", w.may_hide || refuses || ignore.is_some());
    if let Some(l) = ignore {
        t.set("index_ignore", l);
    }
    if w.auth {
        t.set("auth", true);
    }
    if !locations.is_empty() {
        t.set("locations", true);
    }
    // Whether responses get mod_expires, mod_headers or mod_deflate's Vary.
    t.set("finish", response);
    let mut exts = lua::Value::table();
    for e in &shared.php_exts {
        exts.set(e, true);
    }
    t.set("php_exts", exts);
    let mut d = lua::Value::table();
    for ty in &shared.deflate {
        d.set(ty, true);
    }
    t.set("deflate", if d.is_empty() { lua::Value::Raw("{}".into()) } else { d });
    t.set("mime", lua::Value::Raw("require(\"lighten_mime\")".into()));
    out.push_str("return ");
    out.push_str(&t.render(0));
    out.push('\n');
    let used = super::runtime::words(&out[helpers_at..]);
    let helpers: Vec<&str> =
        ["header", "header_nv", "var", "test_file"].into_iter().filter(|h| used.contains(h)).collect();
    if !helpers.is_empty() {
        let core: Vec<String> = helpers.iter().map(|h| format!("core.{h}")).collect();
        out.insert_str(helpers_at, &format!("local {} = {}\n", helpers.join(", "), core.join(", ")));
    }
    // The lane, unless the host reads the request before the folder decides (rules of the
    // server, SetEnvIf, a pattern of mod_alias), keeps `//`, or has symbolic links Apache
    // judges otherwise than lighttpd follows them.
    let pattern_alias = redirects.iter().any(|r| r.regex || r.from.is_none())
        || aliases.iter().any(|a| a.kind != crate::model::alias::AliasKind::Alias || a.from.is_none());
    let lane = if server_rules_present
        || early_present
        || pattern_alias
        || model.keeps_slashes(i)
        || host_links.strict
        || !host_links.links.is_empty()
    {
        None
    } else {
        lane_excluded.extend(redirects.iter().filter_map(|r| r.from.clone()));
        lane_excluded.extend(aliases.iter().filter_map(|a| a.from.clone()));
        super::lane::build(&lane_folders, &lane_excluded)
    };
    Ok(Compiled { what, body: out, response, lane })
}

/// The Lua module name of each host (as `conf::hosts` numbers them), after its
/// ServerName: `example_test`, `main_server`; a second host of the same name gets `_2`.
pub fn module_names(model: &Model) -> Vec<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    super::conf::hosts(model)
        .iter()
        .map(|h| {
            let base = match h {
                Some(i) => model.vhosts[*i].server_name.clone().unwrap_or_else(|| "vhost".into()),
                None => "main_server".into(),
            };
            let mut n: String = base
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' })
                .collect();
            if n.starts_with(|c: char| c.is_ascii_digit()) || n.starts_with("lighten") {
                n = format!("site_{n}");
            }
            let k = seen.entry(n.clone()).or_insert(0);
            *k += 1;
            if *k > 1 { format!("{n}_{k}") } else { n }
        })
        .collect()
}

/// What a folder's merged configuration lets lighttpd serve alone (`translate::lane`):
/// `None` when anything in it could act on a static file, else each extension of
/// [`super::lane::EXTENSIONS`] with the type Apache's mod_mime gives it there.
fn folder_lane(
    m: &Merged,
    a: &Anchor,
    shared: &Shared,
    loaded: &dyn Fn(&str) -> bool,
) -> Option<super::lane::FolderLane> {
    let plain = !a.broken
        && !m.outside
        && !m.require_ssl
        && matches!(m.access(), merge::Access::Open)
        && m.options & merge::opt::SYM_LINKS != 0
        && m.env.is_empty()
        && m.redirects.is_empty()
        && m.headers.is_empty()
        && !m.expires_active
        && m.force_type.is_none()
        && !m.etag_none
        && m.set_handler.is_none_or(|h| h.served_by_default(loaded))
        && m.rewrite
            .as_ref()
            .is_none_or(|rw| !rw.engine || rw.rules.is_empty() || rules::noop_for_files(&rw.rules));
    if !plain {
        return None;
    }
    let exts = super::lane::EXTENSIONS;
    for f in &a.files {
        let ok = match &f.matcher {
            Some(Matcher::Path(p)) => super::lane::disjoint(p, true, exts),
            Some(Matcher::Regex(r)) => super::lane::disjoint(r, false, exts),
            _ => false,
        };
        if !ok {
            return None;
        }
    }
    let mut lane = super::lane::FolderLane::default();
    lane.inner.extend(m.encodings.keys().cloned());
    lane.inner.extend(m.charsets.keys().cloned());
    lane.inner.extend(m.add_handlers.iter().map(|(e, _)| e.clone()));
    for e in exts {
        let e = e.to_string();
        if m.encodings.contains_key(&e) || m.add_handlers.iter().any(|(x, _)| *x == e) {
            continue;
        }
        let t = match m.types.get(&e) {
            Some(Some(t)) => t.clone(),
            Some(None) => continue,
            None => match shared.mime.get(&e) {
                Some(t) => t.clone(),
                None => continue,
            },
        };
        // Only a type the default handler sends as it is (a type a module handles, as
        // mod_php's application/x-httpd-php by AddType, is not).
        if shared.deflate.iter().any(|d| d.eq_ignore_ascii_case(&t)) || !super::lane::static_type(&t) {
            continue;
        }
        // mod_mime's charset, else AddDefaultCharset on text/plain and text/html.
        let cs = m.charsets.get(&e).cloned().or_else(|| {
            m.default_charset.and_then(|c| {
                let text = t.starts_with("text/plain") || t.starts_with("text/html");
                if c.eq_ignore_ascii_case("off") || !text {
                    None
                } else if c.eq_ignore_ascii_case("on") {
                    Some("iso-8859-1".to_string())
                } else {
                    Some(c.to_string())
                }
            })
        });
        let t = match cs {
            Some(cs) if !t.contains("charset=") => format!("{t}; charset={cs}"),
            _ => t,
        };
        lane.types.insert(e, t);
    }
    Some(lane)
}

fn is_files(s: &Scope) -> bool {
    matches!(s.kind, ScopeKind::Files | ScopeKind::FilesMatch)
}

/// The ancestors of `dir` as the merge visits them: "", "/var", "/var/www", ...
fn levels(dir: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    for (k, _) in dir.match_indices('/').skip(1) {
        out.push(dir[..k].to_string());
    }
    if !dir.is_empty() {
        out.push(dir.to_string());
    }
    out
}

/// A source line for a comment of the module: a file under the document root named from
/// `DOCROOT`, the constant at the module's top.
/// (A file named relative to the folder lighten ran in is under the document root when
/// the document root ends with its folders.)
fn short_at(docroot: &str, at: String) -> String {
    if let Some(rest) = at.strip_prefix(docroot)
        && rest.starts_with('/')
    {
        return format!("DOCROOT{rest}");
    }
    if !at.starts_with('/') {
        let under = at.match_indices('/').rev().find(|(k, _)| {
            let dir = &at[..*k];
            docroot.strip_suffix(dir).is_some_and(|head| head.ends_with('/'))
        });
        if let Some((k, _)) = under {
            return format!("DOCROOT{}", &at[k..]);
        }
    }
    at
}

fn describe(site: &Site, docroot: &str, s: &Scope) -> String {
    let what = match (&s.kind, &s.matcher) {
        (ScopeKind::Directory, Some(Matcher::Path(p))) => format!("<Directory {p}>"),
        (ScopeKind::Files, Some(Matcher::Path(p))) => format!("<Files {p:?}>"),
        (ScopeKind::FilesMatch, Some(Matcher::Regex(r))) | (ScopeKind::Files, Some(Matcher::Regex(r))) => {
            format!("<FilesMatch {r:?}>")
        }
        _ => crate::model::describe_scope(s),
    };
    format!("{what} ({})", short_at(docroot, site.at(s.at)))
}

/// A byte set as a Lua pattern class (`[^/]`), anchored by `anchor` (`^` before it, `$`
/// after it): ranges of three bytes or more as `a-z`, every byte that is not a letter or a
/// digit escaped with `%`, the complement when it is shorter.
fn lua_class(set: crate::luare::byteset::ByteSet, anchor: &str) -> Vec<u8> {
    fn class(set: &crate::luare::byteset::ByteSet) -> Vec<u8> {
        let bytes: Vec<u8> = set.iter().collect();
        let mut out = Vec::new();
        let one = |out: &mut Vec<u8>, b: u8| {
            if !b.is_ascii_alphanumeric() {
                out.push(b'%');
            }
            out.push(b);
        };
        // (a range only between letters or digits: Lua reads `%x-y` as `%x`, `-`, `y`)
        let mut i = 0;
        while i < bytes.len() {
            let mut j = i;
            while j + 1 < bytes.len()
                && bytes[j + 1] == bytes[j] + 1
                && bytes[j].is_ascii_alphanumeric()
                && bytes[j + 1].is_ascii_alphanumeric()
            {
                j += 1;
            }
            if j - i >= 2 {
                one(&mut out, bytes[i]);
                out.push(b'-');
                one(&mut out, bytes[j]);
            } else {
                (i..=j).for_each(|k| one(&mut out, bytes[k]));
            }
            i = j + 1;
        }
        out
    }
    let (yes, no) = (class(&set), class(&set.negate()));
    let body = if no.len() < yes.len() {
        [b"[^".as_slice(), &no, b"]"].concat()
    } else {
        [b"[".as_slice(), &yes, b"]"].concat()
    };
    match anchor {
        "^" => [b"^".as_slice(), &body].concat(),
        _ => [body.as_slice(), b"$"].concat(),
    }
}

/// One line of a Lua comment.
fn comment(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

/// What this tier carries of a scope; anything else keeps the host interpreted.
fn check_scope(s: &Scope, top: bool) -> Result<(), String> {
    let st = &s.settings;
    let at = |what: &str| Err(format!("{what} ({})", crate::model::describe_scope(s)));
    for a in &st.aliases {
        if a.from.is_none() {
            return at("Alias without a URL-path");
        }
    }
    if st.redirects.iter().any(|r| r.from.is_none()) {
        return at("Redirect without a URL-path");
    }
    for r in &st.env {
        let d = r.directive.to_ascii_lowercase();
        if !(merge::is_setenvif(r) || d == "setenv" || d == "unsetenv") {
            return at(&r.directive);
        }
    }
    if st.fallback_resource.is_some() {
        return at("FallbackResource");
    }
    let a = st.access();
    // Basic authentication against a password file, as lighttpd's mod_auth checks it
    // (conf::auth_block); in the server or virtual host itself it stays interpreted.
    let auth = a.auth_type.is_some() || a.auth_name.is_some() || a.auth_user_file.is_some();
    if (auth && top)
        || a.auth_type.as_ref().is_some_and(|t| !t.value.eq_ignore_ascii_case("basic"))
        || a.auth_group_file.is_some()
        || a.checks_other_than_file()
    {
        return at("authentication");
    }
    for z in &a.require {
        let login = matches!(z, crate::model::access::Authz::Require { negated: false, provider, .. }
            if !top && (provider.eq_ignore_ascii_case("valid-user") || provider.eq_ignore_ascii_case("user")));
        if !login {
            merge::static_authz(z).ok_or_else(|| {
                format!("a Require the compiler does not decide ({})", crate::model::describe_scope(s))
            })?;
        }
    }
    for r in a.allow.iter().chain(&a.deny) {
        if !r.from.iter().all(|h| h.eq_ignore_ascii_case("all")) {
            return at("Allow/Deny from hosts");
        }
    }
    // What narrows access and is not carried over: the interpreter answers 403 there.
    if let Some(d) = s
        .directives
        .iter()
        .find(|d| d.enabled && super::report::access_not_carried(&d.name, &d.args).is_some())
    {
        return at(&d.name);
    }
    // SSLRequireSSL is a record's flag; a client certificate is not asked for per folder.
    if s.directives.iter().any(|d| {
        d.enabled
            && d.name.eq_ignore_ascii_case("SSLVerifyClient")
            && !d.args.trim().eq_ignore_ascii_case("none")
    }) {
        return at("mod_ssl access");
    }
    for h in &st.headers {
        // RequestHeader is reported unsupported and left out by both tiers (it grants no
        // access; lighttpd does not hand a `Proxy` header to PHP as HTTP_PROXY anyway).
        if h.request {
            continue;
        }
        if h.condition.is_some() {
            return at("a conditional Header");
        }
        if !matches!(h.action.as_str(), "set" | "unset" | "append" | "merge" | "add" | "setifempty") {
            return at(&format!("Header {}", h.action));
        }
        if h.action != "unset" && h.literal().is_none() {
            return at("a Header value with %{VAR}e, %t, %D or expr=");
        }
    }
    // Rules written in the server or vhost itself are server-context rules, checked
    // by the caller (there are none in a compiled host).
    if !top {
        for r in &st.rewrite().rules {
            rules::check(r)?;
        }
    }
    for c in s.children.iter().filter(|c| c.enabled) {
        match c.kind {
            ScopeKind::Files | ScopeKind::FilesMatch => {
                if !c.settings.rewrite().rules.is_empty() {
                    return Err("RewriteRule in <Files>".into());
                }
                if c.children.iter().any(|x| x.enabled) {
                    return Err("sections inside <Files>".into());
                }
                check_scope(c, false)?;
            }
            ScopeKind::Directory if top && matches!(c.matcher, Some(Matcher::Path(_))) => {}
            ScopeKind::VirtualHost if top => {}
            ScopeKind::Location | ScopeKind::LocationMatch if top => check_location(c)?,
            ScopeKind::Directory
            | ScopeKind::DirectoryMatch
            | ScopeKind::Location
            | ScopeKind::LocationMatch
            | ScopeKind::If
            | ScopeKind::ElseIf
            | ScopeKind::Else
            | ScopeKind::Limit
            | ScopeKind::LimitExcept => {
                return Err(crate::model::describe_scope(c));
            }
            _ => {}
        }
    }
    Ok(())
}

/// A `<Location>` or `<LocationMatch>` of the server or the virtual host: this tier
/// carries those that hold Options and access directives only (what Plesk writes for
/// /plesk-stat/ and the Let's Encrypt folder), merged into the records after the
/// `<Files>` sections, as Apache's location walk comes after its file walk.
fn check_location(c: &Scope) -> Result<(), String> {
    const CARRIED: [&str; 6] = ["Options", "Require", "Order", "Allow", "Deny", "Satisfy"];
    let what = crate::model::describe_scope(c);
    if let Some(Matcher::Path(p)) = &c.matcher
        && p.contains(['*', '?', '['])
    {
        return Err(format!("the wildcard {what}"));
    }
    if let Some(d) =
        c.directives.iter().find(|d| d.enabled && !CARRIED.iter().any(|n| d.name.eq_ignore_ascii_case(n)))
    {
        return Err(format!("{} in {what}", d.name));
    }
    if c.children.iter().any(|x| x.enabled) {
        return Err(format!("sections inside {what}"));
    }
    check_scope(c, false)
}

/// The text of the module being written.
struct Writer<'s, 'a> {
    site: &'s Site<'a>,
    docroot: String,
    regexes: Vec<(String, String)>,
    re_index: BTreeMap<(String, bool), usize>,
    uses_re: bool,
    /// Whether a mod_alias function is written (it uses core's alias helpers).
    uses_alias: bool,
    /// Whether the host has ErrorDocuments (header functions take `errdoc`).
    errdocs: bool,
    /// The lines that make the constants `S[n]`, and their names by text.
    sets: Vec<String>,
    constants: BTreeMap<String, String>,
    functions: Vec<String>,
    /// Rule-set function names by the rules' spans.
    rule_sets: BTreeMap<Vec<(u32, u32, u32)>, String>,
    function_names: BTreeMap<String, String>,
    records: Vec<String>,
    record_names: BTreeMap<String, String>,
    record_values: BTreeMap<String, lua::Value>,
    /// The `<Files>` mask tables of the folders (`C1 = { D1, D2 }`).
    masks: Vec<String>,
    response: bool,
    may_hide: bool,
    /// Whether a record asks for a login (the decision cache then keys on the user).
    auth: bool,
    /// The constants written for ErrorDocument lists, by the directives.
    error_doc_names: BTreeMap<Vec<(u16, *const crate::model::dir::ErrorDocument)>, String>,
}

impl<'s, 'a> Writer<'s, 'a> {
    fn new(site: &'s Site<'a>, docroot: &str) -> Self {
        Writer {
            site,
            docroot: docroot.to_string(),
            regexes: Vec::new(),
            re_index: BTreeMap::new(),
            uses_re: false,
            uses_alias: false,
            errdocs: false,
            sets: Vec::new(),
            constants: BTreeMap::new(),
            functions: Vec::new(),
            rule_sets: BTreeMap::new(),
            function_names: BTreeMap::new(),
            records: Vec::new(),
            record_names: BTreeMap::new(),
            record_values: BTreeMap::new(),
            masks: Vec::new(),
            response: false,
            may_hide: false,
            auth: false,
            error_doc_names: BTreeMap::new(),
        }
    }

    /// Where a directive is, for a comment ([`short_at`]).
    fn at(&self, span: crate::source::Span) -> String {
        short_at(&self.docroot, self.site.at(span))
    }

    /// `R<n>` for a pattern.
    fn regex(&mut self, pattern: &str, caseless: bool) -> Result<String, String> {
        self.uses_re = true;
        let key = (pattern.to_string(), caseless);
        if let Some(n) = self.re_index.get(&key) {
            return Ok(format!("R[{n}]"));
        }
        let c = crate::luare::compile_with(pattern, &crate::luare::Options::apache(caseless))
            .map_err(|u| format!("the regex {pattern:?}: {}", u.reason))?;
        self.regexes.push((pattern.to_string(), c.program));
        let n = self.regexes.len();
        self.re_index.insert(key, n);
        Ok(format!("R[{n}]"))
    }

    /// A boolean Lua expression: whether `pattern` matches `subject` (an expression), or
    /// `None` when only running the regex can say (the caller uses `exec`).
    fn test(&mut self, pattern: &str, caseless: bool, subject: &str) -> Option<String> {
        use crate::luare::fast::Fast;
        let opts = crate::luare::Options::apache(caseless);
        let Some(f) = crate::luare::fast::fast(pattern, &opts) else {
            // (how the subject ends: `.+\.ph(ar|p|tml)$`)
            let e = crate::luare::fast::ends(pattern, &opts)?;
            let s = if e.ci { format!("lower({subject})") } else { subject.to_string() };
            let terms: Vec<String> = e
                .ends
                .iter()
                .map(|l| {
                    let cmp = format!("sub({s}, -{}) == {}", l.len(), lua::bytes(l));
                    if e.min > 0 { format!("#{subject} >= {} and {cmp}", l.len() + e.min) } else { cmp }
                })
                .collect();
            return Some(format!("({})", terms.join(" or ")));
        };
        let s = if caseless { format!("lower({subject})") } else { subject.to_string() };
        let lit = |b: &[u8]| lua::bytes(&if caseless { b.to_ascii_lowercase() } else { b.to_vec() });
        Some(match f {
            Fast::Whole { .. } => "true".into(),
            Fast::Equal(b) => format!("{s} == {}", lit(&b)),
            Fast::Prefix(b) => format!("sub({s}, 1, {}) == {}", b.len(), lit(&b)),
            Fast::Suffix(b) if !b.is_empty() => format!("sub({s}, -{}) == {}", b.len(), lit(&b)),
            Fast::Contains(b) | Fast::ContainsWhole(b) => format!("find({s}, {}, 1, true) ~= nil", lit(&b)),
            Fast::Empty => format!("{subject} == \"\""),
            Fast::NonEmpty => format!("{subject} ~= \"\""),
            // (a byte set as a Lua pattern class, which compares bytes; the search starts
            // at the last byte)
            Fast::LastIn(set) | Fast::FirstRun { set, min: 1 } if set.is_empty() => "false".into(),
            Fast::LastIn(set) if set.is_full() => format!("{subject} ~= \"\""),
            Fast::FirstRun { set, min: 1 } if set.is_full() => format!("{subject} ~= \"\""),
            Fast::LastIn(set) => {
                format!("find({subject}, {}, #{subject}) ~= nil", lua::bytes(&lua_class(set, "$")))
            }
            // Sets come folded from the parser: no lower() needed.
            Fast::FirstRun { set, min: 1 } => {
                format!("find({subject}, {}) ~= nil", lua::bytes(&lua_class(set, "^")))
            }
            Fast::AnyWhole { alts, ci, .. } => {
                let s = if ci { format!("lower({subject})") } else { subject.to_string() };
                let parts: Vec<String> =
                    alts.iter().map(|a| format!("find({s}, {}, 1, true)", lua::bytes(a))).collect();
                format!("({}) ~= nil", parts.join(" or "))
            }
            _ => return None,
        })
    }

    /// `S[n]`: a constant made when the module loads (a byte set, a list of header
    /// names, a folder's paths), written once per text, with a comment when it has one.
    fn constant(&mut self, text: &str, note: &str) -> String {
        if let Some(n) = self.constants.get(text) {
            return n.clone();
        }
        let n = format!("S[{}]", self.constants.len() + 1);
        let note = if note.is_empty() { String::new() } else { format!(" -- {}", comment(note)) };
        self.sets.push(format!("{n} = {text}{note}\n"));
        self.constants.insert(text.to_string(), n.clone());
        n
    }

    /// The Lua test of a `<Files>` section against `base`.
    /// The test of `uri` a `<Location>` or `<LocationMatch>` makes (as lighten.lua's
    /// `location_match`): the path as a prefix, ending in a slash or followed by one (or
    /// by nothing).
    fn location_test(&mut self, s: &Scope) -> Result<String, String> {
        match &s.matcher {
            Some(Matcher::Regex(re)) => {
                if let Some(t) = self.test(re, false, "uri") {
                    return Ok(format!("uri and {t}"));
                }
                let r = self.regex(re, false)?;
                Ok(format!("uri and core.matches({r}, uri)"))
            }
            Some(Matcher::Path(p)) => {
                let lit = lua::string(p);
                let n = p.len();
                Ok(match p.ends_with('/') {
                    true => format!("uri and sub(uri, 1, {n}) == {lit}"),
                    false => format!(
                        "uri and sub(uri, 1, {n}) == {lit} and (#uri == {n} or byte(uri, {}) == 47)",
                        n + 1
                    ),
                })
            }
            _ => Err("a <Location> section without a path".into()),
        }
    }

    fn files_test(&mut self, s: &Scope) -> Result<String, String> {
        let re = match &s.matcher {
            Some(Matcher::Regex(r)) => r.clone(),
            Some(Matcher::Path(p)) if p.contains(['*', '?', '[']) => super::site::glob_to_regex(p, false),
            Some(Matcher::Path(p)) => return Ok(format!("base == {}", lua::string(p))),
            _ => return Err("a <Files> section without a name".into()),
        };
        if let Some(t) = self.test(&re, false, "base") {
            return Ok(t);
        }
        let r = self.regex(&re, false)?;
        Ok(format!("core.matches({r}, base)"))
    }

    /// The name of the record for a merged configuration, written once per content.
    fn record(
        &mut self,
        m: &Merged,
        broken: bool,
        title: &str,
        loaded: &dyn Fn(&str) -> bool,
        base: Option<(&str, &lua::Value)>,
    ) -> Result<String, String> {
        let mut t = lua::Value::table();
        if broken {
            t.set("broken", true);
        }
        if m.require_ssl {
            t.set("require_ssl", true);
        }
        match if m.outside { merge::Access::Denied(404) } else { m.access() } {
            merge::Access::Open => {}
            merge::Access::Denied(status) => {
                t.set("denied", status as i64);
                self.may_hide = true;
            }
            // A Require that wants a user where no AuthType (or no AuthName) is in force:
            // Apache answers 500 ("AuthType not set", "need AuthName"), to everybody.
            merge::Access::Login { realm: None, .. } => {
                t.set("denied", 500i64);
                self.may_hide = true;
            }
            merge::Access::Login { users, file, realm } => {
                let mut a = lua::Value::table();
                // (the path as lighttpd.conf's auth block names it in X-Lighten-Auth-File;
                // false without an AuthUserFile: no login is ever accepted there)
                match file {
                    Some(f) => a.set("file", (self.site.map_path)(&f)),
                    None => a.set("file", lua::Value::Bool(false)),
                };
                a.set("realm", realm);
                if let Some(users) = users {
                    let mut u = lua::Value::table();
                    for name in users {
                        u.set(&name, true);
                    }
                    a.set("users", u);
                }
                t.set("auth", a);
                self.may_hide = true;
                self.auth = true;
            }
        }
        if let Some(rw) = &m.rewrite
            && rw.engine
            && !rw.rules.is_empty()
        {
            let name = self.rule_set(&rw.rules)?;
            t.set("rules", lua::Value::Raw(name));
            // Relative to the document root where it is under it (readable, and the same
            // text wherever the site lives).
            match rw.directory.strip_prefix(self.docroot.as_str()) {
                Some(rel) if rel.starts_with('/') => {
                    t.set("perdir", lua::Value::Raw(format!("DOCROOT .. {}", lua::string(rel))));
                }
                _ => {
                    t.set("perdir", rw.directory.as_str());
                }
            }
            t.set("base", rw.base.map(str::to_string));
            if rw.allow_no_slash {
                t.set("allow_no_slash", true);
            }
            t.set("symlinks", m.options & (merge::opt::SYM_LINKS | merge::opt::SYM_OWNER) != 0);
            if rules::noop_for_files(&rw.rules) {
                t.set("files_pass", true);
            }
        }
        t.set("indexes", m.options & merge::opt::INDEXES != 0);
        t.set("slash", m.slash);
        let names: Vec<String> = m.index.map(|i| i.to_vec()).unwrap_or_else(|| vec!["index.html".into()]);
        if !names.iter().any(|n| n.eq_ignore_ascii_case("disabled")) {
            t.set("index", names);
        }
        let handler = |h: &crate::model::mime::Handler| -> Result<&'static str, String> {
            use crate::model::mime::Handler;
            if h.served_by_default(loaded) {
                return Ok("file");
            }
            match h {
                Handler::FastCgi { .. } | Handler::ModPhp { .. } | Handler::Fcgid => Ok("php"),
                Handler::Default { .. } => Ok("file"),
                Handler::Other { name } => Err(format!("the handler {name}")),
            }
        };
        if let Some(h) = m.set_handler {
            t.set("set_handler", handler(h)?);
        }
        if !m.add_handlers.is_empty() {
            let mut by_ext = BTreeMap::new();
            for (e, h) in &m.add_handlers {
                by_ext.insert(e.clone(), handler(h)?);
            }
            let mut hs = lua::Value::table();
            for (e, h) in by_ext {
                hs.set(&e, h);
            }
            t.set("handlers", hs);
        }
        t.set("force_type", m.force_type.map(str::to_string));
        let map = |x: &BTreeMap<String, Option<String>>| {
            let mut v = lua::Value::table();
            for (k, val) in x {
                v.set(
                    k,
                    match val {
                        Some(s) => lua::Value::Str(s.clone()),
                        None => lua::Value::Bool(false),
                    },
                );
            }
            v
        };
        t.set("types", map(&m.types));
        t.set("encodings", map(&m.encodings.iter().map(|(k, v)| (k.clone(), Some(v.clone()))).collect()));
        t.set("charsets", map(&m.charsets.iter().map(|(k, v)| (k.clone(), Some(v.clone()))).collect()));
        if let Some(cs) = m.default_charset {
            if cs.eq_ignore_ascii_case("on") {
                t.set("default_charset", "iso-8859-1");
            } else if !cs.eq_ignore_ascii_case("off") {
                t.set("default_charset", cs);
            }
        }
        if m.etag_none {
            t.set("etag_none", true);
        }
        if !m.env.is_empty() {
            let name = self.setenvif(&m.env, false)?;
            t.set("env", lua::Value::Raw(name));
        }
        if !m.setenv.is_empty() {
            let mut v = lua::Value::table();
            for (n, val) in &m.setenv {
                let mut pair = lua::Value::table();
                pair.push(n.as_str());
                if let Some(val) = val {
                    pair.push(val.as_str());
                }
                v.push(pair);
            }
            t.set("setenv", v);
        }
        if !m.headers.is_empty() {
            let name = self.headers(&m.headers);
            t.set("headers", lua::Value::Raw(name));
            self.response = true;
        }
        if m.expires_active {
            let spec = |s: &crate::model::expires::ExpiresSpec| {
                let base = match s.base {
                    crate::model::expires::ExpiresBase::Access => "A",
                    crate::model::expires::ExpiresBase::Modification => "M",
                };
                lua::Value::Raw(format!("{{ \"{base}\", {} }}", s.seconds))
            };
            let mut x = lua::Value::table();
            if let Some(d) = &m.expires_default {
                x.set("default", spec(d));
            }
            let mut bt = lua::Value::table();
            for (ty, s) in &m.expires_by_type {
                bt.set(ty, spec(s));
            }
            x.set("by_type", bt);
            if !x.is_empty() {
                t.set("expires", x);
                self.response = true;
            }
        }
        if !m.redirects.is_empty() {
            let name = self.mod_alias(&m.redirects, &[], false, "of the folder")?;
            t.set("redirects", lua::Value::Raw(name));
        }
        if !m.error_docs.is_empty() {
            let docs: Vec<&crate::model::dir::ErrorDocument> = m.error_docs.values().copied().collect();
            t.set("errdocs", lua::Value::Raw(self.error_docs(&docs)));
            // A document PHP answers gets its status back at response start.
            self.response = true;
        }
        let body = t.render(0);
        if let Some(n) = self.record_names.get(&body) {
            return Ok(n.clone());
        }
        let n = format!("D[{}]", self.record_names.len() + 1);
        // Written as the changes to a record of the same folder (or the document
        // root's) when that is shorter.
        let mut text = format!("{n} = {body}\n");
        if let (Some((bn, bt)), lua::Value::Table(fields)) = (base, &t)
            && let lua::Value::Table(bfields) = bt
        {
            let mut changes = lua::Value::table();
            for (k, v) in fields {
                if !bfields.iter().any(|(bk, bv)| bk == k && bv == v)
                    && let Some(k) = k
                {
                    changes.set(k, v.clone());
                }
            }
            for (bk, _) in bfields {
                if let Some(bk) = bk
                    && !fields.iter().any(|(k, _)| k.as_ref() == Some(bk))
                {
                    changes.set(bk, lua::Value::Bool(false));
                }
            }
            let ext = format!("{n} = core.extend({bn}, {})\n", changes.render(0));
            if ext.len() < text.len() {
                text = ext;
            }
        }
        self.records.push(format!("-- {}\n{text}", comment(title)));
        self.record_names.insert(body, n.clone());
        self.record_values.insert(n.clone(), t);
        Ok(n)
    }

    /// The function for a rule list, written once per list.
    fn rule_set(&mut self, list: &[&crate::model::rewrite::RewriteRule]) -> Result<String, String> {
        let key: Vec<(u32, u32, u32)> = list.iter().map(|r| (r.at.file.0, r.at.start, r.at.end)).collect();
        if let Some(n) = self.rule_sets.get(&key) {
            return Ok(n.clone());
        }
        let n = format!("F.rules_{}", self.rule_sets.len() + 1);
        let body = rules::function(self, &n, list, false)?;
        self.functions.push(body);
        self.rule_sets.insert(key, n.clone());
        Ok(n)
    }

    /// The function for the rules of the server and the virtual host.
    fn server_rule_set(&mut self, list: &[&crate::model::rewrite::RewriteRule]) -> Result<String, String> {
        for r in list {
            rules::check_server(r)?;
        }
        let n = "F.server_rules".to_string();
        let body = rules::function(self, &n, list, true)?;
        self.functions.push(body);
        Ok(n)
    }

    /// The function that runs SetEnvIf rules for a request (mod_setenvif).
    /// `server`: the rules of the server and the virtual host themselves, which mod_setenvif
    /// runs before the URL is decoded (Request_URI is the path as sent).
    fn setenvif(&mut self, list: &[&crate::model::env::EnvRule], server: bool) -> Result<String, String> {
        let mut body = String::new();
        for r in list {
            let (Some(attr), Some(test)) = (&r.attribute, &r.test) else { continue };
            if crate::model::env::is_header_regex(attr) {
                return Err(format!("SetEnvIf on header names matching {attr:?}"));
            }
            let value = match attr.to_ascii_lowercase().as_str() {
                "request_uri" if server => "core.raw_path(cx)".to_string(),
                "request_uri" => "cx.uri".to_string(),
                "request_method" => "cx.method".to_string(),
                "remote_addr" | "remote_host" => "core.remote(cx)".to_string(),
                "server_addr" => "core.server_addr(cx)".to_string(),
                "request_protocol" => "core.protocol()".to_string(),
                _ => format!("core.header_or_env(cx, {})", lua::string(attr)),
            };
            let _ = writeln!(
                body,
                "  -- {} {} {} {} ({})",
                r.directive,
                attr,
                comment(test),
                comment(&r.assignments.join(" ")),
                self.at(r.at)
            );
            let caps = r.assignments.iter().any(|a| a.contains('$'));
            let cond = match (caps, self.test(test, r.nocase, "s")) {
                (false, Some(t)) => {
                    let _ = writeln!(body, "  s = {value}");
                    t
                }
                _ => {
                    let re = self.regex(test, r.nocase)?;
                    let _ = writeln!(body, "  m = exec({re}, {value})");
                    "m".to_string()
                }
            };
            let _ = writeln!(body, "  if {cond} then");
            for a in &r.assignments {
                if let Some(n) = a.strip_prefix('!') {
                    let _ = writeln!(body, "    core.set_env(cx, {}, nil)", lua::string(n));
                } else {
                    let (n, v) = a.split_once('=').unwrap_or((a.as_str(), "1"));
                    let v = if v.contains('$') {
                        format!("core.dollars({}, m)", lua::string(v))
                    } else {
                        lua::string(v)
                    };
                    let _ = writeln!(body, "    core.set_env(cx, {}, {v})", lua::string(n));
                }
            }
            body.push_str("  end\n");
        }
        if let Some(n) = self.function_names.get(&body) {
            return Ok(n.clone());
        }
        let n = format!("F.setenvif_{}", self.function_names.len() + 1);
        self.functions.push(format!(
            "-- mod_setenvif, in merge order, for each round of the request.\nfunction {n}(cx)\n  local s, m\n  local _ = s, m\n{body}end\n"
        ));
        self.function_names.insert(body, n.clone());
        Ok(n)
    }

    /// The function for mod_alias's redirects, then its aliases, tried in order on the
    /// URL-path: `"redirect", status, target` (a target still to be made absolute),
    /// `"file", path`, `"fail"` when PCRE2 gave up, or nothing.  Written once per content.
    fn mod_alias(
        &mut self,
        redirects: &[&crate::model::alias::Redirect],
        aliases: &[&crate::model::alias::Alias],
        cgi: bool,
        what: &str,
    ) -> Result<String, String> {
        use crate::model::alias::AliasKind;
        self.uses_alias = true;
        let mut body = String::new();
        for r in redirects {
            let from = r.from.as_deref().unwrap_or("/");
            let kind = if r.regex { "RedirectMatch" } else { "Redirect" };
            let _ = writeln!(
                body,
                "  -- {kind} {} {} {} ({})",
                r.status,
                comment(from),
                comment(r.to.as_deref().unwrap_or("")),
                self.at(r.at)
            );
            let to = lua::string(r.to.as_deref().unwrap_or(""));
            if r.regex {
                let re = self.regex(from, false)?;
                let _ = writeln!(body, "  m = exec({re}, uri)");
                body.push_str("  if m == false then return \"fail\" end\n");
                if r.to.is_some() {
                    let _ = writeln!(
                        body,
                        "  if m then return \"redirect\", {}, core.regex_redirect(core.dollars({to}, m)) end",
                        r.status
                    );
                } else {
                    let _ = writeln!(body, "  if m then return \"redirect\", {}, \"\" end", r.status);
                }
            } else {
                let _ = writeln!(body, "  n = alias_match(uri, {})", lua::string(from));
                let target = if r.to.is_some() {
                    format!("{to} .. escape_path(sub(uri, n + 1))")
                } else {
                    "\"\"".into()
                };
                let _ = writeln!(body, "  if n then return \"redirect\", {}, {target} end", r.status);
            }
        }
        for a in aliases {
            let from = a.from.as_deref().unwrap_or("/");
            let to_path = (self.site.map_path)(&a.to);
            let to = lua::string(&to_path);
            let regex = matches!(a.kind, AliasKind::AliasMatch | AliasKind::ScriptAliasMatch);
            let script = matches!(a.kind, AliasKind::ScriptAlias | AliasKind::ScriptAliasMatch);
            // A ScriptAlias program runs through mod_cgi(d) in Apache; without those the
            // default handler sends it as a file, as an Alias's.
            let kind = if script && cgi { "\"cgi\"" } else { "\"file\"" };
            let _ = writeln!(
                body,
                "  -- {}{} {} {} ({})",
                if script { "Script" } else { "" },
                if regex { "AliasMatch" } else { "Alias" },
                comment(from),
                comment(&a.to),
                self.at(a.at)
            );
            if regex {
                let re = self.regex(from, false)?;
                let _ = writeln!(body, "  m = exec({re}, uri)");
                body.push_str("  if m == false then return \"fail\" end\n");
                let _ = writeln!(body, "  if m then return {kind}, core.dollars({to}, m) end");
            } else {
                let _ = writeln!(body, "  n = alias_match(uri, {})", lua::string(from));
                let _ = writeln!(body, "  if n then return {kind}, {to} .. sub(uri, n + 1) end");
            }
        }
        if let Some(n) = self.function_names.get(&body) {
            return Ok(n.clone());
        }
        let n = format!("F.alias_{}", self.function_names.len() + 1);
        self.functions.push(format!(
            "-- mod_alias {what}, in Apache's order on the URL-path: \"redirect\", the status and the\n-- target, or \"file\" (\"cgi\" for a program) and the path it maps to.\nfunction {n}(uri)\n  local n, m\n  local _ = n, m\n{body}end\n"
        ));
        self.function_names.insert(body, n.clone());
        Ok(n)
    }

    /// The ErrorDocuments in force, by status, as one constant: `{ [404] = { "local",
    /// "/404.html" } }` (kinds: local, remote, text, default), the lines in its comment.
    fn error_docs(&mut self, docs: &[&crate::model::dir::ErrorDocument]) -> String {
        use crate::model::dir::ErrorAction;
        // (every record of a folder asks for the same list: written once)
        let key: Vec<(u16, *const crate::model::dir::ErrorDocument)> =
            docs.iter().map(|d| (d.status, *d as *const _)).collect();
        if let Some(name) = self.error_doc_names.get(&key) {
            return name.clone();
        }
        let mut parts = Vec::new();
        let mut lines = Vec::new();
        for d in docs {
            let v = match &d.action {
                ErrorAction::Local(p) => format!("{{ \"local\", {} }}", lua::string(p)),
                ErrorAction::Remote(u) => format!("{{ \"remote\", {} }}", lua::string(u)),
                ErrorAction::Text(t) => format!("{{ \"text\", {} }}", lua::string(t)),
                ErrorAction::Default => "{ \"default\" }".to_string(),
            };
            parts.push(format!("[{}] = {v}", d.status));
            lines.push(format!("ErrorDocument {} ({})", d.status, self.at(d.at)));
        }
        let name = self.constant(&format!("{{ {} }}", parts.join(", ")), &lines.join(", "));
        self.error_doc_names.insert(key, name.clone());
        name
    }

    /// The function that applies a list of Header directives to a response.
    fn headers(&mut self, list: &[&crate::model::headers::HeaderRule]) -> String {
        let mut body = String::new();
        for h in list {
            // check_scope let only text values through.
            let v = lua::string(&h.literal().unwrap_or_default());
            let n = lua::string(&h.name);
            let line = match h.action.as_str() {
                "set" => format!("rh[{n}] = {v}"),
                "unset" => format!("rh[{n}] = \"\""),
                "append" => format!("core.append(rh, {n}, {v}, false)"),
                "add" => format!("core.append(rh, {n}, {v}, false)"),
                "merge" => format!("core.append(rh, {n}, {v}, true)"),
                _ => format!("if (rh[{n}] or \"\") == \"\" then rh[{n}] = {v} end"),
            };
            let always = h.table == "always";
            let cond = match (always, self.errdocs) {
                (true, _) => "",
                (false, true) => "if status < 300 or errdoc then ",
                (false, false) => "if status < 300 then ",
            };
            let end = if always { "" } else { " end" };
            let _ = writeln!(
                body,
                "  -- Header {}{} {} {} ({})\n  {cond}{line}{end}",
                if always { "always " } else { "" },
                h.action,
                h.name,
                comment(h.value.as_deref().unwrap_or("")),
                self.at(h.at)
            );
        }
        if let Some(n) = self.function_names.get(&body) {
            return n.clone();
        }
        let n = format!("F.headers_{}", self.function_names.len() + 1);
        self.functions.push(if self.errdocs {
            format!(
                "-- mod_headers, in merge order: `rh` is the response's headers, `status` its status,\n-- `errdoc` whether an ErrorDocument answers.\nfunction {n}(rh, status, errdoc)\n{body}end\n"
            )
        } else {
            format!(
                "-- mod_headers, in merge order: `rh` is the response's headers, `status` its status.\nfunction {n}(rh, status)\n{body}end\n"
            )
        });
        self.function_names.insert(body, n.clone());
        n
    }
}

#[cfg(test)]
mod tests {
    use super::lua_class;
    use crate::luare::byteset::ByteSet;

    /// Each class, run by Lua 5.4 on every byte, takes exactly the set's bytes.
    #[test]
    fn byte_sets_as_lua_classes_take_the_same_bytes() {
        let sets = [
            ByteSet::single(b'/').negate(),
            ByteSet::range(b'a', b'z')
                .union(ByteSet::range(b'0', b'9'))
                .union(ByteSet::single(b'"'))
                .case_fold(),
            ByteSet::range(b'!', b'~'),
            ByteSet::range(0, 31).union(ByteSet::single(b'%')).union(ByteSet::single(b']')),
            ByteSet::range(0x80, 0xff).union(ByteSet::single(b'-')).union(ByteSet::single(b'^')),
            ByteSet::single(b'a'),
        ];
        let mut script = String::new();
        for set in &sets {
            let class = crate::translate::lua::bytes(&lua_class(*set, "^"));
            script.push_str(&format!(
                "do local t = {{}} for b = 0, 255 do t[#t + 1] = string.find(string.char(b), {class}) and '1' or '0' end print(table.concat(t)) end\n"
            ));
        }
        let Some(lines) = crate::translate::lua::run_lua5_4(&script) else { return };
        for (set, line) in sets.iter().zip(&lines) {
            let want: String = (0..=255u8).map(|b| if set.contains(b) { '1' } else { '0' }).collect();
            assert_eq!(line, &want, "{}", String::from_utf8_lossy(&lua_class(*set, "^")));
        }
        assert_eq!(lines.len(), sets.len());
        assert_eq!(lua_class(ByteSet::single(b'/').negate(), "$"), b"[^%/]$");
    }
}
