//! The outcome of a batch: one row per account (its status, the fate of its directives,
//! its worst finding or the error that stopped it), the combined configuration, and the
//! exit status; rendered as `batch-summary.md` and `batch-summary.json`
//! (docs/batch.md describes the JSON).
//!
//! Pure data and rendering: nothing here reads or writes files, and nothing depends on
//! the time or the machine, so an unchanged server gives the same bytes.

use super::Shard;
use crate::diagnostic::Diagnostic;
use crate::source::SourceMap;
use crate::translate::{Report, SiteVerdict};
use serde::Serialize;

/// What became of one account.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Every directive carried over exactly (or ignored on purpose).
    Exact,
    /// Converted, with something approximated or unsupported (unsupported parts fail
    /// closed); `report.md` of the account says what.
    Approximated,
    /// Not converted: Apache would refuse the account's configuration (or it could not
    /// be read or written).
    Failed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Exact => "exact",
            Status::Approximated => "approximated",
            Status::Failed => "failed",
        }
    }
}

/// The verdict of an account that could not be converted.
pub const STAYS: &str = "stays on Apache";

/// Directives by fate, as in the account's `report.json`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub exact: usize,
    pub approximated: usize,
    /// Differences that do not change answers (log formats).
    pub noted: usize,
    pub ignored: usize,
    pub unsupported: usize,
}

impl Counts {
    pub fn of(report: &Report) -> Counts {
        let get = |k: &str| report.counts.get(k).copied().unwrap_or(0);
        Counts {
            exact: get("exact"),
            approximated: get("approximated"),
            noted: get("noted"),
            ignored: get("ignored"),
            unsupported: get("unsupported"),
        }
    }
}

/// The finding that matters most in a conversion: unsupported before approximated before
/// ignored; among equals, the first in the report's order (server, then virtual hosts,
/// then .htaccess files), preferring a file of the server over lighten's stand-in
/// defaults (which every account shares).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Worst {
    /// `file:line`.
    pub at: String,
    pub fate: &'static str,
    /// The finding's code (docs/diagnostics.md, "Translation findings").
    pub code: Option<&'static str>,
    pub directive: String,
    pub args: String,
    pub reason: String,
}

impl Worst {
    pub fn of(report: &Report) -> Option<Worst> {
        let e = report
            .entries
            .iter()
            .filter(|e| e.fate.rank() > 0)
            .min_by_key(|e| (std::cmp::Reverse(e.fate.rank()), e.at.starts_with("<lighten:")))?;
        Some(Worst::from(e))
    }

    /// The entry at `at` (`file:line`), the worst of its line.
    pub fn at(report: &Report, at: &str) -> Option<Worst> {
        let e = report.entries.iter().filter(|e| e.at == at).max_by_key(|e| e.fate.rank())?;
        Some(Worst::from(e))
    }

    fn from(e: &crate::translate::Entry) -> Worst {
        Worst {
            at: e.at.clone(),
            fate: e.fate.label(),
            code: e.fate.code().map(|c| c.name()),
            reason: e.fate.why(),
            directive: e.directive.clone(),
            args: e.args.clone(),
        }
    }
}

/// Why an account was not converted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Failure {
    /// `file:line:column` of the first error, when it has a place.
    pub at: Option<String>,
    /// The diagnostic code (docs/diagnostics.md), when it is one.
    pub code: Option<&'static str>,
    pub message: String,
    /// How many errors Apache would refuse the configuration for.
    pub errors: usize,
}

impl Failure {
    /// The first error outside `.htaccess` files (those make Apache refuse to start; an
    /// error in a `.htaccess` file only makes it answer 500 there, which the conversion
    /// carries), or `None` when there is none.
    pub fn of(map: &SourceMap, diags: &[Diagnostic]) -> Option<Failure> {
        let fatal = crate::diagnostic::refused_at_startup(map, diags);
        let first = fatal.iter().min_by_key(|d| d.span.map(|s| (s.file, s.start, s.end)))?;
        Some(Failure {
            at: first.span.map(|s| map.locate(s)),
            code: Some(first.code.name()),
            message: first.message.clone(),
            errors: fatal.len(),
        })
    }

    /// A failure that is not a diagnostic (the tree changed under us, a write failed).
    pub fn other(message: impl Into<String>) -> Failure {
        Failure { at: None, code: None, message: message.into(), errors: 1 }
    }

    /// `file:line:column: error[code]: message`, as diagnostics print in one line.
    pub fn line(&self) -> String {
        let at = self.at.as_ref().map(|a| format!("{a}: ")).unwrap_or_default();
        match self.code {
            Some(c) => format!("{at}error[{c}]: {}", self.message),
            None => format!("{at}error: {}", self.message),
        }
    }
}

/// One account's row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Account {
    /// The folder name under `system/`.
    pub domain: String,
    pub status: Status,
    /// The account's site as `convert` and its `report.md` judge it: `ready`, `ready
    /// with notes`, `needs you`, or `stays on Apache` when it failed.
    pub verdict: &'static str,
    /// What to do next, in the words of the account's `report.md`.
    pub next: String,
    /// Its conversion's folder, relative to the output folder (`null` when failed).
    pub output: Option<String>,
    pub counts: Option<Counts>,
    pub worst: Option<Worst>,
    pub error: Option<Failure>,
}

impl Account {
    pub fn converted(domain: &str, report: &Report) -> Account {
        let site = SiteVerdict::of_account(report, domain);
        Account {
            domain: domain.to_string(),
            status: if report.inexact() { Status::Approximated } else { Status::Exact },
            verdict: site.map_or(crate::translate::READY, |v| v.verdict),
            next: site.map(|v| v.next.clone()).unwrap_or_default(),
            output: Some(domain.to_string()),
            counts: Some(Counts::of(report)),
            worst: site
                .and_then(|v| v.worst_at.as_deref())
                .and_then(|at| Worst::at(report, at))
                .or_else(|| Worst::of(report)),
            error: None,
        }
    }

    pub fn failed(domain: &str, failure: Failure) -> Account {
        Account {
            domain: domain.to_string(),
            status: Status::Failed,
            verdict: STAYS,
            next: format!(
                "fix the error Apache would refuse, or keep {domain} on Apache; then convert again"
            ),
            output: None,
            counts: None,
            worst: None,
            error: Some(failure),
        }
    }
}

/// The configuration that serves every converted account at once.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Combined {
    /// The file to run lighttpd with, relative to the output folder.
    pub config: String,
    /// The conversion of the accounts together, relative to the output folder.
    pub folder: String,
    /// How many accounts it serves.
    pub accounts: usize,
    pub status: Status,
    pub counts: Option<Counts>,
    pub worst: Option<Worst>,
    pub error: Option<Failure>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    pub accounts: usize,
    pub exact: usize,
    pub approximated: usize,
    pub failed: usize,
    /// Accounts by verdict, in the order ready, ready with notes, needs you, stays on Apache
    /// (a JSON object in that order).
    #[serde(serialize_with = "in_order")]
    pub verdicts: Vec<(&'static str, usize)>,
}

fn in_order<S: serde::Serializer>(v: &[(&'static str, usize)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(v.iter().map(|(k, n)| (k, n)))
}

/// `batch-summary.json`.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// The Plesk vhosts root, as given (made absolute).
    pub root: String,
    /// The server-wide configuration every account was read inside; `null` when none was
    /// found and lighten's stand-in for Plesk's defaults was assumed.
    pub server_config: Option<String>,
    pub assumed_defaults: bool,
    /// `null` when the whole server was converted.
    pub shard: Option<Shard>,
    /// Accounts in the root, before sharding.
    pub domains_in_root: usize,
    pub totals: Totals,
    /// 2 if anything failed, else 1 if anything was approximated, else 0.
    pub exit_status: i32,
    /// `null` when no account converted.
    pub combined: Option<Combined>,
    /// In domain order.
    pub accounts: Vec<Account>,
    /// `--fallback-apache`: the Apache the failed accounts stay on (`ADDR:PORT`), when the
    /// combined configuration sends them there; else `null`.
    pub fallback: Option<String>,
}

/// What the Apache kept behind lighttpd needs, in its own words.
pub const REMOTEIP: &str = "RemoteIPHeader X-Forwarded-For\nRemoteIPInternalProxy 127.0.0.1";

impl Summary {
    pub fn new(
        root: String,
        server_config: Option<String>,
        shard: Shard,
        domains_in_root: usize,
        accounts: Vec<Account>,
        combined: Option<Combined>,
    ) -> Summary {
        let count = |s: Status| accounts.iter().filter(|a| a.status == s).count();
        let totals = Totals {
            accounts: accounts.len(),
            exact: count(Status::Exact),
            approximated: count(Status::Approximated),
            failed: count(Status::Failed),
            verdicts: [crate::translate::READY, crate::translate::NOTES, crate::translate::NEEDS_YOU, STAYS]
                .into_iter()
                .map(|v| (v, accounts.iter().filter(|a| a.verdict == v).count()))
                .collect(),
        };
        let statuses = accounts.iter().map(|a| a.status).chain(combined.iter().map(|c| c.status));
        let exit_status = statuses
            .map(|s| match s {
                Status::Exact => 0,
                Status::Approximated => 1,
                Status::Failed => 2,
            })
            .max()
            .unwrap_or(0);
        Summary {
            root,
            assumed_defaults: server_config.is_none(),
            server_config,
            shard: (!shard.is_all()).then_some(shard),
            domains_in_root,
            totals,
            exit_status,
            combined,
            accounts,
            fallback: None,
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }

    pub fn to_markdown(&self) -> String {
        let mut out = String::from("# lighten batch\n\n");
        out.push_str(&format!("Plesk vhosts root: `{}`\n\n", self.root));
        match &self.server_config {
            Some(c) => out.push_str(&format!("Server configuration: `{c}`\n\n")),
            None => out.push_str(
                "Server configuration: none found (no --server-config, no /etc/apache2/apache2.conf or \
                 /etc/httpd/conf/httpd.conf under the sysroot): every account was read inside lighten's \
                 stand-in for Plesk's usual server settings (templates/defaults/plesk.conf)\n\n",
            ),
        }
        if let Some(s) = self.shard {
            out.push_str(&format!(
                "Shard {s}: the {} of {} accounts whose FNV-1a hash of the domain modulo {} is {}\n\n",
                self.totals.accounts,
                self.domains_in_root,
                s.count,
                s.index - 1
            ));
        }
        out.push_str("| verdict | accounts |\n|---|---:|\n");
        for (k, v) in &self.totals.verdicts {
            out.push_str(&format!("| {k} | {v} |\n"));
        }
        out.push_str(&format!("| total | {} |\n", self.totals.accounts));
        out.push('\n');
        match &self.combined {
            Some(c) if c.status != Status::Failed => out.push_str(&format!(
                "Every converted account in one lighttpd: `lighttpd -D -f {}` ({} accounts, {}; the conversion is in `{}/`)\n\n",
                c.config,
                c.accounts,
                c.status.as_str(),
                c.folder
            )),
            Some(c) => out.push_str(&format!(
                "The combined configuration of the {} converted accounts failed: {}\n\n",
                c.accounts,
                c.error.as_ref().map(Failure::line).unwrap_or_default()
            )),
            None => out.push_str("No account converted, so there is no combined configuration.\n\n"),
        }
        out.push_str(&format!(
            "Exit status: {} ({})\n",
            self.exit_status,
            match self.exit_status {
                0 => "every account exact",
                1 => "some accounts approximated",
                _ => "some accounts failed",
            }
        ));
        let failed: Vec<&Account> = self.accounts.iter().filter(|a| a.status == Status::Failed).collect();
        if !failed.is_empty() {
            out.push_str("\n## Failed\n\n");
            for a in failed {
                let line = a.error.as_ref().map(Failure::line).unwrap_or_default();
                out.push_str(&format!("- {}: {}\n", a.domain, cell(&line)));
            }
            if let Some(f) = &self.fallback {
                out.push_str(&format!(
                    "\nThese stay on the Apache at {f}: lighttpd sends it every request for their names, \
                     and for any name no converted account has, over plain HTTP (503 over TLS). That \
                     Apache must hold the whole original configuration and take the client's address \
                     from lighttpd (mod_remoteip; use lighttpd's address to it when not on loopback), or \
                     its `Require ip`, `Allow` and `Deny` rules see lighttpd's address instead:\n\n\
                     ```apache\n{REMOTEIP}\n```\n"
                ));
            }
        }
        out.push_str("\n## Accounts\n\n");
        out.push_str(
            "| account | verdict | next step | exact | approximated | noted | ignored | unsupported | worst finding or error |\n",
        );
        out.push_str("|---|---|---|---:|---:|---:|---:|---:|---|\n");
        for a in &self.accounts {
            let c = a.counts.clone().unwrap_or_default();
            let what = match (&a.error, &a.worst) {
                (Some(e), _) => e.line(),
                (None, Some(w)) => {
                    let code = w.code.map(|c| format!(" [{c}]")).unwrap_or_default();
                    format!("{}: {} {} {}: {}{code}", w.at, w.fate, w.directive, shorten(&w.args), w.reason)
                }
                (None, None) => String::new(),
            };
            let n = |v: usize| if a.counts.is_some() { v.to_string() } else { "-".to_string() };
            out.push_str(&format!(
                "| {} | **{}** | {} | {} | {} | {} | {} | {} | {} |\n",
                a.domain,
                a.verdict,
                cell(&a.next),
                n(c.exact),
                n(c.approximated),
                n(c.noted),
                n(c.ignored),
                n(c.unsupported),
                cell(&what)
            ));
        }
        out
    }
}

fn shorten(s: &str) -> String {
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(60).collect::<String>())
    } else {
        s.to_string()
    }
}

/// Text safe inside a Markdown table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::translate::{Entry, Fate};
    use std::collections::BTreeMap;

    fn report(domain: &str, fates: &[(&str, Fate)]) -> Report {
        let entries: Vec<Entry> = fates
            .iter()
            .map(|(at, f)| Entry {
                at: at.to_string(),
                directive: "D".into(),
                args: "a".into(),
                fate: f.clone(),
            })
            .collect();
        let mut counts = BTreeMap::new();
        for e in &entries {
            *counts.entry(e.fate.label().to_string()).or_insert(0) += 1;
        }
        let site = SiteVerdict::of(domain.to_string(), &entries.iter().collect::<Vec<_>>());
        Report { entries, counts, sites: vec![site], elsewhere: None }
    }

    #[test]
    fn statuses_worst_findings_and_exit() {
        let approx = |r: &str| Fate::Approximated { code: crate::translate::Code::Etag, reason: r.into() };
        let r = report(
            "a.example",
            &[
                ("<lighten:plesk-defaults>:3", approx("defaults")),
                ("/srv/a/httpd.conf:4", Fate::Exact),
                ("/srv/a/.htaccess:9", approx("own")),
                (
                    "/srv/a/httpd.conf:5",
                    Fate::Ignored { code: crate::translate::Code::NoEffect, reason: "log".into() },
                ),
            ],
        );
        let a = Account::converted("a.example", &r);
        assert_eq!(a.status, Status::Approximated);
        assert_eq!(
            a.counts,
            Some(Counts { exact: 1, approximated: 2, noted: 0, ignored: 1, unsupported: 0 })
        );
        let w = a.worst.clone().unwrap();
        assert_eq!((w.at.as_str(), w.fate, w.reason.as_str()), ("/srv/a/.htaccess:9", "approximated", "own"));
        assert_eq!(
            a.verdict,
            crate::translate::NOTES,
            "approximated lines: ready with notes, as report.md says"
        );
        assert!(a.next.starts_with("2 line(s) are carried over with a difference"), "{}", a.next);

        let exact =
            Account::converted("b.example", &report("b.example", &[("/srv/b/httpd.conf:1", Fate::Exact)]));
        assert_eq!(
            (exact.status, exact.worst.clone(), exact.verdict),
            (Status::Exact, None, crate::translate::READY)
        );
        let failed = Account::failed("c.example", Failure::other("gone"));
        assert_eq!(failed.verdict, STAYS);
        let closed = Fate::Unsupported {
            code: crate::translate::Code::HeaderAction,
            reason: "no".into(),
            closed: "403".into(),
        };
        let needs = Account::converted(
            "d.example",
            &report("d.example", &[("/srv/d/httpd.conf:2", approx("x")), ("/srv/d/.htaccess:7", closed)]),
        );
        let w = needs.worst.clone().unwrap();
        assert_eq!((needs.verdict, w.at.as_str()), (crate::translate::NEEDS_YOU, "/srv/d/.htaccess:7"));

        let s = Summary::new("/r".into(), None, Shard::ALL, 3, vec![exact.clone()], None);
        assert_eq!((s.exit_status, s.assumed_defaults, s.shard), (0, true, None));
        let s = Summary::new("/r".into(), None, Shard::ALL, 3, vec![exact.clone(), a.clone()], None);
        assert_eq!(s.exit_status, 1);
        let s = Summary::new(
            "/r".into(),
            Some("/etc/apache2/apache2.conf".into()),
            Shard::ALL,
            3,
            vec![exact, a, failed, needs],
            None,
        );
        assert_eq!((s.exit_status, s.totals.failed, s.totals.accounts), (2, 1, 4));
        assert_eq!(
            s.totals.verdicts,
            vec![("ready", 1), ("ready with notes", 1), ("needs you", 1), ("stays on Apache", 1)]
        );
        let md = s.to_markdown();
        assert!(md.contains("## Failed\n\n- c.example: error: gone\n"), "{md}");
        assert!(
            md.contains(
                "| a.example | **ready with notes** | 2 line(s) are carried over with a difference (see Approximated): check that each is acceptable, run lighten verify, then switch | 1 | 2 | 0 | 1 | 0 | /srv/a/.htaccess:9: approximated D a: own [etag] |"
            ),
            "{md}"
        );
        let json: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
        assert_eq!(json["accounts"][2]["status"], "failed");
        assert_eq!(json["accounts"][2]["verdict"], "stays on Apache");
        assert_eq!(json["totals"]["verdicts"]["needs you"], 1, "{:#}", json["totals"]);
        assert_eq!(json["accounts"][2]["error"]["message"], "gone");
        assert_eq!(json["server_config"], "/etc/apache2/apache2.conf");
    }
}
