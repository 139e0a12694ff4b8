#!/usr/bin/env python3
"""Benchmark: read a generated Plesk server of N domains, lighten inspect vs apache2 -t.

Each domain is a copy of the Plesk fixture's shop.example: its generated httpd.conf
(HTTPS and HTTP vhosts, php-fpm, statistics, error documents, Let's Encrypt), vhost.conf,
vhost_ssl.conf, and the WordPress + WP Super Cache .htaccess pair.  The server config is
lighten's Plesk stand-in (templates/defaults/plesk.conf) with the modules Debian ships.  The tree is written under bench/out/ with its
real absolute paths, so Apache and lighten read the very same files.  The two commands
run alternately (A B A B ...) and the median wall time and peak RSS of each are printed.

Apache's -t only checks the server configuration; lighten also finds and reads every
.htaccess (and models everything), so it does strictly more work.

usage: bench/parse_plesk.py [--variant plesk|minimal] [--domains 1000] [--runs 7] [--lighten PATH]
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

PLESK = os.path.join(REPO, "fixtures/plesk")


def plesk_file(rel, domain, root):
    """A file of the Plesk fixture's shop.example, for another domain under `root`."""
    text = open(os.path.join(PLESK, rel)).read()
    text = text.replace("shop.example", domain).replace("shop\\.example", domain.replace(".", "\\."))
    text = text.replace("/var/www/vhosts", root + "/var/www/vhosts")
    # on the loopback ports the server config listens on (main_conf), as Apache serves them
    text = text.replace("203.0.113.10:80 ", "127.0.0.1:8080 ").replace("203.0.113.10:443 ", "127.0.0.1:8443 ")
    text = text.replace("203.0.113.10", "127.0.0.1")
    for cert in ("/opt/psa/var/certificates/scfQ7bX2mKp4Lw9Hd3Ra",):
        text = text.replace(cert, root + "/cert.pem")
    return text


def main_conf(root):
    """lighten's Plesk stand-in server config, moved under `root`, without the two Plesk
    modules Debian does not ship, including every domain's generated httpd.conf."""
    text = open(os.path.join(REPO, "templates/defaults/plesk.conf")).read()
    lines = []
    for line in text.splitlines():
        if any(m in line for m in ("mod_fcgid.so", "mod_sysenv.so", "mod_suexec.so")) or line.startswith("IncludeOptional"):
            continue
        line = line.replace('ServerRoot "/etc/apache2"', f'ServerRoot "{root}/etc/apache2"')
        line = line.replace("/var/run/apache2", root + "/run").replace("/var/log/apache2", root + "/run")
        line = line.replace("<Directory /var/www/>", f"<Directory {root}/var/www/>")
        line = line.replace("Listen 80", "Listen 127.0.0.1:8080").replace("Listen 443", "Listen 127.0.0.1:8443")
        lines.append(line)
    lines += [
        f"Mutex file:{root}/run default",
        "ServerName localhost",
        'LogFormat "%h %l %u %t \\"%r\\" %>s %O \\"%{Referer}i\\" \\"%{User-Agent}i\\"" plesklog',
        f"IncludeOptional {root}/var/www/vhosts/system/*/conf/httpd.conf",
    ]
    return "\n".join(lines) + "\n"


def generate(root, domains):
    """Writes the Plesk tree; returns the bytes of configuration and .htaccess written."""
    wp = open(os.path.join(PLESK, "var/www/vhosts/shop.example/httpdocs/.htaccess")).read()
    cache = open(os.path.join(REPO, "fixtures/wp-super-cache/var/www/html/wp-content/cache/.htaccess")).read()
    os.makedirs(os.path.join(root, "etc/apache2"))
    os.makedirs(os.path.join(root, "run"))
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "3650", "-subj", "/CN=bench.example",
         "-keyout", os.path.join(root, "cert.pem"), "-out", os.path.join(root, "cert.crt")],
        check=True, capture_output=True)
    with open(os.path.join(root, "cert.pem"), "a") as f:
        f.write(open(os.path.join(root, "cert.crt")).read())
    with open(os.path.join(root, "etc/apache2/apache2.conf"), "w") as f:
        f.write(main_conf(root))
    total = 0
    for i in range(domains):
        d = f"d{i:04d}.example"
        sysd = os.path.join(root, "var/www/vhosts/system", d)
        docroot = os.path.join(root, "var/www/vhosts", d, "httpdocs")
        for sub in ("conf", "logs", "pd", "statistics/webstat", "statistics/webstat-ssl", "statistics/ftpstat",
                    "statistics/anon_ftpstat"):
            os.makedirs(os.path.join(sysd, sub))
        os.makedirs(os.path.join(docroot, "wp-content/cache"))
        os.makedirs(os.path.join(root, "var/www/vhosts", d, "error_docs"))
        files = [
            (os.path.join(sysd, "conf/httpd.conf"), plesk_file("var/www/vhosts/system/shop.example/conf/httpd.conf", d, root)),
            (os.path.join(sysd, "conf/vhost.conf"), plesk_file("var/www/vhosts/system/shop.example/conf/vhost.conf", d, root)),
            (os.path.join(sysd, "conf/vhost_ssl.conf"), plesk_file("var/www/vhosts/system/shop.example/conf/vhost_ssl.conf", d, root)),
            (os.path.join(docroot, ".htaccess"), wp),
            (os.path.join(docroot, "wp-content/cache/.htaccess"), cache),
        ]
        for path, body in files:
            with open(path, "w") as f:
                f.write(body)
            total += len(body)
        with open(os.path.join(docroot, "index.php"), "w") as f:
            f.write("<?php echo 'hi';\n")
    return total


# The minimal variant: one plain HTTP vhost per domain, no TLS, fewer modules.
MINIMAL_DOMAIN = """#ATTENTION!
#
#DO NOT MODIFY THIS FILE BECAUSE IT WAS GENERATED AUTOMATICALLY,
#SO ALL YOUR CHANGES WILL BE LOST THE NEXT TIME THE FILE IS GENERATED.

<VirtualHost 127.0.0.1:8080 >
	ServerName "{d}"
	ServerAlias "www.{d}"
	ServerAlias "ipv4.{d}"
	UseCanonicalName Off

	CustomLog {root}/var/www/vhosts/system/{d}/logs/access_log combined
	ErrorLog "{root}/var/www/vhosts/system/{d}/logs/error_log"

	DocumentRoot "{root}/var/www/vhosts/{d}/httpdocs"

	<IfModule mod_suexec.c>
		SuexecUserGroup "{user}" "psacln"
	</IfModule>

	<IfModule mod_sysenv.c>
		SetSysEnv PP_VHOST_ID "{i:08d}-0000-4000-8000-000000000000"
	</IfModule>

	Alias "/plesk-stat" "{root}/var/www/vhosts/system/{d}/statistics"
	<Location  /plesk-stat/>
		Options +Indexes
	</Location>
	<Location  /plesk-stat/logs/>
		Require valid-user
	</Location>

	<Directory {root}/var/www/vhosts/{d}/httpdocs>
		<IfModule mod_proxy_fcgi.c>
			<Files ~ (\\.php$)>
				SetHandler proxy:unix:{root}/var/www/vhosts/system/{d}/php-fpm.sock|fcgi://127.0.0.1:9000
			</Files>
		</IfModule>
		Options -Includes -ExecCGI
	</Directory>

	<Directory "{root}/var/www/vhosts/system/{d}/statistics">
		AuthType Basic
		AuthName "Domain statistics"
		AuthUserFile "{root}/var/www/vhosts/system/{d}/pd/d..plesk-stat"
		require  valid-user
	</Directory>

	DirectoryIndex "index.html" "index.cgi" "index.pl" "index.php" "index.xhtml" "index.htm" "index.shtml"

	<Directory {root}/var/www/vhosts/{d}>
		AllowOverride AuthConfig FileInfo Indexes Limit Options=Indexes,SymLinksIfOwnerMatch,MultiViews,FollowSymLinks,ExecCGI,Includes,IncludesNOEXEC
	</Directory>
</VirtualHost>
"""

MINIMAL_MAIN = """ServerRoot "{root}/etc/apache2"
DefaultRuntimeDir {root}/run
PidFile {root}/run/apache2.pid
Mutex file:{root}/run default
ErrorLog {root}/run/error.log
ServerName localhost
LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so
LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
LoadModule authz_host_module /usr/lib/apache2/modules/mod_authz_host.so
LoadModule authz_user_module /usr/lib/apache2/modules/mod_authz_user.so
LoadModule authn_core_module /usr/lib/apache2/modules/mod_authn_core.so
LoadModule authn_file_module /usr/lib/apache2/modules/mod_authn_file.so
LoadModule auth_basic_module /usr/lib/apache2/modules/mod_auth_basic.so
LoadModule alias_module /usr/lib/apache2/modules/mod_alias.so
LoadModule dir_module /usr/lib/apache2/modules/mod_dir.so
LoadModule mime_module /usr/lib/apache2/modules/mod_mime.so
LoadModule rewrite_module /usr/lib/apache2/modules/mod_rewrite.so
LoadModule headers_module /usr/lib/apache2/modules/mod_headers.so
LoadModule expires_module /usr/lib/apache2/modules/mod_expires.so
LoadModule setenvif_module /usr/lib/apache2/modules/mod_setenvif.so
LoadModule proxy_module /usr/lib/apache2/modules/mod_proxy.so
LoadModule proxy_fcgi_module /usr/lib/apache2/modules/mod_proxy_fcgi.so
Listen 127.0.0.1:8080
LogFormat "%h %l %u %t \\"%r\\" %>s %O" combined
<Directory />
    AllowOverride None
    Require all denied
</Directory>
<Directory {root}/var/www/vhosts>
    Require all granted
</Directory>
IncludeOptional {root}/var/www/vhosts/system/*/conf/httpd.conf
"""


def generate_minimal(root, domains):
    wp = open(os.path.join(REPO, "fixtures/wp-super-cache/var/www/html/.htaccess")).read()
    cache = open(os.path.join(REPO, "fixtures/wp-super-cache/var/www/html/wp-content/cache/.htaccess")).read()
    os.makedirs(os.path.join(root, "etc/apache2"))
    os.makedirs(os.path.join(root, "run"))
    with open(os.path.join(root, "etc/apache2/apache2.conf"), "w") as f:
        f.write(MINIMAL_MAIN.format(root=root))
    total = 0
    for i in range(domains):
        d = f"d{i:04d}.example"
        sysd = os.path.join(root, "var/www/vhosts/system", d)
        os.makedirs(os.path.join(sysd, "conf"))
        os.makedirs(os.path.join(sysd, "logs"))
        docroot = os.path.join(root, "var/www/vhosts", d, "httpdocs")
        os.makedirs(os.path.join(docroot, "wp-content/cache"))
        conf = MINIMAL_DOMAIN.format(d=d, i=i, root=root, user=f"u{i:04d}")
        for path, body in [
            (os.path.join(sysd, "conf/httpd.conf"), conf),
            (os.path.join(docroot, ".htaccess"), wp),
            (os.path.join(docroot, "wp-content/cache/.htaccess"), cache),
            (os.path.join(docroot, "index.php"), "<?php echo 'hi';\n"),
        ]:
            with open(path, "w") as f:
                f.write(body)
            total += len(body)
    return total


def measure(cmd):
    """Runs cmd under /usr/bin/time to get its own peak RSS."""
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t0
    lines = p.stderr.decode(errors="replace").strip().splitlines()
    rss = int(lines[-1]) if lines and lines[-1].isdigit() else -1
    return wall, rss, p.returncode, "\n".join(lines[:-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--domains", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--lighten", default=os.path.join(REPO, "target/release/lighten"))
    ap.add_argument("--variant", choices=["plesk", "minimal"], default="plesk",
                    help="plesk: copies of the Plesk fixture's domain (HTTPS + HTTP vhosts); minimal: one HTTP vhost each")
    a = ap.parse_args()
    root = os.path.join(HERE, "out", f"{a.variant}-tree")
    if os.path.isdir(root):
        shutil.rmtree(root)
    size = generate(root, a.domains) if a.variant == "plesk" else generate_minimal(root, a.domains)
    print(f"tree ({a.variant}): {a.domains} domains, {size / 1e6:.2f} MB of configuration and .htaccess under {root}")
    main_conf = os.path.join(root, "etc/apache2/apache2.conf")
    cmds = {
        "apache2 -t": ["apache2", "-t", "-f", main_conf],
        "lighten inspect": [a.lighten, "--color", "never", "inspect", "--summary", main_conf],
    }
    # Warm the page cache once, and show that both accept the tree.
    for name, cmd in cmds.items():
        wall, rss, rc, err = measure(cmd)
        print(f"warm-up {name}: exit {rc}, {wall:.3f} s" + (f"\n  {err.strip()[:300]}" if rc not in (0, 1) else ""))
    results = {name: [] for name in cmds}
    for _ in range(a.runs):
        for name, cmd in cmds.items():
            results[name].append(measure(cmd))
    print(f"\n{'command':<18}{'median s':>10}{'min s':>9}{'max s':>9}{'peak RSS MiB':>14}   ({a.runs} alternated runs)")
    med = {}
    for name, rs in results.items():
        walls = [r[0] for r in rs]
        med[name] = statistics.median(walls)
        print(f"{name:<18}{med[name]:>10.3f}{min(walls):>9.3f}{max(walls):>9.3f}{max(r[1] for r in rs) / 1024:>14.1f}")
    ratio = med["apache2 -t"] / med["lighten inspect"]
    print(f"\nlighten inspect is {ratio:.2f}x the speed of apache2 -t on this tree (higher is faster)")


if __name__ == "__main__":
    sys.exit(main())
