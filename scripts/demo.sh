#!/bin/sh
# The main job: installs what is missing (scripts/setup.sh), builds lighten and runs
# `lighten demo`: the bundled Plesk-style server (fixtures/demo) converted to lighttpd and
# verified against Apache side by side.
set -eu
cd "$(dirname "$0")/.."
scripts/setup.sh
PATH="$HOME/.cargo/bin:$PATH"
cargo build --release --locked
exec target/release/lighten demo "$@"
