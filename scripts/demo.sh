#!/bin/sh
# The main job: installs what is missing (scripts/setup.sh), builds lighten and runs it on
# the bundled Plesk server fixture.  Later issues replace the inspect run by `lighten demo`.
set -eu
cd "$(dirname "$0")/.."
scripts/setup.sh
PATH="$HOME/.cargo/bin:$PATH"
cargo build --release --locked
echo "lighten: inspecting the bundled Plesk server (fixtures/plesk)"
exec target/release/lighten inspect --sysroot fixtures/plesk fixtures/plesk/var/www/vhosts
