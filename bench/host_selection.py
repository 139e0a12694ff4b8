#!/usr/bin/env python3
"""Benchmark: how the combined lighttpd.conf of `lighten batch` serves an account as the
number of accounts grows (issue 14: host selection must not be a linear scan).

For each count N (default 10, 100, 1,000): parse_plesk.py's Plesk tree of N accounts,
`lighten batch` on it (--listen on a loopback port, PHP to a port nobody listens on), a
small robots.txt in the first and the last account's document root, then lighttpd started
on `OUT/lighttpd.conf` (the combined configuration) and `wrk -t1 -c20` keep-alive on that
file with each account's Host. The baseline is the last account converted alone
(`lighten convert ROOT --vhost DOMAIN`), the same lighttpd, the same file. Servers
alternate within each round; the figures are medians over the rounds, with the ratio to
the baseline (issue 14's target: >= 0.9 for every account and every N).

The accounts' access logs are the Plesk paths of the tree (as Apache's CustomLog says):
the script opens their folders to lighttpd's user, as a server's own log folders are.

usage: bench/host_selection.py [--counts 10,100,1000] [--seconds 3] [--rounds 2] [--lighten PATH]
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import parse_plesk  # noqa: E402  (the tree generator)
from loopback import free_port, start_lighttpd, stop  # noqa: E402

REPO = os.path.dirname(HERE)
ROBOTS = b"User-agent: *\nDisallow:\n"


def wrk(port, host, seconds):
    out = subprocess.run(["wrk", "-t1", "-c20", f"-d{seconds}s", "-H", f"Host: {host}",
                          f"http://127.0.0.1:{port}/robots.txt"], capture_output=True, text=True, check=True).stdout
    if "Non-2xx" in out:
        raise SystemExit(f"{host}: answers that are not 2xx:\n{out}")
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))


def fetch(port, host):
    return subprocess.run(["curl", "-s", "-H", f"Host: {host}", f"http://127.0.0.1:{port}/robots.txt"],
                          capture_output=True).stdout


def prepare(work, n, lighten):
    """The tree, its batch output and the lone account's conversion: (servers, hosts)."""
    root = os.path.join(work, f"tree-{n}")
    parse_plesk.generate(root, n)
    vhosts = os.path.join(root, "var/www/vhosts")
    domains = sorted(d for d in os.listdir(vhosts) if d != "system")
    first, last = domains[0], domains[-1]
    for d in (first, last):
        with open(os.path.join(vhosts, d, "httpdocs/robots.txt"), "wb") as f:
            f.write(ROBOTS)
    # lighttpd's user writes the accounts' logs (Apache's CustomLog paths), and reads the tree
    for d in domains:
        os.makedirs(os.path.join(vhosts, "system", d, "logs"), exist_ok=True)
    subprocess.run(["chmod", "-R", "a+rwX", work], check=True)
    main_conf = os.path.join(root, "etc/apache2/apache2.conf")
    php = f"127.0.0.1:{free_port()}"
    combined_port, alone_port = free_port(), free_port()
    out = os.path.join(work, f"batch-{n}")
    subprocess.run([lighten, "--color", "never", "batch", vhosts, "--server-config", main_conf, "--out", out,
                    "--listen", f"127.0.0.1:{combined_port}", "--php-backend", php],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    alone = os.path.join(work, f"alone-{n}")
    subprocess.run([lighten, "--color", "never", "convert", vhosts, "--server-config", main_conf, "--vhost", last,
                    "--out", alone, "--listen", f"127.0.0.1:{alone_port}", "--php-backend", php],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    for conf in (os.path.join(out, "lighttpd.conf"), os.path.join(alone, "lighttpd.conf")):
        if not os.path.exists(conf):
            raise SystemExit(f"{n} accounts: nothing at {conf}")
    subprocess.run(["chmod", "-R", "a+rwX", out, alone], check=True)
    servers = {"combined": (os.path.join(out, "lighttpd.conf"), combined_port),
               "alone": (os.path.join(alone, "lighttpd.conf"), alone_port)}
    return servers, first, last


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--counts", default="10,100,1000")
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--lighten", default=os.path.join(REPO, "target/release/lighten"))
    a = ap.parse_args()
    counts = [int(c) for c in a.counts.split(",")]
    work = tempfile.mkdtemp(prefix="lighten-host-selection-")
    os.chmod(work, 0o755)
    try:
        print(f"robots.txt, wrk -t1 -c20 keep-alive, {a.rounds} alternated rounds of {a.seconds} s, medians")
        print(f"{'accounts':>8}  {'server':<36}{'requests/s':>12}{'x alone':>9}")
        for n in counts:
            servers, first, last = prepare(work, n, a.lighten)
            cells = [("combined", first), ("combined", last), ("alone", last)]
            got = {c: [] for c in cells}
            for _ in range(a.rounds):
                for name in ("combined", "alone"):
                    conf, port = servers[name]
                    p = start_lighttpd(conf, port)
                    try:
                        for cell in (c for c in cells if c[0] == name):
                            if fetch(port, cell[1]) != ROBOTS:
                                raise SystemExit(f"{n} accounts, {name}: {cell[1]}/robots.txt is not the file")
                            got[cell].append(wrk(port, cell[1], a.seconds))
                    finally:
                        stop(p)
            med = {c: statistics.median(v) for c, v in got.items()}
            base = med[("alone", last)]
            for (name, host), v in med.items():
                label = f"{name}, {host}" + (" (first)" if host == first and name == "combined" else "")
                print(f"{n:>8}  {label:<36}{v:>12.0f}{v / base:>9.2f}")
            shutil.rmtree(os.path.join(work, f"tree-{n}"), ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
