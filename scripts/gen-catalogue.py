#!/usr/bin/env python3
"""Regenerate src/catalogue/apache.tsv from the Apache httpd installed on this machine.

Apache is the oracle: `apache2 -L` lists every directive of every loaded module with the
places it is allowed and the AllowOverride classes that admit it in .htaccess, and
`apache2 -t` on a one-directive config without arguments names the directive's argument
shape in its error message ("takes one argument", "must be On or Off", ...).

Run it as a developer after an Apache upgrade; the output is committed and reviewed like
any other data.  It writes only into a temporary folder and the output file; it never
starts a server.

usage: scripts/gen-catalogue.py [OUT]   (default: src/catalogue/apache.tsv)
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

MODULE_DIR = "/usr/lib/apache2/modules"
# Only one MPM may be loaded at a time; the listing is taken with each in turn and the
# directives only prefork or worker have are added.
MPMS = ["mod_mpm_event", "mod_mpm_prefork", "mod_mpm_worker"]

# Some modules register lower-case names; the documentation spells them this way.
CANONICAL = {"allow": "Allow", "deny": "Deny", "order": "Order",
             "cachefile": "CacheFile", "mmapfile": "MMapFile"}

# invoke_cmd() in server/config.c words each argument-count error this way.
ARITY = [
    (r"takes no arguments", "none"),
    (r"takes one argument", "1"),
    (r"takes two arguments", "2"),
    (r"takes 1-2 arguments", "1-2"),
    (r"takes three arguments", "3"),
    (r"takes two or three arguments", "2-3"),
    (r"takes one, two or three arguments", "1-3"),
    (r"takes one or three arguments", "1|3"),
    (r"requires at least one argument", "1+"),
    (r"requires at least two arguments", "2+"),
    (r"must be On or Off", "flag"),
]


def module_lines(root, mpm="mod_mpm_event"):
    lines = [
        f"ServerRoot {root}",
        f"DefaultRuntimeDir {root}",
        f"PidFile {root}/pid",
        f"ErrorLog {root}/error.log",
        "ServerName localhost",
    ]
    for so in sorted(glob.glob(f"{MODULE_DIR}/mod_*.so")):
        base = os.path.basename(so)[:-3]
        if base.startswith("mod_mpm_") and base != mpm:
            continue
        lines.append(f"LoadModule {base[4:]}_module {so}")
    return lines


def run(args):
    p = subprocess.run(["apache2"] + args, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def parse_listing(text):
    entries = []
    cur = None
    for line in text.splitlines():
        m = re.match(r"^(\S+) \(([\w.]+)\)$", line)
        if m:
            cur = {"name": CANONICAL.get(m.group(1), m.group(1)), "module": m.group(2), "desc": "", "where": "", "htaccess": "-"}
            entries.append(cur)
            continue
        if cur is None or not line.startswith("\t"):
            continue
        body = line.strip()
        if body.startswith("Allowed in *.conf"):
            if "anywhere" in body:
                cur["where"] = "anywhere"
            elif "only outside" in body:
                cur["where"] = "server"
            else:
                cur["where"] = "directory"
            if "and in .htaccess" in body:
                cur["htaccess"] = "?"
        elif body.startswith("when AllowOverride"):
            if "isn't None" in body:
                cur["htaccess"] = "All"
            else:
                classes = body.split("includes", 1)[1].strip()
                cur["htaccess"] = "+".join(c.strip() for c in classes.split(" or "))
        else:
            cur["desc"] = body.replace("\t", " ")
    return entries


def probe_arity(root, base, entry):
    name = entry["name"]
    if name.startswith("<"):
        return "section"
    body = [name]
    if entry["where"] == "directory":
        body = ["<Directory /tmp>", name, "</Directory>"]
    conf = os.path.join(root, "probe.conf")
    with open(conf, "w") as f:
        f.write("\n".join(base + body) + "\n")
    _, out = run(["-t", "-f", conf])
    for pattern, arity in ARITY:
        if re.search(rf"\b{re.escape(name)} {pattern}", out, re.I):
            return arity
    with open(conf, "w") as f:
        f.write("\n".join(base + [b if b != name else name + " x" for b in body]) + "\n")
    _, out = run(["-t", "-f", conf])
    if "takes no arguments" in out:
        return "none"
    return "raw"


def probe_global(root, base, entry):
    """True when Apache refuses the directive inside <VirtualHost> (GLOBAL_ONLY)."""
    name = entry["name"]
    if entry["where"] != "server" or name.startswith("<"):
        return False
    n = {"2": 2, "3": 3, "2-3": 2, "2+": 2}.get(entry.get("args", ""), 1)
    args = " ".join(["1"] * n) if entry.get("args") != "none" else ""
    conf = os.path.join(root, "probe.conf")
    with open(conf, "w") as f:
        f.write("\n".join(base + ["<VirtualHost 127.0.0.1:80>", f"{name} {args}", "</VirtualHost>"]) + "\n")
    _, out = run(["-t", "-f", conf])
    return "cannot occur within" in out


def main():
    out_path = sys.argv[1] if len(sys.argv) > 1 else "src/catalogue/apache.tsv"
    with tempfile.TemporaryDirectory() as root:
        base = module_lines(root)
        conf = os.path.join(root, "all.conf")
        with open(conf, "w") as f:
            f.write("\n".join(base) + "\n")
        rc, listing = run(["-L", "-f", conf])
        if rc != 0:
            sys.exit(f"apache2 -L failed:\n{listing}")
        _, version = run(["-v"])
        entries = parse_listing(listing)
        known = {e["name"].lower() for e in entries}
        for mpm in MPMS[1:]:
            other = module_lines(root, mpm)
            with open(conf, "w") as f:
                f.write("\n".join(other) + "\n")
            _, more = run(["-L", "-f", conf])
            for e in parse_listing(more):
                if e["name"].lower() not in known:
                    known.add(e["name"].lower())
                    e["base"] = other
                    entries.append(e)
        seen = set()
        rows = []
        for e in entries:
            key = (e["name"].lower(), e["module"])
            if key in seen:
                continue
            seen.add(key)
            b = e.get("base", base)
            e["args"] = probe_arity(root, b, e)
            if probe_global(root, b, e):
                e["where"] = "global"
            rows.append(e)
    modules = {"core.c", "http_core.c", "mod_so.c", "mod_watchdog.c", "mod_log_config.c", "mod_logio.c", "mod_version.c", "mod_unixd.c"}
    for so in glob.glob(f"{MODULE_DIR}/mod_*.so"):
        base = os.path.basename(so)[:-3]
        modules.add(base[8:] + ".c" if base.startswith("mod_mpm_") else base + ".c")
    version = version.splitlines()[0].split(":", 1)[1].strip()
    with open(out_path, "w") as f:
        f.write(f"# generated by scripts/gen-catalogue.py from {version}: do not edit by hand\n")
        f.write("# modules: " + " ".join(sorted(modules)) + "\n")
        f.write("# name\tmodule\twhere\thtaccess\targs\tdescription\n")
        for e in sorted(rows, key=lambda e: (e["module"], e["name"].lower())):
            f.write("\t".join([e["name"], e["module"], e["where"], e["htaccess"], e["args"], e["desc"]]) + "\n")
    print(f"{len(rows)} directives written to {out_path}")


if __name__ == "__main__":
    main()
