#!/bin/sh
# Builds lighten in release mode and runs bench/parse_plesk.py (see its header).
set -eu
cd "$(dirname "$0")/.."
cargo build --release --locked
exec python3 bench/parse_plesk.py "$@"
