#!/usr/bin/env python3
"""Benchmark: `lighten batch` on a generated Plesk server of N accounts, beside `apache2 -t`.

The tree is parse_plesk.py's (each account a copy of the Plesk fixture's shop.example: its
generated httpd.conf with HTTPS and HTTP vhosts, vhost.conf, vhost_ssl.conf, and the
WordPress + WP Super Cache .htaccess pair; the server config is lighten's Plesk stand-in
with Debian's modules, including every account), written under bench/out/ with its real
absolute paths so Apache and lighten read the same files.

`lighten batch` converts every account alone (read inside the server config), writes one
folder per account, converts them all together once more for the combined lighttpd.conf,
and writes the summary; `apache2 -t` only reads and checks the configuration (no
.htaccess), so the two do very different amounts of work: the figure shows what a batch
costs next to the one thing every admin already runs on the same tree.  Runs alternate
(A B A B ...); each batch run starts from an empty output folder; one more batch run over
its own output (nothing changes, nothing is written) is timed apart.  Wall time and peak
RSS come from /usr/bin/time -v when it exists, else from wait4's ru_maxrss.

usage: bench/batch.py [--domains 1000] [--runs 3] [--jobs N] [--lighten PATH]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import parse_plesk  # noqa: E402  (the tree generator)

REPO = os.path.dirname(HERE)


def measure(cmd):
    """(wall seconds, peak RSS in KiB, exit status, stderr tail) of one run."""
    if os.path.exists("/usr/bin/time"):
        t0 = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-v"] + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wall = time.perf_counter() - t0
        err = p.stderr.decode(errors="replace")
        rss = -1
        for line in err.splitlines():
            if "Maximum resident set size" in line:
                rss = int(line.rsplit(":", 1)[1])
        own = err.split("\tCommand being timed:")[0]
        return wall, rss, p.returncode, own.strip()[-400:]
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    return wall, usage.ru_maxrss, os.waitstatus_to_exitcode(status), err.strip()[-400:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--domains", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=None, help="lighten batch --jobs [default: its own]")
    ap.add_argument("--lighten", default=os.path.join(REPO, "target/release/lighten"))
    a = ap.parse_args()
    root = os.path.join(HERE, "out", "batch-tree")
    out = os.path.join(HERE, "out", "batch-out")
    for d in (root, out):
        if os.path.isdir(d):
            shutil.rmtree(d)
    size = parse_plesk.generate(root, a.domains)
    print(f"tree: {a.domains} accounts, {size / 1e6:.2f} MB of configuration and .htaccess under {root}")
    main_conf = os.path.join(root, "etc/apache2/apache2.conf")
    batch = [a.lighten, "--color", "never", "batch", os.path.join(root, "var/www/vhosts"),
             "--server-config", main_conf, "--out", out]
    if a.jobs:
        batch += ["--jobs", str(a.jobs)]
    cmds = {"apache2 -t": ["apache2", "-t", "-f", main_conf], "lighten batch": batch}

    def run(name):
        if name == "lighten batch" and os.path.isdir(out):
            shutil.rmtree(out)
        return measure(cmds[name])

    # Warm the page cache once, and show that both accept the tree.
    for name in cmds:
        wall, rss, rc, err = run(name)
        print(f"warm-up {name}: exit {rc}, {wall:.2f} s" + (f"\n  {err}" if rc not in (0, 1) else ""))
    results = {name: [] for name in cmds}
    for _ in range(a.runs):
        for name in cmds:
            results[name].append(run(name))
    again = measure(batch)  # over its own output: nothing to write
    files = sum(len(fs) for _, _, fs in os.walk(out))
    # the same bytes in many folders are one file (a hard link): counted once, as du does
    sizes = {}
    for d, _, fs in os.walk(out):
        for f in fs:
            st = os.lstat(os.path.join(d, f))
            sizes[(st.st_dev, st.st_ino)] = st.st_size
    out_mb = sum(sizes.values()) / 1e6
    print(f"\n{'command':<28}{'median s':>10}{'min s':>9}{'max s':>9}{'peak RSS MiB':>14}   ({a.runs} alternated runs)")
    med = {}
    for name, rs in results.items():
        walls = [r[0] for r in rs]
        med[name] = statistics.median(walls)
        print(f"{name:<28}{med[name]:>10.2f}{min(walls):>9.2f}{max(walls):>9.2f}{max(r[1] for r in rs) / 1024:>14.1f}")
    print(f"{'lighten batch (unchanged)':<28}{again[0]:>10.2f}{'':>9}{'':>9}{again[1] / 1024:>14.1f}")
    print(f"\nlighten batch wrote {files} files ({len(sizes)} distinct, {out_mb:.0f} MB) for {a.domains} accounts and the combined "
          f"configuration: {med['lighten batch'] / a.domains * 1000:.1f} ms per account, "
          f"{med['lighten batch'] / med['apache2 -t']:.0f}x the time apache2 -t takes to check the same tree")


if __name__ == "__main__":
    sys.exit(main())
