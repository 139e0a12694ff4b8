//! The wizard's settings: every question answered (by its flag, by `--yes` taking the
//! default, or by the admin), resolved into one [`Migration`] before anything is written,
//! and the rule that decides, from the flags alone, which questions would still have to
//! be asked.  Nothing here asks or prints.

use super::found::Found;
use crate::cli::args::WizardArgs;
use std::path::PathBuf;

/// What the wizard does once every question is answered.
pub struct Migration {
    /// The Apache configuration (a path under the sysroot).
    pub config: PathBuf,
    /// The virtual hosts to convert (indices into the model); `None` for all of them.
    pub keep: Option<Vec<usize>>,
    /// The names and aliases of the sites picked (verify and the benchmark send these).
    pub hosts: Vec<String>,
    /// The sites picked that answer plain http on port 80, with the address they listen
    /// on (the benchmark loads them; curl tries the first after the switch).
    pub http: Vec<(String, String)>,
    /// Sites picked, sites offered.
    pub sites: (usize, usize),
    /// The output folder, absolute.
    pub out: PathBuf,
    pub runtime_dir: PathBuf,
    /// `--listen` (or the settings file's): empty to keep Apache's listeners.
    pub listen: Vec<String>,
    pub verify: Check,
    pub bench: Check,
    /// The verify and benchmark commands to run later, for the sites picked.
    pub verify_later: String,
    pub bench_later: String,
}

/// Whether to run one of the checks after writing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Check {
    Run,
    Skip,
    /// It cannot run here (the reason: what is not installed).
    Unavailable(String),
}

/// A pair of flags (`--verify` / `--no-verify`; the later one wins) as an answer.
pub fn either(yes: bool, no: bool) -> Option<bool> {
    match (yes, no) {
        (true, _) => Some(true),
        (_, true) => Some(false),
        _ => None,
    }
}

/// The output folder `--yes` takes: the settings file's, else one beside a copy of a server
/// (under --sysroot), else the one the README names for a server.
pub fn default_out(file: Option<&std::path::Path>, sysroot: bool) -> PathBuf {
    match file {
        Some(o) => o.to_path_buf(),
        None if sysroot => PathBuf::from("lighten-out"),
        None => PathBuf::from("/etc/lighttpd/from-apache"),
    }
}

/// A question no flag answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unanswered {
    pub question: &'static str,
    pub flags: &'static str,
}

/// The questions the flags leave open.  `checks` is whether verify and the benchmark can
/// run here (they are not asked otherwise).
pub fn unanswered(a: &WizardArgs, found: &[Found], checks: bool) -> Vec<Unanswered> {
    let mut out = Vec::new();
    let mut open = |question, flags| out.push(Unanswered { question, flags });
    // --yes takes the first configuration found, when one is.
    if a.config.is_none() && (!a.yes || found.is_empty()) {
        open("which Apache configuration", "--config PATH");
    }
    if a.vhosts.is_empty() && !a.all_vhosts && !a.yes {
        open("which sites to migrate", "--vhost NAME (repeatable) or --all-vhosts");
    }
    if a.out.is_none() && !a.yes {
        open("where to write the lighttpd setup", "--out DIR");
    }
    if !a.yes {
        open("write the files after the preview", "--yes");
    }
    if checks && either(a.verify, a.no_verify).is_none() && !a.yes {
        open("verify after writing", "--verify or --no-verify");
    }
    if checks && either(a.bench, a.no_bench).is_none() && !a.yes {
        open("benchmark after writing", "--bench or --no-bench");
    }
    out
}

/// The message for a run without a terminal that would have to ask.
pub fn refusal(missing: &[Unanswered], found: &[Found]) -> String {
    let mut s = String::from(
        "lighten wizard: no terminal to ask on (standard input or output is not one), and no flag answers:\n",
    );
    for m in missing {
        s.push_str(&format!("  {:<36} {}\n", m.question, m.flags));
    }
    if found.is_empty() {
        s.push_str("no Apache configuration was found in the usual places: --config is needed\n");
    } else {
        let list: Vec<String> = found.iter().map(|f| f.path.display().to_string()).collect();
        s.push_str(&format!("configurations found: {}\n", list.join(", ")));
    }
    s.push_str(
        "--yes answers every question its flag does not with the default (the first configuration found, \
         every site, verify when apache2 and lighttpd are here, no benchmark) and writes\n",
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(line: &[&str]) -> WizardArgs {
        #[derive(Parser)]
        struct P {
            #[command(flatten)]
            a: WizardArgs,
        }
        P::parse_from(std::iter::once("wizard").chain(line.iter().copied())).a
    }

    fn flags(line: &[&str], found: &[Found]) -> Vec<&'static str> {
        unanswered(&args(line), found, true).iter().map(|u| u.flags).collect()
    }

    #[test]
    fn flags_answer_questions_and_yes_takes_the_rest() {
        let found = [Found { path: "/etc/apache2/apache2.conf".into(), label: String::new() }];
        assert_eq!(
            flags(&[], &found),
            [
                "--config PATH",
                "--vhost NAME (repeatable) or --all-vhosts",
                "--out DIR",
                "--yes",
                "--verify or --no-verify",
                "--bench or --no-bench"
            ]
        );
        assert!(flags(&["--yes"], &found).is_empty());
        assert_eq!(flags(&["--yes"], &[]), ["--config PATH"]);
        assert_eq!(
            flags(&["--config", "x", "--vhost", "a", "--out", "o", "--no-verify", "--bench"], &[]),
            ["--yes"]
        );
        assert_eq!(
            flags(&["--all-vhosts", "--verify", "--no-verify"], &found)[..2],
            ["--config PATH", "--out DIR"]
        );
        let a = args(&["--verify", "--no-verify", "--no-bench", "--bench"]);
        assert_eq!((either(a.verify, a.no_verify), either(a.bench, a.no_bench)), (Some(false), Some(true)));
    }
}
