#!/bin/sh
# Builds lighten in release mode and runs bench/static_floor.py (see its header): a static
# file of the converted WP Super Cache site beside plain lighttpd, Lua entered and returning,
# a one-stat script, and the hand-written reference, alternated.
set -eu
cd "$(dirname "$0")/.."
cargo build --release --locked
exec python3 bench/static_floor.py "$@"
