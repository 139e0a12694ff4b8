//! Where a directive stands, as far as Apache's "not allowed here" checks care.

use crate::catalogue::Overrides;
use crate::source::{FileId, Span};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Main server configuration, outside any section that changes context.
    Server,
    /// Inside `<VirtualHost>`.
    VirtualHost,
    /// Inside `<Directory>`, `<Files>`, `<Location>`, `<If>`, `<Proxy>` and their `Match` forms.
    Directory,
    /// A .htaccess file (sections inside it stay here).
    Htaccess,
}

/// What a .htaccess file may contain: the `AllowOverride` and `AllowOverrideList` in force
/// for its directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HtaccessPerms {
    pub overrides: Overrides,
    /// `AllowOverrideList` names.
    pub list: Vec<String>,
    /// `Options=...` restriction on which options .htaccess may set; `None` means all.
    pub options: Option<Vec<String>>,
    pub nonfatal_override: bool,
    pub nonfatal_unknown: bool,
    /// The AllowOverride directive that decided this (empty span for the default).
    pub span: Span,
}

impl HtaccessPerms {
    /// Apache 2.4's default: `AllowOverride None`, `AllowOverrideList None`.
    pub fn default_none() -> HtaccessPerms {
        HtaccessPerms {
            overrides: Overrides::NONE,
            list: Vec::new(),
            options: None,
            nonfatal_override: false,
            nonfatal_unknown: false,
            span: Span::new(FileId(0), 0, 0),
        }
    }

    /// The same permissions, wherever they were written.
    pub fn same_rights(&self, other: &HtaccessPerms) -> bool {
        self.overrides == other.overrides
            && self.list == other.list
            && self.options == other.options
            && self.nonfatal_override == other.nonfatal_override
            && self.nonfatal_unknown == other.nonfatal_unknown
    }

    /// Whether Apache reads .htaccess files at all here.
    pub fn reads_files(&self) -> bool {
        !self.overrides.is_empty() || !self.list.is_empty()
    }

    pub fn describe(&self) -> String {
        let mut s = format!("AllowOverride {}", self.overrides);
        if let Some(opts) = &self.options {
            s.push_str(&format!(" (Options={})", opts.join(",")));
        }
        if !self.list.is_empty() {
            s.push_str(&format!(" + AllowOverrideList {}", self.list.join(" ")));
        }
        s
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Context {
    pub place: Place,
    pub htaccess: Option<HtaccessPerms>,
    /// The `<Location>` or `<LocationMatch>` this is inside, as written (`<Files>` cannot
    /// occur there: Apache's NOT_IN_LOCATION).
    pub location: Option<&'static str>,
}

/// Sections that open a per-directory configuration in Apache.
const DIRECTORY_LIKE: &[&str] = &[
    "directory",
    "directorymatch",
    "files",
    "filesmatch",
    "location",
    "locationmatch",
    "if",
    "elseif",
    "else",
    "proxy",
    "proxymatch",
];

impl Context {
    pub fn server() -> Context {
        Context { place: Place::Server, htaccess: None, location: None }
    }

    pub fn htaccess(perms: HtaccessPerms) -> Context {
        Context { place: Place::Htaccess, htaccess: Some(perms), location: None }
    }

    /// The context inside a section named `name`.
    pub fn enter(&self, name: &str) -> Context {
        let lower = name.to_ascii_lowercase();
        let place = match self.place {
            Place::Htaccess => Place::Htaccess,
            _ if lower == "virtualhost" => Place::VirtualHost,
            _ if DIRECTORY_LIKE.contains(&lower.as_str()) => Place::Directory,
            p => p,
        };
        let location = match lower.as_str() {
            "location" => Some("<Location"),
            "locationmatch" => Some("<LocationMatch"),
            _ => self.location,
        };
        Context { place, htaccess: self.htaccess.clone(), location }
    }
}
