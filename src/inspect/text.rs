//! The readable tree.

use crate::catalogue::Status;
use crate::model::{Htaccess, HtaccessStatus, Matcher, Model, Scope, ScopeKind, VirtualHost, describe_scope};
use crate::source::{FileId, SourceMap, Span};
use crate::translate::Report;
use std::fmt::Write;

/// Column at which locations start when the line is short enough.
const LOC_COLUMN: usize = 64;

/// One line per virtual host and the coverage table: the view for servers with hundreds of
/// accounts.
pub fn summary(model: &Model, map: &SourceMap, fates: Option<&Report>) -> String {
    let mut p = Printer { out: String::new(), map, last_file: None, fates: fate_map(fates) };
    p.header(model);
    for (i, v) in model.vhosts.iter().enumerate() {
        let addrs: Vec<String> = v.addresses.iter().map(|a| a.key()).collect();
        let php = model.php_handlers(v);
        let php = match php.first().map(|h| &h.handler) {
            None => "none",
            Some(crate::model::mime::Handler::FastCgi { .. }) => "php-fpm",
            Some(crate::model::mime::Handler::ModPhp { .. }) => "mod_php",
            Some(crate::model::mime::Handler::Fcgid) => "fcgid",
            Some(_) => "other",
        };
        let (mut applied, mut other) = (0, 0);
        for h in model.htaccess.iter().filter(|h| h.host_ids.contains(&Some(i))) {
            if h.status == HtaccessStatus::Applied { applied += 1 } else { other += 1 }
        }
        p.last_file = None;
        let text = format!(
            "vhost {} {} {}{} php:{php} htaccess:{applied}{}",
            i + 1,
            v.server_name.as_deref().unwrap_or("(no ServerName)"),
            addrs.join(" "),
            if v.tls { " tls" } else { "" },
            if other > 0 { format!(" (+{other} not applied)") } else { String::new() },
        );
        p.line(0, &text, Some(v.scope.at));
    }
    p.skipped(model);
    let count = |s: HtaccessStatus| model.htaccess.iter().filter(|h| h.status == s).count();
    let _ = writeln!(
        p.out,
        "\n.htaccess files: {} applied, {} ignored, {} broken, {} unreachable",
        count(HtaccessStatus::Applied),
        count(HtaccessStatus::Ignored),
        count(HtaccessStatus::Broken),
        count(HtaccessStatus::Unreachable)
    );
    p.coverage(model, fates);
    p.out
}

pub fn render(model: &Model, map: &SourceMap) -> String {
    render_with(model, map, None)
}

/// The tree, and what the conversion does with each directive when `fates` (the
/// translation's report) is given, else what the catalogue says of each.
pub fn render_with(model: &Model, map: &SourceMap, fates: Option<&Report>) -> String {
    let mut p = Printer { out: String::new(), map, last_file: None, fates: fate_map(fates) };
    p.header(model);
    p.scope(&model.server, 0, "server");
    for (i, v) in model.vhosts.iter().enumerate() {
        p.vhost(model, i, v);
    }
    if !model.skipped_vhosts.is_empty() {
        p.out.push('\n');
        p.skipped(model);
    }
    if !model.htaccess.is_empty() {
        p.out.push_str("\n.htaccess files\n");
        for h in &model.htaccess {
            p.htaccess(h);
        }
    }
    p.coverage(model, fates);
    p.out
}

struct Printer<'a> {
    out: String,
    map: &'a SourceMap,
    last_file: Option<FileId>,
    /// The translation's fate of each directive (`fate_map`), when inspect has one.
    fates: Option<std::collections::HashMap<(String, String), &'static str>>,
}

impl Printer<'_> {
    fn header(&mut self, m: &Model) {
        let kind = match m.input.kind {
            crate::config::InputKind::ConfigFile => "server configuration".to_string(),
            crate::config::InputKind::PleskRoot => format!(
                "Plesk vhosts root, {} domains: {}",
                m.input.domains.len(),
                m.input.domains.join(", ")
            ),
            crate::config::InputKind::DocumentRoot => "document root".to_string(),
        };
        let _ = writeln!(self.out, "input: {} ({kind})", m.input.path);
        let mods: Vec<&str> = m.modules.iter().map(|x| x.id.trim_end_matches("_module")).collect();
        let _ = writeln!(self.out, "apache: {}, ServerRoot {}", m.apache_version, m.server_root);
        let _ = writeln!(self.out, "modules ({}): {}", mods.len(), mods.join(" "));
    }

    /// `file:line`, or `:line` when the file is the one named last.
    fn loc(&mut self, span: Span) -> String {
        let p = self.map.position(span.file, span.start);
        if self.last_file == Some(span.file) {
            format!(":{}", p.line)
        } else {
            self.last_file = Some(span.file);
            format!("{}:{}", self.map.file(span.file).display, p.line)
        }
    }

    fn line(&mut self, depth: usize, text: &str, span: Option<Span>) {
        let indent = "  ".repeat(depth);
        let body = format!("{indent}{text}");
        match span {
            Some(s) => {
                let loc = self.loc(s);
                let width = body.chars().count();
                let pad = if width + 2 <= LOC_COLUMN { LOC_COLUMN - width } else { 2 };
                let _ = writeln!(self.out, "{body}{}{loc}", " ".repeat(pad));
            }
            None => {
                let _ = writeln!(self.out, "{body}");
            }
        }
    }

    fn scope(&mut self, s: &Scope, depth: usize, title: &str) {
        self.last_file = None;
        let state = if s.enabled { "" } else { "  (disabled)" };
        let span = if s.kind == ScopeKind::Server { None } else { Some(s.at) };
        if s.kind != ScopeKind::Htaccess {
            self.line(depth, &format!("{title}{state}"), span);
        }
        for summary in summaries(s) {
            self.line(depth + 1, &format!("= {summary}"), None);
        }
        for d in &s.directives {
            // Sections print as nested scopes, includes are looked through, and modules are
            // listed in the header.
            if d.name.starts_with('<')
                || ["Include", "IncludeOptional", "LoadModule"].iter().any(|n| d.name.eq_ignore_ascii_case(n))
            {
                continue;
            }
            let fate = self
                .fates
                .as_ref()
                .and_then(|f| f.get(&(self.map.line_ref(d.at), d.name.to_ascii_lowercase())).copied());
            let mark = match (d.enabled, fate, d.status) {
                (false, _, _) => "  (disabled)",
                (true, Some("exact"), _) => "",
                (true, Some("approximated"), _) => "  [approximated]",
                (true, Some("noted"), _) => "  [noted]",
                (true, Some("ignored"), _) => "  [ignored]",
                (true, Some(_), _) => "  [unsupported]",
                (true, None, status) => catalogue_mark(status),
            };
            let text = if d.args.is_empty() {
                format!("{}{mark}", d.name)
            } else {
                format!("{} {}{mark}", d.name, d.args)
            };
            self.line(depth + 1, &text, Some(d.at));
        }
        let mut children: Vec<&Scope> = s.children.iter().collect();
        children.sort_by_key(|c| (c.kind.merge_group().unwrap_or(9), dir_depth(c)));
        for c in children {
            self.scope(c, depth + 1, &describe_scope(c));
            self.last_file = Some(s.at.file);
        }
    }

    /// The `<VirtualHost>` sections Apache skips (inside a false conditional).
    fn skipped(&mut self, m: &Model) {
        for v in &m.skipped_vhosts {
            let addrs: Vec<String> = v.addresses.iter().map(|a| a.key()).collect();
            self.last_file = None;
            self.line(
                0,
                &format!("skipped <VirtualHost {}>: inside a false conditional, not served", addrs.join(" ")),
                Some(v.scope.at),
            );
        }
    }

    fn vhost(&mut self, m: &Model, i: usize, v: &VirtualHost) {
        let addrs: Vec<String> = v.addresses.iter().map(|a| a.key()).collect();
        let name = v.server_name.as_deref().unwrap_or("(no ServerName)");
        self.out.push('\n');
        self.last_file = None;
        self.line(
            0,
            &format!(
                "vhost {} {name} {}{}",
                i + 1,
                addrs.join(" "),
                if v.scope.enabled { "" } else { " (disabled)" }
            ),
            Some(v.scope.at),
        );
        if !v.aliases.is_empty() {
            self.line(1, &format!("aliases: {}", v.aliases.join(" ")), None);
        }
        if !v.default_for.is_empty() {
            self.line(1, &format!("default for: {}", v.default_for.join(" ")), None);
        }
        self.line(1, &format!("document root: {}", v.document_root.as_deref().unwrap_or("(none)")), None);
        self.line(1, &format!("canonical name: {}", v.use_canonical_name), None);
        if v.tls {
            let cert = v
                .scope
                .settings
                .host()
                .tls
                .certificate_file
                .as_ref()
                .map(|c| c.value.as_str())
                .unwrap_or("(no certificate)");
            self.line(1, &format!("tls: on, certificate {cert}"), None);
        }
        let php = m.php_handlers(v);
        if php.is_empty() {
            self.line(1, "php: none", None);
        }
        for h in php {
            let what = match &h.handler {
                crate::model::mime::Handler::FastCgi { socket: Some(s), .. } => {
                    format!("FastCGI (php-fpm) unix:{s}")
                }
                crate::model::mime::Handler::FastCgi { address: Some(a), .. } => {
                    format!("FastCGI (php-fpm) {a}")
                }
                crate::model::mime::Handler::FastCgi { written, .. } => format!("FastCGI {written}"),
                crate::model::mime::Handler::ModPhp { written } => format!("mod_php ({written})"),
                crate::model::mime::Handler::Fcgid => "mod_fcgid (php-cgi wrapper)".to_string(),
                other => format!("{other:?}"),
            };
            self.last_file = None;
            self.line(1, &format!("php: {what} for {}", h.applies_to), Some(h.at));
        }
        if !v.merge_order.is_empty() {
            self.line(1, "sections in merge order:", None);
            for r in &v.merge_order {
                self.last_file = None;
                let from = if r.inherited { "  (server)" } else { "" };
                self.line(2, &format!("{}. {}{from}", r.group, r.section), Some(r.at));
            }
        }
        let mut hts: Vec<&Htaccess> = m.htaccess.iter().filter(|h| h.host_ids.contains(&Some(i))).collect();
        hts.sort_by(|a, b| a.path.cmp(&b.path));
        for h in hts {
            self.line(1, &format!(".htaccess {} ({})", h.path, status_word(h.status)), None);
        }
        self.scope(&v.scope, 1, "directives");
    }

    fn htaccess(&mut self, h: &Htaccess) {
        self.out.push('\n');
        let hosts =
            if h.hosts.is_empty() { "no server maps a URL here".to_string() } else { h.hosts.join(", ") };
        let _ = writeln!(self.out, "{} ({})", h.path, status_word(h.status));
        let _ = writeln!(self.out, "  for: {hosts}");
        if !h.allow_override.is_empty() {
            let _ = writeln!(self.out, "  in force: {}", h.allow_override);
        }
        if let Some(s) = &h.scope {
            self.last_file = Some(s.at.file);
            let _ = writeln!(self.out, "  file: {}", self.map.file(s.at.file).display);
            self.scope(s, 0, "");
        }
    }

    fn coverage(&mut self, m: &Model, fates: Option<&Report>) {
        let c = &m.coverage;
        if let Some(r) = fates {
            // The words and counts of convert's report (one source of truth for a
            // directive's fate), and what Apache does not read at all.
            self.out.push_str("\ndirectives, as `lighten convert` reports them (report.md)\n");
            let mut total = 0;
            for name in ["exact", "approximated", "noted", "ignored", "unsupported"] {
                let n = r.counts.get(name).copied().unwrap_or(0);
                total += n;
                let _ = writeln!(self.out, "  {name:<14}{n:>6}");
            }
            let _ = writeln!(self.out, "  {:<14}{:>6}", "total", total);
            let _ = writeln!(
                self.out,
                "  {:<14}{:>6}  (not in force: <IfModule>, <IfDefine>, ...)",
                "disabled", c.disabled
            );
            let mut names: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
            for e in r.entries.iter().filter(|e| e.fate.label() == "unsupported") {
                *names.entry(e.directive.as_str()).or_default() += 1;
            }
            if !names.is_empty() {
                let list: Vec<String> = names.iter().map(|(k, v)| format!("{k} ({v})")).collect();
                let _ = writeln!(
                    self.out,
                    "  unsupported: {} (each fails closed; see report.md)",
                    list.join(", ")
                );
            }
            if !r.sites.is_empty() {
                self.out.push_str("\nsites, as `lighten convert` judges them (report.md)\n");
                for v in &r.sites {
                    let _ = writeln!(self.out, "  {}", v.line());
                }
            }
            return;
        }
        self.out.push_str("\ncoverage (directives by lighttpd target status)\n");
        for (name, n) in [
            ("translated", c.translated),
            ("approximated", c.approximated),
            ("ignored", c.ignored),
            ("unsupported", c.unsupported),
            ("unknown", c.unknown),
            ("disabled", c.disabled),
        ] {
            let _ = writeln!(self.out, "  {name:<14}{n:>6}");
        }
        let _ = writeln!(self.out, "  {:<14}{:>6}", "total", c.total());
        if !c.unsupported_names.is_empty() {
            let list: Vec<String> = c.unsupported_names.iter().map(|(k, v)| format!("{k} ({v})")).collect();
            let _ = writeln!(self.out, "  not carried over: {}", list.join(", "));
        }
    }
}

/// One-line digests of the typed settings a translator cares about most.
fn summaries(s: &Scope) -> Vec<String> {
    let mut out = Vec::new();
    let rw = &s.settings.rewrite();
    if !rw.is_empty() {
        let engine = match &rw.engine {
            Some(e) if e.value => "on",
            Some(_) => "off",
            None => "not set here",
        };
        let conds: usize = rw.rules.iter().map(|r| r.conditions.len()).sum();
        let mut line = format!("rewrite: engine {engine}, {} rule(s), {conds} condition(s)", rw.rules.len());
        if let Some(b) = &rw.base {
            line.push_str(&format!(", base {}", b.value));
        }
        if !rw.maps.is_empty() {
            line.push_str(&format!(", {} map(s)", rw.maps.len()));
        }
        out.push(line);
    }
    let a = &s.settings.access();
    if !a.require.is_empty() {
        let parts: Vec<String> = a.require.iter().map(authz_text).collect();
        out.push(format!("access: {}", parts.join(" | ")));
    }
    if a.order.is_some() || !a.allow.is_empty() || !a.deny.is_empty() {
        let order = a
            .order
            .as_ref()
            .map(|o| match o.value {
                crate::model::access::Order::AllowDeny => "Order allow,deny",
                crate::model::access::Order::DenyAllow => "Order deny,allow",
                crate::model::access::Order::MutualFailure => "Order mutual-failure",
            })
            .unwrap_or("default order");
        let allow: Vec<String> = a.allow.iter().map(|r| r.from.join(" ")).collect();
        let deny: Vec<String> = a.deny.iter().map(|r| r.from.join(" ")).collect();
        out.push(format!(
            "legacy access: {order}; allow from [{}]; deny from [{}]",
            allow.join(", "),
            deny.join(", ")
        ));
    }
    if let Some(t) = &a.auth_type {
        let realm = a.auth_name.as_ref().map(|n| n.value.as_str()).unwrap_or("");
        let file = a.auth_user_file.as_ref().map(|f| f.value.as_str()).unwrap_or("(no user file)");
        out.push(format!("auth: {} \"{realm}\" users from {file}", t.value));
    }
    out
}

fn authz_text(a: &crate::model::access::Authz) -> String {
    use crate::model::access::{Authz, Combine};
    match a {
        Authz::Require { negated, provider, args, .. } => {
            format!(
                "Require {}{provider}{}{}",
                if *negated { "not " } else { "" },
                if args.is_empty() { "" } else { " " },
                args.join(" ")
            )
        }
        Authz::Container { combine, children, .. } => {
            let word = match combine {
                Combine::All => "all of",
                Combine::Any => "any of",
                Combine::None => "none of",
            };
            let inner: Vec<String> = children.iter().map(authz_text).collect();
            format!("{word} ({})", inner.join(", "))
        }
    }
}

fn status_word(s: HtaccessStatus) -> &'static str {
    match s {
        HtaccessStatus::Applied => "applied",
        HtaccessStatus::Ignored => "ignored: AllowOverride None",
        HtaccessStatus::Broken => "broken: Apache answers 500",
        HtaccessStatus::Unreachable => "unreachable",
    }
}

/// `<Directory>` sections sort by path depth, as Apache applies them.
fn dir_depth(s: &Scope) -> usize {
    match (&s.kind, &s.matcher) {
        (ScopeKind::Directory, Some(Matcher::Path(p))) => p.trim_end_matches('/').matches('/').count(),
        _ => 0,
    }
}

/// A directive's mark from the catalogue, when no translation report says its fate.
fn catalogue_mark(status: Option<Status>) -> &'static str {
    match status {
        Some(Status::Translated) => "",
        Some(Status::Approximated) => "  [approximated]",
        Some(Status::Ignored) => "  [ignored]",
        Some(Status::Unsupported) => "  [unsupported]",
        None => "  [unknown]",
    }
}

/// The report's fate of each directive, by `file:line` and lowercased name.
fn fate_map(fates: Option<&Report>) -> Option<std::collections::HashMap<(String, String), &'static str>> {
    fates.map(|r| {
        r.entries.iter().map(|e| ((e.at.clone(), e.directive.to_ascii_lowercase()), e.fate.label())).collect()
    })
}
