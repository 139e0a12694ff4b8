#!/bin/sh
# The 7G firewall (Perishable Press 7G v1.5, bench/7g/var/www/html/.htaccess, see
# bench/7g/README.md) under 8 KB query strings, converted to lighttpd and compared with
# Apache. The target: <= 50 ms per request for the converted site.
#
# Cases: (a) benign 8 KB queries, (b) hostile 8 KB near-misses built to make the 7G
# QUERY_STRING patterns backtrack ((union)(.*)(select)(.*)(\(|%28), (concat|eval)(.*)(\(|%28),
# (benchmark|char|...)(.*)(\(|%28)(.*)(\)|%29), ((.*)header:|(.*)set-cookie:(.*)=), ...),
# (c) requests the firewall must block. "want" is what 7G means to answer; "check" flags
# a lighttpd max over 50 ms, a status other than Apache's or other than "want".
#
# 1. lighten convert bench/7g into a temporary folder, lighttpd on a free loopback port;
#    N requests a case over one keep-alive connection (curl), median and max in ms.
# 2. lighten verify: Apache and lighttpd side by side, each case once, statuses compared.
# 3. Apache, started from verify's kept sandbox: APACHE_N requests a case, timed the same way.
#
#   bench/7g.sh                  N=50, APACHE_N=5 (a case Apache answers in more than
#                                0.5 s is sent to it once: one takes ~13 s)
#   N=20 APACHE=0 bench/7g.sh    lighttpd only, no verify
#   KEEP=1 bench/7g.sh           keep the temporary folder (configuration, logs)
set -eu
cd "$(dirname "$0")/.."
cargo build --release --locked
lighten=target/release/lighten
N=${N:-50}
APACHE=${APACHE:-1}
APACHE_N=${APACHE_N:-5}
# Query bytes: Apache's LimitRequestLine (8190) holds the whole request line
# "GET /hello.txt?<query> HTTP/1.1", lighttpd's 8 KB header limit the whole head.
L=8000

work=$(mktemp -d /tmp/lighten-7g-XXXXXX)
chmod 755 "$work" # lighttpd runs as www-data and reads its Lua scripts from here
pids=""
sandbox=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    for p in $pids; do wait "$p" 2>/dev/null || true; done
    if [ -n "$sandbox" ]; then rm -rf "$sandbox"; fi
    if [ "${KEEP:-0}" != 1 ]; then rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# rep STR LEN: STR repeated, cut to LEN bytes
rep() { awk -v s="$1" -v n="$2" 'BEGIN { o = s; while (length(o) < n) o = o o; printf "%s", substr(o, 1, n) }'; }

# One case a line: name|want|method|header|path?query
cases() {
    x=$((L - 2))
    echo "a: short params, 8 KB|200|GET||/hello.txt?$(awk -v n=$L 'BEGIN { o = ""; i = 0; while (length(o) < n) o = o sprintf("a%04d=aaaaaaaaaa&", i++); printf "%s", substr(o, 1, n) }')"
    echo "a: a=aaaa.. (7G: 2000+ alnum)|403|GET||/hello.txt?a=$(rep a $x)"
    echo "b: union-select- (no paren)|200|GET||/hello.txt?x=$(rep union-select- $x)"
    echo "b: eval-concat- (no paren)|200|GET||/hello.txt?x=$(rep eval-concat- $x)"
    echo "b: char(- (no close)|200|GET||/hello.txt?x=$(rep 'char(-' $x)"
    echo "b: char%28- (no %29)|200|GET||/hello.txt?x=$(rep 'char%28-' $x)"
    echo "b: base64_encode(- (no close)|200|GET||/hello.txt?x=$(rep 'base64_encode(-' $x)"
    echo "b: %3cscrip- (no t, no >)|200|GET||/hello.txt?x=$(rep '%3cscrip-' $x)"
    echo "b: set-cookie: (no =)|200|GET||/hello.txt?x=$(rep 'set-cookie:' $x)"
    echo "b: %27- run|200|GET||/hello.txt?x=$(rep '%27-' $x)"
    echo "b: javascript:- (no ; or ))|200|GET||/hello.txt?x=$(rep 'javascript:-' $x)"
    echo "b: order%20by%20 run|200|GET||/hello.txt?x=$(rep 'order%20by%20' $x)"
    echo "b: %5f%72..%74- (_request-)|200|GET||/hello.txt?x=$(rep '%5f%72%65%71%75%65%73%74-' $x)"
    echo "b: %41 run|200|GET||/hello.txt?x=$(rep '%41' $x)"
    echo "c: ?fullclick|403|GET||/hello.txt?fullclick"
    echo "c: union%20select%20|403|GET||/hello.txt?id=1%20union%20select%20password%20from%20users"
    echo "c: union-select- x8 KB + (|403|GET||/hello.txt?x=$(rep union-select- $((x - 1))))("
    echo "c: char(- x8 KB + )|403|GET||/hello.txt?x=$(rep 'char(-' $((x - 1))))"
    echo "c: eval(- x8 KB|403|GET||/hello.txt?x=$(rep 'eval(-' $x)"
    echo "c: User-Agent sqlmap|403|GET|User-Agent: sqlmap/1.7.2|/hello.txt"
    echo "c: Referer semalt.com|403|GET|Referer: http://semalt.com/|/hello.txt"
    echo "c: MOVE method|403|MOVE||/hello.txt"
    echo "c: /0day.php|403|GET||/0day.php"
    echo "c: TRACE method|403|TRACE||/hello.txt"
}

# send BASE COUNT METHOD HEADER TARGET >> $work/times: COUNT requests on one keep-alive
# connection, a line "status seconds" each
send() {
    cfg=$work/curl.cfg
    : >"$cfg"
    i=0
    while [ "$i" -lt "$2" ]; do
        [ "$i" -gt 0 ] && echo next >>"$cfg"
        printf 'url = "%s%s"\noutput = "/dev/null"\nsilent\ngloboff\npath-as-is\nmax-time = 60\nrequest = "%s"\nwrite-out = "%%{http_code} %%{time_total}\\n"\n' \
            "$1" "$5" "$3" >>"$cfg"
        [ -n "$4" ] && printf 'header = "%s"\n' "$4" >>"$cfg"
        i=$((i + 1))
    done
    curl -K "$cfg" >>"$work/times" 2>/dev/null || true
}

# measure BASE COUNT [SLOW_MS] < cases: one line a case, "name|want|statuses|median max"
# (ms). With SLOW_MS, a case whose first request takes longer is not repeated.
measure() {
    while IFS='|' read -r name want method header target; do
        : >"$work/times"
        if [ -n "${3:-}" ]; then
            send "$1" 1 "$method" "$header" "$target"
            if awk -v slow="$3" '{ exit !($2 * 1000 <= slow) }' "$work/times"; then
                send "$1" $(($2 - 1)) "$method" "$header" "$target"
            fi
        else
            send "$1" "$2" "$method" "$header" "$target"
        fi
        codes=$(awk '{ print $1 }' "$work/times" | sort | uniq -c | awk '{ printf "%s%s", sep, ($1 > 1 ? $2 "x" $1 : $2); sep = "," }')
        stat=$(awk '{ printf "%.3f\n", $2 * 1000 }' "$work/times" | sort -n | awk '
            { a[NR] = $1 }
            END { if (NR == 0) { print "- -"; exit }
                  m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
                  printf "%.2f %.2f\n", m, a[NR] }')
        echo "$name|$want|${codes:--}|$stat"
    done
}

out=$work/lighttpd
port=$(free_port)
echo "== lighten convert bench/7g/var/www/html --listen 127.0.0.1:$port"
rc=0
$lighten convert bench/7g/var/www/html --sysroot bench/7g --out "$out" --listen "127.0.0.1:$port" || rc=$?
[ "$rc" -le 1 ] || { echo "convert failed (exit $rc)"; exit 2; }
grep -E '^ *# vhost ' "$out/lighttpd.conf" | sed 's/^ */tier: /'

lighttpd -D -f "$out/lighttpd.conf" >"$work/lighttpd.stderr" 2>&1 &
pids="$pids $!"
i=0
until curl -s -o /dev/null "http://127.0.0.1:$port/hello.txt"; do
    i=$((i + 1))
    [ "$i" -lt 50 ] || { echo "lighttpd did not start:"; cat "$work/lighttpd.stderr"; exit 2; }
    sleep 0.1
done

echo
echo "== lighttpd 1.4.69 + mod_magnet, $N requests a case, one keep-alive connection"
cases | measure "http://127.0.0.1:$port" "$N" >"$work/lighttpd.txt"

if [ "$APACHE" = 1 ]; then
    echo "== lighten verify (Apache and lighttpd, each case once)"
    cases | awk -F'|' '{ printf "%s %s", $3, $5; if ($4 != "") printf " | %s", $4; print "" }' >"$work/requests.txt"
    vrc=0
    $lighten verify bench/7g/var/www/html --sysroot bench/7g --requests "$work/requests.txt" --keep >"$work/verify.txt" 2>&1 || vrc=$?
    # the requests are 8 KB long: show the lines by their first 90 bytes
    awk '{ if (length($0) > 90) print substr($0, 1, 90) "..."; else print }' "$work/verify.txt"
    echo "(lighten verify exit $vrc)"
    sandbox=$(sed -n 's/^sandbox kept at //p' "$work/verify.txt")
    case $sandbox in /tmp/lighten-verify-*) ;; *) sandbox="" ;; esac
    if [ -n "$sandbox" ] && [ -f "$sandbox/apache2.conf" ]; then
        aport=$(awk '$1 == "Listen" { n = split($2, a, ":"); print a[n]; exit }' "$sandbox/apache2.conf")
        apache2 -f "$sandbox/apache2.conf" -DFOREGROUND >"$work/apache.stderr" 2>&1 &
        pids="$pids $!"
        i=0
        until curl -s -o /dev/null "http://127.0.0.1:$aport/hello.txt"; do
            i=$((i + 1))
            [ "$i" -lt 50 ] || { echo "Apache did not start:"; cat "$work/apache.stderr"; break; }
            sleep 0.1
        done
        echo "== Apache $(apache2 -v | sed -n 's/^Server version: //p') (verify's sandbox config), $APACHE_N requests a case (1 when slower than 0.5 s)"
        cases | measure "http://127.0.0.1:$aport" "$APACHE_N" 500 >"$work/apache.txt"
    else
        echo "no sandbox from lighten verify: Apache not timed"
    fi
fi
[ -f "$work/apache.txt" ] || : >"$work/apache.txt"

echo
printf '%-30s %4s | %-22s %8s %8s | %-12s %9s %9s | %s\n' case want "lighttpd status" "med ms" "max ms" "apache" "med ms" "max ms" check
awk -F'|' -v limit=50 '
    FILENAME == ARGV[1] { split($4, s, " "); ac[FNR] = $3; am[FNR] = s[1]; ax[FNR] = s[2]; next }
    {
        split($4, s, " "); n = FNR
        check = ""
        if (s[2] + 0 > limit) check = check "SLOW(>" limit "ms) "
        if (n in ac) {
            a = ac[n]; l = $3; gsub(/x[0-9]+/, "", a); gsub(/x[0-9]+/, "", l)
            if (a != l) check = check "status differs from Apache "
            if (ac[n] ~ /^403/ && $3 !~ /^403(x[0-9]+)?$/) check = check "Apache blocks, lighttpd does not "
        }
        if ($3 !~ "^" $2 "(x[0-9]+)?$") check = check "not " $2 " "
        if (check == "") check = "ok"
        printf "%-30s %4s | %-22s %8s %8s | %-12s %9s %9s | %s\n", $1, $2, $3, s[1], s[2], (n in ac ? ac[n] : "-"), (n in am ? am[n] : "-"), (n in ax ? ax[n] : "-"), check
    }' "$work/apache.txt" "$work/lighttpd.txt"

echo
echo "lighttpd error log (run/error.log), other than start/stop lines:"
grep -v -e 'server started' -e 'server stopped' "$out/run/error.log" 2>/dev/null | sed 's/^/  /' || true
[ -s "$work/lighttpd.stderr" ] && sed 's/^/  stderr: /' "$work/lighttpd.stderr"
[ "${KEEP:-0}" = 1 ] && echo "(kept: $work)"
exit 0
