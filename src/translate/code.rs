//! The codes of translation findings: why a directive is not carried over exactly.  Each
//! has a stable kebab-case name, the fate it gives (approximated, unsupported, noted or
//! ignored), a one-line summary and the next step here, a section in `docs/diagnostics.md` (under
//! "Translation findings") and a fixture in `fixtures/translation/<code>/` whose conversion
//! reports it; a tidy test checks all three.  report.md, report.json, batch and the wizard
//! show the same names.

use serde::{Serialize, Serializer};

macro_rules! codes {
    ($($variant:ident = $name:literal, $fate:literal, $summary:literal, $next:literal;)*) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code { $($variant,)* }

        impl Code {
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            pub fn name(self) -> &'static str {
                match self { $(Code::$variant => $name,)* }
            }

            /// The fate a finding of this code gives its directive: `approximated`,
            /// `unsupported`, `noted` or `ignored` (as `Fate::label`).
            pub fn fate(self) -> &'static str {
                match self { $(Code::$variant => $fate,)* }
            }

            pub fn summary(self) -> &'static str {
                match self { $(Code::$variant => $summary,)* }
            }

            /// What the admin does about it, in a sentence (report.md prints it once per
            /// code; docs/diagnostics.md says more).
            pub fn next(self) -> &'static str {
                match self { $(Code::$variant => $next,)* }
            }
        }
    };
}

codes! {
    // The catalogue's word for a directive no finding speaks about.
    NoCounterpart = "no-counterpart", "unsupported", "a directive lighttpd has no counterpart for",
        "remove the directive from Apache's configuration if the site does without it, or keep the site on Apache; lighttpd leaves it out as said";
    NotYetCarried = "not-yet-carried", "unsupported", "a directive this version of lighten does not carry over yet",
        "check that the site does without it (it grants no access), or keep the site on Apache until lighten carries it";
    UnknownToLighten = "unknown-to-lighten", "unsupported", "a directive lighten's catalogue does not know",
        "check the directive's module: if it changes answers, keep the site on Apache; lighttpd leaves it out";
    AccessNotCarried = "access-not-carried", "unsupported", "a directive that narrows who gets in, or changes who the client is, which lighten does not carry over",
        "keep the site on Apache, or remove the directive if the site does without it; until then the requests it governs answer 403";
    NoEffect = "no-effect", "ignored", "a directive that does not change how requests are answered, or that lighttpd sets its own way",
        "nothing: answers do not change; set lighttpd's own equivalent if you tuned this one";
    OwnLogs = "own-logs", "noted", "error logs: lighttpd keeps one, for the whole server",
        "point your log tools at lighttpd's error log (server.errorlog)";
    LogFormat = "log-format", "approximated", "an access log lighttpd writes differently",
        "check the fields named against your log tools, or change the LogFormat in Apache and convert again";
    // Listening.
    ListenUncovered = "listen-uncovered", "unsupported", "--listen covers none of Apache's ports",
        "pass --listen APACHEPORT=ADDR:PORT for each port Apache listens on, then convert again";
    ListenShared = "listen-shared", "unsupported", "--listen sends two of Apache's ports to one address",
        "give each of Apache's ports its own address with --listen, then convert again";
    VhostAddress = "vhost-address", "approximated", "IP-based virtual hosts beside others on a port lighttpd listens on at every address",
        "bind the port to the vhosts' address (Listen ADDR:PORT in Apache, or --listen), or give the port's vhosts one address, then convert again; until then the addresses where Apache picks other vhosts answer 403";
    StandInCertificate = "stand-in-certificate", "approximated", "a certificate that is not on this machine: a stand-in is used",
        "copy the certificate and key to the named path (or pass the server's files with --sysroot), then convert again";
    MergeSlashesOff = "merge-slashes-off", "approximated", "MergeSlashes Off: requests with '//' in the path answer 403",
        "remove MergeSlashes Off if the site does not need '//' kept in its URLs, or keep the site on Apache; until then such requests answer 403";
    // Files and handlers.
    OptionsNotCarried = "options-not-carried", "approximated", "MultiViews, ExecCGI or Includes are on and their module is loaded",
        "turn the option off in Apache (Options -MultiViews -ExecCGI -Includes) and check the site still works there, or keep it on Apache";
    ScriptAlias = "script-alias", "unsupported", "ScriptAlias runs CGI programs, which the translation does not carry",
        "serve the CGI programs another way (PHP-FPM, a FastCGI wrapper) or keep the site on Apache; lighttpd answers 403 for them";
    SymlinksAtConversion = "symlinks-at-conversion", "approximated", "symbolic links followed only in some folders, or by owner: fixed at conversion",
        "convert again after adding or changing links (lighten watch does it): until then a new link is refused (403)";
    FileLinkTest = "file-link-test", "approximated", "a RewriteCond -l test: links as found at conversion",
        "convert again after adding or removing links (lighten watch does it), or test -f/-d instead of -l if the rule allows";
    Etag = "etag", "approximated", "FileETag: lighttpd computes its own ETag",
        "nothing for most sites: caches revalidate once; use FileETag None in Apache to compare like for like";
    ListingLook = "listing-look", "approximated", "directory listing settings: lighttpd's listing has its own look",
        "nothing, unless scripts parse the listing; hidden names are still refused";
    PhpUser = "php-user", "approximated", "SuexecUserGroup: PHP runs as its FastCGI backend's user",
        "convert without --php-backend so that lighten writes the site's php-fpm pool as its user, or run such a pool yourself and pass its socket with --php-backend";
    OutputFilter = "output-filter", "unsupported", "an output filter other than DEFLATE",
        "remove the filter, or do its work in the application; until then the files it applies to answer 403";
    CompressionScope = "compression-scope", "approximated", "compression set in a section applies to the whole host",
        "move AddOutputFilterByType to the virtual host (or accept compression host-wide)";
    // Access.
    ClientCertificate = "client-certificate", "unsupported", "client certificates asked for per directory",
        "ask for client certificates host-wide (ssl.verifyclient.* in lighttpd) by hand, or keep the site on Apache; the folder answers 403";
    AuthFilesMatch = "auth-files-match", "approximated", "a password for a <FilesMatch> name: lighttpd does not ask for it",
        "protect the files with <Files NAME> (an exact name) or a <Directory>, then convert again; until then they answer 401";
    AuthPattern = "auth-pattern", "approximated", "a password on a <DirectoryMatch>, <LocationMatch> or wildcard section: lighttpd does not ask for it",
        "write the section with a plain path (<Directory /path>, <Location /url>), then convert again; until then its users get 401";
    AuthAfterRewrite = "auth-after-rewrite", "approximated", "a rewrite into a password area: lighttpd asks for the password of the URL as sent",
        "link to the protected URL itself instead of rewriting into it, or keep the site on Apache; until then logins through the rewrite get 401";
    AuthAsk = "auth-ask", "approximated", "lighttpd cannot ask for a password exactly where Apache does",
        "give the sections that decide who logs in plain paths that lighttpd can name (<Directory /path>, <Files NAME>, <Location /url>, Allow from an address), then convert again; until then some of their users get 401";
    AuthUnreachable = "auth-unreachable", "approximated", "a password area no URL lighten can name reaches",
        "give the protected folder a URL (an Alias or a path under the DocumentRoot), then convert again; until then it answers 401";
    RequireDns = "require-dns", "approximated", "Require host / forward-dns, Allow or Deny from a host name: needs DNS, never lets anybody in here",
        "replace the host name with the addresses (Require ip, Allow from or Deny from an address), then convert again; until then it never lets anybody in";
    AuthProvider = "auth-provider", "unsupported", "AuthBasicProvider other than file, or AuthBasicUseDigestAlgorithm",
        "keep the logins in an htpasswd file (AuthUserFile, the file provider), then convert again; until then no login is accepted there";
    RequireProvider = "require-provider", "unsupported", "Require group, file-owner or file-group",
        "use Require user with the names, or valid-user, then convert again; until then no user passes";
    // Rewriting, expressions, variables.
    CannotEvaluate = "cannot-evaluate", "unsupported", "an ap_expr expression (or a regular expression in one) the converted site cannot evaluate",
        "rewrite the expression without what the reason names, then convert again; until then requests reaching it answer 403";
    RewriteProxy = "rewrite-proxy", "unsupported", "a RewriteRule [P]: proxying to a URL computed per request",
        "keep the site on Apache, or write the proxying into lighttpd.conf by hand (mod_proxy, a fixed backend); those requests answer 403";
    RewriteCookie = "rewrite-cookie", "approximated", "a RewriteRule [CO]: the cookie is not set",
        "set the cookie in the application, or accept that the rule sets none";
    RewriteMapType = "rewrite-map-type", "unsupported", "a RewriteMap type the translation does not carry",
        "turn the map into a txt: map (one key and value per line), then convert again; until then rules using it answer 403";
    HostCase = "host-case", "approximated", "a Host test that upper-case letters change: lighttpd lower-cases the Host header",
        "make the test case-insensitive ([NC]) in Apache and check it there, or accept the difference for upper-case Host headers";
    // Headers.
    HeaderEnvVariable = "header-env-variable", "approximated", "a Header value with %{VAR}e",
        "set the variable with SetEnv or SetEnvIf rather than relying on the handler's CGI variables";
    HeaderFormat = "header-format", "unsupported", "a Header value with %t, %D, %l, %i, %b, %{VAR}s or expr=",
        "use a fixed value or %{VAR}e, then convert again; the header is left out until then";
    HeaderAction = "header-action", "unsupported", "Header edit, edit*, echo or note",
        "use Header set, append, merge or unset, then convert again; the header is left as the response has it";
}

impl Serialize for Code {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_kebab_case_and_apart_from_the_reading_codes() {
        let mut seen = std::collections::BTreeSet::new();
        for c in Code::ALL {
            let n = c.name();
            assert!(seen.insert(n), "{n} twice");
            assert!(n.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'), "{n}");
            assert!(["approximated", "unsupported", "noted", "ignored"].contains(&c.fate()), "{n}");
            assert!(
                crate::diagnostic::Code::ALL.iter().all(|d| d.name() != n),
                "{n} is also a reading diagnostic: docs/diagnostics.md would have two sections"
            );
        }
    }
}
