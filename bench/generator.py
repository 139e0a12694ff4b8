#!/usr/bin/env python3
"""lighten bench against wrk and ab, on the same lighttpd, in alternation.

Starts lighttpd 1.4 from a temporary folder on a free loopback port, serving one
1,795-byte file (the size of the published static-file comparison), and loads it with
20 keep-alive connections for --seconds each:

  lighten   lighten bench -t S -c 20 -k            (threads: its default)
  wrk       wrk -t1 -c20 -dS                        (one thread: the fastest wrk here)
  ab        ab -k -c 20 -t S -n 100000000

in rounds (lighten, wrk, ab, lighten, wrk, ab, ...), --rounds times. For each run it
records requests/s as the tool reports it and the tool's own CPU time (user + system,
from wait4) divided by the requests it completed. It prints every run, then the
medians and the ratios lighten/wrk and lighten/ab.

On two cores the client takes its CPU from the server, so CPU per request is the
figure that decides how much of the machine the server gets.

Usage: bench/generator.sh [--seconds 8] [--rounds 3] [--json FILE]
"""

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loopback import free_port, wait_port  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIGHTEN = os.path.join(ROOT, "target", "release", "lighten")


def run(cmd):
    """Runs a client; returns its output and its CPU seconds (user + system)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = p.stdout.read().decode(errors="replace")
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode not in (0, 1):
        raise SystemExit(f"{cmd[0]} failed ({p.returncode}):\n{out}")
    return out, ru.ru_utime + ru.ru_stime


def number(pattern, text, what):
    m = re.search(pattern, text)
    if not m:
        raise SystemExit(f"no {what} in:\n{text}")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", help="also write the runs and medians here")
    a = ap.parse_args()
    for tool in ("lighttpd", "wrk", "ab"):
        if not shutil.which(tool):
            raise SystemExit(f"{tool} is not installed (scripts/setup.sh installs it)")
    if not os.access(LIGHTEN, os.X_OK):
        raise SystemExit("build lighten first: cargo build --release")

    tmp = tempfile.mkdtemp(prefix="lighten-genbench-")
    www = os.path.join(tmp, "www")
    os.makedirs(www)
    body = (b"lighten " * 300)[:1795]
    with open(os.path.join(www, "index.html"), "wb") as f:
        f.write(body)
    port = free_port()
    conf = os.path.join(tmp, "lighttpd.conf")
    with open(conf, "w") as f:
        f.write(f'server.document-root = "{www}"\nserver.port = {port}\nserver.bind = "127.0.0.1"\n'
                f'server.errorlog = "{tmp}/error.log"\nmimetype.assign = (".html" => "text/html")\n')
    server = subprocess.Popen(["lighttpd", "-D", "-f", conf], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}/index.html"
    s = str(a.seconds)
    tools = {
        "lighten": ([LIGHTEN, "bench", "-t", s, "-c", "20", "-k", url],
                    r"Requests per second:\s+([\d.]+)", r"Complete requests:\s+(\d+)"),
        "wrk": (["wrk", "-t1", "-c20", f"-d{int(a.seconds)}s", url],
                r"Requests/sec:\s+([\d.]+)", r"(\d+) requests in"),
        "ab": (["ab", "-k", "-c", "20", "-t", s, "-n", "100000000", url],
               r"Requests per second:\s+([\d.]+)", r"Complete requests:\s+(\d+)"),
    }
    runs = {t: [] for t in tools}
    try:
        wait_port(port)
        run(["wrk", "-t1", "-c20", "-d2s", url])  # warm-up
        for r in range(a.rounds):
            for name, (cmd, rps_re, n_re) in tools.items():
                out, cpu = run(cmd)
                rps = number(rps_re, out, "requests/s")
                n = number(n_re, out, "request count")
                us = cpu * 1e6 / max(n, 1)
                runs[name].append({"rps": rps, "requests": n, "cpu_s": cpu, "cpu_us_per_request": us})
                print(f"round {r + 1}  {name:<8} {rps:>12,.0f} req/s  {us:6.2f} us CPU/request  ({n:,.0f} requests)",
                      flush=True)
    finally:
        os.killpg(server.pid, signal.SIGINT)
        server.wait()
        shutil.rmtree(tmp, ignore_errors=True)

    med = {t: {k: statistics.median(x[k] for x in v) for k in ("rps", "cpu_us_per_request")}
           for t, v in runs.items()}
    rng = {t: (min(x["rps"] for x in v), max(x["rps"] for x in v)) for t, v in runs.items()}
    print(f"\n1,795-byte file, 20 keep-alive connections, {a.seconds:g} s runs, medians of {a.rounds}:")
    print(f"{'client':<10}{'req/s':>12}{'range':>24}{'CPU/request':>14}")
    for t in tools:
        lo, hi = rng[t]
        print(f"{t:<10}{med[t]['rps']:>12,.0f}{f'{lo:,.0f}..{hi:,.0f}':>24}{med[t]['cpu_us_per_request']:>11.2f} us")
    for other in ("wrk", "ab"):
        print(f"lighten / {other}: req/s x{med['lighten']['rps'] / med[other]['rps']:.3f}, "
              f"CPU per request x{med['lighten']['cpu_us_per_request'] / med[other]['cpu_us_per_request']:.3f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"runs": runs, "medians": med}, f, indent=2)


if __name__ == "__main__":
    main()
