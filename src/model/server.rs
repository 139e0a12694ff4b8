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
