#!/bin/sh
# Builds lighten in release mode and runs bench/generator.py (see its header):
# lighten bench vs wrk vs ab on the same lighttpd, alternated, medians and ratios.
set -eu
cd "$(dirname "$0")/.."
cargo build --release --locked
exec python3 bench/generator.py "$@"
