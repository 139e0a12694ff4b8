#!/usr/bin/env python3
"""Where the time goes when the converted WP Super Cache site serves a static file.

Issue 11 asks for static files at 0.9x of plain lighttpd. This measures, in one alternated
run from the same copy of fixtures/wp-super-cache, the stylesheet (and with --path any
other file) served by:

  plain        lighttpd with a minimal configuration (bench/reference/plain): the floor;
  magnet       the same plus a mod_magnet physical-path script that returns at once: what
               entering Lua at all costs;
  stat         that script doing what no correct translation can skip for a WordPress site:
               one stat of the file (a missing one goes to index.php) and a Host read;
  converted    lighten convert's output as it is (the safety net, Apache's Host check, the
               decision cache, headers, the access log Apache's configuration asks for);
  reference    the hand-written expert translation (bench/reference/wp-super-cache).

wrk -t1 -c20 keep-alive, `--rounds` alternated runs of `--seconds` each, medians, with the
ratio to plain. Usage: bench/static-floor.sh [--seconds 3] [--rounds 3] [--path URL]
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loopback import free_port, start_lighttpd, stop  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(ROOT, "fixtures", "wp-super-cache")
STYLE = "/wp-content/themes/twentytwentyfour/style.css"

ENTER = "return 0\n"
STAT = """local r = lighty.r
local _ = r.req_header["Host"]
local st = lighty.c.stat(r.req_attr["physical.path"])
if st and st.is_file then return 0 end
return 0
"""


def wrk(port, path, seconds):
    out = subprocess.run(["wrk", "-t1", "-c20", f"-d{seconds}s", "-H", "Host: example.test",
                          f"http://127.0.0.1:{port}{path}"], capture_output=True, text=True, check=True).stdout
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))


def include(path, port, docroot, rundir, confdir, own):
    """A configuration that sets the variables bench/reference/*/lighttpd.conf expect."""
    with open(own, "w") as f:
        f.write(f'var.docroot = "{docroot}"\nvar.port = {port}\nvar.rundir = "{rundir}"\n'
                f'var.confdir = "{confdir}"\ninclude "{path}"\n')
    return own


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--path", default=STYLE)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="lighten-static-floor-")
    try:
        root = os.path.join(work, "root")
        shutil.copytree(FIXTURE, root, symlinks=True)
        docroot = os.path.join(root, "var/www/html")
        out, run = os.path.join(work, "out"), os.path.join(work, "run")
        os.makedirs(run)
        subprocess.run(["chmod", "-R", "a+rwX", work], check=True)
        ports = {n: free_port() for n in ("plain", "magnet", "stat", "converted", "reference")}
        subprocess.run([os.path.join(ROOT, "target", "release", "lighten"), "convert", "--sysroot", root,
                        "--server-name", "example.test", docroot, "--out", out,
                        "--listen", f"80=127.0.0.1:{ports['converted']}", "--listen", f"443=127.0.0.1:{free_port()}",
                        "--php-backend", f"127.0.0.1:{free_port()}"], stdout=subprocess.DEVNULL, check=False)
        if not os.path.exists(os.path.join(out, "lighttpd.conf")):
            raise SystemExit("lighten convert wrote nothing")
        subprocess.run(["chmod", "-R", "a+rwX", os.path.join(out, "run")], check=True)
        plain_conf = os.path.join(ROOT, "bench/reference/plain/lighttpd.conf")
        confs = {"converted": os.path.join(out, "lighttpd.conf")}
        for name in ("plain", "magnet", "stat"):
            own = include(plain_conf, ports[name], docroot, run, os.path.dirname(plain_conf),
                          os.path.join(work, f"{name}.conf"))
            if name != "plain":
                script = os.path.join(work, f"{name}.lua")
                with open(script, "w") as f:
                    f.write(ENTER if name == "magnet" else STAT)
                with open(own, "a") as f:
                    f.write(f'server.modules += ( "mod_magnet" )\n'
                            f'magnet.attract-physical-path-to = ( "{script}" )\n')
            confs[name] = own
        ref = os.path.join(ROOT, "bench/reference/wp-super-cache")
        confs["reference"] = include(os.path.join(ref, "lighttpd.conf"), ports["reference"], docroot, run, ref,
                                     os.path.join(work, "reference.conf"))
        expect = open(docroot + a.path, "rb").read()
        results = {n: [] for n in confs}
        for _ in range(a.rounds):
            for name, conf in confs.items():
                p = start_lighttpd(conf, ports[name])
                try:
                    body = subprocess.run(["curl", "-s", "-H", "Host: example.test",
                                           f"http://127.0.0.1:{ports[name]}{a.path}"], capture_output=True).stdout
                    if body != expect:
                        raise SystemExit(f"{name}: {a.path} is not the file ({len(body)} bytes)")
                    results[name].append(wrk(ports[name], a.path, a.seconds))
                finally:
                    stop(p)
        med = {n: sorted(r)[len(r) // 2] for n, r in results.items()}
        print(f"{a.path}, wrk -t1 -c20 keep-alive, {a.rounds} alternated runs of {a.seconds} s, medians")
        print(f"{'server':<12}{'requests/s':>12}{'us/request':>12}{'x plain':>9}   (min..max)")
        for n, rps in med.items():
            lo, hi = min(results[n]), max(results[n])
            print(f"{n:<12}{rps:>12.0f}{1e6 / rps:>12.2f}{rps / med['plain']:>9.2f}   ({lo:.0f}..{hi:.0f})")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
