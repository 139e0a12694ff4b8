//! Content types, encodings, charsets and handlers (mod_mime and core), with PHP handlers
//! recognised: php-fpm through mod_proxy_fcgi (`proxy:fcgi://` or `proxy:unix:`), mod_php,
//! and mod_fcgid.  Follows <https://httpd.apache.org/docs/2.4/mod/mod_mime.html> and
//! <https://httpd.apache.org/docs/2.4/mod/mod_proxy_fcgi.html>.

use super::Spanned;
use crate::config::Item;
use crate::source::Span;
use serde::Serialize;

#[derive(Clone, Debug, Default, Serialize)]
pub struct MimeConfig {
    /// `AddType type ext...`
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub types: Vec<ExtMapping>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub remove_types: Vec<Spanned<Vec<String>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub force_type: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub encodings: Vec<ExtMapping>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub charsets: Vec<ExtMapping>,
    /// `AddDefaultCharset`: `Off`, `On` (iso-8859-1) or a charset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_charset: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub handlers: Vec<HandlerUse>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub remove_handlers: Vec<Spanned<Vec<String>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_etag: Option<Spanned<Vec<String>>>,
    /// `FcgidWrapper command [suffix] [virtual]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fcgid_wrapper: Option<Spanned<Vec<String>>>,
}

impl MimeConfig {
    pub fn is_empty(&self) -> bool {
        self.types.is_empty()
            && self.remove_types.is_empty()
            && self.force_type.is_none()
            && self.encodings.is_empty()
            && self.charsets.is_empty()
            && self.default_charset.is_none()
            && self.handlers.is_empty()
            && self.remove_handlers.is_empty()
            && self.file_etag.is_none()
            && self.fcgid_wrapper.is_none()
    }
}

/// A value tied to file extensions (`AddType text/html .shtml`).
#[derive(Clone, Debug, Serialize)]
pub struct ExtMapping {
    pub value: String,
    pub extensions: Vec<String>,
    pub at: Span,
}

/// `SetHandler` (whole scope) or `AddHandler` (by extension).
#[derive(Clone, Debug, Serialize)]
pub struct HandlerUse {
    pub handler: Handler,
    /// Empty for `SetHandler`.
    pub extensions: Vec<String>,
    pub at: Span,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Handler {
    /// `proxy:fcgi://host:port/` or `proxy:unix:/path|fcgi://...`: a FastCGI backend,
    /// php-fpm in practice.
    FastCgi {
        #[serde(skip_serializing_if = "Option::is_none")]
        socket: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        address: Option<String>,
        written: String,
    },
    /// mod_php: `application/x-httpd-php` and its aliases.
    ModPhp { written: String },
    /// mod_fcgid: `fcgid-script`.
    Fcgid,
    /// `None` / `default-handler`: plain files.
    Default { written: String },
    /// Anything else (`server-status`, `cgi-script`, ...).
    Other { name: String },
}

impl Handler {
    pub fn parse(written: &str) -> Handler {
        let lower = written.to_ascii_lowercase();
        if let Some(rest) = lower.strip_prefix("proxy:") {
            let rest_orig = &written["proxy:".len()..];
            if let Some(unix) = rest.strip_prefix("unix:") {
                let socket_part = &rest_orig["unix:".len()..][..unix.len()];
                let (sock, target) = match socket_part.split_once('|') {
                    Some((s, t)) => (s, Some(t)),
                    None => (socket_part, None),
                };
                // `unix:///path` and `unix:/path` both name /path.
                let sock = format!("/{}", sock.trim_start_matches('/'));
                return Handler::FastCgi {
                    socket: Some(sock),
                    address: target.and_then(host_port),
                    written: written.to_string(),
                };
            }
            if rest.starts_with("fcgi://") {
                return Handler::FastCgi {
                    socket: None,
                    address: host_port(rest_orig),
                    written: written.to_string(),
                };
            }
            return Handler::Other { name: written.to_string() };
        }
        match lower.as_str() {
            "application/x-httpd-php"
            | "application/x-httpd-php-source"
            | "php-script"
            | "php5-script"
            | "php7-script"
            | "php8-script" => Handler::ModPhp { written: written.to_string() },
            "fcgid-script" => Handler::Fcgid,
            "none" | "default-handler" => Handler::Default { written: written.to_string() },
            _ => Handler::Other { name: written.to_string() },
        }
    }

    /// `SetHandler None`: no forced handler from here on (a SetHandler in force before is
    /// cancelled, and AddHandler's mapping applies again), unlike `default-handler`, which
    /// forces the core's handler. Measured on 2.4.71: `SetHandler None` over `AddHandler
    /// ... .php` still runs PHP.
    pub fn cancels(&self) -> bool {
        matches!(self, Handler::Default { written } if written.eq_ignore_ascii_case("none"))
    }

    /// Whether this handler runs PHP (mod_php always; a FastCGI backend or mod_fcgid when
    /// the scope or extension is `.php`, decided by the caller).
    pub fn is_backend(&self) -> bool {
        matches!(self, Handler::FastCgi { .. } | Handler::ModPhp { .. } | Handler::Fcgid)
    }

    /// Whether Apache serves the file with its default handler because no loaded module
    /// claims this handler: a name a module of [`HANDLER_MODULES`] implements while that
    /// module is not loaded, or a MIME type written as a handler (`AddHandler text/html
    /// .html`, as Matomo writes it; measured: Apache 2.4.71 serves the file). `loaded`
    /// holds module ids (`cgi_module`). Any other name may belong to a module lighten does
    /// not know, so it is not assumed to be served as a file.
    pub fn served_by_default(&self, loaded: &dyn Fn(&str) -> bool) -> bool {
        let Handler::Other { name } = self else { return false };
        let lower = name.to_ascii_lowercase();
        if let Some((_, modules)) = HANDLER_MODULES.iter().find(|(n, _)| *n == lower) {
            return !modules.iter().any(|m| loaded(m));
        }
        if lower.starts_with("proxy:") {
            return !loaded("proxy_module");
        }
        lower.contains('/')
    }
}

/// Handler names of Apache's own modules, with the modules that implement each
/// (<https://httpd.apache.org/docs/2.4/handler.html> and each module's page).
pub const HANDLER_MODULES: &[(&str, &[&str])] = &[
    ("cgi-script", &["cgi_module", "cgid_module"]),
    ("server-status", &["status_module"]),
    ("server-info", &["info_module"]),
    ("type-map", &["negotiation_module"]),
    ("send-as-is", &["asis_module"]),
    ("imap-file", &["imagemap_module"]),
    ("balancer-manager", &["proxy_balancer_module"]),
    ("ldap-status", &["ldap_module"]),
    ("lua-script", &["lua_module"]),
];

/// `fcgi://127.0.0.1:9000/` to `127.0.0.1:9000`.
fn host_port(url: &str) -> Option<String> {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let hp = rest.split('/').next().unwrap_or("");
    if hp.is_empty() { None } else { Some(hp.to_string()) }
}

pub fn ext_mapping(item: &Item) -> Option<ExtMapping> {
    let v = item.values();
    let (value, exts) = v.split_first()?;
    Some(ExtMapping {
        value: value.to_string(),
        extensions: exts.iter().map(|e| e.to_ascii_lowercase()).collect(),
        at: item.span,
    })
}

pub fn list(item: &Item) -> Spanned<Vec<String>> {
    Spanned::new(item.values().iter().map(|s| s.to_string()).collect(), item.span)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handlers_no_loaded_module_claims_are_the_default_handler() {
        let none = |_: &str| false;
        let cgi = |m: &str| m == "cgi_module";
        assert!(Handler::parse("text/html").served_by_default(&none));
        assert!(Handler::parse("cgi-script").served_by_default(&none));
        assert!(!Handler::parse("cgi-script").served_by_default(&cgi));
        // A name lighten does not know may be a module it does not know.
        assert!(!Handler::parse("wsgi-script").served_by_default(&none));
        assert!(!Handler::parse("application/x-httpd-php").served_by_default(&none));
    }

    #[test]
    fn php_handlers_are_recognised() {
        assert_eq!(
            Handler::parse("proxy:unix:/var/www/vhosts/system/a/php-fpm.sock|fcgi://127.0.0.1:9000"),
            Handler::FastCgi {
                socket: Some("/var/www/vhosts/system/a/php-fpm.sock".into()),
                address: Some("127.0.0.1:9000".into()),
                written: "proxy:unix:/var/www/vhosts/system/a/php-fpm.sock|fcgi://127.0.0.1:9000".into()
            }
        );
        assert_eq!(
            Handler::parse("proxy:fcgi://127.0.0.1:9000/"),
            Handler::FastCgi {
                socket: None,
                address: Some("127.0.0.1:9000".into()),
                written: "proxy:fcgi://127.0.0.1:9000/".into()
            }
        );
        assert!(matches!(Handler::parse("application/x-httpd-php"), Handler::ModPhp { .. }));
        assert_eq!(Handler::parse("fcgid-script"), Handler::Fcgid);
        assert!(matches!(Handler::parse("server-status"), Handler::Other { .. }));
    }
}
