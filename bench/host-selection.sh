#!/bin/sh
# Builds lighten in release mode and runs bench/host_selection.py (see its header): the
# combined lighttpd.conf of lighten batch serving the first and the last account, on
# Plesk trees of 10, 100 and 1,000 accounts, against the account converted alone.
set -eu
cd "$(dirname "$0")/.."
cargo build --release --locked
exec python3 bench/host_selection.py "$@"
