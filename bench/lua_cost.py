#!/usr/bin/env python3
"""What the generated Lua costs per request.

Converts the WP Super Cache fixture with `lighten convert`, then serves the cached
homepage two ways on loopback, one after the other, from the same files:

  generated   the converted setup: every request runs lighten.lua (Apache's rewrite
              rounds, the cache .htaccess, mod_headers/mod_expires at response start)
              and is answered with the cached index.html;
  static      a static-file-only lighttpd config serving that same index.html by its
              own URL: the floor lighttpd itself sets.

Each is measured with wrk (keep-alive, 20 connections, 2 threads) three times,
alternating; the median requests/s and the per-request latency are printed side by
side. Usage: bench/lua-cost.sh [--seconds N]
"""

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loopback import free_port, start_lighttpd, stop, wait_port  # noqa: E402,F401

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(ROOT, "fixtures", "wp-super-cache")
CACHED = "/wp-content/cache/supercache/example.test/index.html"


start = start_lighttpd


def check(port, path, expect):
    out = subprocess.run(["curl", "-s", "-H", "Host: example.test", f"http://127.0.0.1:{port}{path}"],
                         capture_output=True).stdout
    if out != expect:
        raise SystemExit(f"port {port} {path}: not the cached page ({len(out)} bytes)")


def wrk(port, path, seconds):
    out = subprocess.run(["wrk", "-t2", "-c20", f"-d{seconds}s", "--latency", "-H", "Host: example.test",
                          f"http://127.0.0.1:{port}{path}"], capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    lat = re.search(r"50%\s+([\d.]+)(us|ms|s)", out)
    scale = {"us": 1, "ms": 1000, "s": 1e6}[lat.group(2)]
    return rps, float(lat.group(1)) * scale


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=5)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="lighten-bench-")
    try:
        # a copy readable by lighttpd's www-data user
        root = os.path.join(work, "root")
        shutil.copytree(FIXTURE, root, symlinks=True)
        subprocess.run(["chmod", "-R", "a+rX", work], check=True)
        out = os.path.join(work, "out")
        gport, sport = free_port(), free_port()
        subprocess.run([os.path.join(ROOT, "target", "release", "lighten"), "convert", "--sysroot", root,
                        "--server-name", "example.test", os.path.join(root, "var/www/html"), "--out", out,
                        "--listen", f"127.0.0.1:{gport}"], stdout=subprocess.DEVNULL)
        if not os.path.exists(os.path.join(out, "lighttpd.conf")):
            raise SystemExit("lighten convert wrote nothing")
        subprocess.run(["chmod", "-R", "a+rwX", os.path.join(out, "run")], check=True)
        docroot = os.path.join(root, "var/www/html")
        static_conf = os.path.join(work, "static.conf")
        with open(static_conf, "w") as f:
            f.write(f'server.document-root = "{docroot}"\nserver.bind = "127.0.0.1"\nserver.port = {sport}\n'
                    f'server.errorlog = "{out}/run/static-error.log"\nserver.username = "www-data"\n'
                    f'server.groupname = "www-data"\nmimetype.assign = ( ".html" => "text/html; charset=UTF-8" )\n')
        expect = open(docroot + CACHED, "rb").read()
        results = {"generated": [], "static": []}
        for _ in range(3):
            for name, conf, port, path in (("generated", os.path.join(out, "lighttpd.conf"), gport, "/"),
                                           ("static", static_conf, sport, CACHED)):
                p = start(conf, port)
                try:
                    check(port, path, expect)
                    results[name].append(wrk(port, path, a.seconds))
                finally:
                    stop(p)
        med = lambda xs: sorted(xs)[len(xs) // 2]
        g_rps, s_rps = med([r for r, _ in results["generated"]]), med([r for r, _ in results["static"]])
        g_lat, s_lat = med([l for _, l in results["generated"]]), med([l for _, l in results["static"]])
        print("WP Super Cache homepage (cached index.html), wrk -t2 -c20, keep-alive, 3 alternated runs, medians")
        print(f"{'config':<12}{'requests/s':>14}{'p50 latency us':>18}{'time/request us':>18}")
        print(f"{'generated':<12}{g_rps:>14.0f}{g_lat:>18.0f}{1e6 / g_rps:>18.1f}")
        print(f"{'static':<12}{s_rps:>14.0f}{s_lat:>18.0f}{1e6 / s_rps:>18.1f}")
        print(f"lighten.lua costs about {1e6 / g_rps - 1e6 / s_rps:.1f} us of server time per request "
              f"({g_rps / s_rps * 100:.0f}% of the static-only throughput)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
