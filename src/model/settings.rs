//! Typed settings of one scope, and the one table that routes each directive to the
//! reader that understands it.
//!
//! Only directives lighten translates get a typed form; every directive is also kept as a
//! [`DirectiveUse`](super::DirectiveUse) in its scope, so nothing is lost when no reader
//! claims it.

use super::Spanned;
use super::access::{self, AccessConfig};
use super::alias::{self, Alias, AliasKind, Redirect};
use super::dir::{self, ErrorDocument, OptionsLine};
use super::env::{self, EnvRule};
use super::expires::{self, ExpiresByType, ExpiresConfig};
use super::headers::{self, HeaderRule};
use super::mime::{self, Handler, HandlerUse, MimeConfig};
use super::rewrite::{self, RewriteConfig};
use super::server::{self, AllowOverride, HostSettings};
use crate::config::Item;
use crate::diagnostic::Diagnostic;
use serde::Serialize;

#[derive(Clone, Debug, Default, Serialize)]
pub struct Settings {
    #[serde(skip_serializing_if = "Option::is_none")]
    host: Option<Box<HostSettings>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rewrite: Option<Box<RewriteConfig>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    access: Option<Box<AccessConfig>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<Alias>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub redirects: Vec<Redirect>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub directory_index: Option<Spanned<Vec<String>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub directory_slash: Option<Spanned<bool>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback_resource: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<OptionsLine>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub error_documents: Vec<ErrorDocument>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<HeaderRule>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expires: Option<Box<ExpiresConfig>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mime: Option<Box<MimeConfig>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvRule>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_override: Option<AllowOverride>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_override_list: Option<Spanned<Vec<String>>>,
}

/// Empty groups, lent out by the accessors when a scope has none.
static NO_HOST: std::sync::LazyLock<HostSettings> = std::sync::LazyLock::new(HostSettings::default);
static NO_REWRITE: std::sync::LazyLock<RewriteConfig> = std::sync::LazyLock::new(RewriteConfig::default);
static NO_ACCESS: std::sync::LazyLock<AccessConfig> = std::sync::LazyLock::new(AccessConfig::default);
static NO_EXPIRES: std::sync::LazyLock<ExpiresConfig> = std::sync::LazyLock::new(ExpiresConfig::default);
static NO_MIME: std::sync::LazyLock<MimeConfig> = std::sync::LazyLock::new(MimeConfig::default);

/// The larger groups are allocated only when a directive of theirs appears: a server of a
/// thousand accounts has tens of thousands of scopes, most with a handful of settings.
impl Settings {
    pub fn host(&self) -> &HostSettings {
        self.host.as_deref().unwrap_or(&NO_HOST)
    }
    pub fn host_mut(&mut self) -> &mut HostSettings {
        self.host.get_or_insert_with(Box::default)
    }
    pub fn rewrite(&self) -> &RewriteConfig {
        self.rewrite.as_deref().unwrap_or(&NO_REWRITE)
    }
    pub fn rewrite_mut(&mut self) -> &mut RewriteConfig {
        self.rewrite.get_or_insert_with(Box::default)
    }
    pub fn access(&self) -> &AccessConfig {
        self.access.as_deref().unwrap_or(&NO_ACCESS)
    }
    pub fn access_mut(&mut self) -> &mut AccessConfig {
        self.access.get_or_insert_with(Box::default)
    }
    pub fn expires(&self) -> &ExpiresConfig {
        self.expires.as_deref().unwrap_or(&NO_EXPIRES)
    }
    pub fn expires_mut(&mut self) -> &mut ExpiresConfig {
        self.expires.get_or_insert_with(Box::default)
    }
    pub fn mime(&self) -> &MimeConfig {
        self.mime.as_deref().unwrap_or(&NO_MIME)
    }
    pub fn mime_mut(&mut self) -> &mut MimeConfig {
        self.mime.get_or_insert_with(Box::default)
    }

    /// Ends the scope: RewriteCond lines without a rule become dangling.
    pub fn finish(&mut self) {
        if let Some(rw) = &mut self.rewrite {
            rw.finish();
        }
    }
}

/// What a reader needs besides the directive.
pub struct ReadCx<'a> {
    pub diags: &'a mut Vec<Diagnostic>,
    /// In a .htaccess under `AllowOverride Options=...`: the options it may set.
    pub options_allowed: Option<&'a [String]>,
    /// Methods the server configuration registered (`<Limit PURGE>`), known from then on.
    pub registered: &'a [String],
    /// Reading a .htaccess file (Apache checks some things only at startup).
    pub htaccess: bool,
    /// Whether mod_ssl and mod_http2 are loaded: they add variables to ap_expr.
    pub expr_modules: (bool, bool),
}

/// Checks ap_expr text of `item` as Apache does while reading the configuration: a
/// condition (`string` false) or a string expression that does not parse, or names a
/// variable Apache does not have, is a `bad-expr` error (the server does not start; a
/// .htaccess answers 500). True when it is fine.
pub fn check_expr(cx: &mut ReadCx, item: &Item, text: &str, string: bool) -> bool {
    let (ssl, http2) = cx.expr_modules;
    let Err(e) = crate::expr::check(text, string, ssl, http2) else { return true };
    let message = format!("{}: {} (at byte {} of '{text}')", item.name.value, e.message, e.offset);
    cx.diags.push(Diagnostic::new(crate::diagnostic::Code::BadExpr, item.span, message));
    false
}

fn set<T>(slot: &mut Option<Spanned<T>>, value: T, item: &Item) {
    *slot = Some(Spanned::new(value, item.span));
}

fn first(item: &Item) -> Option<String> {
    item.arg(0).map(str::to_string)
}

/// Routes an enabled directive to its reader.  Returns false when no typed reader claims
/// it (it still counts through its catalogue status).
pub fn read(item: &Item, s: &mut Settings, cx: &mut ReadCx) -> bool {
    let name = item.name.value.to_ascii_lowercase();
    match name.as_str() {
        // mod_rewrite
        "rewriteengine" => {
            if let Some(f) = dir::read_flag(item) {
                s.rewrite_mut().engine = Some(f);
            }
        }
        "rewritebase" => {
            if let Some(v) = first(item) {
                set(&mut s.rewrite_mut().base, v, item);
            }
        }
        "rewriteoptions" => {
            s.rewrite_mut().options.extend(item.args.iter().map(|w| Spanned::new(w.value.clone(), w.span)))
        }
        "rewritemap" => rewrite::read_map(item, &mut *s.rewrite_mut(), cx),
        "rewritecond" => rewrite::read_cond(item, &mut *s.rewrite_mut(), cx),
        "rewriterule" => rewrite::read_rule(item, &mut *s.rewrite_mut(), cx),
        // access control
        "require" => {
            if let Some(a) = access::read_require(item, cx) {
                s.access_mut().require.push(a);
            }
        }
        "order" => s.access_mut().order = access::read_order(item, cx).or(s.access_mut().order.take()),
        "allow" => s.access_mut().allow.extend(access::read_host_rule(item, cx)),
        "deny" => s.access_mut().deny.extend(access::read_host_rule(item, cx)),
        "satisfy" => {
            s.access_mut().satisfy = access::read_satisfy(item, cx).or(s.access_mut().satisfy.take())
        }
        "authtype" => set(&mut s.access_mut().auth_type, first(item).unwrap_or_default(), item),
        "authname" => set(&mut s.access_mut().auth_name, first(item).unwrap_or_default(), item),
        "authuserfile" => set(&mut s.access_mut().auth_user_file, first(item).unwrap_or_default(), item),
        "authgroupfile" => set(&mut s.access_mut().auth_group_file, first(item).unwrap_or_default(), item),
        "authbasicprovider" => {
            // each line adds to the section's list (mod_auth_basic's add_authn_provider)
            let mut providers: Vec<String> = item.values().iter().map(|v| v.to_string()).collect();
            let a = s.access_mut();
            let mut at = item.span;
            if let Some(before) = a.auth_basic_provider.take() {
                providers.splice(0..0, before.value);
                at = before.span;
            }
            a.auth_basic_provider = Some(Spanned::new(providers, at))
        }
        "authbasicusedigestalgorithm" => {
            set(&mut s.access_mut().auth_basic_digest, first(item).unwrap_or_default(), item)
        }
        "authmerging" => {
            let v = first(item).unwrap_or_default();
            if ["off", "and", "or"].contains(&v.to_ascii_lowercase().as_str()) {
                set(&mut s.access_mut().auth_merging, v, item)
            } else {
                cx.diags.push(Diagnostic::new(
                    crate::diagnostic::Code::BadArgument,
                    item.span,
                    "AuthMerging must be one of: Off | And | Or",
                ));
            }
        }
        // mod_alias
        "alias" => s.aliases.extend(alias::read_alias(item, AliasKind::Alias, cx)),
        "aliasmatch" => s.aliases.extend(alias::read_alias(item, AliasKind::AliasMatch, cx)),
        "scriptalias" => s.aliases.extend(alias::read_alias(item, AliasKind::ScriptAlias, cx)),
        "scriptaliasmatch" => s.aliases.extend(alias::read_alias(item, AliasKind::ScriptAliasMatch, cx)),
        "redirect" | "redirectmatch" | "redirectpermanent" | "redirecttemp" => {
            s.redirects.extend(alias::read_redirect(item, cx))
        }
        // directory behaviour
        "directoryindex" => s.directory_index = Some(mime::list(item)),
        "directoryslash" => s.directory_slash = dir::read_flag(item),
        "fallbackresource" => {
            if let Some(v) = first(item) {
                set(&mut s.fallback_resource, v, item);
            }
        }
        "options" => s.options.extend(dir::read_options(item, cx)),
        "errordocument" => s.error_documents.extend(dir::read_error_document(item, cx)),
        // headers and expiry
        "header" => s.headers.extend(headers::read(item, false, cx)),
        "requestheader" => s.headers.extend(headers::read(item, true, cx)),
        "expiresactive" => s.expires_mut().active = dir::read_flag(item),
        "expiresbytype" => {
            if let (Some(mime), Some(spec)) = (first(item), expires::read_spec(item, 1, cx)) {
                s.expires_mut().by_type.push(ExpiresByType { mime, spec, at: item.span });
            }
        }
        "expiresdefault" => {
            if let Some(spec) = expires::read_spec(item, 0, cx) {
                set(&mut s.expires_mut().default, spec, item);
            }
        }
        // content types and handlers
        "addtype" => s.mime_mut().types.extend(mime::ext_mapping(item)),
        "removetype" => s.mime_mut().remove_types.push(mime::list(item)),
        "forcetype" => {
            if let Some(v) = first(item) {
                set(&mut s.mime_mut().force_type, v, item);
            }
        }
        "addencoding" => s.mime_mut().encodings.extend(mime::ext_mapping(item)),
        "addcharset" => s.mime_mut().charsets.extend(mime::ext_mapping(item)),
        "adddefaultcharset" => {
            if let Some(v) = first(item) {
                set(&mut s.mime_mut().default_charset, v, item);
            }
        }
        "sethandler" => {
            if let Some(v) = item.arg(0) {
                s.mime_mut().handlers.push(HandlerUse {
                    handler: Handler::parse(v),
                    extensions: Vec::new(),
                    at: item.span,
                });
            }
        }
        "addhandler" => {
            if let Some(m) = mime::ext_mapping(item) {
                s.mime_mut().handlers.push(HandlerUse {
                    handler: Handler::parse(&m.value),
                    extensions: m.extensions,
                    at: item.span,
                });
            }
        }
        // An output filter other than DEFLATE (INCLUDES, SUBSTITUTE, ...) is not carried
        // over: the files it applies to must not go out unfiltered (an SSI page's
        // `<!--#set var="dbpass" ...-->`), so it stands as a handler no module claims,
        // which both tiers refuse (403), for its extensions or the whole scope.
        "addoutputfilter" | "setoutputfilter" => {
            let set = name.eq_ignore_ascii_case("setoutputfilter");
            let mapping = if set {
                item.arg(0).map(|v| (v.to_string(), Vec::new()))
            } else {
                mime::ext_mapping(item).map(|m| (m.value, m.extensions))
            };
            if let Some((filters, extensions)) = mapping
                && filters
                    .split(';')
                    .any(|f| !f.trim().is_empty() && !f.trim().eq_ignore_ascii_case("deflate"))
            {
                s.mime_mut().handlers.push(HandlerUse {
                    handler: Handler::Other { name: format!("output filter {filters}") },
                    extensions,
                    at: item.span,
                });
            }
        }
        "removehandler" => s.mime_mut().remove_handlers.push(mime::list(item)),
        "fileetag" => s.mime_mut().file_etag = Some(mime::list(item)),
        "fcgidwrapper" | "fcgiwrapper" => s.mime_mut().fcgid_wrapper = Some(mime::list(item)),
        // environment
        "setenv" | "unsetenv" | "passenv" | "setenvif" | "setenvifnocase" | "browsermatch"
        | "browsermatchnocase" | "setenvifexpr" => s.env.extend(env::read(item, cx)),
        // per-directory switches
        "allowoverride" => s.allow_override = server::read_allow_override(item, cx),
        "allowoverridelist" => {
            let names: Vec<String> = item
                .values()
                .iter()
                .filter(|v| !v.eq_ignore_ascii_case("none"))
                .map(|v| v.to_string())
                .collect();
            set(&mut s.allow_override_list, names, item);
        }
        "accessfilename" => s.host_mut().access_file_names = Some(mime::list(item)),
        // host settings
        "servername" => {
            if let Some(v) = first(item) {
                match server::server_name_error(&v) {
                    // Apache stops at startup (AH00526)
                    Some(msg) => cx.diags.push(Diagnostic::new(
                        crate::diagnostic::Code::BadArgument,
                        item.args[0].span,
                        msg,
                    )),
                    None => set(&mut s.host_mut().server_name, v, item),
                }
            }
        }
        "serveralias" => s
            .host_mut()
            .server_aliases
            .extend(item.args.iter().map(|w| Spanned::new(w.value.clone(), w.span))),
        "documentroot" => {
            if let Some(v) = first(item) {
                set(&mut s.host_mut().document_root, v, item);
            }
        }
        "mergeslashes" => {
            if let Some(v) = first(item) {
                set(&mut s.host_mut().merge_slashes, v, item);
            }
        }
        "usecanonicalname" => {
            if let Some(v) = first(item) {
                set(&mut s.host_mut().use_canonical_name, v, item);
            }
        }
        "listen" => s.host_mut().listen.extend(server::read_listen(item, cx)),
        "user" => {
            if let Some(v) = first(item) {
                set(&mut s.host_mut().user, v, item);
            }
        }
        "group" => {
            if let Some(v) = first(item) {
                set(&mut s.host_mut().group, v, item);
            }
        }
        "suexecusergroup" => s.host_mut().suexec = Some(mime::list(item)),
        "errorlog" => {
            if let Some(v) = first(item) {
                set(&mut s.host_mut().error_log, v, item);
            }
        }
        "customlog" | "transferlog" => s.host_mut().custom_logs.extend(server::read_custom_log(item)),
        "logformat" => s.host_mut().log_formats.extend(server::read_log_format(item)),
        "loglevel" => set(&mut s.host_mut().log_level, item.raw.text.clone(), item),
        "traceenable" => {
            if let Some(v) = first(item) {
                set(&mut s.host_mut().trace_enable, v.to_ascii_lowercase(), item);
            }
        }
        "sslengine" => set(&mut s.host_mut().tls.engine, first(item).unwrap_or_default(), item),
        "sslcertificatefile" => {
            set(&mut s.host_mut().tls.certificate_file, first(item).unwrap_or_default(), item)
        }
        "sslcertificatekeyfile" => {
            set(&mut s.host_mut().tls.certificate_key_file, first(item).unwrap_or_default(), item)
        }
        "sslcertificatechainfile" => {
            set(&mut s.host_mut().tls.certificate_chain_file, first(item).unwrap_or_default(), item)
        }
        "sslprotocol" => set(&mut s.host_mut().tls.protocol, item.raw.text.clone(), item),
        "sslciphersuite" => set(&mut s.host_mut().tls.cipher_suite, item.raw.text.clone(), item),
        _ => return false,
    }
    true
}
