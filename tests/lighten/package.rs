//! The Debian package (issue 15 item 7): scripts/deb.sh builds it from the repository,
//! and what it holds runs from an unpacked copy.

use std::path::Path;
use std::process::Command;

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The lighttpd and Lua packages scripts/setup.sh installs: what a converted output runs on.
fn output_packages() -> Vec<String> {
    let setup = std::fs::read_to_string("scripts/setup.sh").unwrap();
    let line = setup.lines().find(|l| l.starts_with("PACKAGES=")).expect("PACKAGES= in setup.sh");
    line.trim_start_matches("PACKAGES=\"")
        .trim_end_matches('"')
        .split_whitespace()
        .filter(|p| p.starts_with("lighttpd") || p.starts_with("lua-rex"))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_deb_carries_binary_manuals_completions_units_and_runs_unpacked() {
    if Command::new("dpkg-deb").arg("--version").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "dpkg-deb must be installed");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("deb");
    let printed = run(Command::new("sh").args([
        "scripts/deb.sh",
        "--binary",
        env!("CARGO_BIN_EXE_lighten"),
        "--out",
        out.to_str().unwrap(),
    ]));
    let version = env!("CARGO_PKG_VERSION");
    let arch = run(Command::new("dpkg").arg("--print-architecture"));
    let deb = out.join(format!("lighten_{version}_{}.deb", arch.trim()));
    assert_eq!(printed.trim(), deb.to_str().unwrap());

    // Control data: the name and version, and every package the output needs.
    let field = |f: &str| run(Command::new("dpkg-deb").arg("-f").arg(&deb).arg(f)).trim().to_string();
    assert_eq!(field("Package"), "lighten");
    assert_eq!(field("Version"), version);
    let depends: Vec<String> =
        field("Depends").split(',').map(|d| d.split_whitespace().next().unwrap().to_string()).collect();
    for p in output_packages() {
        assert!(depends.contains(&p), "Depends lacks {p}: {depends:?}");
    }
    assert!(depends.contains(&"libc6".to_string()), "{depends:?}");
    let recommends = field("Recommends");
    assert!(recommends.contains("apache2") && recommends.contains("php-fpm"), "{recommends}");

    // The file list: a man page for every command, the completions, the unit, the demo.
    let list = run(Command::new("dpkg-deb").arg("-c").arg(&deb));
    let files: Vec<&str> =
        list.lines().filter_map(|l| l.split_whitespace().nth(5)).map(|p| p.trim_start_matches('.')).collect();
    let help = run(Command::new(env!("CARGO_BIN_EXE_lighten")).arg("--help"));
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        // a wrapped description goes on under the descriptions, further in
        .filter(|l| !l[2..].starts_with(' '))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() >= 10 && commands.contains(&"watch"), "{commands:?}");
    let mut wanted: Vec<String> =
        commands.iter().map(|c| format!("/usr/share/man/man1/lighten-{c}.1.gz")).collect();
    wanted.extend(
        [
            "/usr/bin/lighten",
            "/usr/share/man/man1/lighten.1.gz",
            "/usr/share/bash-completion/completions/lighten",
            "/usr/share/zsh/vendor-completions/_lighten",
            "/usr/share/fish/vendor_completions.d/lighten.fish",
            "/usr/lib/systemd/system/lighten-watch@.service",
            "/usr/share/lighten/demo/fixture.toml",
            "/usr/share/doc/lighten/copyright",
            "/usr/share/doc/lighten/docs/watch.md",
        ]
        .map(str::to_string),
    );
    for w in &wanted {
        assert!(files.contains(&w.as_str()), "the package has no {w}");
    }

    // Unpacked: the binary runs, its completions are its own, the unit is one systemd takes.
    let root = tmp.path().join("root");
    run(Command::new("dpkg").arg("-x").arg(&deb).arg(&root));
    let bin = root.join("usr/bin/lighten");
    let v = run(Command::new(&bin).arg("--version"));
    assert_eq!(v.trim(), format!("lighten {version}"));
    let bash = std::fs::read_to_string(root.join("usr/share/bash-completion/completions/lighten")).unwrap();
    assert!(bash.contains("--vhost") && bash.contains("watch"), "bash completion");
    if Command::new("systemd-analyze").arg("--version").output().is_ok() {
        let unit =
            std::fs::read_to_string(root.join("usr/lib/systemd/system/lighten-watch@.service")).unwrap();
        let units = tmp.path().join("units");
        std::fs::create_dir_all(&units).unwrap();
        let args = tmp.path().join("site.watch");
        std::fs::write(&args, "LIGHTEN_WATCH_ARGS=/var/www/html --out /tmp/out\n").unwrap();
        let unit = unit
            .replace("/usr/bin/lighten", bin.to_str().unwrap())
            .replace("/etc/lighten/%i.watch", args.to_str().unwrap());
        let path = units.join("lighten-watch@site.service");
        std::fs::write(&path, unit).unwrap();
        let out = Command::new("systemd-analyze").arg("verify").arg(&path).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && !err.contains("lighten-watch@"), "systemd-analyze verify: {err}");
    }
    assert!(Path::new(&root).join("usr/share/lighten/demo/var/www/vhosts").is_dir());
}
