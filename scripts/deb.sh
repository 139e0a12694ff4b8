#!/bin/sh
# Builds lighten's Debian package with dpkg-deb (Debian's own packager, part of dpkg):
#   target/debian/lighten_VERSION_ARCH.deb
# It holds the binary, a man page per command, bash/zsh/fish completions, the
# lighten-watch@.service template and the demo server's files (for `lighten demo`).
#
# usage: scripts/deb.sh [--binary PATH] [--out DIR]
#   --binary PATH  package this binary (default: `cargo build --release --locked`'s)
#   --out DIR      where the .deb goes (default: target/debian)
set -eu
cd "$(dirname "$0")/.."

bin=""
out=target/debian
while [ $# -gt 0 ]; do
    case "$1" in
        --binary) bin=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        *) echo "usage: scripts/deb.sh [--binary PATH] [--out DIR]" >&2; exit 2 ;;
    esac
done
if [ -z "$bin" ]; then
    cargo build --release --locked
    bin=target/release/lighten
fi

version=$("$bin" --version | awk '{print $2}')
arch=$(dpkg --print-architecture)
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
chmod 0755 "$root"

install -D -m 0755 "$bin" "$root/usr/bin/lighten"
# The release profile keeps debug info for profiling; a package does not ship it (strip
# comes with binutils, which every machine that links Rust has).
if command -v strip >/dev/null; then strip --strip-debug "$root/usr/bin/lighten"; fi

mkdir -p "$root/usr/share/man/man1"
"$root/usr/bin/lighten" man --out "$root/usr/share/man/man1" >/dev/null
gzip -9n "$root"/usr/share/man/man1/*.1

mkdir -p "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" \
    "$root/usr/share/fish/vendor_completions.d"
"$root/usr/bin/lighten" completions bash > "$root/usr/share/bash-completion/completions/lighten"
"$root/usr/bin/lighten" completions zsh > "$root/usr/share/zsh/vendor-completions/_lighten"
"$root/usr/bin/lighten" completions fish > "$root/usr/share/fish/vendor_completions.d/lighten.fish"

install -D -m 0644 packaging/lighten-watch@.service "$root/usr/lib/systemd/system/lighten-watch@.service"

mkdir -p "$root/usr/share/lighten"
cp -a fixtures/demo "$root/usr/share/lighten/demo"

install -D -m 0644 README.md "$root/usr/share/doc/lighten/README.md"
mkdir -p "$root/usr/share/doc/lighten/docs"
cp docs/*.md "$root/usr/share/doc/lighten/docs/"
cat > "$root/usr/share/doc/lighten/copyright" <<'COPYRIGHT'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: lighten
Comment: lighten moves websites from Apache httpd to lighttpd. The fixtures under
 /usr/share/lighten/demo carry the licences their provenance notes name
 (fixtures/*/fixture.toml in the source).
COPYRIGHT
find "$root" -type d -exec chmod 0755 {} +

# The shared libraries the binary links, each as the package that has it, at least the
# upstream version it was built against (conservative: what the build machine has).
libs=$(ldd "$root/usr/bin/lighten" | awk '$2 == "=>" && $3 ~ /^\// {print $3}')
shlibs=""
for l in $libs; do
    real=$(readlink -f "$l")
    pkg=$(dpkg -S "$l" 2>/dev/null || dpkg -S "$real" 2>/dev/null || true)
    pkg=${pkg%%:*}
    [ -n "$pkg" ] || continue
    ver=$(dpkg-query -W -f='${Version}' "$pkg")
    ver=${ver#*:}
    ver=${ver%%-*}
    case ",$shlibs," in *", $pkg (>="*) continue ;; esac
    shlibs="$shlibs, $pkg (>= $ver)"
done
shlibs=${shlibs#, }

# What the converted output runs on (lighttpd, mod_magnet's Lua, PCRE2 for Lua, TLS and
# deflate modules), and luac for watch's check of new Lua; Apache and PHP only for
# verify, bench --compare and the demo.
size=$(du -sk "$root/usr" | cut -f1)
mkdir -p "$root/DEBIAN"
cat > "$root/DEBIAN/control" <<CONTROL
Package: lighten
Version: $version
Architecture: $arch
Maintainer: lighten developers <lighten@localhost>
Installed-Size: $size
Depends: $shlibs, lighttpd (>= 1.4.69), lighttpd-modules-lua, lua-rex-pcre2, lighttpd-mod-openssl, lighttpd-mod-deflate, ssl-cert
Recommends: apache2, apache2-utils, php-fpm, php-cgi, lua5.4, systemd
Section: web
Priority: optional
Description: move Apache httpd sites (Plesk, .htaccess) to lighttpd, proved and measured
 lighten reads Apache's configuration and every .htaccess it allows, writes an
 equivalent lighttpd configuration with mod_magnet Lua (and reports what cannot be
 carried over exactly, failing closed), runs both servers side by side to prove they
 answer alike, benchmarks them the way ab does, and keeps the converted site in step
 with .htaccess edits after the switch (lighten watch).
CONTROL

mkdir -p "$out"
deb="$out/lighten_${version}_${arch}.deb"
dpkg-deb --root-owner-group --build "$root" "$deb" >/dev/null
echo "$deb"
