#!/bin/sh
# Builds lighten in release mode and runs bench/batch.py (see its header): lighten batch
# on a generated Plesk server of 1,000 accounts beside apache2 -t, wall time and peak RSS.
set -eu
cd "$(dirname "$0")/.."
cargo build --release --locked
exec python3 bench/batch.py "$@"
