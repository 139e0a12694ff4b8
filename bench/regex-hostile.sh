#!/bin/sh
# The cost of hostile subjects against lighten_re (bench/regex_hostile.lua): PCRE2 with
# JIT and lighten's match limit, as the generated mod_magnet scripts run it.
set -eu
cd "$(dirname "$0")/.."
exec lua5.4 bench/regex_hostile.lua "$@"
