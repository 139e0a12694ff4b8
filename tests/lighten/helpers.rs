//! One helper per layer: run the binary, read a fixture's manifest.

use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Output {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

impl Output {
    /// Everything a snapshot shows: the exit status, then stdout, then stderr.
    pub fn transcript(&self) -> String {
        format!("exit: {}\n--- stdout\n{}--- stderr\n{}", self.code, self.stdout, self.stderr)
    }
}

/// Runs the real program with `args`, colours off.
pub fn lighten(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_lighten"))
        .arg("--color")
        .arg("never")
        .args(args)
        .env_remove("NO_COLOR")
        .output()
        .expect("lighten runs");
    Output {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().unwrap_or(-1),
    }
}

#[derive(Deserialize)]
pub struct Manifest {
    pub description: String,
    pub config: String,
    pub sysroot: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// How the converted site is held against Apache: absent for every request;
    /// `fail-open-only` when the fixture exercises what the translation refuses on
    /// purpose (then only fail-opens count), with the reason in `convert_reason`.
    #[serde(default)]
    pub convert: Option<String>,
    #[serde(default)]
    pub convert_reason: Option<String>,
    /// Apache refuses to start on it: every command that converts it exits 2.
    #[serde(default)]
    pub apache_refuses: bool,
    /// `--listen` values the conversion takes (translation fixtures); default: every
    /// port on 127.0.0.1:8080.
    #[serde(default)]
    pub listen: Vec<String>,
}

pub struct Fixture {
    pub name: String,
    pub dir: PathBuf,
    pub manifest: Manifest,
}

impl Fixture {
    /// The fixture loaded as the differential tests need it: the load options, the
    /// configuration for the sandboxed server, and another one modelled.
    pub fn load(
        &self,
    ) -> (lighten::config::LoadOptions, lighten::config::Config, lighten::config::Config, lighten::model::Model)
    {
        let sysroot = self.dir.join(self.manifest.sysroot.as_deref().unwrap_or("."));
        let mut opts = lighten::config::LoadOptions {
            sysroot: lighten::source::Sysroot::at(&sysroot),
            ..lighten::config::LoadOptions::default()
        };
        let mut args = self.manifest.args.iter();
        while let Some(a) = args.next() {
            if a == "--server-name" {
                opts.server_name = args.next().cloned().unwrap_or_default();
            }
        }
        let input = self.dir.join(&self.manifest.config);
        let for_run = lighten::config::load(&input, &opts).expect("fixture loads");
        let mut cfg = lighten::config::load(&input, &opts).expect("fixture loads");
        let (model, _) = lighten::model::build(&mut cfg);
        (opts, for_run, cfg, model)
    }

    /// The arguments `lighten inspect` takes for this fixture.
    pub fn inspect_args(&self) -> Vec<String> {
        let mut args = vec!["inspect".to_string()];
        args.extend(self.manifest.args.iter().cloned());
        if let Some(s) = &self.manifest.sysroot {
            args.push("--sysroot".into());
            args.push(self.dir.join(s).to_string_lossy().trim_end_matches("/.").to_string());
        }
        args.push(self.dir.join(&self.manifest.config).to_string_lossy().into_owned());
        args
    }
}

/// Fixtures with a `fixture.toml` directly under `dir`, sorted by name.
pub fn fixtures(dir: &str) -> Vec<Fixture> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("fixtures folder") {
        let path = entry.expect("entry").path();
        let manifest = path.join("fixture.toml");
        if !manifest.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&manifest).expect("manifest readable");
        let manifest: Manifest = toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        out.push(Fixture { name, dir: Path::new(dir).join(path.file_name().unwrap()), manifest });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// Every file under `dir` (no symlinks), sorted.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            let ft = e.file_type().expect("file type");
            if ft.is_dir() {
                stack.push(p);
            } else if ft.is_file() {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Whether a program runs here (`cmd -v` exits).
pub fn have(cmd: &str) -> bool {
    Command::new(cmd).arg("-v").output().is_ok()
}

/// Whether Apache and lighttpd are installed; in CI their absence fails the test.
pub fn servers_present() -> bool {
    if have("apache2") && have("lighttpd") {
        return true;
    }
    assert!(std::env::var_os("CI").is_none(), "apache2 and lighttpd must be installed");
    eprintln!("skipped: apache2 or lighttpd is not installed");
    false
}

/// A world-readable copy of fixture `name` in a folder every user can enter, and that
/// folder (which also gets a copy of the lighten binary, for a user who cannot reach the
/// build folder): lighttpd and Apache drop to www-data when the tests run as root.
pub fn open_copy(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    set_mode(dir.path(), 0o755);
    let root = dir.path().join(name);
    copy_tree(&Path::new("fixtures").join(name), &root);
    std::fs::copy(env!("CARGO_BIN_EXE_lighten"), dir.path().join("lighten")).unwrap();
    set_mode(&dir.path().join("lighten"), 0o755);
    (dir, root)
}

pub fn set_mode(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    set_mode(to, 0o755);
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let t = e.file_type().unwrap();
        if t.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src).unwrap(), &dst).unwrap();
        } else if t.is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
            set_mode(&dst, 0o644);
        }
    }
}

/// A started command in its own process group, killed with the group when dropped (also
/// when the test fails).
pub struct Group(pub std::process::Child);

impl Drop for Group {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the process group this test made; no memory is touched.
        unsafe {
            libc::kill(-(self.0.id() as i32), libc::SIGKILL);
        }
        let _ = self.0.wait();
    }
}

/// Starts `cmd` as a [`Group`].
pub fn spawn_group(cmd: &mut Command) -> Group {
    use std::os::unix::process::CommandExt;
    Group(cmd.process_group(0).spawn().expect("the command starts"))
}
