#!/usr/bin/env python3
"""Where the time goes when the converted WP Super Cache site serves a static file.

Issue 11 asks for static files at 0.9x of plain lighttpd. This measures, in one alternated
run from the same copy of fixtures/wp-super-cache, the stylesheet (and with --path any
other file) served by:

  plain        lighttpd with a minimal configuration (bench/reference/plain): the floor;
  logged       plain lighttpd writing the access log Apache's configuration asks for (the
               converted output writes it too): the floor for a site that logs;
  magnet       the same plus a mod_magnet physical-path script that returns at once: what
               entering Lua at all costs;
  stat         that script doing what no correct translation can skip for a WordPress site:
               one stat of the file (a missing one goes to index.php) and a Host read;
  converted    lighten convert's output as it is (the safety net, Apache's Host check, the
               decision cache, headers, the access log Apache's configuration asks for);
  watched      the same output with its static lane on, as while `lighten watch` runs
               (OUT/.watching.conf): the file served by lighttpd alone, no Lua;
  guard        that same output with its physical-path script replaced by the least a
               correct script does for this request (the Host, method and target read, one
               stat, the Content-Type set, the response-start hook skipped): what any
               Lua translation costs inside the converted configuration;
  reference    the hand-written expert translation (bench/reference/wp-super-cache).

wrk -t1 -c20 keep-alive, `--rounds` alternated runs of `--seconds` each, medians, with the
ratio to plain. With --icount (needs valgrind: apt-get install valgrind), each server
also runs under callgrind once: the instructions it executes in user space per request
(ab -k -c 1, the difference between 2,200 and 200 requests), a count the machine's noise
does not move (the kernel's share, the same for every server here, is not in it).
Usage: bench/static-floor.sh [--seconds 3] [--rounds 3] [--path URL] [--icount]
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loopback import free_port, start_lighttpd, stop, wait_port  # noqa: E402

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


# The least a correct physical-path script does for a static file of this site (not a
# translation: it serves only what the benchmark asks, as text/css).
GUARD = """local loaded = package.loaded
local s, ns = lighty.c.hrtime()
local tick = s * 100 + ns // 10000000
if loaded["lighten:tick"] ~= tick then loaded["lighten:tick"] = tick end
local r = lighty.r
local attr = r.req_attr
local root = attr["physical.doc-root"]
local _ = r.req_header["Host"], attr["request.method"]
local st = lighty.c.stat(root .. attr["request.orig-uri"])
if st and st.is_file then
  local _ = lighty.c.time()
  r.resp_header["Content-Type"] = "text/css"
  attr["uri.scheme"] = "lighten-sent"
end
return 0
"""


def icount(conf, port, path):
    """User-space instructions per request of the lighttpd of `conf` (callgrind)."""
    def total(n):
        out = conf + ".callgrind"
        if os.path.exists(out):
            os.remove(out)
        # (as root lighttpd would drop to its server.username, which cannot write the
        # profile root opened: the copy runs as the user that starts it)
        own = conf + ".icount.conf"
        with open(conf) as f, open(own, "w") as g:
            g.writelines(l for l in f if not re.match(r"\s*server\.(username|groupname)\b", l))
        p = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "lighttpd", "-D",
                              "-f", own], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
        try:
            wait_port(port, 60)
            subprocess.run(["ab", "-q", "-k", "-n", str(n), "-c", "1", "-H", "Host: example.test",
                            f"http://127.0.0.1:{port}{path}"], capture_output=True, check=True)
        finally:
            stop(p)
        with open(out) as f:
            for line in f:
                if line.startswith(("summary:", "totals:")):
                    return int(line.split()[1])
        raise SystemExit(f"callgrind wrote no total for {conf}")
    return (total(2200) - total(200)) / 2000


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
    ap.add_argument("--icount", action="store_true", help="also count instructions per request (valgrind)")
    a = ap.parse_args()
    if a.icount and not shutil.which("valgrind"):
        raise SystemExit("--icount needs valgrind: apt-get install valgrind")
    work = tempfile.mkdtemp(prefix="lighten-static-floor-")
    try:
        root = os.path.join(work, "root")
        shutil.copytree(FIXTURE, root, symlinks=True)
        docroot = os.path.join(root, "var/www/html")
        out, run = os.path.join(work, "out"), os.path.join(work, "run")
        os.makedirs(run)
        subprocess.run(["chmod", "-R", "a+rwX", work], check=True)
        ports = {n: free_port() for n in ("plain", "logged", "magnet", "stat", "converted", "watched", "guard", "reference")}
        subprocess.run([os.path.join(ROOT, "target", "release", "lighten"), "convert", "--sysroot", root,
                        "--server-name", "example.test", docroot, "--out", out,
                        "--listen", f"80=127.0.0.1:{ports['converted']}", "--listen", f"443=127.0.0.1:{free_port()}",
                        "--php-backend", f"127.0.0.1:{free_port()}"], stdout=subprocess.DEVNULL, check=False)
        if not os.path.exists(os.path.join(out, "lighttpd.conf")):
            raise SystemExit("lighten convert wrote nothing")
        subprocess.run(["chmod", "-R", "a+rwX", os.path.join(out, "run")], check=True)
        plain_conf = os.path.join(ROOT, "bench/reference/plain/lighttpd.conf")
        confs = {"converted": os.path.join(out, "lighttpd.conf")}
        converted_text = open(os.path.join(out, "lighttpd.conf")).read()
        log_format = re.search(r'accesslog\.format = .*', converted_text).group(0)
        for name in ("plain", "logged", "magnet", "stat"):
            own = include(plain_conf, ports[name], docroot, run, os.path.dirname(plain_conf),
                          os.path.join(work, f"{name}.conf"))
            if name == "logged":
                with open(own, "a") as f:
                    f.write(f'server.modules += ( "mod_accesslog" )\naccesslog.filename = "{run}/access-logged.log"\n'
                            f'{log_format}\n')
            if name in ("magnet", "stat"):
                script = os.path.join(work, f"{name}.lua")
                with open(script, "w") as f:
                    f.write(ENTER if name == "magnet" else STAT)
                with open(own, "a") as f:
                    f.write(f'server.modules += ( "mod_magnet" )\n'
                            f'magnet.attract-physical-path-to = ( "{script}" )\n')
            confs[name] = own
        # the converted output again, its physical-path script the guard alone
        guard_out = os.path.join(work, "guard")
        shutil.copytree(out, guard_out, symlinks=True)
        with open(os.path.join(out, "lighttpd.conf")) as f:
            text = f.read().replace(out, guard_out).replace(str(ports["converted"]), str(ports["guard"]))
        with open(os.path.join(guard_out, "lighttpd.conf"), "w") as f:
            f.write(text)
        with open(os.path.join(guard_out, "lua/physical.lua"), "w") as f:
            f.write(GUARD)
        subprocess.run(["chmod", "-R", "a+rwX", guard_out], check=True)
        confs["guard"] = os.path.join(guard_out, "lighttpd.conf")
        # the converted output again, as `lighten watch` runs it (its static lane on)
        watched_out = os.path.join(work, "watched")
        shutil.copytree(out, watched_out, symlinks=True)
        with open(os.path.join(watched_out, "lighttpd.conf"), "w") as f:
            f.write(text.replace(guard_out, watched_out).replace(str(ports["guard"]), str(ports["watched"])))
        with open(os.path.join(watched_out, ".watching.conf"), "w") as f:
            f.write('var.lighten_lane := ""\n')
        subprocess.run(["chmod", "-R", "a+rwX", watched_out], check=True)
        confs["watched"] = os.path.join(watched_out, "lighttpd.conf")
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
        if a.icount:
            print(f"\n{'server':<12}{'instructions/request':>22}{'x plain':>9}   (user space, callgrind)")
            counts = {n: icount(conf, ports[n], a.path) for n, conf in confs.items()}
            for n, c in counts.items():
                print(f"{n:<12}{c:>22.0f}{c / counts['plain']:>9.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
