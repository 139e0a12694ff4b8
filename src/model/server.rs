//! Settings that describe a server or virtual host rather than a directory: names,
//! document root, listeners, the user it runs as, logs and TLS, and the per-directory
//! switches for .htaccess (`AccessFileName`, `AllowOverride`, `AllowOverrideList`).

use super::Spanned;
use super::settings::ReadCx;
use crate::catalogue::{OverrideClass, Overrides};
use crate::config::Item;
use crate::diagnostic::{Code, Diagnostic};
use crate::source::Span;
use serde::Serialize;

#[derive(Clone, Debug, Default, Serialize)]
pub struct HostSettings {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_name: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub server_aliases: Vec<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub document_root: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub use_canonical_name: Option<Spanned<String>>,
    /// `MergeSlashes On|Off` (default On).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merge_slashes: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub listen: Vec<Listener>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<Spanned<String>>,
    /// `SuexecUserGroup user group`: the PHP/CGI identity on Plesk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suexec: Option<Spanned<Vec<String>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_file_names: Option<Spanned<Vec<String>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_log: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub custom_logs: Vec<CustomLog>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub log_formats: Vec<LogFormat>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_level: Option<Spanned<String>>,
    /// `TraceEnable on|off|extended`: whether the core answers TRACE (default on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_enable: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Tls::is_empty")]
    pub tls: Tls,
}

impl HostSettings {
    pub fn is_empty(&self) -> bool {
        self.server_name.is_none()
            && self.server_aliases.is_empty()
            && self.document_root.is_none()
            && self.use_canonical_name.is_none()
            && self.merge_slashes.is_none()
            && self.listen.is_empty()
            && self.user.is_none()
            && self.group.is_none()
            && self.suexec.is_none()
            && self.access_file_names.is_none()
            && self.error_log.is_none()
            && self.custom_logs.is_empty()
            && self.log_formats.is_empty()
            && self.log_level.is_none()
            && self.trace_enable.is_none()
            && self.tls.is_empty()
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Listener {
    /// Address, or `None` for all addresses.
    pub address: Option<String>,
    pub port: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    pub at: Span,
}

#[derive(Clone, Debug, Serialize)]
pub struct CustomLog {
    pub target: String,
    /// A nickname defined by LogFormat, or an inline format.
    pub format: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    pub at: Span,
}

#[derive(Clone, Debug, Serialize)]
pub struct LogFormat {
    pub format: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nickname: Option<String>,
    pub at: Span,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Tls {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub certificate_file: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub certificate_key_file: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub certificate_chain_file: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cipher_suite: Option<Spanned<String>>,
}

impl Tls {
    pub fn is_empty(&self) -> bool {
        self.engine.is_none()
            && self.certificate_file.is_none()
            && self.certificate_key_file.is_none()
            && self.certificate_chain_file.is_none()
            && self.protocol.is_none()
            && self.cipher_suite.is_none()
    }

    pub fn enabled(&self) -> bool {
        self.engine.as_ref().is_some_and(|e| e.value.eq_ignore_ascii_case("on"))
    }
}

/// `AllowOverride` as written in a `<Directory>`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AllowOverride {
    pub classes: Overrides,
    /// `Options=a,b`: the options .htaccess may set; `None` for all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<String>>,
    pub nonfatal_override: bool,
    pub nonfatal_unknown: bool,
    pub at: Span,
}

/// What Apache's core (`server_hostname_port`) refuses in `ServerName [scheme://]host[:port]`,
/// in its words: a wildcard (`apr_fnmatch_test`: `*`, `?`, `[...]`), or a port that `atoi`
/// does not read as 1..65535 after the first `:` past the scheme.
pub fn server_name_error(arg: &str) -> Option<String> {
    let b = arg.as_bytes();
    let (mut i, mut nesting) = (0, 0);
    while i < b.len() {
        match b[i] {
            b'?' | b'*' => return Some(wildcard(arg)),
            b'\\' => {
                i += 1;
                if i >= b.len() {
                    break;
                }
            }
            b'[' => nesting += 1,
            b']' if nesting > 0 => return Some(wildcard(arg)),
            _ => {}
        }
        i += 1;
    }
    let part = arg.find("://").map_or(arg, |k| &arg[k + 3..]);
    let port = part.split_once(':')?.1;
    let n = atoi(port);
    if n <= 0 || n >= 65536 {
        return Some(format!("The port number \"{arg}\" is outside the appropriate range (i.e., 1..65535)."));
    }
    None
}

/// C's `atoi()`: leading space, sign, digits, then stop.
pub fn atoi(s: &str) -> i64 {
    let t = s.trim_start();
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let n: i64 = digits
        .bytes()
        .take_while(u8::is_ascii_digit)
        .fold(0i64, |acc, d| acc.saturating_mul(10).saturating_add(i64::from(d - b'0')));
    if neg { -n } else { n }
}

fn wildcard(arg: &str) -> String {
    format!("Invalid ServerName \"{arg}\" use ServerAlias to set multiple server names.")
}

/// `Listen [addr:]port [protocol]`.
pub fn read_listen(item: &Item, cx: &mut ReadCx) -> Option<Listener> {
    let spec = item.arg(0)?;
    let (address, port) = split_host_port(spec);
    let Some(port) = port.and_then(|p| p.parse::<u16>().ok()).filter(|p| *p != 0) else {
        cx.diags.push(Diagnostic::new(
            Code::BadArgument,
            item.args[0].span,
            format!("Listen: port must be specified in '{spec}'"),
        ));
        return None;
    };
    Some(Listener { address, port, protocol: item.arg(1).map(str::to_string), at: item.span })
}

/// `addr:port`, `[v6]:port`, `port`, `addr` into parts.
pub fn split_host_port(spec: &str) -> (Option<String>, Option<&str>) {
    if let Some(rest) = spec.strip_prefix('[')
        && let Some((host, tail)) = rest.split_once(']')
    {
        let port = tail.strip_prefix(':');
        return (Some(format!("[{host}]")), port);
    }
    match spec.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => (Some(h.to_string()), Some(p)),
        Some(_) => (Some(spec.to_string()), None),
        None if spec.chars().all(|c| c.is_ascii_digit()) => (None, Some(spec)),
        None => (Some(spec.to_string()), None),
    }
}

pub fn read_allow_override(item: &Item, cx: &mut ReadCx) -> Option<AllowOverride> {
    let mut out = AllowOverride {
        classes: Overrides::NONE,
        options: None,
        nonfatal_override: false,
        nonfatal_unknown: false,
        at: item.span,
    };
    for w in &item.args {
        let v = w.value.as_str();
        if v.eq_ignore_ascii_case("all") {
            out.classes = Overrides::ALL;
        } else if v.eq_ignore_ascii_case("none") {
            out.classes = Overrides::NONE;
        } else if let Some(list) = strip_prefix_ci(v, "options=") {
            out.classes.insert(OverrideClass::Options);
            out.options = Some(list.split(',').filter(|s| !s.is_empty()).map(str::to_string).collect());
        } else if let Some(what) = strip_prefix_ci(v, "nonfatal=") {
            match what.to_ascii_lowercase().as_str() {
                "override" => out.nonfatal_override = true,
                "unknown" => out.nonfatal_unknown = true,
                "all" => {
                    out.nonfatal_override = true;
                    out.nonfatal_unknown = true;
                }
                _ => {
                    cx.diags.push(Diagnostic::new(
                        Code::BadArgument,
                        w.span,
                        format!("AllowOverride: unknown Nonfatal value '{what}'"),
                    ));
                    return None;
                }
            }
        } else if let Some(c) = OverrideClass::parse(v) {
            out.classes.insert(c);
        } else {
            cx.diags.push(Diagnostic::new(Code::BadArgument, w.span, format!("Illegal override option {v}")));
            return None;
        }
    }
    Some(out)
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    // `get` rather than slicing: the text may have a multi-byte character at the cut.
    let head = s.get(..prefix.len())?;
    if head.eq_ignore_ascii_case(prefix) { s.get(prefix.len()..) } else { None }
}

pub fn read_custom_log(item: &Item) -> Option<CustomLog> {
    let v = item.values();
    let (target, format) = match item.name.value.to_ascii_lowercase().as_str() {
        "transferlog" => (v.first()?.to_string(), String::new()),
        _ => (v.first()?.to_string(), v.get(1)?.to_string()),
    };
    Some(CustomLog { target, format, condition: v.get(2).map(|s| s.to_string()), at: item.span })
}

pub fn read_log_format(item: &Item) -> Option<LogFormat> {
    let v = item.values();
    Some(LogFormat {
        format: v.first()?.to_string(),
        nickname: v.get(1).map(|s| s.to_string()),
        at: item.span,
    })
}

#[cfg(test)]
mod tests {
    use super::split_host_port;

    #[test]
    fn prefix_check_survives_multibyte_text() {
        // Found by the fuzzer: `Optio` followed by a three-byte character.
        assert_eq!(super::strip_prefix_ci("Optio\u{fffd}s=x", "options="), None);
        assert_eq!(super::strip_prefix_ci("OPTIONS=Indexes", "options="), Some("Indexes"));
    }

    #[test]
    fn host_port_forms() {
        assert_eq!(split_host_port("80"), (None, Some("80")));
        assert_eq!(split_host_port("127.0.0.1:8080"), (Some("127.0.0.1".into()), Some("8080")));
        assert_eq!(split_host_port("[2001:db8::10]:443"), (Some("[2001:db8::10]".into()), Some("443")));
        assert_eq!(split_host_port("*:80"), (Some("*".into()), Some("80")));
        assert_eq!(split_host_port("example.com"), (Some("example.com".into()), None));
    }
}

#[cfg(test)]
mod server_name_tests {
    use super::server_name_error;

    /// Each value as `apache2 -t` answered it on this machine (2.4.71): Syntax OK, or AH00526.
    #[test]
    fn server_names_apache_refuses_at_startup() {
        for ok in [
            "example.com",
            "a\rb.example",
            "a/b",
            "a_b",
            "a%b",
            "example.com:80",
            "https://example.com:443",
            "a:80x",
            "x[ay",
        ] {
            assert_eq!(server_name_error(ok), None, "{ok:?}");
        }
        for bad in
            ["a:99999", "a:x", "[::1", "*.example.com", "a?b", "x[a]y", "a:0", "a:-80", "http://a:70000"]
        {
            assert!(server_name_error(bad).is_some(), "{bad:?}");
        }
        assert!(server_name_error("a:x").unwrap().starts_with("The port number \"a:x\" is outside"));
        assert!(server_name_error("*.a").unwrap().starts_with("Invalid ServerName \"*.a\""));
    }
}
