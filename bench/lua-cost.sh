#!/bin/sh
# Builds lighten in release mode and runs bench/lua_cost.py (see its header).
set -eu
cd "$(dirname "$0")/.."
cargo build --release --locked
exec python3 bench/lua_cost.py "$@"
