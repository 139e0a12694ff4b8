#!/bin/sh
# Static files of the converted WP Super Cache site against plain lighttpd serving the
# same document root with a minimal configuration (bench/reference/plain/), and Apache,
# in one alternating run: a 30 KB image and a stylesheet, 20 keep-alive clients.
# Arguments go to lighten bench [default: -t 5 --repeat 3].
set -eu
cd "$(dirname "$0")/.."
cargo build --release --locked
out=${OUT:-$(mktemp -d /tmp/lighten-static-XXXXXX)}
if [ $# -eq 0 ]; then set -- -t 5 --repeat 3; fi
exec target/release/lighten bench --compare fixtures/wp-super-cache/var/www/html \
    --sysroot fixtures/wp-super-cache --server-name example.test \
    --reference bench/reference/plain/lighttpd.conf \
    --path /wp-content/uploads/2024/beach.jpg --path /wp-content/themes/twentytwentyfour/style.css \
    -c 20 -k --out "$out" "$@"
