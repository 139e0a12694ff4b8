#!/bin/sh
# Installs what lighten needs on Debian 12, as root, and nothing else.
#
# Debian packages: Apache 2.4, lighttpd 1.4 with mod_magnet (Lua) and the plugins the
# generated configurations load (mod_deflate, mod_openssl; see conf::MODULES, held to this
# list by a tidy test), Debian's self-signed certificate (ssl-cert: the stand-in server
# configs name it), PHP through FastCGI, the Lua compiler used to check generated scripts,
# ab/htpasswd, systemd (its systemd-analyze checks the service units convert writes;
# nothing here runs systemd as a service manager), and ansible-core (the documentation
# test runs docs/batch.md's playbook).  Services are not
# started while installing (a temporary policy-rc.d refuses it); lighten starts its own
# sandboxed servers on loopback and never uses the system ones.  A Rust toolchain is
# installed with rustup when cargo is missing.
set -eu

PACKAGES="apache2 apache2-utils systemd lighttpd lighttpd-modules-lua lua-rex-pcre2 lighttpd-mod-openssl lighttpd-mod-deflate ssl-cert php-cgi php-fpm lua5.4 openssl ca-certificates curl wrk ansible-core"

missing=""
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done

if [ -n "$missing" ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "setup: missing Debian packages:$missing; run as root to install them" >&2
        exit 2
    fi
    echo "setup: installing Debian packages:$missing"
    policy_made=""
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
        chmod 755 /usr/sbin/policy-rc.d
        policy_made=1
    fi
    apt-get update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
    if [ -n "$policy_made" ]; then rm -f /usr/sbin/policy-rc.d; fi
else
    echo "setup: Debian packages present"
fi

if ! command -v cargo >/dev/null 2>&1 && [ ! -x "$HOME/.cargo/bin/cargo" ]; then
    echo "setup: installing the Rust toolchain with rustup"
    curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal --component clippy,rustfmt
fi
