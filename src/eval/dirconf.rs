//! The per-directory configuration in force for one request: `<Directory>` sections and
//! .htaccess files along the mapped path, then directory regexes, `<Files>`, `<Location>`,
//! merged module by module the way each Apache module merges its own configuration.
//! Follows <https://httpd.apache.org/docs/2.4/sections.html#merging>.

use super::outcome::Step;
use crate::model::access::{AccessConfig, Authz};
use crate::model::alias::Redirect;
use crate::model::dir::ErrorAction;
use crate::model::env::EnvRule;
use crate::model::htaccess::{ancestors, directory_sections};
use crate::model::mime::Handler;
use crate::model::rewrite::RewriteRule;
use crate::model::{Htaccess, HtaccessStatus, Matcher, Model, Scope, ScopeKind, describe_scope};
use std::collections::BTreeMap;

/// The Order, Allow and Deny of one section that count for a method (see `legacy`).
#[derive(Clone, Debug)]
pub struct Legacy<'m> {
    pub order: Option<&'m crate::model::Spanned<crate::model::access::Order>>,
    pub allow: Vec<&'m crate::model::access::HostRule>,
    pub deny: Vec<&'m crate::model::access::HostRule>,
    pub satisfy: Option<&'m crate::model::Spanned<crate::model::access::Satisfy>>,
}

/// Whether a section sets any of mod_access_compat's Order, Allow, Deny and Satisfy.
fn uses_legacy(a: &AccessConfig) -> bool {
    a.order.is_some() || !a.allow.is_empty() || !a.deny.is_empty() || a.satisfy.is_some()
}

/// The one of two lines written last (a section's own, or its <Limit>'s).
fn later<'m, T>(
    a: Option<&'m crate::model::Spanned<T>>,
    b: Option<&'m crate::model::Spanned<T>>,
) -> Option<&'m crate::model::Spanned<T>> {
    match (a, b) {
        (Some(x), Some(y)) => {
            Some(if (x.span.file, x.span.start) < (y.span.file, y.span.start) { y } else { x })
        }
        (x, None) => x,
        (None, y) => y,
    }
}

/// Apache's `Options` as bits.
pub mod opt {
    pub const INDEXES: u8 = 1;
    pub const INCLUDES: u8 = 2;
    pub const SYM_LINKS: u8 = 4;
    pub const EXECCGI: u8 = 8;
    pub const INCNOEXEC: u8 = 16;
    pub const SYM_OWNER: u8 = 32;
    pub const MULTI: u8 = 64;
    pub const ALL: u8 = INDEXES | INCLUDES | SYM_LINKS | EXECCGI;
}

/// The bit of one `Options` name (0 for a name without one here).
pub fn option_bit(name: &str) -> u8 {
    match name.to_ascii_lowercase().as_str() {
        "indexes" => opt::INDEXES,
        "includes" => opt::INCLUDES,
        "includesnoexec" => opt::INCNOEXEC,
        "followsymlinks" => opt::SYM_LINKS,
        "symlinksifownermatch" => opt::SYM_OWNER,
        "execcgi" => opt::EXECCGI,
        "multiviews" => opt::MULTI,
        "all" => opt::ALL,
        _ => 0,
    }
}

/// mod_rewrite's per-directory configuration after merging.
#[derive(Clone, Debug)]
pub struct RewriteDir<'m> {
    pub engine: bool,
    pub base: Option<&'m str>,
    /// The directory prefix stripped before matching (`/var/www/html/`).
    pub directory: String,
    pub rules: Vec<&'m RewriteRule>,
    /// `RewriteOptions AllowNoSlash` (the folder's own RewriteOptions, else the inherited).
    pub allow_no_slash: bool,
    /// The RewriteOptions in force (lower case): the section's own, else the inherited.
    pub options: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct DirConfig<'m> {
    pub rewrite: Option<RewriteDir<'m>>,
    pub authz: Vec<&'m Authz>,
    pub authz_set: bool,
    /// Require lists of enclosing sections that must grant too (`AuthMerging And`).
    pub authz_and: Vec<Vec<&'m Authz>>,
    /// mod_access_compat's Order, Allow, Deny and Satisfy in force for this method: a
    /// section that uses any of them replaces what it inherits (the module has no merge;
    /// measured: a folder's `Deny from all` under a parent's `Satisfy any` answers 403),
    /// and its `<Limit>` lines count for their methods within that section.
    pub legacy: Option<Legacy<'m>>,
    pub auth_type: Option<&'m str>,
    pub auth_name: Option<&'m str>,
    /// The password file (`AuthUserFile`), with where it is set.
    pub auth_user_file: Option<&'m crate::model::Spanned<String>>,
    pub options: u8,
    /// A directive in force that narrows access and that the evaluator does not model
    /// (`translate::report::access_not_carried`: RemoteIPHeader, AllowMethods, ...).
    pub not_carried: Option<&'m str>,
    pub index: Option<&'m [String]>,
    pub directory_slash: bool,
    pub fallback: Option<&'m str>,
    pub error_docs: BTreeMap<u16, &'m ErrorAction>,
    pub set_handler: Option<&'m Handler>,
    pub add_handlers: Vec<(String, &'m Handler)>,
    pub force_type: Option<&'m str>,
    pub redirects: Vec<&'m Redirect>,
    /// SetEnvIf rules of the sections and .htaccess files, in merge order.
    pub env: Vec<&'m EnvRule>,
    /// A .htaccess Apache cannot read: the directory answers 500.
    pub broken: Option<&'m Htaccess>,
    /// Something the evaluator does not decide (an `<If>` it cannot evaluate).
    pub unknown: Option<String>,
    /// `<If>`/`<ElseIf>`/`<Else>` met while merging, with their directory; decided last.
    ifs: Vec<(&'m Scope, String)>,
}

impl Default for DirConfig<'_> {
    fn default() -> Self {
        DirConfig {
            rewrite: None,
            authz: Vec::new(),
            authz_set: false,
            authz_and: Vec::new(),
            legacy: None,
            auth_type: None,
            auth_name: None,
            auth_user_file: None,
            // Apache 2.4's default is `Options FollowSymlinks`.
            options: opt::SYM_LINKS,
            not_carried: None,
            index: None,
            directory_slash: true,
            fallback: None,
            error_docs: BTreeMap::new(),
            set_handler: None,
            add_handlers: Vec::new(),
            force_type: None,
            redirects: Vec::new(),
            env: Vec::new(),
            broken: None,
            unknown: None,
            ifs: Vec::new(),
        }
    }
}

/// The request facts that decide which sections apply.
pub struct Target<'a> {
    /// The mapped filename after the directory walk.
    pub filename: &'a str,
    /// What regex `<Directory>` sections are matched against: the filename, or in a request
    /// that keeps an earlier walk of the same folder (an internal redirect, a sub-request:
    /// Apache's walk cache), that walk's filename.
    pub regex_subject: &'a str,
    pub is_dir: bool,
    pub uri: &'a str,
    pub method: &'a str,
}

/// Builds the configuration for `t` on the main server plus `vhost`.  `cond` decides an
/// `<If>`/`<ElseIf>` expression (`Err` with the reason when it cannot).
pub fn build<'m>(
    model: &'m Model,
    vhost: Option<usize>,
    t: &Target,
    trace: &mut Vec<Step>,
    cond: &mut dyn FnMut(&str) -> Result<bool, String>,
) -> DirConfig<'m> {
    let server = &model.server;
    let vscope = vhost.map(|i| &model.vhosts[i].scope);
    let mut dc = DirConfig::default();
    // The server and vhost scopes themselves count as the outermost configuration.
    apply(&mut dc, server, "/", t);
    if let Some(v) = vscope {
        apply(&mut dc, v, "/", t);
    }
    let deepest = walk_folder(t.filename, t.is_dir);
    let mut levels: Vec<&str> = ancestors(&deepest).collect();
    levels.reverse();
    let sections = directory_sections(server, vscope);
    let mut nested: Vec<&'m Scope> = Vec::new();
    for level in levels {
        for (scope, path) in sections_at(&sections, level) {
            let sec = path.trim_end_matches('/');
            trace.push(Step {
                at: Some(scope.at),
                depth: 0,
                text: format!("applies {}", describe_scope(scope)),
            });
            apply(&mut dc, scope, &format!("{sec}/"), t);
            nested.push(scope);
        }
        let dir = if level.is_empty() { "" } else { level };
        for h in model.htaccess.iter().filter(|h| h.dir == dir && h.host_ids.contains(&vhost)) {
            match h.status {
                HtaccessStatus::Applied => {
                    if let Some(s) = &h.scope {
                        trace.push(Step { at: Some(s.at), depth: 0, text: format!("applies {}", h.path) });
                        apply(&mut dc, s, &format!("{dir}/"), t);
                        nested.push(s);
                    }
                }
                HtaccessStatus::Broken => {
                    trace.push(Step {
                        at: h.scope.as_ref().map(|s| s.at),
                        depth: 0,
                        text: format!("{} is broken: 500", h.path),
                    });
                    dc.broken = Some(h);
                }
                _ => {}
            }
        }
    }
    // Directory regexes, main server first, against the filename as the walk left it
    // (ap_directory_walk matches them against r->filename: a file's path, or a folder's
    // with the slash it was asked for with; measured in
    // fixtures/regress/directorymatch-against-the-file).
    for top in std::iter::once(server).chain(vscope) {
        for c in top.children.iter().filter(|c| c.enabled) {
            let is_regex_dir = c.kind == ScopeKind::DirectoryMatch
                || (c.kind == ScopeKind::Directory && matches!(c.matcher, Some(Matcher::Regex(_))));
            if let (true, Some(Matcher::Regex(re))) = (is_regex_dir, &c.matcher)
                && regex_search(re, t.regex_subject)
            {
                trace.push(Step { at: Some(c.at), depth: 0, text: format!("applies {}", describe_scope(c)) });
                apply(&mut dc, c, &format!("{deepest}/"), t);
                nested.push(c);
            }
        }
    }
    // <Files> by the file's name: the server's and vhost's, then those inside applied
    // directory sections and .htaccess files.
    // The name after the last slash, as Apache's file walk takes it: a folder asked for
    // with its trailing slash is matched with the empty name.
    let base = t.filename.rsplit('/').next().unwrap_or("");
    let mut files: Vec<&Scope> = Vec::new();
    for top in std::iter::once(server).chain(vscope) {
        files.extend(
            top.children.iter().filter(|c| matches!(c.kind, ScopeKind::Files | ScopeKind::FilesMatch)),
        );
    }
    for n in &nested {
        files
            .extend(n.children.iter().filter(|c| matches!(c.kind, ScopeKind::Files | ScopeKind::FilesMatch)));
    }
    for f in files.into_iter().filter(|f| f.enabled) {
        if files_match(f, base) {
            trace.push(Step {
                at: Some(f.at),
                depth: 0,
                text: format!("applies {} to '{base}'", describe_scope(f)),
            });
            apply(&mut dc, f, &format!("{deepest}/"), t);
        }
    }
    for top in std::iter::once(server).chain(vscope) {
        for l in top
            .children
            .iter()
            .filter(|c| c.enabled && matches!(c.kind, ScopeKind::Location | ScopeKind::LocationMatch))
        {
            if location_match(l, t.uri) {
                trace.push(Step {
                    at: Some(l.at),
                    depth: 0,
                    text: format!("applies {} to '{}'", describe_scope(l), t.uri),
                });
                apply(&mut dc, l, &format!("{deepest}/"), t);
            }
        }
    }
    resolve_ifs(&mut dc, t, trace, cond);
    dc
}

/// `ap_if_walk()`: the `<If>` chains met while merging are decided last, in merge order,
/// and the chosen branches merged on top of everything else.
fn resolve_ifs<'m>(
    dc: &mut DirConfig<'m>,
    t: &Target,
    trace: &mut Vec<Step>,
    cond: &mut dyn FnMut(&str) -> Result<bool, String>,
) {
    // Whether the open chain already chose a branch.
    let mut taken = true;
    let mut i = 0;
    while i < dc.ifs.len() {
        let (c, dir) = dc.ifs[i].clone();
        i += 1;
        if c.kind == ScopeKind::If {
            taken = false;
        }
        if taken {
            continue;
        }
        let chosen = match (&c.kind, &c.matcher) {
            (ScopeKind::Else, _) => true,
            (_, Some(Matcher::Expr(e))) => match cond(e) {
                Ok(v) => v,
                Err(why) => {
                    trace.push(Step {
                        at: Some(c.at),
                        depth: 0,
                        text: format!("{} cannot be decided: {why}", describe_scope(c)),
                    });
                    if dc.unknown.is_none() {
                        dc.unknown = Some(format!("{}: {why}", describe_scope(c)));
                    }
                    // The rest of the chain depends on it.
                    taken = true;
                    continue;
                }
            },
            _ => false,
        };
        trace.push(Step {
            at: Some(c.at),
            depth: 0,
            text: format!("{} {}", describe_scope(c), if chosen { "applies" } else { "is false" }),
        });
        if chosen {
            taken = true;
            apply(dc, c, &dir, t);
        }
    }
    dc.ifs.clear();
}

/// The folder a walk of `filename` ends in: a folder itself, else the one it is in.
pub fn walk_folder(filename: &str, is_dir: bool) -> String {
    if is_dir { filename.trim_end_matches('/').to_string() } else { parent(filename) }
}

fn parent(p: &str) -> String {
    p.rsplit_once('/').map(|(d, _)| d.to_string()).unwrap_or_default()
}

/// A section regex as Apache compiles it (RegexDefaultOptions: DOTALL; DOLLAR_ENDONLY is
/// not available through the pcre2 crate and only matters for a subject ending in `\n`).
pub fn regex_search(re: &str, subject: &str) -> bool {
    pcre2::bytes::RegexBuilder::new()
        .dotall(true)
        .build(re)
        .ok()
        .and_then(|r| r.is_match(subject.as_bytes()).ok())
        .unwrap_or(false)
}

/// Whether a `<Files>` or `<FilesMatch>` section applies to the name `base`.
pub fn files_match(s: &Scope, base: &str) -> bool {
    match &s.matcher {
        Some(Matcher::Regex(re)) => regex_search(re, base),
        // apr_fnmatch(), as Apache's file walk uses it for a name with wildcards (a
        // backslash escapes the next character); a plain name compares as it is.
        Some(Matcher::Path(p)) if p.contains(['*', '?', '[']) => crate::expr::fnmatch(p, base, false, false),
        Some(Matcher::Path(p)) => p == base,
        _ => false,
    }
}

/// Whether a `<Location>` or `<LocationMatch>` section applies to the URL-path `uri`.
pub fn location_match(s: &Scope, uri: &str) -> bool {
    match &s.matcher {
        Some(Matcher::Regex(re)) => regex_search(re, uri),
        Some(Matcher::Path(p)) => {
            if p.contains(['*', '?', '[']) {
                // ap_location_walk: apr_fnmatch with APR_FNM_PATHNAME over the whole path
                // (no wildcard, class included, matches a `/`)
                return crate::expr::fnmatch(p, uri, true, false);
            }
            // ap_location_walk: the path as a prefix, which must end at a slash unless
            // the path ends in one (`<Location /a/>` is not `/a`: measured, Apache 401s
            // /dir/page2.txt under a folder realm that `<Location /dir/page2.txt/>` opens)
            let p = p.as_str();
            uri.starts_with(p)
                && (p.ends_with('/') || matches!(uri.as_bytes().get(p.len()), None | Some(b'/')))
        }
        _ => false,
    }
}

/// mod_rewrite's per-directory merge (config_perdir_merge) of one section's rewrite
/// configuration `rw` over `prev`, what is in force above it. A section without rewrite
/// directives changes nothing; the server's and vhost's RewriteEngine and RewriteOptions
/// are the per-directory defaults (cmd_rewriteengine and cmd_rewriteoptions set both),
/// while their rules run in server context and never join a folder's.
pub fn merge_rewrite<'m>(
    prev: Option<RewriteDir<'m>>,
    rw: &'m crate::model::rewrite::RewriteConfig,
    server_level: bool,
    dir: &str,
) -> Option<RewriteDir<'m>> {
    use crate::model::rewrite::RuleOrder;
    let counts = if server_level { rw.engine.is_some() || !rw.options.is_empty() } else { !rw.is_empty() };
    if !counts {
        return prev;
    }
    let own: Vec<String> = rw.options.iter().map(|o| o.value.to_ascii_lowercase()).collect();
    let inherited: &[String] = prev.as_ref().map_or(&[], |p| p.options.as_slice());
    let (options, order, merge_base) = crate::model::rewrite::perdir_merge(&own, inherited);
    let own_rules: Vec<&RewriteRule> = if server_level { Vec::new() } else { rw.rules.iter().collect() };
    let own_base = if server_level { None } else { rw.base.as_ref().map(|b| b.value.as_str()) };
    let inherited_rules: Vec<&RewriteRule> = prev.as_ref().map_or(Vec::new(), |p| p.rules.clone());
    let rules = match order {
        RuleOrder::Own => own_rules,
        RuleOrder::OwnThenInherited => own_rules.into_iter().chain(inherited_rules).collect(),
        RuleOrder::InheritedThenOwn => inherited_rules.into_iter().chain(own_rules).collect(),
    };
    Some(RewriteDir {
        engine: rw.engine.as_ref().map(|e| e.value).or(prev.as_ref().map(|p| p.engine)).unwrap_or(false),
        base: if merge_base { own_base.or(prev.as_ref().and_then(|p| p.base)) } else { own_base },
        directory: dir.to_string(),
        rules,
        allow_no_slash: options.iter().any(|o| o == "allownoslash"),
        options,
    })
}

/// Merges one scope into the configuration, module by module.
fn apply<'m>(dc: &mut DirConfig<'m>, s: &'m Scope, dir: &str, t: &Target) {
    let st = &s.settings;
    let rw = st.rewrite();
    // Rules written in the server or vhost itself run in server context, not here.
    let server_level = matches!(s.kind, ScopeKind::Server | ScopeKind::VirtualHost);
    dc.rewrite = merge_rewrite(dc.rewrite.take(), rw, server_level, dir);
    if let Some(d) = s
        .directives
        .iter()
        .find(|d| d.enabled && crate::translate::report::access_not_carried(&d.name, &d.args).is_some())
    {
        dc.not_carried = Some(&d.name);
    }
    let a = st.access();
    if !a.require.is_empty() {
        // AuthMerging And: what was in force must grant as well. (Or is taken as Off: the
        // new rules alone, stricter than either-grants.)
        let and = a.auth_merging.as_ref().is_some_and(|m| m.value.eq_ignore_ascii_case("and"));
        if and && dc.authz_set {
            let prev = std::mem::take(&mut dc.authz);
            dc.authz_and.push(prev);
        } else if !and {
            dc.authz_and.clear();
        }
        dc.authz = a.require.iter().collect();
        dc.authz_set = true;
    }
    // (a <Limit>'s lines belong to its section: taken there, below)
    let limit = matches!(s.kind, ScopeKind::Limit | ScopeKind::LimitExcept);
    if !limit {
        let limits: Vec<(&'m Scope, bool)> = s
            .children
            .iter()
            .filter(|c| c.enabled)
            .filter_map(|c| match (&c.kind, &c.matcher) {
                (ScopeKind::Limit, Some(Matcher::Methods(ms))) => Some((c, method_in(ms, t.method))),
                (ScopeKind::LimitExcept, Some(Matcher::Methods(ms))) => Some((c, !method_in(ms, t.method))),
                _ => None,
            })
            .collect();
        if uses_legacy(a) || limits.iter().any(|(c, _)| uses_legacy(c.settings.access())) {
            let mut l = Legacy {
                order: a.order.as_ref(),
                allow: a.allow.iter().collect(),
                deny: a.deny.iter().collect(),
                satisfy: a.satisfy.as_ref(),
            };
            for (c, _) in limits.iter().filter(|(_, applies)| *applies) {
                let la = c.settings.access();
                // (the Order and Satisfy written last, inside or outside the <Limit>, decide)
                l.order = later(l.order, la.order.as_ref());
                l.satisfy = later(l.satisfy, la.satisfy.as_ref());
                l.allow.extend(&la.allow);
                l.deny.extend(&la.deny);
            }
            dc.legacy = Some(l);
        }
    }
    merge_auth(dc, a);
    merge_options(&mut dc.options, st);
    if let Some(i) = &st.directory_index {
        dc.index = Some(&i.value);
    }
    if let Some(d) = &st.directory_slash {
        dc.directory_slash = d.value;
    }
    if let Some(f) = &st.fallback_resource {
        dc.fallback = Some(f.value.as_str());
    }
    for e in &st.error_documents {
        dc.error_docs.insert(e.status, &e.action);
    }
    let m = st.mime();
    for h in &m.handlers {
        if h.extensions.is_empty() {
            dc.set_handler = (!h.handler.cancels()).then_some(&h.handler);
        } else {
            for e in &h.extensions {
                dc.add_handlers.push((e.trim_start_matches('.').to_ascii_lowercase(), &h.handler));
            }
        }
    }
    for r in &m.remove_handlers {
        for e in &r.value {
            let e = e.trim_start_matches('.').to_ascii_lowercase();
            dc.add_handlers.retain(|(x, _)| *x != e);
        }
    }
    if let Some(f) = &m.force_type {
        dc.force_type = Some(f.value.as_str());
    }
    if !server_level {
        // mod_alias merges a section's redirects before those it inherits (the inner
        // .htaccess file's are tried first).
        dc.redirects.splice(0..0, s.settings.redirects.iter());
        dc.env.extend(s.settings.env.iter());
    }
    // <Limit>/<LimitExcept> inside: their access rules (Require, Order/Allow/Deny,
    // Satisfy) count for the methods they name; anything else in them (AuthType, AuthName,
    // AuthUserFile) for every method, as Apache reads it into the enclosing section.
    for c in s.children.iter().filter(|c| c.enabled) {
        let applies = match (&c.kind, &c.matcher) {
            (ScopeKind::Limit, Some(Matcher::Methods(ms))) => Some(method_in(ms, t.method)),
            (ScopeKind::LimitExcept, Some(Matcher::Methods(ms))) => Some(!method_in(ms, t.method)),
            _ => None,
        };
        match applies {
            Some(true) => apply(dc, c, dir, t),
            Some(false) => merge_auth(dc, c.settings.access()),
            None => {}
        }
        if matches!(c.kind, ScopeKind::If | ScopeKind::ElseIf | ScopeKind::Else) {
            dc.ifs.push((c, dir.to_string()));
        }
    }
}

/// AuthType, AuthName and AuthUserFile of one section, each where it is set.
fn merge_auth<'m>(dc: &mut DirConfig<'m>, a: &'m AccessConfig) {
    if let Some(t) = &a.auth_type {
        dc.auth_type = Some(t.value.as_str());
    }
    if let Some(n) = &a.auth_name {
        dc.auth_name = Some(n.value.as_str());
    }
    if let Some(f) = &a.auth_user_file {
        dc.auth_user_file = Some(f);
    }
}

/// The `Options` lines of one scope merged onto `options`: a line without signs replaces
/// what was in force, `+`/`-` change single options.
fn merge_options(options: &mut u8, st: &crate::model::settings::Settings) {
    for line in &st.options {
        let signed = line.changes.iter().any(|(s, _)| *s != '=');
        if !signed {
            *options = 0;
        }
        for (sign, name) in &line.changes {
            let bit = option_bit(name);
            match sign {
                '-' => *options &= !bit,
                _ => *options |= bit,
            }
        }
    }
}

/// The Options the directory walk has in force when it reaches the entries of folder
/// `dir`: Apache's mini-merge in `ap_directory_walk()` (server/request.c, `core_opts_merge`),
/// which sees only the server's and the virtual host's own Options, the non-regex
/// `<Directory>` sections and the .htaccess files of `dir` and the folders above it.
/// Directory regexes, `<Files>`, `<Location>` and `<If>` are merged after the walk and
/// cannot allow a link (measured: `<DirectoryMatch>` with FollowSymLinks over a folder
/// whose `<Directory>` says `Options None` still refuses its links).  `None` when a
/// .htaccess on the way is broken: Apache stops there with 500 before it looks further.
/// The non-regex `<Directory>` sections Apache's walk applies at `level` (a folder, "" for
/// the root): those as deep as it whose path matches it.
fn sections_at<'s, 'm>(
    sections: &'s [(&'m Scope, String)],
    level: &'s str,
) -> impl Iterator<Item = &'s (&'m Scope, String)> {
    let depth = if level.is_empty() { 1 } else { level.matches('/').count() + 1 };
    sections.iter().filter(move |(_, path)| {
        let sec = path.trim_end_matches('/');
        let sec_depth = if sec.is_empty() { 1 } else { sec.matches('/').count() + 1 };
        sec_depth == depth
            && crate::model::htaccess::directory_matches(path, if level.is_empty() { "/" } else { level })
    })
}

pub fn walk_options(model: &Model, vhost: Option<usize>, dir: &str) -> Option<u8> {
    let server = &model.server;
    let vscope = vhost.map(|i| &model.vhosts[i].scope);
    let mut options = DirConfig::default().options;
    merge_options(&mut options, &server.settings);
    if let Some(v) = vscope {
        merge_options(&mut options, &v.settings);
    }
    let sections = directory_sections(server, vscope);
    let mut levels: Vec<&str> = ancestors(dir).collect();
    levels.reverse();
    for level in levels {
        for (scope, _) in sections_at(&sections, level) {
            merge_options(&mut options, &scope.settings);
        }
        for h in model.htaccess.iter().filter(|h| h.dir == level && h.host_ids.contains(&vhost)) {
            match (h.status, &h.scope) {
                (HtaccessStatus::Applied, Some(s)) => merge_options(&mut options, &s.settings),
                (HtaccessStatus::Broken, _) => return None,
                _ => {}
            }
        }
    }
    Some(options)
}

/// Whether `method` is among `ms` as Apache numbers methods: by name, case-sensitively,
/// HEAD and GET one method (`<Limit HEAD>` covers GET too).
fn method_in(ms: &[String], method: &str) -> bool {
    use super::access::method_number;
    ms.iter().any(|m| method_number(m) == method_number(method))
}
