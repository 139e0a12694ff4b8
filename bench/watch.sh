#!/bin/sh
# Builds lighten in release mode and runs bench/watch.py (see its header): the time from
# an .htaccess edit to the running lighttpd enforcing it, under load, and the reconvert
# time for one account's edit on a generated 1,000-account Plesk server.
set -eu
cd "$(dirname "$0")/.."
cargo build --release --locked
exec python3 bench/watch.py "$@"
