//! Where lighttpd's mod_auth asks for a password: the `$HTTP["url"]` blocks of a host in
//! lighttpd.conf, decided from what Apache's per-directory merge gives at each place.
//!
//! lighttpd checks Basic logins (mod_auth, at the URL stage) before the Lua runs; the Lua
//! then decides every request again as Apache does, and honours the user lighttpd
//! authenticated only when the password file that checked it is the one Apache's merge
//! names for the file asked for (`X-Lighten-Auth-File`). So no block here can let anybody
//! in: a block that asks where Apache would not, or asks against another file, only locks
//! users out (401 for everybody), and one missing where Apache asks does the same.
//!
//! Each block is therefore derived from Apache's own merge (`eval::dirconf`, then
//! `eval::access::check` without a user) at a *place*: a folder with configuration of its
//! own, a `<Files>` name in a folder, a `<Location>`, and where those overlap, the
//! combination. A place is decided for one request standing for it, per HTTP method that
//! a `<Limit>`, `<LimitExcept>` or `Require method` names and per client network that an
//! `Allow`, `Deny`, `Require ip` or `Require local` names (nested `$HTTP["request-method"]`
//! and `$HTTP["remote-ip"]` blocks), so inherited settings (a sub-folder that only names
//! another AuthUserFile), `<Limit POST>` realms and `Satisfy Any` exceptions from an
//! .htaccess come out as Apache merges them.
//!
//! | Apache, without a user | lighttpd |
//! |---|---|
//! | 401 (Basic, AuthName, AuthUserFile) | asks against that file, in that realm |
//! | anything else (granted, 403, 500, a broken .htaccess, Digest) | asks nothing: the Lua answers |
//!
//! lighttpd takes the last matching block, Apache merges folders (shallow to deep), then
//! `<Files>`, then `<Location>`: blocks are written in that order, a place's block only
//! where the blocks before it would decide otherwise, and the same URL pattern once (the
//! later place's). At the end every place is checked against all the blocks; one that a
//! later block decides wrongly, and any section lighttpd cannot name by URL that changes
//! who is asked (`<FilesMatch>`, `<DirectoryMatch>`, `<LocationMatch>`, wildcards, `<If>`,
//! host names and environment variables in `Allow`), is reported with its line.

use super::NeedKind;
use super::conf;
use super::{Code, Finding, Options};
use crate::eval::access::{Client, check};
use crate::eval::dirconf::{self, Target};
use crate::model::access::{AccessConfig, Authz};
use crate::model::{Matcher, Model, Scope, ScopeKind};
use crate::source::{SourceMap, Span};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::IpAddr;

/// What lighttpd does for one kind of request at a place.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Ask {
    /// No password asked: the Lua decides (Apache grants, refuses or fails without one).
    Open,
    /// Basic authentication against `file` (as Apache names it) in `realm`.
    Password { file: String, realm: String },
}

/// A method (`None`: every method not named) and a client network (`None`: every address
/// not named), and what lighttpd does for them.
type Table = BTreeMap<(Option<String>, Option<String>), Ask>;

/// One place: the URLs lighttpd's block names, and one request standing for them.
struct Place {
    regex: String,
    uri: String,
    /// The file Apache maps `uri` to.
    filename: String,
    /// The section that makes it a place, for reports and comments.
    at: Span,
    what: String,
    /// A folder's or `<Location>`'s URL prefix (ending in `/`): where a realm starts.
    prefix: Option<String>,
    /// A `<Files>` section's plain name.
    name: Option<String>,
}

/// The methods and networks that may be decided differently: those the host's access
/// rules name. Each network has an address standing for it (its first).
struct Classes {
    methods: Vec<Option<String>>,
    networks: Vec<(Option<String>, IpAddr)>,
}

/// Methods no rule names are decided as this one.
const OTHER_METHOD: &str = "LIGHTEN-OTHER";

/// The realm blocks of host `host` (None: the main server) whose DocumentRoot is
/// `docroot` (as Apache names it), indented for a host block.
pub fn blocks(
    model: &Model,
    host: Option<usize>,
    docroot: &str,
    opts: &Options,
    sources: &SourceMap,
    findings: &mut Vec<Finding>,
    need: &dyn Fn(NeedKind, &str, Option<Span>),
) -> String {
    let tops: Vec<&Scope> =
        std::iter::once(&model.server).chain(host.map(|i| &model.vhosts[i].scope)).collect();
    let htaccess: Vec<(&str, &crate::model::Htaccess)> = model
        .htaccess
        .iter()
        .filter(|h| h.host_ids.contains(&host))
        .map(|h| (if h.dir.is_empty() { "/" } else { h.dir.as_str() }, h))
        .collect();
    let scopes: Vec<&Scope> =
        tops.iter().copied().chain(htaccess.iter().filter_map(|(_, h)| h.scope.as_ref())).collect();
    if !scopes.iter().any(|s| any_scope(s, &|sc| conf::asks_basic(sc.settings.access()))) {
        return String::new();
    }
    let root = docroot.trim_end_matches('/').to_string();
    let mut aliases: Vec<(String, String, Span)> = Vec::new();
    for a in tops.iter().flat_map(|t| t.settings.aliases.iter()) {
        let Some(from) = &a.from else { continue };
        match a.kind {
            crate::model::alias::AliasKind::Alias => {
                aliases.push((from.clone(), a.to.trim_end_matches('/').to_string(), a.at))
            }
            crate::model::alias::AliasKind::AliasMatch => match prefix_alias(from, &a.to) {
                Some((f, t)) => aliases.push((f, t.trim_end_matches('/').to_string(), a.at)),
                None if findings.iter().any(|f| f.at == a.at) => {}
                None => findings.push(Finding::approximated(
                    Code::AuthAsk,
                    a.at,
                    "an AliasMatch whose URLs lighttpd's auth blocks cannot follow (only `^/prefix/(.*)$` to \
                     `/folder/$1` is followed): where it leads into a password area, lighttpd asks for no \
                     password and its users get 401"
                        .into(),
                )),
            },
            _ => {}
        }
    }
    // A folder (as Apache names it) as the URL prefixes (ending in `/`) that reach it:
    // under the DocumentRoot, and under each Alias whose target holds it.
    let urls_of = |dir: &str| -> Vec<String> {
        let dir = dir.trim_end_matches('/');
        let mut out = Vec::new();
        if let Some(rest) = dir.strip_prefix(root.as_str()).filter(|r| r.is_empty() || r.starts_with('/')) {
            out.push(format!("{rest}/"));
        }
        for (from, to, _) in &aliases {
            if let Some(r) = dir.strip_prefix(to.as_str()).filter(|r| r.is_empty() || r.starts_with('/')) {
                out.push(format!("{}{r}/", from.trim_end_matches('/')));
            }
        }
        out
    };
    // A URL-path as the file Apache maps it to (the longest Alias, else the DocumentRoot).
    let file_of = |uri: &str| -> String {
        aliases
            .iter()
            .filter(|(from, _, _)| {
                let from = from.trim_end_matches('/');
                uri.starts_with(from) && matches!(uri.as_bytes().get(from.len()), None | Some(b'/'))
            })
            .max_by_key(|(from, _, _)| from.len())
            .map(|(from, to, _)| format!("{to}{}", &uri[from.trim_end_matches('/').len()..]))
            .unwrap_or_else(|| format!("{root}{uri}"))
    };

    // The folders: the DocumentRoot, every plain <Directory> and every .htaccess that a URL
    // reaches, shallow to deep.
    let host_at = tops.last().map(|t| t.at).unwrap_or(model.server.at);
    let mut folders: Vec<(String, String, Span, String)> =
        vec![("/".into(), root.clone(), host_at, "the DocumentRoot".into())];
    let sections =
        crate::model::htaccess::directory_sections(&model.server, host.map(|i| &model.vhosts[i].scope));
    for (sec, path) in &sections {
        if wildcard(path) {
            continue;
        }
        let urls = urls_of(path);
        if urls.is_empty() && conf::basic_auth(sec.settings.access()) {
            unreachable(findings, sec.settings.access(), sec.at, path);
        }
        for u in urls {
            folders.push((u, path.trim_end_matches('/').to_string(), sec.at, describe(sec)));
        }
    }
    for (dir, h) in &htaccess {
        let at = h.scope.as_ref().map(|s| s.at).unwrap_or(host_at);
        let urls = urls_of(dir);
        if urls.is_empty()
            && let Some(s) = h.scope.as_ref().filter(|s| conf::basic_auth(s.settings.access()))
        {
            unreachable(findings, s.settings.access(), s.at, dir);
        }
        for u in urls {
            folders.push((u, dir.trim_end_matches('/').to_string(), at, h.path.clone()));
        }
    }
    // Each Alias target too: what it maps to may lie inside a realm of a folder above it.
    for (from, to, at) in &aliases {
        let url = if from.ends_with('/') { from.clone() } else { format!("{from}/") };
        folders.push((url, to.clone(), *at, format!("Alias {from}")));
    }
    folders.sort_by_key(|(u, ..)| u.matches('/').count());
    let mut seen = BTreeSet::new();
    folders.retain(|(u, ..)| seen.insert(u.clone()));

    // Every <Files>/<FilesMatch> of the host, for a name that none of them takes.
    let mut files_sections: Vec<&Scope> = Vec::new();
    for s in &scopes {
        visit(s, &mut |sc| {
            if sc.enabled && matches!(sc.kind, ScopeKind::Files | ScopeKind::FilesMatch) {
                files_sections.push(sc);
            }
        });
    }
    let name = (0..100)
        .map(|i| format!("lighten-{i}.place"))
        .find(|n| !files_sections.iter().any(|s| dirconf::files_match(s, n)))
        .unwrap_or_else(|| "lighten-0.place".into());

    let mut places: Vec<Place> = folders
        .iter()
        .map(|(url, dir, at, what)| Place {
            regex: conf::area_regex(url),
            uri: format!("{url}{name}"),
            filename: format!("{dir}/{name}"),
            at: *at,
            what: what.clone(),
            prefix: Some(url.clone()),
            name: None,
        })
        .collect();

    // <Files NAME> (a name or a glob): in the folder it is written for (everywhere, for
    // the server's and the host's own) and every folder under it, each merged as there.
    let mut files_places: Vec<(usize, bool, Place)> = Vec::new();
    let mut containers: Vec<(Option<String>, &Scope)> = tops.iter().map(|t| (None, *t)).collect();
    containers.extend(
        sections
            .iter()
            .filter(|(_, p)| !wildcard(p))
            .map(|(s, p)| (Some(p.trim_end_matches('/').to_string()), *s)),
    );
    containers.extend(
        htaccess
            .iter()
            .filter_map(|(d, h)| Some((Some(d.trim_end_matches('/').to_string()), h.scope.as_ref()?))),
    );
    for (dir, scope) in &containers {
        for f in scope.children.iter().filter(|c| c.enabled && c.kind == ScopeKind::Files) {
            let Some(Matcher::Path(p)) = &f.matcher else { continue };
            let Some(sample) = glob_sample(p) else { continue };
            for (url, fdir, _, _) in &folders {
                let under = dir
                    .as_deref()
                    .is_none_or(|d| fdir == d || fdir.starts_with(&format!("{}/", d.trim_end_matches('/'))));
                if !under {
                    continue;
                }
                let rest = url.trim_end_matches('/');
                files_places.push((
                    url.matches('/').count(),
                    !p.contains(['*', '?', '[']),
                    Place {
                        // (PATH_INFO after a plain name; a glob could also take a
                        // folder's name, which <Files> never sees)
                        regex: conf::files_regex(rest, p, if wildcard(p) { "" } else { "(?:/.*)?" }),
                        uri: format!("{url}{sample}"),
                        filename: format!("{fdir}/{sample}"),
                        at: f.at,
                        what: describe(f),
                        prefix: None,
                        name: (!wildcard(p)).then(|| p.clone()),
                    },
                ));
            }
        }
    }
    // (shallow folders first; in a folder, names with wildcards before plain names)
    files_places.sort_by_key(|(depth, plain, _)| (*depth, *plain));
    let files_places: Vec<Place> = files_places.into_iter().map(|(_, _, p)| p).collect();

    // <Location PATH> (a plain path), in configuration order, then what it overlaps again
    // (Apache merges it last: the folders and <Files> names under it, merged with it).
    let mut location_places: Vec<Place> = Vec::new();
    for t in &tops {
        for l in t.children.iter().filter(|c| c.enabled && c.kind == ScopeKind::Location) {
            let Some(Matcher::Path(p)) = &l.matcher else { continue };
            if wildcard(p) {
                continue;
            }
            let uri = if p.ends_with('/') { format!("{p}{name}") } else { format!("{p}/{name}") };
            let what = describe(l);
            location_places.push(Place {
                regex: conf::location_regex(p),
                filename: file_of(&uri),
                uri,
                at: l.at,
                what: what.clone(),
                prefix: Some(if p.ends_with('/') { p.clone() } else { format!("{p}/") }),
                name: None,
            });
            for q in places
                .iter()
                .chain(&files_places)
                .filter(|q| dirconf::location_match(l, &q.uri) && q.uri.len() > p.len())
            {
                location_places.push(Place {
                    regex: q.regex.clone(),
                    uri: q.uri.clone(),
                    filename: q.filename.clone(),
                    at: l.at,
                    what: format!("{} with {what}", q.what),
                    prefix: None,
                    name: None,
                });
            }
        }
    }
    places.extend(files_places);
    places.extend(location_places);

    // What Apache decides at each place, per method and network.
    let classes = classes(&scopes);
    let mut files_at: BTreeMap<String, Span> = BTreeMap::new();
    let tables: Vec<Table> = places.iter().map(|p| table(model, host, &classes, p, &mut files_at)).collect();
    let none: Table = classes
        .methods
        .iter()
        .flat_map(|m| classes.networks.iter().map(move |(n, _)| ((m.clone(), n.clone()), Ask::Open)))
        .collect();

    // The blocks, in the order lighttpd weighs them: a place's only where the blocks before
    // it decide otherwise, each pattern once.
    let mut matcher = Patterns::default();
    let mut blocks: Vec<(usize, Table)> = Vec::new();
    for (i, p) in places.iter().enumerate() {
        if matcher.decided(&places, &blocks, &p.uri, &none) != tables[i] {
            blocks.retain(|(j, _)| places[*j].regex != p.regex);
            blocks.push((i, tables[i].clone()));
        }
    }
    // Every place checked against all of them.
    let mut reported = BTreeSet::new();
    for (i, p) in places.iter().enumerate() {
        if matcher.decided(&places, &blocks, &p.uri, &none) != tables[i] && reported.insert(p.at) {
            findings.push(Finding::approximated(
                Code::AuthAsk,
                p.at,
                format!(
                    "where this section meets another, lighttpd's URL blocks ask for a password otherwise than \
                     Apache does ({}): some of its users get 401",
                    p.what
                ),
            ));
        }
    }
    unnameable(&scopes, findings);
    // A password on a DirectoryIndex name: Apache asks for it on the folder's own URL too
    // (mod_dir's subrequest), which names no file lighttpd's block could take.
    for (p, t) in places.iter().zip(&tables) {
        let Some(name) = &p.name else { continue };
        if !t.values().any(|a| *a != Ask::Open) || reported.contains(&p.at) {
            continue;
        }
        let target = Target {
            filename: &p.filename,
            regex_subject: &p.filename,
            is_dir: false,
            uri: &p.uri,
            method: "GET",
        };
        let dc = dirconf::build(model, host, &target, &mut Vec::new(), &mut |_| Err(String::new()));
        if dc.index.map_or(name == "index.html", |i| i.iter().any(|n| n == name)) && reported.insert(p.at) {
            findings.push(Finding::approximated(
                Code::AuthAsk,
                p.at,
                format!(
                    "a password on {name}, a DirectoryIndex name: lighttpd asks for it on URLs that name the \
                     file, not on the folder's own URL, where its users get 401"
                ),
            ));
        }
    }
    passwords_lighttpd_misreads(&blocks, opts, &files_at, findings);

    let realm_urls: Vec<String> = places
        .iter()
        .zip(&tables)
        .filter(|(p, t)| p.prefix.is_some() && matches!(t.get(&(None, None)), Some(Ask::Password { .. })))
        .filter_map(|(p, _)| p.prefix.clone())
        .collect();
    // Where each folder's rewrite rules start from: its URL (the server's and the host's
    // own: the site's root).
    let rule_scopes: Vec<(String, &Scope)> = tops
        .iter()
        .map(|t| ("/".to_string(), *t))
        .chain(
            sections
                .iter()
                .filter(|(_, p)| !wildcard(p))
                .map(|(s, p)| (p.as_str(), *s))
                .chain(htaccess.iter().filter_map(|(d, h)| Some((*d, h.scope.as_ref()?))))
                .filter_map(|(dir, scope)| {
                    let rest = dir.trim_end_matches('/').strip_prefix(root.as_str())?;
                    (rest.is_empty() || rest.starts_with('/')).then(|| (format!("{rest}/"), scope))
                }),
        )
        .filter(|(_, scope)| !scope.settings.rewrite().rules.is_empty())
        .collect();
    rewrites_into_realms(&rule_scopes, &realm_urls, findings);

    if blocks.is_empty() {
        return String::new();
    }
    let script = format!("{}/{}", opts.out_dir.join("lua").to_string_lossy(), conf::REALM_FILE);
    let mut out = String::from(
        "    # Password areas, where Apache asks for one. X-Lighten-Auth-File names the file that checked\n\
         \x20   # the login (the Lua honours it only there; a client's own is replaced); lua/realm.lua\n\
         \x20   # answers the 400s Apache gives before it asks (a '#' in the target, a malformed Host).\n\
         \x20   auth.backend = \"htpasswd\"\n",
    );
    // Blocks next to each other that decide alike are one conditional (lighttpd takes at
    // most 4,096 in all, and a Plesk account's statistics realm is reached by five Aliases):
    // which of them matches last cannot change what lighttpd does.
    let mut runs: Vec<(Vec<usize>, &Table)> = Vec::new();
    for (i, t) in &blocks {
        match runs.last_mut() {
            Some((places_in, last)) if *last == t => places_in.push(*i),
            _ => runs.push((vec![*i], t)),
        }
    }
    for (run, t) in runs {
        for a in t.values() {
            if let Ask::Password { file, .. } = a {
                need(NeedKind::PasswordFile, &(opts.map_path)(file), files_at.get(file).copied());
            }
        }
        for i in &run {
            let p = &places[*i];
            out.push_str(&format!("    # {} ({})\n", conf::comment(&p.what), sources.line_ref(p.at)));
        }
        let regex = one_pattern(run.iter().map(|i| places[*i].regex.as_str()).collect());
        if t.values().all(|a| *a == Ask::Open) {
            out.push_str(&format!("    $HTTP[\"url\"] =~ {} {{ auth.require = ( ) }}\n", conf::q(&regex)));
            continue;
        }
        out.push_str(&format!("    $HTTP[\"url\"] =~ {} {{\n", conf::q(&regex)));
        emit_class(&mut out, t, &None, "      ", opts, &script);
        let methods: BTreeSet<&Option<String>> = t.keys().map(|(m, _)| m).filter(|m| m.is_some()).collect();
        for m in methods {
            let differs = t.iter().any(|((mm, n), a)| mm == m && t.get(&(None, n.clone())) != Some(a));
            if differs {
                out.push_str(&format!(
                    "      $HTTP[\"request-method\"] == {} {{\n",
                    conf::q(m.as_deref().unwrap_or_default())
                ));
                emit_class(&mut out, t, m, "        ", opts, &script);
                out.push_str("      }\n");
            }
        }
        out.push_str("    }\n");
    }
    out
}

/// Patterns as one: folders' (`^/a(?:/|$)`) as `^(?:/a|/b)(?:/|$)`, others side by side.
fn one_pattern(res: Vec<&str>) -> String {
    if res.len() == 1 {
        return res[0].to_string();
    }
    let areas: Option<Vec<&str>> =
        res.iter().map(|r| r.strip_prefix('^').and_then(|r| r.strip_suffix("(?:/|$)"))).collect();
    match areas {
        Some(a) => format!("^(?:{})(?:/|$)", a.join("|")),
        None => res.iter().map(|r| format!("(?:{r})")).collect::<Vec<_>>().join("|"),
    }
}

/// The lines for method `m` of table `t`: what lighttpd does for any address, then the
/// networks decided otherwise (wider ones first: the last matching block wins).
fn emit_class(out: &mut String, t: &Table, m: &Option<String>, pad: &str, opts: &Options, script: &str) {
    let base = t.get(&(m.clone(), None)).cloned().unwrap_or(Ask::Open);
    out.push_str(&ask_lines(&base, pad, opts, script));
    let mut nets: Vec<(&String, &Ask)> = t
        .iter()
        .filter(|((mm, n), a)| mm == m && n.is_some() && **a != base)
        .map(|((_, n), a)| (n.as_ref().unwrap(), a))
        .collect();
    nets.sort_by_key(|(n, _)| n.rsplit_once('/').and_then(|(_, l)| l.parse::<u8>().ok()).unwrap_or(0));
    for (n, a) in nets {
        match a {
            Ask::Open => out
                .push_str(&format!("{pad}$HTTP[\"remote-ip\"] == {} {{ auth.require = ( ) }}\n", conf::q(n))),
            _ => {
                out.push_str(&format!("{pad}$HTTP[\"remote-ip\"] == {} {{\n", conf::q(n)));
                out.push_str(&ask_lines(a, &format!("{pad}  "), opts, script));
                out.push_str(&format!("{pad}}}\n"));
            }
        }
    }
}

fn ask_lines(a: &Ask, pad: &str, opts: &Options, script: &str) -> String {
    match a {
        Ask::Open => format!(
            "{pad}# no password asked: Apache asks none here (the Lua decides)\n{pad}auth.require = ( )\n"
        ),
        Ask::Password { file, realm } => {
            let file = conf::q(&(opts.map_path)(file));
            format!(
                "{pad}auth.backend.htpasswd.userfile = {file}\n\
                 {pad}auth.require = ( \"\" => ( \"method\" => \"basic\", \"realm\" => {}, \"require\" => \"valid-user\" ) )\n\
                 {pad}setenv.set-request-header = ( \"X-Lighten-Auth-File\" => {file} )\n\
                 {pad}magnet.attract-raw-url-to = ( {} )\n",
                conf::q(realm),
                conf::q(script),
            )
        }
    }
}

/// What Apache decides at place `p` without a user, for every method and network.
fn table(
    model: &Model,
    host: Option<usize>,
    classes: &Classes,
    p: &Place,
    files_at: &mut BTreeMap<String, Span>,
) -> Table {
    let env = BTreeMap::new();
    let mut t = Table::new();
    for m in &classes.methods {
        let method = m.as_deref().unwrap_or(OTHER_METHOD);
        let target =
            Target { filename: &p.filename, regex_subject: &p.filename, is_dir: false, uri: &p.uri, method };
        let dc =
            dirconf::build(model, host, &target, &mut Vec::new(), &mut |_| Err("decided per request".into()));
        for (net, ip) in &classes.networks {
            let exprs = BTreeMap::new();
            let client = Client { ip: *ip, method, env: &env, has_credentials: false, exprs: &exprs };
            let (status, _) = check(&dc, &client);
            let basic = dc.auth_type.is_some_and(|t| t.eq_ignore_ascii_case("basic"));
            let ask = match (dc.broken, status, dc.auth_user_file) {
                (None, Some(401), Some(f)) if basic => {
                    files_at.entry(f.value.clone()).or_insert(f.span);
                    Ask::Password {
                        file: f.value.clone(),
                        realm: dc.auth_name.unwrap_or_default().to_string(),
                    }
                }
                _ => Ask::Open,
            };
            t.insert((m.clone(), net.clone()), ask);
        }
    }
    t
}

/// The methods and networks the host's access rules name.
fn classes(scopes: &[&Scope]) -> Classes {
    let mut methods: BTreeSet<String> = BTreeSet::new();
    let mut nets: BTreeSet<String> = BTreeSet::new();
    for s in scopes {
        visit(s, &mut |sc| {
            if !sc.enabled {
                return;
            }
            if let (ScopeKind::Limit | ScopeKind::LimitExcept, Some(Matcher::Methods(ms))) =
                (&sc.kind, &sc.matcher)
            {
                methods.extend(ms.iter().cloned());
            }
            let a = sc.settings.access();
            for r in a.allow.iter().chain(&a.deny) {
                nets.extend(r.from.iter().filter_map(|h| cidr(h)));
            }
            for z in &a.require {
                authz_classes(z, &mut methods, &mut nets);
            }
        });
    }
    // (Apache numbers HEAD and GET as one method: both are decided where either is named)
    if methods.contains("GET") || methods.contains("HEAD") {
        methods.insert("GET".into());
        methods.insert("HEAD".into());
    }
    let mut networks: Vec<(Option<String>, IpAddr)> =
        nets.iter().filter_map(|n| Some((Some(n.clone()), n.split('/').next()?.parse().ok()?))).collect();
    let named = |ip: &IpAddr| nets.iter().any(|n| crate::eval::access::ip_matches(n, *ip));
    let other = ["192.0.2.1", "198.51.100.1", "203.0.113.1", "100.64.0.1", "2001:db8::1"]
        .iter()
        .filter_map(|a| a.parse::<IpAddr>().ok())
        .find(|ip| !named(ip))
        .unwrap_or(IpAddr::from([192, 0, 2, 1]));
    networks.insert(0, (None, other));
    let methods = std::iter::once(None).chain(methods.into_iter().map(Some)).collect();
    Classes { methods, networks }
}

fn authz_classes(z: &Authz, methods: &mut BTreeSet<String>, nets: &mut BTreeSet<String>) {
    match z {
        Authz::Container { children, .. } => children.iter().for_each(|c| authz_classes(c, methods, nets)),
        Authz::Require { provider, args, .. } => match provider.as_str() {
            "ip" => nets.extend(args.iter().filter_map(|h| cidr(h))),
            "local" => nets.extend(["127.0.0.0/8".to_string(), "::1/128".to_string()]),
            "method" => methods.extend(args.iter().cloned()),
            _ => {}
        },
    }
}

/// Sections lighttpd's URL blocks cannot name that decide who is asked for a password in
/// a host that asks for one somewhere: reported (their users may get 401). Sections that only
/// refuse are left alone (both servers refuse there).
fn unnameable(scopes: &[&Scope], findings: &mut Vec<Finding>) {
    let mut found: Vec<(Code, Span, String)> = Vec::new();
    for s in scopes {
        visit(s, &mut |sc| {
            if !sc.enabled {
                return;
            }
            let a = sc.settings.access();
            let pattern = match (&sc.kind, &sc.matcher) {
                (ScopeKind::DirectoryMatch | ScopeKind::LocationMatch | ScopeKind::FilesMatch, _) => true,
                (ScopeKind::Directory | ScopeKind::Location | ScopeKind::Files, Some(Matcher::Regex(_))) => {
                    true
                }
                (ScopeKind::Directory | ScopeKind::Location, Some(Matcher::Path(p))) => wildcard(p),
                (ScopeKind::If | ScopeKind::ElseIf | ScopeKind::Else, _) => true,
                _ => false,
            };
            if !pattern {
                return;
            }
            let files = matches!(sc.kind, ScopeKind::Files | ScopeKind::FilesMatch);
            let auth = a.auth_type.is_some() || a.auth_user_file.is_some() || a.auth_name.is_some();
            if auth && conf::basic_auth(a) {
                // (reported as before: a realm of its own lighttpd does not ask for)
                let (code, what) = if files {
                    (Code::AuthFilesMatch, "a password for a <FilesMatch> (or <Files ~>) name is not asked for by lighttpd: its users cannot log in (401)".to_string())
                } else if matches!(sc.kind, ScopeKind::If | ScopeKind::ElseIf | ScopeKind::Else) {
                    (Code::AuthAsk, "a password set in an <If> section is decided per request: lighttpd does not ask for it (401)".to_string())
                } else {
                    (
                        Code::AuthPattern,
                        format!(
                            "a password for {} is not asked for by lighttpd: its users cannot log in (401)",
                            if matches!(sc.kind, ScopeKind::Location | ScopeKind::LocationMatch) {
                                "a <LocationMatch> (or a <Location> with a wildcard or ~)"
                            } else {
                                "a <DirectoryMatch> (or a <Directory> with a wildcard or ~)"
                            }
                        ),
                    )
                };
                found.push((code, a.auth_type.as_ref().map(|t| t.span).unwrap_or(sc.at), what));
            } else if auth
                || may_grant(a)
                || sc.children.iter().any(|c| {
                    matches!(c.kind, ScopeKind::Limit | ScopeKind::LimitExcept)
                        && may_grant(c.settings.access())
                })
            {
                found.push((
                    Code::AuthAsk,
                    sc.at,
                    "who is asked for a password here is decided by a section lighttpd's URL blocks cannot name \
                     (a pattern, a wildcard or an <If>): where it lets people in without a password inside a \
                     password area, they get 401"
                        .into(),
                ));
            }
        });
        // Allow/Deny by host name or environment variable inside a password area.
        visit(s, &mut |sc| {
            let a = sc.settings.access();
            for r in a.allow.iter().chain(&a.deny) {
                if r.from.iter().any(|h| !h.eq_ignore_ascii_case("all") && cidr(h).is_none()) && sc.enabled {
                    found.push((
                        Code::AuthAsk,
                        r.at,
                        "an Allow or Deny by host name or environment variable: lighttpd asks for the password \
                         as if it did not match, so those clients may get 401"
                            .into(),
                    ));
                }
            }
        });
    }
    let mut seen = BTreeSet::new();
    for (code, at, why) in found {
        if seen.insert(at) {
            findings.push(Finding::approximated(code, at, why));
        }
    }
}

/// Whether a section's own access rules can let someone in without a user.
fn may_grant(a: &AccessConfig) -> bool {
    fn grants(z: &Authz) -> bool {
        match z {
            Authz::Container { children, .. } => children.iter().any(grants),
            Authz::Require { negated, provider, args, .. } => {
                *negated
                    || !matches!(
                        provider.as_str(),
                        "all" | "valid-user" | "user" | "group" | "file-owner" | "file-group"
                    )
                    || (provider == "all" && args.first().is_some_and(|x| x.eq_ignore_ascii_case("granted")))
            }
        }
    }
    a.require.iter().any(grants) || a.satisfy.is_some() || !a.allow.is_empty()
}

/// Remembers compiled block patterns (PCRE2, as lighttpd compiles them).
#[derive(Default)]
struct Patterns(HashMap<String, Option<pcre2::bytes::Regex>>);

impl Patterns {
    /// What the blocks decide for `uri`: the last one that matches it; else `none` (nothing
    /// asked).
    fn decided(&mut self, places: &[Place], blocks: &[(usize, Table)], uri: &str, none: &Table) -> Table {
        for (i, t) in blocks.iter().rev() {
            let re = self
                .0
                .entry(places[*i].regex.clone())
                .or_insert_with(|| pcre2::bytes::RegexBuilder::new().build(&places[*i].regex).ok());
            if re.as_ref().is_some_and(|r| r.is_match(uri.as_bytes()).unwrap_or(false)) {
                return t.clone();
            }
        }
        none.clone()
    }
}

/// A name a `<Files>` glob takes (the glob itself for a plain name), checked with
/// apr_fnmatch as Apache's file walk matches it.
fn glob_sample(glob: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = glob.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' => out.push('x'),
            '?' => out.push('x'),
            '[' => {
                let negated = chars.peek() == Some(&'!');
                if negated {
                    chars.next();
                }
                let mut set = String::new();
                for d in chars.by_ref() {
                    if d == ']' {
                        break;
                    }
                    set.push(d);
                }
                let pick = if negated {
                    ['x', 'y', 'z', '0', '_'].into_iter().find(|c| !set.contains(*c))?
                } else {
                    set.chars().find(|c| *c != '\\' && *c != '-')?
                };
                out.push(pick);
            }
            '\\' => out.push(chars.next().unwrap_or('\\')),
            c => out.push(c),
        }
    }
    (!out.contains('/') && crate::expr::fnmatch(glob, &out, false, false)).then_some(out)
}

fn wildcard(p: &str) -> bool {
    p.contains(['*', '?', '['])
}

fn describe(s: &Scope) -> String {
    crate::model::describe_scope(s)
}

fn unreachable(findings: &mut Vec<Finding>, a: &AccessConfig, at: Span, dir: &str) {
    findings.push(Finding::approximated(
        Code::AuthUnreachable,
        a.auth_type.as_ref().map(|t| t.span).unwrap_or(at),
        format!("{dir} is not reached by a URL lighten can name: its users cannot log in (401)"),
    ));
}

fn visit<'s>(s: &'s Scope, f: &mut dyn FnMut(&'s Scope)) {
    f(s);
    for c in &s.children {
        visit(c, f);
    }
}

fn any_scope(s: &Scope, f: &dyn Fn(&Scope) -> bool) -> bool {
    f(s) || s.children.iter().any(|c| c.enabled && any_scope(c, f))
}

/// Internal rewrites that lead into a password area from outside it (or from another
/// realm): lighttpd's mod_auth asks for the password of the URL the client sent, and the
/// Lua honours a login only for the realm whose file checked it, so the target realm's
/// users get 401 through the rule (fixtures/regress/rewrite-into-realm). Stricter, and
/// reported on the rule's line. A target with a `$n` or `%{..}` in it is taken by what
/// comes before that: when that prefix is the start of a realm's URLs, the rule can
/// lead there.
fn rewrites_into_realms(
    scopes: &[(String, &crate::model::Scope)],
    realms: &[String],
    findings: &mut Vec<Finding>,
) {
    use crate::model::rewrite::RuleFlagKind as K;
    if realms.is_empty() {
        return;
    }
    // the realm lighttpd asks for at a URL-path: the innermost (longest) prefix
    let realm_of = |url: &str| {
        realms
            .iter()
            .filter(|r| url.starts_with(r.as_str()) || format!("{url}/") == **r)
            .max_by_key(|r| r.len())
    };
    for (from, scope) in scopes {
        let rw = scope.settings.rewrite();
        for rule in &rw.rules {
            let sub = rule.substitution.as_str();
            let external = sub.contains("://") || sub.starts_with("//");
            if sub == "-"
                || external
                || [K::Redirect, K::Forbidden, K::Gone, K::Proxy].iter().any(|k| rule.has(*k))
            {
                continue;
            }
            let target = if sub.starts_with('/') {
                sub.to_string()
            } else {
                let base = rw.base.as_ref().map(|b| b.value.clone()).unwrap_or_else(|| from.clone());
                format!("{}/{sub}", base.trim_end_matches('/'))
            };
            let path = target.split('?').next().unwrap_or_default();
            let fixed = &path[..path.find(['$', '%']).unwrap_or(path.len())];
            let dynamic = fixed.len() < path.len();
            // Where the rule's URLs come from: its folder, or where its pattern's literal
            // start puts them (`^/p/pub/(.*)$` in the server: /p/pub/).
            let start = if rule.negated { None } else { pattern_prefix(&rule.pattern) };
            let source = match start {
                Some(p) if p.starts_with('/') => realm_of(p),
                Some(p) => realm_of(&format!("{from}{p}")),
                None => realm_of(from),
            };
            let target_realm = realm_of(fixed);
            // Out of a realm: lighttpd asks for its password on the URL as sent, where
            // Apache, past the rewrite, asks for none (or another's).
            if let Some(r) = source.filter(|r| target_realm != Some(*r) && !(dynamic && r.starts_with(fixed)))
            {
                findings.push(Finding::approximated(
                    Code::AuthAfterRewrite,
                    rule.at,
                    format!(
                        "this rewrite leads out of the password area {r}: lighttpd asks for that area's password \
                         on the URL as sent, so its requests get 401 without one"
                    ),
                ));
                continue;
            }
            let into = realms
                .iter()
                .filter(|r| Some(*r) != source)
                .find(|r| target_realm == Some(*r) || (dynamic && r.starts_with(fixed)));
            if let Some(r) = into {
                findings.push(Finding::approximated(
                    Code::AuthAfterRewrite,
                    rule.at,
                    format!(
                        "this rewrite {} the password area {r}: lighttpd asks for the password of the URL as sent, \
                         so that area's users get 401 through it",
                        if target_realm != Some(r) { "can lead into" } else { "leads into" }
                    ),
                ));
            }
        }
    }
}

/// An AliasMatch that is an Alias in all but name: `^/docs/(.*)$` to `/srv/docs/$1` maps
/// the same URLs to the same files as `Alias /docs/ /srv/docs/` (both prefixes plain, ending
/// in `/`, the tail carried whole), so its realms are followed as an Alias's.
fn prefix_alias(pattern: &str, target: &str) -> Option<(String, String)> {
    let from = pattern_prefix(pattern)?;
    let rest = &pattern[1 + from.len()..];
    let to = target.strip_suffix("$1")?;
    let plain = |s: &str| !s.contains(['\\', '$', '%', '?', '#']);
    (from.ends_with('/')
        && to.ends_with('/')
        && plain(from)
        && plain(to)
        && (rest == "(.*)$" || rest == "(.*)"))
        .then(|| (from.to_string(), to.to_string()))
}

/// The literal start of an anchored rule pattern (`^/p/pub/(.*)$` gives `/p/pub/`), where
/// its URLs are sure to begin; None when the pattern is not anchored or starts otherwise.
fn pattern_prefix(pattern: &str) -> Option<&str> {
    let rest = pattern.strip_prefix('^')?;
    let end = rest.find(|c: char| "\\.[]()*+?{}|^$".contains(c)).unwrap_or(rest.len());
    // (a quantifier takes the character before it back)
    let end = if rest[end..].starts_with(['*', '+', '?', '{']) {
        rest[..end].char_indices().last().map_or(0, |(i, _)| i)
    } else {
        end
    };
    Some(&rest[..end])
}

/// Password files with lines lighttpd's mod_authn_file reads otherwise than Apache, whose
/// users then get 401: a line that begins or ends with a blank (Apache trims each line,
/// ap_cfg_getline; lighttpd does not, and a user with a blank at either end is never
/// honoured: lighten_plans.login), and a line with a field after the hash
/// (`bob:$apr1$...:Bob Smith`: Apache's authn_file takes the hash up to the next colon,
/// lighttpd the rest of the line). The file is the admin's: reported, not rewritten.
fn passwords_lighttpd_misreads(
    blocks: &[(usize, Table)],
    opts: &Options,
    files_at: &BTreeMap<String, Span>,
    findings: &mut Vec<Finding>,
) {
    let files: BTreeSet<&String> = blocks
        .iter()
        .flat_map(|(_, t)| t.values())
        .filter_map(|a| match a {
            Ask::Password { file, .. } => Some(file),
            Ask::Open => None,
        })
        .collect();
    for file in files {
        let Ok(text) = std::fs::read_to_string((opts.map_path)(file)) else { continue };
        let Some(at) = files_at.get(file) else { continue };
        let lines = || text.lines().map(|l| l.trim_end_matches('\r')).filter(|l| !l.trim().is_empty());
        if lines().any(|l| l.starts_with([' ', '\t']) || l.ends_with([' ', '\t'])) {
            findings.push(Finding::approximated(
                Code::AuthAsk,
                *at,
                format!(
                    "{file} has lines that begin or end with a blank, which Apache trims and lighttpd does not: \
                     those users get 401"
                ),
            ));
        }
        // (a comment line, `#...`, names no user either server finds)
        if lines().any(|l| !l.trim_start().starts_with('#') && l.matches(':').count() > 1) {
            findings.push(Finding::approximated(
                Code::AuthAsk,
                *at,
                format!(
                    "{file} has lines with a field after the password hash (user:hash:comment): Apache reads \
                     the hash up to that colon, lighttpd to the end of the line, so those users get 401; \
                     move the comment out of the file"
                ),
            ));
        }
    }
}

/// An address or network as lighttpd's `$HTTP["remote-ip"]` takes it (CIDR), when APR reads
/// it as one whose mask has no holes.
fn cidr(h: &str) -> Option<String> {
    crate::model::subnet::parse_word(h).ok()?.cidr().map(|c| c.0)
}

#[cfg(test)]
mod tests {
    use super::glob_sample;

    #[test]
    fn a_files_glob_gives_a_name_it_takes() {
        assert_eq!(glob_sample("wp-login.php").as_deref(), Some("wp-login.php"));
        assert_eq!(glob_sample("*.php").as_deref(), Some("x.php"));
        assert_eq!(glob_sample("[Ww]p-?.txt").as_deref(), Some("Wp-x.txt"));
        assert_eq!(glob_sample("[!x]").as_deref(), Some("y"));
        assert_eq!(glob_sample("a\\*b").as_deref(), Some("a*b"));
    }
}
