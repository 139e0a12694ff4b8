//! The verification report as text: fail-opens first, then the other differences with
//! both answers side by side and the `file:line` that decided Apache's, then agreement per
//! virtual host and per rewrite rule.

use super::{Comparison, Verification};
use std::collections::BTreeMap;
use std::fmt::Write;

/// `color` wraps fail-open lines in red (ANSI) for a terminal.
pub fn text(v: &Verification, color: bool) -> String {
    let (red, bold, reset) = if color { ("\x1b[31m", "\x1b[1m", "\x1b[0m") } else { ("", "", "") };
    let mut out = String::new();
    let total = v.comparisons.len();
    let _ = writeln!(
        out,
        "{bold}lighten verify{reset}: {total} requests, {} the same, {} different, {} fail-open",
        v.agreed(),
        total - v.agreed(),
        v.fail_open()
    );
    let attacks: Vec<&Comparison> = v.comparisons.iter().filter(|c| c.attack.is_some()).collect();
    if !attacks.is_empty() {
        let refused = attacks.iter().filter(|c| (400..500).contains(&c.apache.status)).count();
        let _ = writeln!(
            out,
            "attack: {} of the requests are variants of those Apache refused; Apache refused {refused} of them, \
             {} fail-open",
            attacks.len(),
            attacks.iter().filter(|c| c.fail_open).count()
        );
    }
    let counts: Vec<String> = v.conversion.iter().map(|(k, n)| format!("{n} {k}")).collect();
    let _ = writeln!(out, "conversion: {}", counts.join(", "));
    for site in &v.sites {
        let _ = writeln!(out, "  {}", site.line());
    }
    if let Some(k) = &v.kept {
        let _ = writeln!(out, "sandbox kept at {k}");
    }
    let fail: Vec<&Comparison> = v.comparisons.iter().filter(|c| c.fail_open).collect();
    if !fail.is_empty() {
        let _ = writeln!(
            out,
            "\n{red}{bold}FAIL-OPEN: Apache refused these (or ran them as PHP), lighttpd served them{reset}"
        );
        for c in fail {
            difference(&mut out, c, red, reset);
        }
    }
    let other: Vec<&Comparison> =
        v.comparisons.iter().filter(|c| !c.fail_open && !c.differences.is_empty()).collect();
    if !other.is_empty() {
        let _ = writeln!(out, "\n{bold}Differences{reset}");
        for c in other {
            difference(&mut out, c, "", "");
        }
    }
    let _ = writeln!(out, "\n{bold}Per virtual host{reset} (the same / requests)");
    for (k, (same, all)) in tally(v.comparisons.iter().map(|c| (c.vhost.clone(), c.differences.is_empty()))) {
        let _ = writeln!(out, "  {same:>5} / {all:<5} {}", if k.is_empty() { "(no answer)" } else { &k });
    }
    let rules = tally(
        v.comparisons.iter().flat_map(|c| c.rules.iter().map(|r| (r.clone(), c.differences.is_empty()))),
    );
    if !rules.is_empty() {
        let _ = writeln!(out, "\n{bold}Per rewrite rule{reset} (requests it applied to: the same / all)");
        for (k, (same, all)) in rules {
            let _ = writeln!(out, "  {same:>5} / {all:<5} {k}");
        }
    }
    out
}

fn difference(out: &mut String, c: &Comparison, color: &str, reset: &str) {
    let _ = writeln!(out, "{color}  {}{reset}", c.request);
    if let Some(a) = &c.attack {
        let _ = writeln!(out, "    attack variant: {a}");
    }
    if let Some(at) = &c.decided_at {
        let _ = writeln!(out, "    decided at {at}");
    }
    let side = |a: &super::Answer| {
        let mut s = format!("{} {}", a.status, a.served);
        if let Some(l) = &a.location {
            s.push_str(&format!(" -> {l}"));
        }
        s
    };
    let _ = writeln!(out, "    Apache:   {}", side(&c.apache));
    let _ = writeln!(out, "    lighttpd: {}", side(&c.lighttpd));
    for d in &c.differences {
        let _ = writeln!(out, "    - {d}");
    }
}

fn tally(items: impl Iterator<Item = (String, bool)>) -> BTreeMap<String, (usize, usize)> {
    let mut m: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (k, same) in items {
        let e = m.entry(k).or_default();
        e.1 += 1;
        if same {
            e.0 += 1;
        }
    }
    m
}
