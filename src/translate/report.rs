//! What became of every directive: `report.md` for people, `report.json` for tools.

use super::{Code, Finding};
use crate::model::{Model, Scope};
use crate::source::SourceMap;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(tag = "fate", rename_all = "lowercase")]
pub enum Fate {
    /// Carried over exactly (natively or by the Lua runtime).
    Exact,
    /// Carried over with a difference, said here.
    Approximated { code: Code, reason: String },
    /// Carried over in lighttpd's own way, with a difference that does not change how
    /// requests are answered (log files and formats): a note, not an approximation.
    Noted { code: Code, reason: String },
    /// Not carried over on purpose: it does not change how requests are answered.
    Ignored { code: Code, reason: String },
    /// Cannot be carried over; `closed` says how the site fails closed instead.
    Unsupported { code: Code, reason: String, closed: String },
}

impl Fate {
    pub fn rank(&self) -> u8 {
        match self {
            Fate::Exact => 0,
            Fate::Noted { .. } | Fate::Ignored { .. } => 1,
            Fate::Approximated { .. } => 2,
            Fate::Unsupported { .. } => 3,
        }
    }

    /// The finding's code (docs/diagnostics.md); `None` when exact.
    pub fn code(&self) -> Option<Code> {
        match self {
            Fate::Exact => None,
            Fate::Approximated { code, .. }
            | Fate::Noted { code, .. }
            | Fate::Ignored { code, .. }
            | Fate::Unsupported { code, .. } => Some(*code),
        }
    }

    /// The reason, with how it fails closed for an unsupported one; empty when exact.
    pub fn why(&self) -> String {
        match self {
            Fate::Exact => String::new(),
            Fate::Approximated { reason, .. } | Fate::Noted { reason, .. } | Fate::Ignored { reason, .. } => {
                reason.clone()
            }
            Fate::Unsupported { reason, closed, .. } => format!("{reason}; {closed}"),
        }
    }

    pub fn label(&self) -> &'static str {
        match self {
            Fate::Exact => "exact",
            Fate::Approximated { .. } => "approximated",
            Fate::Noted { .. } => "noted",
            Fate::Ignored { .. } => "ignored",
            Fate::Unsupported { .. } => "unsupported",
        }
    }
}

#[derive(Clone, Debug, Hash, Serialize)]
pub struct Entry {
    /// `file:line`.
    pub at: String,
    pub directive: String,
    pub args: String,
    #[serde(flatten)]
    pub fate: Fate,
}

impl Entry {
    /// A digest of the whole entry (place, directive, arguments, fate and reason): what
    /// tells an entry of one report that another already holds ([`Report::leaving_out`]).
    pub fn fingerprint(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::hash::DefaultHasher::new();
        self.hash(&mut h);
        h.finish()
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    pub entries: Vec<Entry>,
    /// Every directive's fate, those left out of `entries` too.
    pub counts: BTreeMap<String, usize>,
    /// A verdict per site (its vhosts by ServerName, the main server's settings and the
    /// .htaccess files it reaches).
    pub sites: Vec<SiteVerdict>,
    /// How many entries are left out because another report holds each of them
    /// ([`Report::leaving_out`]), and which.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elsewhere: Option<Elsewhere>,
}

/// Entries a report leaves out, each held by another report.
#[derive(Clone, Debug, Serialize)]
pub struct Elsewhere {
    pub entries: usize,
    /// Where they are, in words (`each account's <domain>/report.md`).
    pub held_in: String,
}

/// Entries alike but for their place: [`Report::grouped`].
pub struct Group<'a> {
    /// `file:line` of each, in report order.
    pub places: Vec<&'a str>,
    pub directive: &'a str,
    pub args: String,
    pub fate: &'a Fate,
}

/// The verdicts, in the words report.md, the wizard, verify and batch use.
pub const READY: &str = "ready";
pub const NOTES: &str = "ready with notes";
pub const NEEDS_YOU: &str = "needs you";

/// Whether a site can move as it is.
#[derive(Clone, Debug, Serialize)]
pub struct SiteVerdict {
    pub site: String,
    /// `ready`, `ready with notes` or `needs you`.
    pub verdict: &'static str,
    pub unsupported: usize,
    pub approximated: usize,
    /// What to do next, in a sentence.
    pub next: String,
    /// `file:line` of the site's first unsupported line, else its first approximated one.
    #[serde(skip)]
    pub worst_at: Option<String>,
}

impl SiteVerdict {
    /// The verdict of a Plesk account's site in its own conversion: the site named as
    /// its domain (or `www.` of it), else the worst of the account's sites (lighten's
    /// stand-in default vhosts are sites too); `None` when the report has no site.
    pub fn of_account<'a>(report: &'a Report, domain: &str) -> Option<&'a SiteVerdict> {
        let www = format!("www.{domain}");
        report
            .sites
            .iter()
            .find(|v| v.site.eq_ignore_ascii_case(domain) || v.site.eq_ignore_ascii_case(&www))
            .or_else(|| report.sites.iter().max_by_key(|v| (v.unsupported > 0, v.approximated > 0)))
    }

    /// One line, as inspect and verify print it: `blog.example: needs you (9 unsupported,
    /// 2 approximated)`; report.md gives the next step beside it.
    pub fn line(&self) -> String {
        let mut why = Vec::new();
        if self.unsupported > 0 {
            why.push(format!("{} unsupported", self.unsupported));
        }
        if self.approximated > 0 {
            why.push(format!("{} approximated", self.approximated));
        }
        if why.is_empty() {
            format!("{}: {}", self.site, self.verdict)
        } else {
            format!("{}: {} ({})", self.site, self.verdict, why.join(", "))
        }
    }

    pub(crate) fn of(site: String, entries: &[&Entry]) -> SiteVerdict {
        let mut seen = std::collections::BTreeSet::new();
        let (mut unsupported, mut approximated) = (0, 0);
        // the first of each kind, a file of the server before lighten's stand-in defaults
        let mut first: [Option<&String>; 4] = [None; 4];
        for e in entries {
            // a line reached by several of the site's vhosts counts once
            if !seen.insert(&e.at) {
                continue;
            }
            let stand_in = usize::from(e.at.starts_with("<lighten:"));
            match e.fate {
                Fate::Unsupported { .. } => {
                    unsupported += 1;
                    first[stand_in].get_or_insert(&e.at);
                }
                Fate::Approximated { .. } => {
                    approximated += 1;
                    first[2 + stand_in].get_or_insert(&e.at);
                }
                _ => {}
            }
        }
        let worst_at = first.into_iter().flatten().next().cloned();
        let (verdict, next) = if unsupported > 0 {
            (
                NEEDS_YOU,
                format!(
                    "{unsupported} line(s) cannot be carried over and fail closed (see Unsupported): change them in Apache's configuration as each says, or accept what lighttpd answers instead, then convert again"
                ),
            )
        } else if approximated > 0 {
            (
                NOTES,
                format!(
                    "{approximated} line(s) are carried over with a difference (see Approximated): check that each is acceptable, run lighten verify, then switch"
                ),
            )
        } else {
            (READY, "everything is carried over exactly: run lighten verify, then switch".to_string())
        };
        SiteVerdict { site, verdict, unsupported, approximated, next, worst_at }
    }
}

impl Report {
    /// Whether anything that changes answers was approximated or refused (exit status 1);
    /// notes and ignored directives do not count.
    pub fn inexact(&self) -> bool {
        self.inexact_entries().next().is_some()
    }

    /// The entries that make a conversion inexact (approximated or unsupported), in order.
    pub fn inexact_entries(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| matches!(e.fate, Fate::Approximated { .. } | Fate::Unsupported { .. }))
    }

    /// The entries of one fate (`Fate::label`), the same directive, arguments and finding
    /// in several places (a Plesk template in every account) as one group with every
    /// place, in the order first met; arguments cut at 60 characters.
    pub fn grouped(&self, label: &str) -> Vec<Group<'_>> {
        let mut groups: Vec<Group> = Vec::new();
        let mut index: BTreeMap<(&str, String, &Fate), usize> = BTreeMap::new();
        for e in self.entries.iter().filter(|e| e.fate.label() == label) {
            let args = if e.args.chars().count() > 60 {
                format!("{}…", e.args.chars().take(60).collect::<String>())
            } else {
                e.args.clone()
            };
            match index.entry((e.directive.as_str(), args.clone(), &e.fate)) {
                std::collections::btree_map::Entry::Occupied(k) => groups[*k.get()].places.push(&e.at),
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert(groups.len());
                    groups.push(Group { places: vec![&e.at], directive: &e.directive, args, fate: &e.fate });
                }
            }
        }
        groups
    }

    /// This report without the entries `held` already has (by [`Entry::fingerprint`]),
    /// said in it as held `held_in`; counts and verdicts stay whole.  `lighten batch`'s
    /// combined report leaves out what each account's own report says the same way, and
    /// lists what only the server as a whole decides, or decides otherwise.
    pub fn leaving_out(&self, held: &std::collections::HashSet<u64>, held_in: &str) -> Report {
        let entries: Vec<Entry> =
            self.entries.iter().filter(|e| !held.contains(&e.fingerprint())).cloned().collect();
        let left = self.entries.len() - entries.len();
        Report {
            entries,
            counts: self.counts.clone(),
            sites: self.sites.clone(),
            elsewhere: (left > 0).then(|| Elsewhere { entries: left, held_in: held_in.to_string() }),
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }

    pub fn to_markdown(&self) -> String {
        let mut out = String::from("# lighten conversion report\n\n");
        out.push_str("Every directive Apache reads, and what became of it in the lighttpd setup.\n\n");
        out.push_str("| fate | directives |\n|---|---|\n");
        for (k, v) in &self.counts {
            out.push_str(&format!("| {k} | {v} |\n"));
        }
        if let Some(e) = &self.elsewhere {
            out.push_str(&format!(
                "\n{} of these are not listed below: each stands, at the same line and with the same fate, in {}. \
                 Listed here is what differs from those.\n",
                e.entries, e.held_in
            ));
        }
        if !self.sites.is_empty() {
            out.push_str("\n## Sites\n\n| site | verdict | next step |\n|---|---|---|\n");
            for v in &self.sites {
                out.push_str(&format!("| {} | **{}** | {} |\n", v.site, v.verdict, v.next));
            }
        }
        for (title, pick) in [
            ("Unsupported (fails closed)", "unsupported"),
            ("Approximated", "approximated"),
            ("Noted (no change to answers)", "noted"),
            ("Ignored", "ignored"),
            ("Exact", "exact"),
        ] {
            if !self.entries.iter().any(|e| e.fate.label() == pick) {
                continue;
            }
            out.push_str(&format!("\n## {title}\n\n"));
            // by code, each with its next step once, in the order first met
            let groups = self.grouped(pick);
            let mut codes: Vec<Option<Code>> = Vec::new();
            for g in &groups {
                if !codes.contains(&g.fate.code()) {
                    codes.push(g.fate.code());
                }
            }
            for (k, code) in codes.iter().copied().enumerate() {
                if let Some(c) = code {
                    if k > 0 {
                        out.push('\n');
                    }
                    out.push_str(&format!("### `{c}`: {}\n\nNext step: {}.\n\n", c.summary(), c.next()));
                }
                for g in groups.iter().filter(|g| g.fate.code() == code) {
                    let at: Vec<String> = g.places.iter().map(|p| format!("`{p}`")).collect();
                    let n = if g.places.len() > 1 {
                        format!(" ({} places)", g.places.len())
                    } else {
                        String::new()
                    };
                    let why = g.fate.why();
                    let why = if why.is_empty() { String::new() } else { format!(": {why}") };
                    let args = g.args.replace('`', "'");
                    out.push_str(&format!("- {} {} `{args}`{why}{n}\n", at.join(", "), g.directive));
                }
            }
        }
        out
    }
}

/// One entry per enabled directive, its fate from the catalogue unless a finding of the
/// translation says more (the worst finding on its line wins).
pub fn build(model: &Model, sources: &SourceMap, findings: &[Finding]) -> Report {
    let mut by_line: BTreeMap<String, &Finding> = BTreeMap::new();
    for f in findings {
        let key = sources.line_ref(f.at);
        match by_line.get(&key) {
            Some(old) if old.fate.rank() >= f.fate.rank() => {}
            _ => {
                by_line.insert(key, f);
            }
        }
    }
    let mut entries = Vec::new();
    let modules: std::collections::BTreeSet<&str> = model.modules.iter().map(|m| m.id.as_str()).collect();
    let visit = |s: &Scope, entries: &mut Vec<Entry>| {
        let from = entries.len();
        walk(s, sources, &by_line, &modules, entries);
        from..entries.len()
    };
    let server = visit(&model.server, &mut entries);
    let vhosts: Vec<_> = model.vhosts.iter().map(|v| visit(&v.scope, &mut entries)).collect();
    let mut htaccess = Vec::new();
    for h in &model.htaccess {
        if let Some(s) = &h.scope {
            htaccess.push((visit(s, &mut entries), &h.host_ids));
        }
    }
    let mut counts = BTreeMap::new();
    for e in &entries {
        *counts.entry(e.fate.label().to_string()).or_insert(0) += 1;
    }
    // Sites: the vhosts of one ServerName together (its http and https hosts), with the
    // main server's settings and the .htaccess files they reach; the main server alone
    // when there is no vhost.
    let mut groups: Vec<(String, Vec<Option<usize>>)> = Vec::new();
    for (i, v) in model.vhosts.iter().enumerate() {
        let name = v.server_name.clone().unwrap_or_else(|| v.label(i));
        match groups.iter_mut().find(|(n, _)| *n == name) {
            Some((_, ids)) => ids.push(Some(i)),
            None => groups.push((name, vec![Some(i)])),
        }
    }
    if groups.is_empty() {
        groups.push(("the main server".to_string(), vec![None]));
    }
    let sites = groups
        .into_iter()
        .map(|(name, ids)| {
            let mut mine: Vec<&Entry> = entries[server.clone()].iter().collect();
            for id in ids.iter().flatten() {
                mine.extend(&entries[vhosts[*id].clone()]);
            }
            for (range, hosts) in &htaccess {
                if hosts.iter().any(|h| ids.contains(h)) {
                    mine.extend(&entries[range.clone()]);
                }
            }
            SiteVerdict::of(name, &mine)
        })
        .collect();
    Report { entries, counts, sites, elsewhere: None }
}

fn walk(
    s: &Scope,
    sources: &SourceMap,
    by_line: &BTreeMap<String, &Finding>,
    modules: &std::collections::BTreeSet<&str>,
    out: &mut Vec<Entry>,
) {
    if !s.enabled {
        return;
    }
    for d in s.directives.iter().filter(|d| d.enabled) {
        let at = sources.line_ref(d.at);
        let note = crate::catalogue::catalogue().get(&d.name).map(|i| i.note.clone()).unwrap_or_default();
        let fate = match by_line.get(&at) {
            Some(f) => f.fate.clone(),
            None => carried(&d.name, &d.args, d.status, &note, modules),
        };
        out.push(Entry { at, directive: d.name.to_string(), args: d.args.clone(), fate });
    }
    for c in &s.children {
        walk(c, sources, by_line, modules, out);
    }
}

/// Directives `lighten convert` carries over exactly: the Lua runtime or lighttpd.conf
/// does what Apache does with them.
const EXACT: &[&str] = &[
    // read and resolved while loading
    "Include",
    "IncludeOptional",
    "Define",
    "UnDefine",
    "<IfModule",
    "<IfDefine",
    "<IfVersion",
    "<IfFile",
    "<IfDirective",
    "<IfSection",
    "LoadModule",
    "ServerRoot",
    "AccessFileName",
    "AllowOverride",
    "AllowOverrideList",
    // hosts and files
    "<VirtualHost",
    "ServerName",
    "ServerAlias",
    "UseCanonicalName",
    "DocumentRoot",
    "Listen",
    "User",
    "Group",
    "SSLEngine",
    "SSLCertificateFile",
    "SSLCertificateKeyFile",
    // sections merged per request by lighten.lua
    "<Directory",
    "<DirectoryMatch",
    "<Files",
    "<FilesMatch",
    "<Location",
    "<LocationMatch",
    "<If",
    "<ElseIf",
    "<Else",
    "<Limit",
    "<LimitExcept",
    // mod_rewrite, mod_alias, mod_dir
    "RewriteEngine",
    "RewriteRule",
    "RewriteCond",
    "RewriteBase",
    "RewriteOptions",
    "RewriteMap",
    "Alias",
    "AliasMatch",
    "Redirect",
    "RedirectMatch",
    "RedirectPermanent",
    "RedirectTemp",
    "DirectoryIndex",
    "DirectorySlash",
    "FallbackResource",
    "ErrorDocument",
    // access
    "Require",
    "<RequireAll",
    "<RequireAny",
    "<RequireNone",
    "Order",
    "Allow",
    "Deny",
    "Satisfy",
    "AuthType",
    "AuthName",
    "AuthUserFile",
    "AuthBasicProvider",
    // mod_mime, mod_headers, mod_expires, mod_env, mod_setenvif
    "AddType",
    "ForceType",
    "RemoveType",
    "TypesConfig",
    "AddEncoding",
    "AddCharset",
    "AddDefaultCharset",
    "AddHandler",
    "SetHandler",
    "RemoveHandler",
    "Header",
    "ExpiresActive",
    "ExpiresByType",
    "ExpiresDefault",
    "SetEnv",
    "UnsetEnv",
    "SetEnvIf",
    "SetEnvIfNoCase",
    "BrowserMatch",
    "BrowserMatchNoCase",
    "TraceEnable",
    "SSLRequireSSL",
    "PidFile",
];

/// Directives that do not change how a request is answered, or that lighttpd sets its
/// own way (process and connection handling).
const IGNORED: &[(&str, &str)] = &[
    ("Timeout", "lighttpd keeps its own timeouts (server.max-read-idle, server.max-write-idle)"),
    ("KeepAlive", "lighttpd keeps connections alive by default (server.max-keep-alive-requests)"),
    ("KeepAliveTimeout", "lighttpd has its own (server.max-keep-alive-idle)"),
    ("MaxKeepAliveRequests", "lighttpd has its own (server.max-keep-alive-requests)"),
    ("LogLevel", "lighttpd logs errors at its own level"),
    ("MaxRequestWorkers", "lighttpd is one event loop; server.max-connections limits clients"),
    ("RequestReadTimeout", "lighttpd keeps its own read timeouts"),
    ("SSLVerifyClient", "none: no client certificate is asked for"),
    ("SSLOptions", "only changes variables handed to CGI"),
];

/// The fate of a directive no finding speaks about.
fn carried(
    name: &str,
    args: &str,
    status: Option<crate::catalogue::Status>,
    note: &str,
    modules: &std::collections::BTreeSet<&str>,
) -> Fate {
    use crate::catalogue::Status;
    let lower = args.to_ascii_lowercase();
    match name {
        "Options" => {
            // An option changes answers only where its module is loaded.
            let odd: Vec<&str> = [
                ("multiviews", &["negotiation_module"][..]),
                ("execcgi", &["cgi_module", "cgid_module"][..]),
                ("includes", &["include_module"][..]),
                ("includesnoexec", &["include_module"][..]),
            ]
            .into_iter()
            .filter(|(_, m)| m.iter().any(|m| modules.contains(m)))
            .map(|(o, _)| o)
            .filter(|o| {
                lower
                    .split_whitespace()
                    .any(|w| w.trim_start_matches(['+', '-']) == *o && !w.starts_with('-'))
            })
            .collect();
            return if odd.is_empty() {
                Fate::Exact
            } else {
                Fate::Approximated {
                    code: Code::OptionsNotCarried,
                    reason: format!(
                        "{} are not carried over (no content negotiation, CGI or SSI)",
                        odd.join(", ")
                    ),
                }
            };
        }
        "FileETag" if !lower.trim().eq_ignore_ascii_case("none") => {
            return Fate::Approximated {
                code: Code::Etag,
                reason: "lighttpd computes its own ETag (same role, other value)".into(),
            };
        }
        "FileETag" => return Fate::Exact,
        "AddOutputFilter" | "SetOutputFilter"
            if lower
                .split_whitespace()
                .next()
                .is_some_and(|f| f.split(';').any(|f| !f.is_empty() && f != "deflate")) =>
        {
            return Fate::Unsupported {
                code: Code::OutputFilter,
                reason: "only the DEFLATE filter is translated".into(),
                closed: "the files it applies to answer 403, never unfiltered".into(),
            };
        }
        "AddOutputFilterByType" => {
            return if lower.contains("deflate") {
                Fate::Exact
            } else {
                Fate::Unsupported {
                    code: Code::OutputFilter,
                    reason: "only the DEFLATE filter is translated".into(),
                    closed: "left out".into(),
                }
            };
        }
        // access logs are written as Apache writes them (conf.rs reports what differs)
        "CustomLog" | "TransferLog" | "LogFormat" => return Fate::Exact,
        "ErrorLog" => {
            return Fate::Noted {
                code: Code::OwnLogs,
                reason:
                    "lighttpd keeps one error log for the whole server (server.errorlog), in its own format"
                        .into(),
            };
        }
        "SuexecUserGroup" => {
            return Fate::Approximated {
                code: Code::PhpUser,
                reason: "PHP runs as its FastCGI backend's user".into(),
            };
        }
        // Request size limits: Apache refuses a larger request (413, 400) before any access
        // rule; lighttpd's own defaults apply instead (review 10: "grants no access" said
        // less than that).
        "LimitRequestBody" | "LimitRequestFields" | "LimitRequestFieldsize" | "LimitRequestLine" => {
            return Fate::Unsupported {
                code: Code::NotYetCarried,
                reason: format!("not carried over by this version of lighten convert ({note})"),
                closed: "left out: lighttpd's own request limits apply, so a larger request Apache refuses (413 or 400) is answered".into(),
            };
        }
        _ => {}
    }
    if EXACT.iter().any(|e| e.eq_ignore_ascii_case(name)) {
        return Fate::Exact;
    }
    if let Some((_, why)) = IGNORED.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
        return Fate::Ignored { code: Code::NoEffect, reason: why.to_string() };
    }
    if name.eq_ignore_ascii_case("IndexIgnore") {
        return Fate::Approximated {
            code: Code::ListingLook,
            reason: "a listing that would show a name an IndexIgnore hides (any the host reads, in every folder of the host) answers 403".into(),
        };
    }
    if matches!(name, "IndexOptions" | "HeaderName" | "ReadmeName" | "IndexOrderDefault") {
        return Fate::Approximated {
            code: Code::ListingLook,
            reason: "lighttpd's directory listing has its own look".into(),
        };
    }
    match status {
        Some(Status::Ignored) => Fate::Ignored { code: Code::NoEffect, reason: note.to_string() },
        Some(Status::Unsupported) => Fate::Unsupported {
            code: Code::NoCounterpart,
            reason: if note.is_empty() { "not translated".into() } else { note.to_string() },
            closed: "left out".into(),
        },
        None => Fate::Unsupported {
            code: Code::UnknownToLighten,
            reason: "unknown directive".into(),
            closed: "left out".into(),
        },
        // The catalogue plans to carry it; this version does not yet.
        Some(Status::Translated) | Some(Status::Approximated) => Fate::Unsupported {
            code: Code::NotYetCarried,
            reason: if note.is_empty() {
                "not carried over by this version of lighten convert".into()
            } else {
                format!("not carried over by this version of lighten convert ({note})")
            },
            closed: "left out; it grants no access".into(),
        },
    }
}

/// Why leaving the directive `name` (with `args`) out could let in a request Apache
/// refuses: it narrows who gets in, or changes who the client is or which files a URL
/// reaches. Such a directive is not carried over, and the requests it governs answer 403
/// (both tiers: the interpreter refuses them, the compiler leaves such a host to it).
pub fn access_not_carried(name: &str, args: &str) -> Option<&'static str> {
    const WHY: &[(&str, &str)] = &[
        (
            "RemoteIPHeader",
            "mod_remoteip takes the client's address from a request header, and Require ip, Allow and Deny judge that address",
        ),
        ("AllowMethods", "mod_allowmethods refuses (405) every other method"),
        ("SSLRequire", "SSLRequire refuses what its expression does not allow"),
        ("StrictHostCheck", "StrictHostCheck refuses (400) a Host no virtual host names"),
        ("VirtualDocumentRoot", "mod_vhost_alias maps each Host to a folder of its own"),
        ("VirtualDocumentRootIP", "mod_vhost_alias maps each Host to a folder of its own"),
        ("VirtualScriptAlias", "mod_vhost_alias maps each Host to a folder of its own"),
        ("VirtualScriptAliasIP", "mod_vhost_alias maps each Host to a folder of its own"),
        ("Use", "a mod_macro macro: its lines are not expanded"),
        (
            "XBitHack",
            "mod_include runs server-side includes in executable HTML files; lighttpd would send them as they are",
        ),
        (
            "AddOutputFilterByType",
            "an output filter by content type other than DEFLATE (SUBSTITUTE, INCLUDES): the responses would go out unfiltered",
        ),
        (
            "Action",
            "mod_actions hands files of a type or handler to a CGI program; lighttpd would send them as they are (a PHP file's source)",
        ),
    ];
    let (_, why) = WHY.iter().find(|(n, _)| n.eq_ignore_ascii_case(name))?;
    let arg = args.trim();
    let first = arg.split_whitespace().next().unwrap_or("");
    // the forms that narrow nothing
    let narrows = match name.to_ascii_lowercase().as_str() {
        "allowmethods" => !arg.eq_ignore_ascii_case("reset"),
        "stricthostcheck" => arg.eq_ignore_ascii_case("on"),
        "xbithack" => arg.eq_ignore_ascii_case("on") || arg.eq_ignore_ascii_case("full"),
        "addoutputfilterbytype" => {
            first.split(';').any(|f| !f.is_empty() && !f.eq_ignore_ascii_case("deflate"))
        }
        _ => true,
    };
    narrows.then_some(*why)
}
