//! The diagnostic codes.  Each has a stable kebab-case name, a usual severity and a one-line
//! summary here, and a section in `docs/diagnostics.md` (what, why, example, what lighten
//! does); a tidy test checks that every code has both and a fixture that triggers it.

use super::Severity;
use serde::{Serialize, Serializer};

macro_rules! codes {
    ($($variant:ident = $name:literal, $severity:ident, $summary:literal;)*) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code { $($variant,)* }

        impl Code {
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            pub fn name(self) -> &'static str {
                match self { $(Code::$variant => $name,)* }
            }

            pub fn severity(self) -> Severity {
                match self { $(Code::$variant => Severity::$severity,)* }
            }

            pub fn summary(self) -> &'static str {
                match self { $(Code::$variant => $summary,)* }
            }
        }
    };
}

codes! {
    // Reading files.
    UnreadableFile = "unreadable-file", Error, "a file could not be read";
    InvalidUtf8 = "invalid-utf8", Warning, "a file is not valid UTF-8; invalid bytes were replaced";
    AssumedDefaults = "assumed-defaults", Note, "no server configuration was given; documented defaults stand in for it";
    EnvVars = "envvars", Note, "variables were read from a Debian-style envvars file";
    // Grammar.
    UnclosedSection = "unclosed-section", Error, "a section is never closed";
    MismatchedClose = "mismatched-close", Error, "a closing tag does not match the open section";
    StrayClose = "stray-close", Error, "a closing tag has no open section";
    MissingBracket = "missing-bracket", Error, "a section tag lacks its closing '>'";
    MissingSectionArgument = "missing-section-argument", Error, "a section needs an argument";
    TextAfterBracket = "text-after-bracket", Warning, "text after a section's '>' is ignored by Apache";
    UnterminatedQuote = "unterminated-quote", Error, "a quoted argument is not closed on its line";
    CommentContinuation = "comment-continuation", Warning, "a comment ends with a backslash and swallows the next line";
    HashArgument = "hash-argument", Warning, "'#' after a directive is an argument, not a comment";
    // Includes and variables.
    IncludeNotFound = "include-not-found", Error, "an Include names a file that does not exist";
    IncludeNoMatch = "include-no-match", Error, "an Include wildcard matches nothing";
    IncludeCycle = "include-cycle", Error, "files include each other in a cycle";
    NotIncluded = "not-included", Note, "a Plesk custom file that no configuration includes";
    UndefinedVariable = "undefined-variable", Warning, "a ${VAR} reference has no definition";
    // Directives against the catalogue.
    UnknownDirective = "unknown-directive", Error, "a directive no module defines";
    ModuleNotLoaded = "module-not-loaded", Error, "a directive of a module that is not loaded";
    NotAllowedHere = "not-allowed-here", Error, "a directive used in a context Apache refuses";
    WrongArguments = "wrong-arguments", Error, "a directive has the wrong number of arguments";
    BadArgument = "bad-argument", Error, "an argument Apache would reject";
    // .htaccess files.
    HtaccessNotAllowed = "htaccess-not-allowed", Error, "a .htaccess directive outside AllowOverride: Apache answers 500";
    HtaccessIgnored = "htaccess-ignored", Note, "a .htaccess file Apache never reads (AllowOverride None)";
    HtaccessNonfatal = "htaccess-nonfatal", Warning, "a .htaccess directive Apache skips because of AllowOverride Nonfatal";
    WalkLimit = "walk-limit", Warning, "the search for .htaccess files stopped at its limit";
    MissingPath = "missing-path", Note, "a DocumentRoot, Alias or Directory path does not exist";
    // Semantics of the directives lighten models.
    BadRegex = "bad-regex", Error, "a regular expression PCRE does not accept";
    BadExpr = "bad-expr", Error, "an ap_expr expression Apache's parser refuses";
    RewriteBadFlag = "rewrite-bad-flag", Error, "a RewriteRule or RewriteCond flag Apache does not know";
    DanglingCondition = "dangling-condition", Warning, "RewriteCond lines with no RewriteRule after them";
    RewriteMapUnsupported = "rewrite-map-unsupported", Warning, "a RewriteMap type lighten cannot evaluate";
    NoVirtualHostMatch = "no-vhost-match", Note, "a virtual host can never be selected";
}

impl Code {
    /// Findings about style that Apache itself accepts: they never make a .htaccess
    /// answer 500 and never stop the server.
    pub fn is_lint(self) -> bool {
        matches!(
            self,
            Code::UnterminatedQuote
                | Code::TextAfterBracket
                | Code::CommentContinuation
                | Code::HashArgument
                | Code::InvalidUtf8
                | Code::DanglingCondition
        )
    }
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
