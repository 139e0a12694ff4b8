//! Scopes: the server, a virtual host, a `<Directory>`, a `.htaccess` file... each with the
//! directives written in it, their typed settings, and the scopes nested inside.

use super::settings::Settings;
use crate::catalogue::Status;
use crate::source::Span;
use serde::Serialize;

/// A value with the place it was written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Spanned<T> {
    pub value: T,
    #[serde(rename = "at")]
    pub span: Span,
}

impl<T> Spanned<T> {
    pub fn new(value: T, span: Span) -> Spanned<T> {
        Spanned { value, span }
    }
}

/// The kinds of section Apache merges, plus the server and .htaccess files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScopeKind {
    Server,
    VirtualHost,
    Directory,
    DirectoryMatch,
    Htaccess,
    Files,
    FilesMatch,
    Location,
    LocationMatch,
    If,
    ElseIf,
    Else,
    Limit,
    LimitExcept,
    Proxy,
    ProxyMatch,
}

impl ScopeKind {
    pub fn of_section(name: &str) -> Option<ScopeKind> {
        Some(match name.to_ascii_lowercase().as_str() {
            "virtualhost" => ScopeKind::VirtualHost,
            "directory" => ScopeKind::Directory,
            "directorymatch" => ScopeKind::DirectoryMatch,
            "files" => ScopeKind::Files,
            "filesmatch" => ScopeKind::FilesMatch,
            "location" => ScopeKind::Location,
            "locationmatch" => ScopeKind::LocationMatch,
            "if" => ScopeKind::If,
            "elseif" => ScopeKind::ElseIf,
            "else" => ScopeKind::Else,
            "limit" => ScopeKind::Limit,
            "limitexcept" => ScopeKind::LimitExcept,
            "proxy" => ScopeKind::Proxy,
            "proxymatch" => ScopeKind::ProxyMatch,
            _ => return None,
        })
    }

    /// Apache's merge group: directories with .htaccess (1), directory regexes (2), files
    /// (3), locations (4), `<If>` (5).  `<Limit>` and the server itself are not merged.
    pub fn merge_group(self) -> Option<u8> {
        Some(match self {
            ScopeKind::Directory | ScopeKind::Htaccess => 1,
            ScopeKind::DirectoryMatch => 2,
            ScopeKind::Files | ScopeKind::FilesMatch => 3,
            ScopeKind::Location | ScopeKind::LocationMatch => 4,
            ScopeKind::If | ScopeKind::ElseIf | ScopeKind::Else => 5,
            _ => return None,
        })
    }

    pub fn section_name(self) -> &'static str {
        match self {
            ScopeKind::Server => "server",
            ScopeKind::VirtualHost => "VirtualHost",
            ScopeKind::Directory => "Directory",
            ScopeKind::DirectoryMatch => "DirectoryMatch",
            ScopeKind::Htaccess => ".htaccess",
            ScopeKind::Files => "Files",
            ScopeKind::FilesMatch => "FilesMatch",
            ScopeKind::Location => "Location",
            ScopeKind::LocationMatch => "LocationMatch",
            ScopeKind::If => "If",
            ScopeKind::ElseIf => "ElseIf",
            ScopeKind::Else => "Else",
            ScopeKind::Limit => "Limit",
            ScopeKind::LimitExcept => "LimitExcept",
            ScopeKind::Proxy => "Proxy",
            ScopeKind::ProxyMatch => "ProxyMatch",
        }
    }
}

/// What a section applies to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "type", content = "value", rename_all = "kebab-case")]
pub enum Matcher {
    /// A path or URL prefix, possibly with shell wildcards (`<Directory /var/www/*/htdocs>`).
    Path(String),
    /// A regular expression (`<DirectoryMatch>`, `<Files ~ "...">`).
    Regex(String),
    /// HTTP methods (`<Limit GET POST>`).
    Methods(Vec<String>),
    /// An `ap_expr` evaluated per request.
    Expr(String),
    /// `<Else>`.
    Otherwise,
}

/// One directive as written in a scope, with what the catalogue says of it.
#[derive(Clone, Debug, Serialize)]
pub struct DirectiveUse {
    /// The catalogue's spelling when the directive is known, as written otherwise.
    pub name: std::borrow::Cow<'static, str>,
    /// The argument text after `${VAR}` substitution.
    pub args: String,
    pub at: Span,
    /// False inside a false `<IfModule>` and friends: Apache never sees it.
    pub enabled: bool,
    /// `None` for a directive the catalogue does not know.
    pub status: Option<Status>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Scope {
    pub kind: ScopeKind,
    pub matcher: Option<Matcher>,
    pub at: Span,
    /// False when the whole section sits in a false conditional.
    pub enabled: bool,
    pub directives: Vec<DirectiveUse>,
    /// Boxed: most scopes carry few settings, and a scope moves often while the model is
    /// built.
    pub settings: Box<Settings>,
    pub children: Vec<Scope>,
}

impl Scope {
    pub fn new(kind: ScopeKind, matcher: Option<Matcher>, at: Span, enabled: bool) -> Scope {
        Scope {
            kind,
            matcher,
            at,
            enabled,
            directives: Vec::new(),
            settings: Box::default(),
            children: Vec::new(),
        }
    }

    /// This scope and all nested ones, depth first.
    pub fn walk<'a>(&'a self, f: &mut dyn FnMut(&'a Scope)) {
        f(self);
        for c in &self.children {
            c.walk(f);
        }
    }
}
