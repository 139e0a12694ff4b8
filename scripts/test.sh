#!/bin/sh
# The test command: installs what is missing (scripts/setup.sh), then checks formatting,
# lints with clippy and runs every test.  .ci/run calls exactly this.
set -eu
cd "$(dirname "$0")/.."
scripts/setup.sh
PATH="$HOME/.cargo/bin:$PATH"
cargo fmt --check
cargo clippy --locked --all-targets -- -D warnings
cargo test --locked
