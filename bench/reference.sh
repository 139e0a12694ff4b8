#!/bin/sh
# Apache, the converted lighttpd and an expert's hand translation
# (bench/reference/wp-super-cache/) on the WP Super Cache fixture, in one alternating run:
# the cached homepage with gzip, a 30 KB image and a stylesheet, 20 keep-alive clients.
# Arguments go to lighten bench [default: -t 5 --repeat 3].
set -eu
cd "$(dirname "$0")/.."
cargo build --release --locked
out=${OUT:-$(mktemp -d /tmp/lighten-reference-XXXXXX)}
# Without arguments: 5-second runs, 3 rounds.
if [ $# -eq 0 ]; then set -- -t 5 --repeat 3; fi
exec target/release/lighten bench --compare fixtures/wp-super-cache/var/www/html \
    --sysroot fixtures/wp-super-cache --server-name example.test \
    --reference bench/reference/wp-super-cache/lighttpd.conf \
    --path / --path /wp-content/uploads/2024/beach.jpg --path /wp-content/themes/twentytwentyfour/style.css \
    -H 'Accept-Encoding: gzip' -c 20 -k --out "$out" "$@"
