//! The accounts that stay on Apache, in the combined lighttpd: `--fallback-apache ADDR:PORT`
//! sends their hosts to an Apache kept on a backend port (mod_proxy), as hosting tools
//! keep a site that cannot move on its old server.
//!
//! An account that failed may not even parse, so its host names are read from its Plesk
//! files as text (`ServerName` and `ServerAlias` lines of `system/DOMAIN/conf/*.conf`),
//! with the domain and `www.` of it always among them. Over plain HTTP those hosts are
//! proxied with the Host as sent and the client's address in `X-Forwarded-For`; over TLS
//! they answer 503, because lighttpd's mod_proxy speaks plain HTTP to its backend and the
//! backend would answer an HTTPS client with its port-80 virtual host (a Plesk site that
//! redirects to HTTPS would redirect for ever).

use std::path::Path;

/// A backend address: `127.0.0.1:8081`, `[::1]:8081`, `localhost:8081`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Backend {
    pub host: String,
    pub port: u16,
}

impl std::fmt::Display for Backend {
    /// As `--fallback-apache` takes it: `127.0.0.1:8081`, `[::1]:8081`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

impl std::str::FromStr for Backend {
    type Err = String;

    fn from_str(s: &str) -> Result<Backend, String> {
        let bad = || format!("{s:?}: expected ADDR:PORT, such as 127.0.0.1:8081");
        let (host, port) = s.rsplit_once(':').ok_or_else(bad)?;
        let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
        if host.is_empty() || host.contains(['"', '\\', ' ']) {
            return Err(bad());
        }
        let port: u16 = port.parse().ok().filter(|p| *p > 0).ok_or_else(bad)?;
        Ok(Backend { host: host.to_string(), port })
    }
}

/// An account kept on Apache: its domain, the host names it answers, and why it stays.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kept {
    pub domain: String,
    pub names: Vec<String>,
    pub why: String,
}

/// The names of account `domain` under the vhosts root `root`: the domain, `www.` of it, and
/// every ServerName / ServerAlias of its `conf/*.conf` files (lower case, without a port).
pub fn names(root: &Path, domain: &str) -> Vec<String> {
    let d = domain.to_ascii_lowercase();
    let mut out = if plain(&d) { vec![d.clone(), format!("www.{d}")] } else { Vec::new() };
    let conf = root.join("system").join(domain).join("conf");
    let mut files: Vec<_> = std::fs::read_dir(&conf)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "conf") && p.is_file())
        .collect();
    files.sort();
    for f in files {
        let Ok(bytes) = std::fs::read(&f) else { continue };
        for line in String::from_utf8_lossy(&bytes).lines() {
            let mut words = line.split_whitespace();
            let Some(d) = words.next() else { continue };
            if !d.eq_ignore_ascii_case("ServerName") && !d.eq_ignore_ascii_case("ServerAlias") {
                continue;
            }
            for w in words {
                if w.starts_with('#') {
                    break;
                }
                let w = w.trim_matches('"').to_ascii_lowercase();
                let w = w.strip_prefix("http://").or_else(|| w.strip_prefix("https://")).unwrap_or(&w);
                let name = match w.rsplit_once(':') {
                    Some((n, p)) if p.bytes().all(|b| b.is_ascii_digit()) => n,
                    _ => w,
                };
                let name = name.trim_end_matches('.');
                if !name.is_empty() && plain(name) && !out.iter().any(|o| o == name) {
                    out.push(name.to_string());
                }
            }
        }
    }
    out
}

/// A host name (or a wildcard of one) that may go into a lighttpd regex as it is.
fn plain(name: &str) -> bool {
    name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-.*?_".contains(&b))
}

/// The lines the combined lighttpd.conf ends with. Apache decides, through mod_proxy over
/// plain HTTP (503 over TLS: `tls_refusal`, a Lua file), every request whose Host is none of
/// the `converted` accounts' names (`ServerName`s and `ServerAlias`es of the combined
/// model) and every request whose Host is one of the kept accounts' names: so a name of a
/// kept account the text scan missed, a request without Host, and a kept default vhost
/// are all Apache's to answer, never another account's. Sending more to Apache is always
/// faithful (it has every account); the converted side keeps only the names that are its
/// own and no kept account's.
///
/// `modules` are those the combined configuration loads: what its default host may set for
/// every request (PHP's FastCGI, a password, request headers, compression) is undone for
/// these requests, so that their answers are Apache's alone.
pub fn conf(
    kept: &[Kept],
    converted: &[String],
    backend: &Backend,
    tls_refusal: &Path,
    modules: &[String],
) -> String {
    if kept.is_empty() {
        return String::new();
    }
    let kept_names: Vec<String> = kept.iter().flat_map(|k| k.names.iter().cloned()).collect();
    // lighttpd's strings keep a backslash as it is (the regex's `\.`); only `"` is escaped
    let q = |s: &str| format!("\"{}\"", s.replace('"', "\\\""));
    let mut body = String::new();
    body.push_str(
        "  magnet.attract-raw-url-to = ( )\n  magnet.attract-physical-path-to = ( )\n  magnet.attract-response-start-to = ( )\n",
    );
    for (module, reset) in RESETS {
        if modules.iter().any(|m| m == module) {
            body.push_str(&format!("  {reset} = ( )\n"));
        }
    }
    body.push_str("  $HTTP[\"scheme\"] == \"http\" {\n");
    body.push_str(&format!(
        "    proxy.server = ( \"\" => ( ( \"host\" => {}, \"port\" => {} ) ) )\n",
        q(&backend.host),
        backend.port
    ));
    body.push_str("    proxy.forwarded = ( \"for\" => 1, \"proto\" => 1 )\n  }\n");
    body.push_str("  else {\n");
    body.push_str(&format!(
        "    magnet.attract-raw-url-to = ( {} )\n",
        q(&tls_refusal.display().to_string())
    ));
    body.push_str("  }\n");
    let mut out = String::from(
        "\n# Accounts that stay on Apache (batch-summary.md says why). Apache decides every request\n\
         # for a Host that is no converted account's name, and for every kept account's name: over\n\
         # plain HTTP it goes to the Apache kept on the backend port (which must hold the whole\n\
         # original configuration), with the Host as sent and the client's address appended to\n\
         # X-Forwarded-For (that Apache needs mod_remoteip trusting only lighttpd, or its Require ip\n\
         # and Allow/Deny rules see lighttpd's address); over TLS it answers 503 (mod_proxy speaks\n\
         # plain HTTP to the backend, which would answer with its port-80 virtual host).\n",
    );
    for k in kept {
        out.push_str(&format!(
            "#   {}: {}\n",
            crate::translate::conf::comment(&k.domain),
            crate::translate::conf::comment(&k.why)
        ));
    }
    out.push_str("server.modules += ( \"mod_proxy\" )\n");
    if !converted.is_empty() {
        let theirs = crate::translate::conf::host_regex(converted);
        out.push_str(&format!("$HTTP[\"host\"] !~ {} {{\n{body}}}\n", q(&theirs)));
    }
    let host = crate::translate::conf::host_regex(&kept_names);
    out.push_str(&format!("$HTTP[\"host\"] =~ {} {{\n{body}}}\n", q(&host)));
    out
}

/// What a host block of the combined configuration may set, by module: undone for kept hosts.
const RESETS: &[(&str, &str)] = &[
    ("mod_fastcgi", "fastcgi.server"),
    ("mod_auth", "auth.require"),
    ("mod_setenv", "setenv.set-request-header"),
    ("mod_deflate", "deflate.mimetypes"),
];

/// The modules a lighttpd.conf's `server.modules = ( ... )` line loads.
pub fn modules_of(conf: &str) -> Vec<String> {
    conf.lines()
        .filter_map(|l| l.trim_start().strip_prefix("server.modules"))
        .filter_map(|rest| {
            rest.trim_start().strip_prefix('=').or_else(|| rest.trim_start().strip_prefix("+="))
        })
        .flat_map(|list| list.split('"').skip(1).step_by(2).map(str::to_string).collect::<Vec<_>>())
        .collect()
}

/// The Lua file `conf` names for TLS requests to a kept host.
pub const TLS_REFUSAL: &str = "-- lighten batch --fallback-apache: a host that stays on Apache, asked over TLS.\n\
     -- lighttpd's mod_proxy cannot reach the Apache backend over TLS, so the request is refused\n\
     -- (503) rather than answered by another site; batch-summary.md lists these accounts.\n\
     return 503\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backend_is_an_address_and_a_port() {
        assert_eq!("127.0.0.1:8081".parse(), Ok(Backend { host: "127.0.0.1".into(), port: 8081 }));
        assert_eq!("[::1]:8081".parse(), Ok(Backend { host: "::1".into(), port: 8081 }));
        for shown in ["127.0.0.1:8081", "[::1]:8081"] {
            assert_eq!(shown.parse::<Backend>().unwrap().to_string(), shown);
        }
        for bad in ["8081", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:99999", ":80", "a\"b:80"] {
            assert!(bad.parse::<Backend>().is_err(), "{bad}");
        }
    }

    #[test]
    fn names_come_from_the_account_files_as_text() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("system/shop.example/conf");
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join("httpd.conf"),
            "<VirtualHost 203.0.113.10:80 >\n\tServerName \"shop.example:80\"\n\
             \tServerAlias \"www.shop.example\" \"ipv4.shop.example\" *.Shop-Alias.example # a comment\n",
        )
        .unwrap();
        // a broken file still gives its names
        std::fs::write(folder.join("vhost.conf"), "<Directory /x>\nServerAlias Other.example.\n").unwrap();
        assert_eq!(
            names(dir.path(), "shop.example"),
            [
                "shop.example",
                "www.shop.example",
                "ipv4.shop.example",
                "*.shop-alias.example",
                "other.example"
            ]
        );
        let kept = vec![Kept {
            domain: "shop.example".into(),
            names: names(dir.path(), "shop.example"),
            why: "x".into(),
        }];
        let modules = modules_of("server.modules = ( \"mod_access\", \"mod_magnet\", \"mod_fastcgi\" )\n");
        assert_eq!(modules, ["mod_access", "mod_magnet", "mod_fastcgi"]);
        let converted = vec!["a.example".to_string()];
        let backend: Backend = "127.0.0.1:8081".parse().unwrap();
        let c = conf(&kept, &converted, &backend, Path::new("/o/stays-on-apache.lua"), &modules);
        assert!(c.contains(r#"$HTTP["host"] !~ "^(?:a\.example)\.?(?::[0-9]+)?$" {"#), "{c}");
        assert!(c.contains("  fastcgi.server = ( )\n") && !c.contains("auth.require"), "{c}");
        assert!(
            c.contains(r#"$HTTP["host"] =~ "^(?:shop\.example|www\.shop\.example|ipv4\.shop\.example|.*\.shop-alias\.example|other\.example)\.?(?::[0-9]+)?$""#),
            "{c}"
        );
        assert!(
            c.contains("proxy.server = ( \"\" => ( ( \"host\" => \"127.0.0.1\", \"port\" => 8081 ) ) )"),
            "{c}"
        );
        assert!(c.contains("magnet.attract-raw-url-to = ( \"/o/stays-on-apache.lua\" )"), "{c}");
        assert_eq!(
            conf(&[], &converted, &"127.0.0.1:8081".parse().unwrap(), Path::new("/o/x.lua"), &modules),
            ""
        );
        // a comment ends at a carriage return too: no control character reaches one
        let evil = vec![Kept {
            domain: "e\rserver.tag = \"x\"".into(),
            names: names(dir.path(), "e\rx"),
            why: "Header echo '^X\rinclude_shell \"id\"\r#'".into(),
        }];
        assert!(evil[0].names.is_empty(), "a domain that is no host name gives no name");
        let c = conf(&evil, &converted, &"127.0.0.1:8081".parse().unwrap(), Path::new("/o/x.lua"), &modules);
        assert!(
            !c.contains('\r')
                && c.lines().filter(|l| l.contains("include_shell")).all(|l| l.starts_with('#')),
            "{c}"
        );
    }
}
