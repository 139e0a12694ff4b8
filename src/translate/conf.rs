//! `lighttpd.conf`: listeners, virtual host selection, document roots, TLS, the PHP
//! backend, logs, and the mod_magnet hooks that run `lighten.lua`.

use super::{Code, Finding, Need, NeedKind, Options, Site};
use crate::config::Config;
use crate::model::mime::Handler;
use crate::model::{Model, Spanned};
use crate::source::Span;
use std::cell::RefCell;
use std::fmt::Write;

/// The lighttpd modules this emitter can list in `server.modules`, each with the Debian
/// package that provides it (`lighttpd`: built into `/usr/sbin/lighttpd` or shipped as a
/// plugin by the `lighttpd` package).  `scripts/setup.sh` installs every package named
/// here; a tidy test holds the table to the installed lighttpd and to setup.sh.
pub const MODULES: &[(&str, &str)] = &[
    ("mod_access", "lighttpd"),
    ("mod_magnet", "lighttpd-modules-lua"),
    ("mod_auth", "lighttpd"),
    ("mod_authn_file", "lighttpd"),
    ("mod_setenv", "lighttpd"),
    ("mod_fastcgi", "lighttpd"),
    ("mod_dirlisting", "lighttpd"),
    ("mod_accesslog", "lighttpd"),
    // the static lane's url.rewrite-if-not-file (translate::lane)
    ("mod_rewrite", "lighttpd"),
    ("mod_deflate", "lighttpd-mod-deflate"),
    ("mod_openssl", "lighttpd-mod-openssl"),
    // batch --fallback-apache (src/batch/fallback.rs)
    ("mod_proxy", "lighttpd"),
];

/// The Debian package that provides lighttpd module `name`, when it is one the emitter writes.
pub fn module_package(name: &str) -> Option<&'static str> {
    MODULES.iter().find(|(m, _)| *m == name).map(|(_, p)| *p)
}

/// The comment that opens a host's static lane: the vhost and its `file:line` (watch
/// finds a site's lane by it).
fn lane_title(model: &Model, cfg: &Config, h: Option<usize>) -> String {
    match h {
        Some(i) => comment(&format!(
            "vhost {} ({})",
            model.vhosts[i].server_name.as_deref().unwrap_or("no name"),
            cfg.sources.line_ref(model.vhosts[i].scope.at)
        )),
        None => "the main server".to_string(),
    }
}

/// A host's static lane (`translate::lane`), as lines of its block.
pub fn lane_block(l: &super::lane::Lane, title: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "    # The static lane of {title}, on while `lighten watch` runs:");
    out.push_str("    # files no rule, access check, header or handler of Apache's acts on, served by\n");
    let not = if l.excluded.is_empty() { String::new() } else { format!("; not: {}", l.excluded.join(", ")) };
    let _ = writeln!(out, "    # lighttpd alone. In it: {}{not}", comment(&l.folders.join(", ")));
    let _ = writeln!(out, "    $HTTP[\"url\"] =~ var.lighten_lane + {} {{", q(&l.url));
    // (GET alone: a string compare where GET or HEAD would be a regex match per request;
    // HEAD goes through the Lua, which answers it as Apache does)
    let _ = writeln!(out, "      $HTTP[\"request-method\"] == \"GET\" {{");
    let _ = writeln!(out, "        # a Host Apache takes");
    let _ = writeln!(out, "        $HTTP[\"host\"] =~ {} {{", q(super::lane::HOST));
    let _ = writeln!(out, "          magnet.attract-physical-path-to = ( )");
    let _ = writeln!(out, "          magnet.attract-response-start-to = ( )");
    let _ = writeln!(
        out,
        "          # an encoded byte left, or not a file: the Lua decides, from the request as sent"
    );
    let _ = writeln!(out, "          url.rewrite-once = ( \"%\" => \"/.lighten-lane-miss\" )");
    let _ = writeln!(out, "          url.rewrite-if-not-file = ( \"\" => \"/.lighten-lane-miss\" )");
    let types: Vec<String> =
        l.types.iter().map(|(e, t)| format!("{} => {}", q(&format!(".{e}")), q(t))).collect();
    let _ = writeln!(out, "          mimetype.assign = ( {} )", types.join(", "));
    out.push_str("        }\n      }\n    }\n");
    out
}

/// lighttpd.conf and what it relies on.
pub struct Written {
    pub text: String,
    pub findings: Vec<Finding>,
    pub needs: Vec<Need>,
    /// The host blocks written, in order: which host (1-based), the document root
    /// lighttpd gives it, the port of its `$SERVER["socket"]` (None: the top level), and
    /// whether it runs the stage scripts every host shares.
    pub blocks: Vec<HostBlock>,
    /// lua/ files in front of host blocks (`address_guard`): name and text.
    pub guards: Vec<(String, String)>,
}

/// A host block of lighttpd.conf and the hook scripts it names: the stage scripts every
/// host shares (lua/physical.lua and lua/response.lua, one Lua state per stage, which find
/// the host in lua/lighten_hosts.lua by the document root lighttpd's host selection gave
/// the request, and its port), or the host's own (vhostN.lua, responseN.lua) when the
/// document root and port do not tell it from another host.
#[derive(Clone, Debug)]
pub struct HostBlock {
    pub n: usize,
    pub docroot: String,
    pub port: Option<u16>,
    pub shared: bool,
}

/// What runs host `n` (1-based): hosts that run the same share a block's entry.
fn runner(site: &Site, n: usize) -> String {
    match site.tiers.get(n - 1) {
        Some(Ok(m)) => format!("compiled {m}"),
        _ => format!("interpreted {}", interpreted_as(site, n)),
    }
}

/// The host whose interpreter data host `n` runs: the first with the same.
fn interpreted_as(site: &Site, n: usize) -> usize {
    site.same_data.get(n - 1).copied().unwrap_or(n)
}

/// Whether each block can use the shared stage scripts: every block with the same
/// document root on the same port (or at the top level, on any) runs the same host.
fn resolve_blocks(site: &Site, blocks: &mut [HostBlock]) {
    let all = blocks.to_vec();
    for b in blocks.iter_mut() {
        let mine = runner(site, b.n);
        b.shared = all.iter().all(|o| {
            o.docroot != b.docroot
                || (o.port.is_some() && b.port.is_some() && o.port != b.port)
                || runner(site, o.n) == mine
        });
    }
}

/// A hook script's placeholder in the text, resolved once every block is known.
fn placeholder(stage: char, n: usize, port: Option<u16>) -> String {
    format!("\u{1}{stage}{n}:{}\u{1}", port.map_or(String::new(), |p| p.to_string()))
}

/// The hosts as the runtime numbers them (1-based): every vhost, then the main server,
/// which answers on addresses no vhost claims.
pub fn hosts(model: &Model) -> Vec<Option<usize>> {
    (0..model.vhosts.len()).map(Some).chain(std::iter::once(None)).collect()
}

/// `s` as a lighttpd string. Its tokenizer knows only `\"`; other backslashes stay as
/// written (so regexes keep theirs). It ends a string at the end of its line and reads
/// `\"` as a quote whatever comes before it, so a value cannot hold a line break or end in
/// a backslash: control characters become spaces, and a backslash before a quote or at the
/// end is left out (an AuthName `x\` would otherwise leave the string open and stop the
/// whole server from starting).
pub(crate) fn q(s: &str) -> String {
    let mut v: String = s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    while v.ends_with('\\') {
        v.pop();
    }
    while v.contains("\\\"") {
        v = v.replace("\\\"", "\"");
    }
    format!("\"{}\"", v.replace('"', "\\\""))
}

/// `s` for a one-line comment: lighttpd also ends a comment at a carriage return, so no
/// control character may reach one (Apache's text would otherwise become configuration).
pub fn comment(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}

fn lua_dir(opts: &Options) -> String {
    opts.out_dir.join("lua").to_string_lossy().into_owned()
}

/// The file in lua/ that names the output's modules (a digest of them), written after
/// them: what the hook scripts look at to reload them (`gate`).
pub const OUTPUT_FILE: &str = "lighten_output.lua";

/// lua/lighten_output.lua for an output whose modules have the digest `id`.
pub fn output_file(id: &str) -> String {
    format!(
        "-- Generated by lighten: the identity of the modules in this folder (a digest of them),\n\
         -- written after them. Each hook script looks at this file once every hundredth of a\n\
         -- second and, when it differs from what its Lua state loaded, reads the modules anew:\n\
         -- how `lighten watch` puts a new conversion in force without restarting lighttpd.\n\
         return \"{id}\"\n"
    )
}

/// The first lines of every hook script. mod_magnet keeps a hook's Lua state, and the
/// modules in its `package.loaded`, for as long as lighttpd runs; so once every hundredth
/// of a second (`lighty.c.hrtime()`, a vDSO clock read, no system call) a state reads
/// lua/lighten_output.lua and, when it changed, forgets lua/'s modules: the next
/// `require` reads each anew. The first request of a state does the same. The hook
/// scripts themselves never change.
fn gate(opts: &Options) -> String {
    format!(
        "local loaded = package.loaded\n\
         local s, ns = lighty.c.hrtime()\n\
         local tick = s * 100 + ns // 10000000\n\
         if loaded[\"lighten:tick\"] ~= tick then\n\
         \x20 loaded[\"lighten:tick\"] = tick\n\
         \x20 local dir = {dir}\n\
         \x20 if not package.path:find(dir, 1, true) then package.path = dir .. \";\" .. package.path end\n\
         \x20 local f = io.open({file})\n\
         \x20 local id = f and f:read(\"a\")\n\
         \x20 if f then f:close() end\n\
         \x20 if id and id ~= loaded[\"lighten:output\"] then\n\
         \x20   -- the first request of this state, or lighten watch wrote a new conversion (the\n\
         \x20   -- safety net keeps the table it replaces a moment: lighten_plans.lua)\n\
         \x20   if loaded.lighten_plans then loaded.lighten_plans.replaced(lighty.c) end\n\
         \x20   for name in pairs(loaded) do\n\
         \x20     if package.searchpath(name, dir) then loaded[name] = nil end\n\
         \x20   end\n\
         \x20   loaded[\"lighten:output\"] = id\n\
         \x20 end\n\
         end\n",
        file = super::lua::string(&format!("{}/{OUTPUT_FILE}", lua_dir(opts))),
        dir = super::lua::string(&format!("{}/?.lua", lua_dir(opts))),
    )
}

/// The script mod_magnet runs for vhost `n` at the physical-path stage.
pub fn entry_script(opts: &Options, n: usize) -> String {
    format!(
        "-- Generated by lighten: virtual host {n}, physical-path stage.\n\
         {gate}\
         return require(\"lighten\").physical(lighty, require(\"lighten_site\"), {n})\n",
        gate = gate(opts),
    )
}

/// The script mod_magnet runs when a response starts (mod_headers, mod_expires, the
/// status of an ErrorDocument answered by PHP).
pub fn response_script(opts: &Options, n: usize) -> String {
    format!(
        "-- Generated by lighten: virtual host {n}, response-start stage.\n\
         {gate}\
         return require(\"lighten\").response(lighty, require(\"lighten_site\"), {n})\n",
        gate = gate(opts),
    )
}

/// The script of one stage (`physical` or `response`) that every host block sharing it
/// names: it finds the request's host in lighten_hosts.lua by the document root of the
/// block lighttpd's host selection matched (and the port, where the root is on several),
/// so that all hosts of a stage run in one Lua state (mod_magnet keeps one per script).
pub fn stage_script(opts: &Options, stage: &str) -> String {
    let (what, missing) = if stage == "physical" {
        (
            "physical-path",
            concat!(
                "print(\"lighten: no host in lighten_hosts.lua has the document root \" .. tostring(root)\n",
                "  .. \" on port \" .. tostring(attr[\"request.server-port\"]) .. \" (refused, 500): run lighten convert again\")\n",
                "return 500\n"
            ),
        )
    } else {
        ("response-start", "return 0\n")
    };
    format!(
        "-- Generated by lighten: the {what} stage of every host in lighten_hosts.lua.\n\
         {gate}\
         local hosts = loaded.lighten_hosts or require(\"lighten_hosts\")\n\
         local attr = lighty.r.req_attr\n\
         local root = attr[\"physical.doc-root\"]\n\
         local run = hosts.{stage}[root]\n\
         if type(run) == \"table\" then run = run[attr[\"request.server-port\"]] end\n\
         if run then return run(lighty) end\n\
         {missing}",
        gate = gate(opts),
    )
}

/// The file in lua/ that lighttpd runs at the raw-URL stage of a password area.
pub const REALM_FILE: &str = "realm.lua";

/// lua/realm.lua: what Apache answers before it asks for a password. Apache refuses a
/// request-target with a fragment (`#`) and a malformed Host with 400 while reading the
/// request; lighttpd's mod_auth asks for the password (401) before the physical-path
/// stage runs, and with the fragment left out it would ask for the realm of the part
/// before the `#` (fixtures/regress/fragment-in-target). Every realm block names this
/// script, so those requests get Apache's 400 there too.
pub fn realm_script(opts: &Options) -> String {
    format!(
        "-- Generated by lighten: the raw-URL stage of the password areas (lighttpd.conf's\n\
         -- $HTTP[\"url\"] blocks with auth.require). Apache answers 400 for a '#' in the\n\
         -- request-target and for a Host it does not take, before it asks for a password;\n\
         -- lighttpd's mod_auth would ask first (401).\n\
         {gate}\
         local r = lighty.r\n\
         local target = r.req_attr[\"request.orig-uri\"]\n\
         if target and string.find(target, \"#\", 1, true) then return 400 end\n\
         local plans = loaded.lighten_plans or require(\"lighten_plans\")\n\
         if plans.host_refused(r.req_header[\"Host\"]) then return 400 end\n\
         return 0\n",
        gate = gate(opts),
    )
}

/// lighten_hosts.lua: for each stage, the host each shared block's document root (and
/// port) stands for, as the function that runs it; the host modules are loaded on a
/// host's first request.
pub fn hosts_module(model: &Model, cfg: &Config, site: &Site, blocks: &[HostBlock]) -> String {
    let hosts = hosts(model);
    // (in a Lua comment, which `\r` ends too: a ServerName's control characters go)
    let title = |n: usize| match hosts.get(n - 1).copied().flatten() {
        Some(i) => comment(&format!(
            "vhost {} ({})",
            model.vhosts[i].server_name.as_deref().unwrap_or("no name"),
            cfg.sources.line_ref(model.vhosts[i].scope.at)
        )),
        None => "the main server".to_string(),
    };
    let call = |n: usize, entry: &str| match site.tiers.get(n - 1) {
        Some(Ok(m)) => format!("compiled({}, \"{entry}\")", super::lua::string(m)),
        _ => format!("interpreted({}, \"{entry}\")", interpreted_as(site, n)),
    };
    let mut out = String::from(
        "-- Generated by lighten: the host of each request, as lighttpd.conf's host selection gave it\n\
         -- (the document root of the block that matched, and its port where one root is on\n\
         -- several): physical.lua and response.lua run every host named here, each stage in one\n\
         -- Lua state.\n\
         local loaded = package.loaded\n\n",
    );
    let compiled = blocks.iter().any(|b| b.shared && matches!(site.tiers.get(b.n - 1), Some(Ok(_))));
    let interpreted = blocks.iter().any(|b| b.shared && !matches!(site.tiers.get(b.n - 1), Some(Ok(_))));
    if compiled {
        out.push_str(
            "-- A compiled host: its module (lua/<host>.lua), run by lighten_core.lua.\n\
             local function compiled(module, entry)\n\
             \x20 return function(l)\n\
             \x20   local site = loaded[module]\n\
             \x20   if not site then\n\
             \x20     -- a cycle each time the heap grows a fifth (lighttpd's resident memory keeps\n\
             \x20     -- the high-water mark), and what loading left behind goes now\n\
             \x20     collectgarbage(\"setpause\", 120)\n\
             \x20     site = require(module)\n\
             \x20     collectgarbage()\n\
             \x20   end\n\
             \x20   return loaded.lighten_core[entry](l, site)\n\
             \x20 end\n\
             end\n\n",
        );
    }
    if interpreted {
        out.push_str(
            "-- A host lighten.lua interprets from lighten_site.lua.\n\
             local function interpreted(n, entry)\n\
             \x20 return function(l)\n\
             \x20   local site = loaded.lighten_site\n\
             \x20   if not site then\n\
             \x20     collectgarbage(\"setpause\", 120)\n\
             \x20     site = require(\"lighten_site\")\n\
             \x20     collectgarbage()\n\
             \x20   end\n\
             \x20   return loaded.lighten[entry](l, site, n)\n\
             \x20 end\n\
             end\n\n",
        );
    }
    out.push_str("return {\n");
    for (stage, entry) in [("physical", "physical"), ("response", "response")] {
        let _ = writeln!(out, "  {stage} = {{");
        let mut roots: Vec<&str> = Vec::new();
        for b in blocks.iter().filter(|b| b.shared) {
            if !roots.contains(&b.docroot.as_str()) {
                roots.push(&b.docroot);
            }
        }
        for root in roots {
            let mut here: Vec<&HostBlock> = blocks
                .iter()
                .filter(|b| b.shared && b.docroot == root)
                .filter(|b| stage == "physical" || site.response_hooks.get(b.n - 1).copied().unwrap_or(true))
                .collect();
            let mut ns: Vec<usize> = here.iter().map(|b| b.n).collect();
            ns.sort();
            ns.dedup();
            let mut seen = std::collections::BTreeSet::new();
            here.retain(|b| seen.insert(b.port));
            let Some(first) = here.first() else { continue };
            let one = here.iter().all(|b| runner(site, b.n) == runner(site, first.n));
            if one {
                let _ = writeln!(
                    out,
                    "    -- {}\n    [{}] = {},",
                    ns.iter().map(|&n| title(n)).collect::<Vec<_>>().join("; "),
                    super::lua::string(root),
                    call(first.n, entry)
                );
            } else {
                let _ = writeln!(out, "    [{}] = {{", super::lua::string(root));
                for b in &here {
                    let Some(port) = b.port else { continue };
                    let _ =
                        writeln!(out, "      -- {}\n      [\"{port}\"] = {},", title(b.n), call(b.n, entry));
                }
                let _ = writeln!(out, "    }},");
            }
        }
        let _ = writeln!(out, "  }},");
    }
    out.push_str("}\n");
    out
}

/// The physical-path script of a compiled host: its module, run by lighten_core.lua.
pub fn compiled_entry_script(opts: &Options, n: usize, module: &str) -> String {
    compiled_script(opts, n, module, "physical-path", "physical")
}

/// The response-start script of a compiled host that has mod_headers, mod_expires or
/// mod_deflate directives.
pub fn compiled_response_script(opts: &Options, n: usize, module: &str) -> String {
    compiled_script(opts, n, module, "response-start", "response")
}

/// A compiled host's script for one stage: after the first request the modules are
/// found in package.loaded (mod_magnet keeps each script's Lua state), so a request costs
/// a table lookup, not a search of package.path.
fn compiled_script(opts: &Options, n: usize, module: &str, stage: &str, entry: &str) -> String {
    format!(
        "-- Generated by lighten: host {n} ({module}.lua), {stage} stage.\n\
         {gate}\
         local site = loaded[{m}] or require({m})\n\
         return loaded.lighten_core.{entry}(lighty, site)\n",
        gate = gate(opts),
        m = super::lua::string(module),
    )
}

/// What runs host `n` (1-based), for the comment above its block.
fn tier_note(site: &Site, n: usize) -> String {
    match site.tiers.get(n - 1) {
        Some(Ok(m)) if site.tiers[..n - 1].iter().any(|t| t.as_ref().is_ok_and(|e| e == m)) => format!(
            ": compiled, lua/{m}.lua (shared with a host above that decides the same; its per-folder comments name that host's lines)"
        ),
        Some(Ok(m)) => format!(": compiled, lua/{m}.lua"),
        Some(Err(why)) if !why.is_empty() => format!(": interpreted by lighten.lua ({why})"),
        _ => String::new(),
    }
}

/// `magnet.attract-response-start-to` for host `n` (1-based), as lines at `indent`: an
/// empty list when it has no response-start work (which also undoes the main server's
/// default), else the hook; for a compiled host, for every response but those
/// lighten_core.lua sent whole at the physical-path stage, which it marks in uri.scheme
/// (a static file does not enter Lua a second time).
fn response_hook(site: &Site, n: usize, hook: &str, indent: &str) -> String {
    if !site.response_hooks.get(n - 1).copied().unwrap_or(true) {
        return format!("{indent}magnet.attract-response-start-to = ( )\n");
    }
    // (a compiled host's answer that the physical-path stage sent in full skips the hook:
    // `SENT_GATE`, once at the end of lighttpd.conf)
    format!("{indent}magnet.attract-response-start-to = ( {hook} )\n")
}

/// The end of lighttpd.conf when a compiled host has a response-start hook: a response
/// the physical-path stage answered in full (lighten_core.lua marks it with the scheme
/// `lighten-sent`) does not run it. One conditional for every host, not one a host:
/// lighttpd takes at most 4,096 conditionals in all (configfile-glue.c), and a server of
/// 1,000 accounts had 2,000 of these.
const SENT_GATE: &str = "\n# A response the physical-path stage sent in full (lighten_core.lua marks it with the\n\
    # scheme \"lighten-sent\") needs no response-start hook.\n\
    $HTTP[\"scheme\"] == \"lighten-sent\" { magnet.attract-response-start-to = ( ) }\n";

/// Whether host `n` (1-based) runs with lighttpd's follow-symlink off (`links`).
fn strict_links(site: &Site, n: usize) -> bool {
    site.links.get(n - 1).is_some_and(|l| l.strict)
}

/// `server.follow-symlink` for host `n` (1-based), with the Options lines that decide it.
fn follow_symlink_lines(site: &Site, n: usize, indent: &str, cfg: &Config) -> String {
    let Some(l) = site.links.get(n - 1) else { return String::new() };
    if !l.strict {
        return format!(
            "{indent}# every folder follows symbolic links (Options FollowSymLinks)\n{indent}server.follow-symlink = \"enable\"\n"
        );
    }
    let mut from: Vec<String> = l.causes.iter().take(3).map(|s| cfg.sources.line_ref(*s)).collect();
    if l.causes.len() > 3 {
        from.push(format!("{} more in report.md", l.causes.len() - 3));
    }
    format!(
        "{indent}# Options that refuse symbolic links or compare owners ({}):\n\
         {indent}# lighttpd refuses every link; the Lua hands it the targets of those Apache follows\n\
         {indent}server.follow-symlink = \"disable\"\n",
        comment(&from.join(", "))
    )
}

/// A vhost's listening ports: its addresses' ports, or every Listen port for `*`.
fn vhost_ports(model: &Model, i: Option<usize>, listen_ports: &[u16]) -> Vec<u16> {
    match i {
        None => listen_ports.to_vec(),
        Some(i) => {
            let mut ports = Vec::new();
            for a in &model.vhosts[i].addresses {
                match a.port {
                    Some(p) => ports.push(p),
                    None => ports.extend(listen_ports),
                }
            }
            ports.sort();
            ports.dedup();
            ports
        }
    }
}

/// Which of a port's vhosts lighttpd's Host selection chooses among, and on which server
/// addresses that choice is not Apache's.
///
/// Apache groups a port's vhosts by address: on a connection to an address some vhost
/// names (`<VirtualHost 127.0.0.1:80>`) it picks by name among those vhosts only; on any
/// other address among the `*:port` ones (and, when there are none, it answers as the main
/// server). lighttpd picks a `$HTTP["host"]` block by the Host header alone. A socket bound
/// to one address (Apache's `Listen 10.0.0.5:80`, or `--listen`, whose address stands for
/// every address of Apache's port, as the sandbox Apache of `lighten verify` has them all
/// on 127.0.0.1) sees one group: its vhosts are the choice, exactly. A socket bound to every
/// address gets the `*:port` group's choice (else the first address's), and the addresses
/// whose group differs are refused (403) by a guard script in front of every block: stricter,
/// never another vhost's answer.
struct AddressChoice {
    /// The hosts (as `hosts` numbers them, 0-based) Host selection chooses among, in order.
    chosen: Vec<usize>,
    /// The server addresses where Apache would choose among other vhosts.
    refused: Vec<String>,
    /// Whether addresses no vhost names are refused too (Apache answers there as the
    /// `*:port` vhosts or the main server, which the choice is not); then only these answer.
    others_refused: bool,
    answering: Vec<String>,
    /// The first vhost that names an address, for the report.
    at: Option<Span>,
}

/// The addresses a vhost's or Listen's host names, as lighttpd's `request.server-addr`
/// spells them (IPv6 compressed, without brackets; an IPv4-mapped one as IPv4): `None`
/// for a wildcard (`*`, `_default_`, `0.0.0.0`, `::`, which Apache takes as `*`), else
/// what getaddrinfo makes of it, as Apache resolves a `<VirtualHost>` address at startup
/// (`127.1`, `localhost`). Empty when it resolves to nothing.
fn addresses_of(h: &str) -> Option<Vec<String>> {
    use std::net::{IpAddr, ToSocketAddrs};
    if crate::model::vhost::is_wildcard_host(h) {
        return None;
    }
    let bare = h.trim_start_matches('[').trim_end_matches(']');
    let canon = |ip: IpAddr| -> IpAddr {
        match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            v4 => v4,
        }
    };
    let ips: Vec<IpAddr> = match bare.parse::<IpAddr>() {
        Ok(ip) => vec![canon(ip)],
        Err(_) => {
            (bare, 0).to_socket_addrs().map(|it| it.map(|a| canon(a.ip())).collect()).unwrap_or_default()
        }
    };
    if ips.iter().any(|ip| ip.is_unspecified()) {
        return None;
    }
    let mut out: Vec<String> = ips.iter().map(|ip| ip.to_string()).collect();
    out.dedup();
    Some(out)
}

fn address_choice(
    model: &Model,
    hosts: &[Option<usize>],
    on_port: &[usize],
    port: u16,
    bind: &str,
    listen_given: bool,
) -> AddressChoice {
    // The addresses the port's vhosts name, in the order they first appear, each with the
    // vhosts naming it; the vhosts naming a wildcard; those naming some address. (Each in
    // `on_port` order: a server of 1,000 accounts has as many vhosts on one address.)
    let mut ips: Vec<String> = Vec::new();
    let mut by_ip: std::collections::HashMap<String, Vec<usize>> = std::collections::HashMap::new();
    let mut wild: Vec<usize> = Vec::new();
    let mut specific: Vec<usize> = Vec::new();
    let mut unresolved = false;
    let mut at = None;
    let push = |v: &mut Vec<usize>, n: usize| {
        if v.last() != Some(&n) {
            v.push(n);
        }
    };
    for &n in on_port {
        let Some(i) = hosts[n] else { continue };
        for a in model.vhosts[i].addresses.iter().filter(|a| a.port.is_none_or(|p| p == port)) {
            match addresses_of(&a.host) {
                None => push(&mut wild, n),
                Some(list) => {
                    at.get_or_insert(a.at);
                    unresolved |= list.is_empty();
                    push(&mut specific, n);
                    for ip in list {
                        let g = by_ip.entry(ip).or_insert_with_key(|ip| {
                            ips.push(ip.clone());
                            Vec::new()
                        });
                        push(g, n);
                    }
                }
            }
        }
    }
    let whole = AddressChoice {
        chosen: on_port.to_vec(),
        refused: Vec::new(),
        others_refused: false,
        answering: Vec::new(),
        at,
    };
    if ips.is_empty() && !unresolved {
        return whole;
    }
    // The vhosts Apache chooses among on address `ip`, and on an address no vhost names.
    let group = |ip: &str| -> Vec<usize> { by_ip.get(ip).cloned().unwrap_or_default() };
    let others = if wild.is_empty() { vec![hosts.len() - 1] } else { wild.clone() };
    // A vhost address that resolves to nothing may be any address: nothing on the port is
    // answered (Apache would not start without resolving it either).
    let nowhere = |chosen: Vec<usize>| AddressChoice {
        chosen: if chosen.is_empty() { on_port.to_vec() } else { chosen },
        refused: Vec::new(),
        others_refused: true,
        answering: Vec::new(),
        at,
    };
    let bound = addresses_of(bind).map(|list| list.into_iter().next().unwrap_or_else(|| bind.to_string()));
    if let Some(bound) = bound {
        if unresolved {
            return nowhere(on_port.to_vec());
        }
        let g = group(&bound);
        let chosen = if !g.is_empty() {
            g
        } else if listen_given {
            // --listen's address, naming no vhost, stands for all of Apache's addresses of
            // the port (as the sandbox Apache of `lighten verify` has them all on 127.0.0.1).
            specific
        } else {
            others
        };
        return AddressChoice { chosen, ..whole };
    }
    let chosen = if !wild.is_empty() || ips.is_empty() { wild } else { group(&ips[0]) };
    if unresolved {
        return nowhere(chosen);
    }
    let (answering, refused) = ips.iter().cloned().partition(|ip| by_ip[ip] == chosen);
    let others_refused = others != chosen;
    AddressChoice { chosen, refused, others_refused, answering, at }
}

/// lua/addresses-ADDR-PORT.lua: the guard in front of a port's host blocks when lighttpd
/// listens on every address and Apache would choose among other vhosts on some of them.
fn address_guard(c: &AddressChoice, port: u16, at: &str) -> String {
    let list = |v: &[String]| {
        v.iter().map(|a| format!("[{}] = true", super::lua::string(a))).collect::<Vec<_>>().join(", ")
    };
    let (table, test) = if c.others_refused {
        (
            format!(
                "-- the addresses where Apache chooses as here\nlocal answers = {{ {} }}\n",
                list(&c.answering)
            ),
            "not answers[a]",
        )
    } else {
        (
            format!(
                "-- the addresses where Apache chooses among other vhosts\nlocal refused = {{ {} }}\n",
                list(&c.refused)
            ),
            "refused[a]",
        )
    };
    format!(
        "-- Generated by lighten: port {port} has IP-based virtual hosts beside others ({at}).\n\
         -- lighttpd picks a host block by the Host header alone, as Apache does among the\n\
         -- vhosts of one address; where Apache would choose among other vhosts, requests are\n\
         -- refused (403) rather than answered by the wrong one (report.md: vhost-address).\n\
         {table}\
         local a = lighty.r.req_attr[\"request.server-addr\"] or \"\"\n\
         if a:find(\"^::ffff:%d+%.\") then a = a:sub(8) end\n\
         if {test} then\n\
         \x20 print(\"lighten: a request on \" .. a .. \" port {port}: Apache picks among other virtual hosts there (refused, 403)\")\n\
         \x20 return 403\n\
         end\n\
         return 0\n"
    )
}

/// The first port Apache listens on (its canonical port for `%p` when nothing says more).
fn main_port(model: &Model) -> u16 {
    model.server.settings.host().listen.first().map(|l| l.port).unwrap_or(80)
}

/// `accesslog.filename` and `accesslog.format` for the main server (`host` None) or a
/// vhost's own CustomLog, each line starting with `indent`; `None` when it has none of its
/// own (a vhost then logs where the main server does, as in Apache).
#[allow(clippy::too_many_arguments)]
fn access_log(
    model: &Model,
    cfg: &Config,
    host: Option<usize>,
    port: u16,
    opts: &Options,
    rt: &str,
    indent: &str,
    findings: &mut Vec<Finding>,
    need: &dyn Fn(NeedKind, &str, Option<Span>),
) -> Option<String> {
    let main = model.server.settings.host();
    let (own, formats_here, name) = match host {
        None => (
            main.custom_logs.iter().collect::<Vec<_>>(),
            &main.log_formats,
            main.server_name.as_ref().map(|n| n.value.clone()),
        ),
        Some(i) => {
            let v = &model.vhosts[i];
            let here = v.scope.settings.host();
            let inherited: Vec<Span> = main.custom_logs.iter().map(|l| l.at).collect();
            let own: Vec<_> = here.custom_logs.iter().filter(|l| !inherited.contains(&l.at)).collect();
            (own, &here.log_formats, v.server_name.clone())
        }
    };
    let log = own.first()?;
    // a nickname of this scope or the server's (the last defined wins), else the format
    // itself; TransferLog: the last format without a nickname, else Common Log Format
    let formats: Vec<_> = formats_here.iter().chain(main.log_formats.iter()).rev().collect();
    let apache_format = if log.format.is_empty() {
        formats
            .iter()
            .find(|f| f.nickname.is_none())
            .map(|f| f.format.clone())
            .unwrap_or_else(|| "%h %l %u %t \"%r\" %>s %b".to_string())
    } else {
        formats
            .iter()
            .find(|f| f.nickname.as_deref() == Some(log.format.as_str()))
            .map_or_else(|| log.format.clone(), |f| f.format.clone())
    };
    let name = name.unwrap_or_else(|| "localhost".to_string());
    let f = super::logs::format(&apache_format, &name, port);
    let mut lost = f.lost.clone();
    if let Some(c) = &log.condition {
        lost.push(format!("the condition {c}: lighttpd writes every request"));
    }
    // lighten's stand-in defaults name no file of this server
    let apache_paths = opts.apache_log_paths && !cfg.sources.line_ref(log.at).starts_with("<lighten:");
    let file = super::logs::place(&log.target, rt, apache_paths);
    if !apache_paths && !log.target.starts_with('/') && !log.target.starts_with('|') {
        lost.push(format!("{} is relative to ServerRoot: written under the runtime folder", log.target));
    }
    if !lost.is_empty() {
        findings.push(Finding::approximated(Code::LogFormat, log.at, lost.join("; ")));
    }
    for other in own.iter().skip(1) {
        findings.push(Finding::approximated(
            Code::LogFormat,
            other.at,
            format!("lighttpd writes one access log per host: {} is not written", other.target),
        ));
    }
    if apache_paths
        && file.starts_with('/')
        && let Some(dir) = std::path::Path::new(&file).parent()
    {
        need(NeedKind::LogFolder, &dir.to_string_lossy(), Some(log.at));
    }
    Some(format!(
        "{indent}# access log: {} {}\n{indent}accesslog.filename = {}\n{indent}accesslog.format = {}\n",
        comment(&log.target),
        comment(if log.format.is_empty() { "(TransferLog)" } else { log.format.as_str() }),
        q(&file),
        q(&f.lighttpd)
    ))
}

/// Host names as a lighttpd regex on `$HTTP["host"]`: lower case, maybe a trailing dot
/// and `:port` (the Host as sent, which Apache's name matching ignores).
pub fn host_regex(names: &[String]) -> String {
    let alts: Vec<String> = names
        .iter()
        .map(|n| {
            let mut s = String::new();
            for c in n.to_ascii_lowercase().chars() {
                match c {
                    '*' => s.push_str(".*"),
                    '?' => s.push('.'),
                    c if c.is_ascii_alphanumeric() || c == '-' => s.push(c),
                    c => {
                        s.push('\\');
                        s.push(c);
                    }
                }
            }
            s
        })
        .collect();
    format!("^(?:{})\\.?(?::[0-9]+)?$", alts.join("|"))
}

pub fn write(model: &Model, cfg: &Config, opts: &Options, site: &mut Site) -> Written {
    let mut findings = Vec::new();
    let needs: RefCell<Vec<Need>> = RefCell::new(Vec::new());
    let need = |kind: NeedKind, path: &str, at: Option<Span>| {
        let at = at.map(|s| cfg.sources.line_ref(s)).unwrap_or_default();
        needs.borrow_mut().push(Need { kind, path: path.to_string(), at });
    };
    let mut out = String::new();
    let _ = writeln!(out, "# Generated by lighten from {}", comment(&cfg.input.path));
    let _ = writeln!(out, "# Run: lighttpd -D -f {}", opts.out_dir.join("lighttpd.conf").display());
    let compiled = site.tiers.iter().filter(|t| t.is_ok()).count();
    let how = if compiled == site.tiers.len() && compiled > 0 {
        "# Requests are decided by each host's compiled module (lua/<host>.lua, run by\n\
         # lighten_core.lua: Apache's phases, with this site's configuration merged per folder);"
    } else if compiled > 0 {
        "# Requests are decided by each host's compiled module (lua/<host>.lua, run by\n\
         # lighten_core.lua) or, for the hosts it names below, by lighten.lua over lighten_site.lua;"
    } else {
        "# Requests are decided by lighten.lua (Apache's request processing) over lighten_site.lua;"
    };
    let _ = writeln!(out, "{how}\n# see report.md for what was translated, approximated or refused.\n");

    let main = model.server.settings.host();
    let mut listen_ports: Vec<u16> = main.listen.iter().map(|l| l.port).collect();
    listen_ports.sort();
    listen_ports.dedup();
    if listen_ports.is_empty() {
        listen_ports.push(80);
    }
    let hosts = hosts(model);
    let https_port = |p: u16| -> bool {
        main.listen
            .iter()
            .any(|l| l.port == p && l.protocol.as_deref().is_some_and(|x| x.eq_ignore_ascii_case("https")))
            || hosts.iter().any(|h| {
                h.is_some_and(|i| {
                    model.vhosts[i].tls && vhost_ports(model, Some(i), &listen_ports).contains(&p)
                })
            })
    };
    // Where each Apache port listens now: `--listen PORT=ADDR:PORT` for that port; a plain
    // `--listen ADDR:PORT` takes the first plain-HTTP port (or the only one); a port
    // `--listen` does not cover is left out when --listen was given.
    let plain_target = listen_ports.iter().copied().find(|p| !https_port(*p)).unwrap_or(listen_ports[0]);
    // (an IPv6 address in brackets, as lighttpd's server.bind and $SERVER["socket"] take it)
    let bracketed =
        |a: &str| if a.contains(':') && !a.starts_with('[') { format!("[{a}]") } else { a.to_string() };
    let socket_for = |p: u16| -> Option<(String, u16)> {
        for (orig, addr, port) in &opts.listen {
            if *orig == Some(p) {
                return Some((bracketed(addr), *port));
            }
        }
        if !opts.listen.is_empty() {
            let plain = opts.listen.iter().find(|(o, _, _)| o.is_none())?;
            return (p == plain_target).then(|| (bracketed(&plain.1), plain.2));
        }
        let addr = main
            .listen
            .iter()
            .find(|l| l.port == p)
            .and_then(|l| l.address.clone())
            .unwrap_or_else(|| "0.0.0.0".into());
        Some((addr, p))
    };

    // Modules: lighttpd ignores the keys of a module that is not listed.
    let tls = listen_ports.iter().any(|p| https_port(*p));
    let mut modules = vec!["mod_access", "mod_magnet"];
    if uses_basic_auth(model) {
        // mod_auth asks for its password backend to be listed as well (1.4.69 warns that a
        // future release will not start otherwise).
        modules.extend(["mod_auth", "mod_authn_file", "mod_setenv"]);
    }
    modules.extend(["mod_fastcgi", "mod_dirlisting", "mod_accesslog"]);
    if site.lanes.iter().any(Option::is_some) {
        // (the static lane's url.rewrite-if-not-file)
        modules.push("mod_rewrite");
    }
    if !deflate_types(model, &mut Vec::new()).is_empty() {
        modules.push("mod_deflate");
    }
    if tls {
        modules.push("mod_openssl");
    }
    // Modules are checked by loading them (`lighttpd -tt`), not as needs.
    debug_assert!(modules.iter().all(|m| module_package(m).is_some()), "a module is not in conf::MODULES");
    let _ =
        writeln!(out, "server.modules = ( {} )", modules.iter().map(|m| q(m)).collect::<Vec<_>>().join(", "));
    let Some(first) = listen_ports.iter().find_map(|p| socket_for(*p)) else {
        findings.push(Finding::unsupported(
            Code::ListenUncovered,
            main.listen.first().map(|l| l.at).unwrap_or(model.server.at),
            "--listen covers none of Apache's ports".into(),
            "nothing listens",
        ));
        return Written {
            text: out,
            findings,
            needs: needs.into_inner(),
            blocks: Vec::new(),
            guards: Vec::new(),
        };
    };
    let _ = writeln!(out, "server.bind = {}", q(&first.0));
    let _ = writeln!(out, "server.port = {}", first.1);
    let rt = opts.runtime_dir.to_string_lossy().into_owned();
    let _ = writeln!(out, "server.pid-file = {}", q(&format!("{rt}/lighttpd.pid")));
    let _ = writeln!(out, "server.errorlog = {}", q(&format!("{rt}/error.log")));
    match access_log(model, cfg, None, main_port(model), opts, &rt, "", &mut findings, &need) {
        Some(lines) => out.push_str(&lines),
        None => {
            let _ = writeln!(out, "accesslog.filename = {}", q(&format!("{rt}/access.log")));
        }
    }
    let (user, group) = run_as(model);
    if let Some(u) = user {
        let _ = writeln!(out, "server.username = {}", q(&u.value));
    }
    if let Some(g) = group {
        let _ = writeln!(out, "server.groupname = {}", q(&g.value));
    }
    let main_root = main
        .document_root
        .as_ref()
        .map(|d| (opts.map_path)(&d.value))
        .unwrap_or_else(|| "/var/www/html".into());
    need(NeedKind::DocumentRoot, &main_root, main.document_root.as_ref().map(|d| d.span));
    let _ = writeln!(out, "server.document-root = {}", q(&main_root));
    let _ = writeln!(out, "# Apache's directory redirects are absolute URLs");
    let _ = writeln!(out, "server.feature-flags += ( \"server.absolute-dir-redirect\" => \"enable\" )");
    let _ = writeln!(
        out,
        "# The Host header as the client sent it (mod_rewrite's %{{HTTP_HOST}}): a port and a trailing dot\n\
         # stay (lighttpd still lower-cases it); the Lua refuses what Apache refuses (400)"
    );
    // (with a static lane, %2F also stays encoded in the request target, which the lanes
    // send back through the Lua: Apache refuses an encoded slash where lighttpd would
    // decode it)
    let slash =
        if site.lanes.iter().any(Option::is_some) { ", \"url-path-2f-decode\" => \"disable\"" } else { "" };
    let _ = writeln!(
        out,
        "server.http-parseopts = ( \"host-normalize\" => \"disable\", \"host-strict\" => \"disable\"{slash} )"
    );
    if site.lanes.iter().any(Option::is_some) {
        let _ = writeln!(
            out,
            "# The static lane (a block in each host below): files lighttpd serves alone, as Apache\n\
             # would, while `lighten watch` keeps this output in step; watch writes {out}/{w}\n\
             # (var.lighten_lane := \"\") when it starts and removes it when it stops. Otherwise the lane\n\
             # is off (\"(*FAIL)\" matches nothing) and every request goes through the Lua, whose guard\n\
             # refuses what an .htaccess written since the conversion governs.",
            w = super::lane::WATCHING,
            out = opts.out_dir.display()
        );
        let _ = writeln!(out, "var.lighten_lane = \"(*FAIL)\"");
        // (a pattern: no file matching it is no error)
        let pattern =
            format!("{}/{}", opts.out_dir.display(), super::lane::WATCHING.replacen(".conf", "*.conf", 1));
        let _ = writeln!(out, "include {}", q(&pattern));
    }
    let _ = writeln!(out, "# DirectoryIndex and Options Indexes are decided in the Lua");
    let _ = writeln!(out, "dir-listing.activate = \"enable\"");
    let top_strict = strict_links(site, hosts.len());
    if top_strict {
        out.push_str(&follow_symlink_lines(site, hosts.len(), "", cfg));
    }

    // mod_deflate: AddOutputFilterByType DEFLATE becomes lighttpd's mod_deflate for the
    // same types (server-wide, where Apache may limit it to some directories).
    let deflate = deflate_types(model, &mut findings);
    if !deflate.is_empty() {
        let _ = writeln!(out, "\n# AddOutputFilterByType DEFLATE");
        let _ = writeln!(
            out,
            "deflate.mimetypes = ( {} )",
            deflate.iter().map(|t| q(t)).collect::<Vec<_>>().join(", ")
        );
        let _ = writeln!(out, "deflate.allowed-encodings = ( \"gzip\", \"deflate\" )");
        let _ = writeln!(out, "# Apache's mod_deflate leaves bodies under 69 bytes alone");
        let _ = writeln!(out, "deflate.min-compress-size = 69");
    }

    // PHP: the extensions lighttpd hands to FastCGI when lighten.lua decided on PHP; each
    // host names its own backend below.
    let exts = php_extensions(model);
    let _ = writeln!(out, "\n# PHP runs where Apache runs it; the backend is set per host below");
    let _ = writeln!(
        out,
        "static-file.exclude-extensions = ( {} )",
        exts.iter().map(|e| q(e)).collect::<Vec<_>>().join(", ")
    );

    // Every request goes through lighten.lua: the main server's unless a block below
    // names a virtual host's.
    let lua = lua_dir(opts);
    let _ = writeln!(out, "\n# Nothing is served without Apache's decision: the main server's by default");
    let auth_findings: RefCell<Vec<Finding>> = RefCell::new(Vec::new());
    let blocks = RefCell::new(vec![HostBlock {
        n: hosts.len(),
        docroot: main_root.clone(),
        port: None,
        shared: false,
    }]);
    let _ = writeln!(out, "magnet.attract-physical-path-to = ( {} )", placeholder('P', hosts.len(), None));
    out.push_str(&response_hook(site, hosts.len(), &placeholder('R', hosts.len(), None), ""));
    let pool = |n: usize| site.pools.by_host.get(n).copied().flatten().map(|i| &site.pools.pools[i]);
    let refused = |n: usize| site.pools.refused.get(n).copied().unwrap_or(false);
    out.push_str(&php_block(
        model,
        None,
        hosts.len(),
        &exts,
        opts,
        pool(hosts.len() - 1),
        refused(hosts.len() - 1),
        "",
        &need,
    ));

    // Virtual hosts per listener.
    let _ = writeln!(
        out,
        "\n# Virtual hosts: Apache picks the first whose ServerName or ServerAlias matches the Host,\n# else the first one on the address."
    );
    let mut sockets = std::collections::BTreeSet::new();
    let mut guards: Vec<(String, String)> = Vec::new();
    for &port in &listen_ports {
        let Some((addr, lport)) = socket_for(port) else {
            let _ =
                writeln!(out, "# Apache's port {port} is not served here (--listen names no address for it)");
            continue;
        };
        if !sockets.insert((addr.clone(), lport)) {
            // Two of Apache's ports sent to one address: lighttpd would refuse the second
            // identical $SERVER["socket"] block, and only one set of hosts can answer there.
            findings.push(Finding::unsupported(
                Code::ListenShared,
                main.listen.iter().find(|l| l.port == port).map(|l| l.at).unwrap_or(model.server.at),
                format!(
                    "--listen sends Apache's port {port} to {addr}:{lport}, which another port already uses"
                ),
                "this port is not served",
            ));
            let _ = writeln!(
                out,
                "# Apache's port {port} is not served here ({addr}:{lport} serves another port)"
            );
            continue;
        }
        let mut on_port: Vec<usize> = hosts
            .iter()
            .enumerate()
            .filter(|(_, h)| h.is_some() && vhost_ports(model, **h, &listen_ports).contains(&port))
            .map(|(n, _)| n)
            .collect();
        if on_port.is_empty() {
            // No vhost on this address: the main server answers.
            on_port.push(hosts.len() - 1);
        }
        let choice = address_choice(model, &hosts, &on_port, port, &addr, !opts.listen.is_empty());
        let on_port = choice.chosen.clone();
        let guard = if choice.refused.is_empty() && !choice.others_refused {
            None
        } else {
            let at = choice.at.unwrap_or(model.server.at);
            let file = format!(
                "addresses-{}-{lport}.lua",
                addr.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect::<String>()
            );
            guards.push((file.clone(), address_guard(&choice, lport, &cfg.sources.line_ref(at))));
            let mut on: Vec<String> = choice.refused.clone();
            if choice.others_refused && choice.answering.is_empty() && choice.refused.is_empty() {
                on.push("every address (a vhost's address resolves to nothing here)".into());
            } else if choice.others_refused {
                on.push("any address no vhost names".into());
            }
            findings.push(Finding::approximated(
                Code::VhostAddress,
                at,
                format!(
                    "port {port}: lighttpd listens on every address and picks a vhost by the Host header alone; \
                     on {} Apache picks among other vhosts: refused (403) there",
                    on.join(", ")
                ),
            ));
            Some(q(&format!("{lua}/{file}")))
        };
        let section_start = out.len();
        let _ = writeln!(out, "$SERVER[\"socket\"] == {} {{", q(&format!("{addr}:{lport}")));
        if https_port(port) {
            let (cert, key) = certificate(model, &hosts, &on_port, opts, site, &mut findings, &need);
            let _ = writeln!(out, "  ssl.engine = \"enable\"");
            let _ = writeln!(out, "  ssl.pemfile = {}", q(&cert));
            if let Some(k) = key {
                let _ = writeln!(out, "  ssl.privkey = {}", q(&k));
            }
        }
        let block = |n: usize| -> String {
            let h = hosts[n];
            let docroot = match h {
                Some(i) => model.vhosts[i].document_root.clone(),
                None => main.document_root.as_ref().map(|d| d.value.clone()),
            }
            .map(|d| (opts.map_path)(&d))
            .unwrap_or_else(|| main_root.clone());
            let docroot_at = match h {
                Some(i) => model.vhosts[i].scope.settings.host().document_root.as_ref(),
                None => None,
            }
            .or(main.document_root.as_ref())
            .map(|d| d.span);
            need(NeedKind::DocumentRoot, &docroot, docroot_at);
            blocks.borrow_mut().push(HostBlock {
                n: n + 1,
                docroot: docroot.clone(),
                port: Some(lport),
                shared: false,
            });
            let php = php_block(model, h, n + 1, &exts, opts, pool(n), refused(n), "    ", &need);
            let links = if strict_links(site, n + 1) != top_strict {
                follow_symlink_lines(site, n + 1, "    ", cfg)
            } else {
                String::new()
            };
            let auth = super::realms::blocks(
                model,
                h,
                &docroot_apache(model, h),
                opts,
                &cfg.sources,
                &mut auth_findings.borrow_mut(),
                &need,
            );
            let log = match h {
                Some(_) => {
                    access_log(model, cfg, h, port, opts, &rt, "    ", &mut auth_findings.borrow_mut(), &need)
                        .unwrap_or_default()
                }
                None => String::new(),
            };
            // (not behind an address guard, which must run first)
            let lane = match (&guard, site.lanes.get(n)) {
                (None, Some(Some(l))) => lane_block(l, &lane_title(model, cfg, h)),
                _ => String::new(),
            };
            let guard = guard.as_ref().map(|g| format!("{g}, ")).unwrap_or_default();
            format!(
                "    # {}\n    server.document-root = {}\n    magnet.attract-physical-path-to = ( {guard}{} )\n{}{lane}{links}{php}{auth}{log}",
                match h {
                    Some(i) => comment(&format!(
                        "vhost {} ({}){}",
                        model.vhosts[i].server_name.as_deref().unwrap_or("no name"),
                        cfg.sources.line_ref(model.vhosts[i].scope.at),
                        tier_note(site, n + 1)
                    )),
                    None => format!("the main server{}", tier_note(site, n + 1)),
                },
                q(&docroot),
                placeholder('P', n + 1, Some(lport)),
                response_hook(site, n + 1, &placeholder('R', n + 1, Some(lport)), "    "),
            )
        };
        let mut first_cond = true;
        let mut conditions = std::collections::BTreeSet::new();
        // One vhost on the address answers every Host: no condition to write (it would
        // only repeat the block as its own `else`).
        let choices: &[usize] = if on_port.len() == 1 { &[] } else { &on_port };
        for &n in choices {
            let names: Vec<String> = match hosts[n] {
                Some(i) => {
                    let v = &model.vhosts[i];
                    v.server_name.iter().cloned().chain(v.aliases.iter().cloned()).collect()
                }
                None => Vec::new(),
            };
            if names.is_empty() {
                continue;
            }
            if !conditions.insert(host_regex(&names)) {
                // Apache takes the first vhost whose names match: this one is never chosen
                // by name on this address (lighttpd would refuse the repeated condition).
                if let Some(i) = hosts[n] {
                    let _ = writeln!(
                        out,
                        "  # vhost {} ({}) is never chosen here: an earlier vhost has the same names",
                        comment(model.vhosts[i].server_name.as_deref().unwrap_or("no name")),
                        comment(&cfg.sources.line_ref(model.vhosts[i].scope.at))
                    );
                }
                continue;
            }
            let _ = writeln!(
                out,
                "  {}$HTTP[\"host\"] =~ {} {{\n{}  }}",
                if first_cond { "" } else { "else " },
                q(&host_regex(&names)),
                block(n)
            );
            first_cond = false;
        }
        if let Some(&d) = on_port.first() {
            if first_cond {
                out.push_str(&block(d).replace("\n    ", "\n  ").replacen("    ", "  ", 1));
            } else {
                let _ = writeln!(out, "  else {{\n{}  }}", block(d));
            }
        }
        let _ = writeln!(out, "}}");
        // Apache's `Listen [::]:80` takes IPv4 connections too (Linux's default
        // net.ipv6.bindv6only=0); lighttpd's IPv6 socket is IPv6-only (server.v4mapped
        // off, which keeps client addresses as IPv4 for the access rules), so the same
        // hosts are served on the IPv4 wildcard as well.
        if (addr == "[::]" || addr == "::") && sockets.insert(("0.0.0.0".to_string(), lport)) {
            let section = out[section_start..].to_string();
            let header = format!("$SERVER[\"socket\"] == {} {{", q(&format!("{addr}:{lport}")));
            let _ = writeln!(out, "# the same hosts for IPv4 clients (Apache's [::] listener takes both)");
            out.push_str(&section.replacen(
                &header,
                &format!("$SERVER[\"socket\"] == {} {{", q(&format!("0.0.0.0:{lport}"))),
                1,
            ));
        }
    }
    if site
        .tiers
        .iter()
        .enumerate()
        .any(|(i, t)| t.is_ok() && site.response_hooks.get(i).copied().unwrap_or(true))
    {
        out.push_str(SENT_GATE);
    }
    // What the auth blocks approximate, once per line (a host may be on several addresses).
    for f in auth_findings.into_inner() {
        if !findings.iter().any(|g| g.at == f.at && format!("{:?}", g.fate) == format!("{:?}", f.fate)) {
            findings.push(f);
        }
    }
    let mut needs = needs.into_inner();
    needs.sort_by(|a, b| (a.kind, &a.path, &a.at).cmp(&(b.kind, &b.path, &b.at)));
    needs.dedup_by(|a, b| a.kind == b.kind && a.path == b.path);
    let mut blocks = blocks.into_inner();
    resolve_blocks(site, &mut blocks);
    // The placeholders, in one pass over the text (a server of 1,000 accounts has 2,000
    // blocks: a replace over the whole text per block was quadratic).
    let mut scripts: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    for b in &blocks {
        let (physical, response) = if b.shared {
            ("physical.lua".to_string(), "response.lua".to_string())
        } else {
            (format!("vhost{}.lua", b.n), format!("response{}.lua", b.n))
        };
        scripts.insert(placeholder('P', b.n, b.port), q(&format!("{lua}/{physical}")));
        scripts.insert(placeholder('R', b.n, b.port), q(&format!("{lua}/{response}")));
    }
    let mut resolved = String::with_capacity(out.len());
    let mut rest = out.as_str();
    while let Some(i) = rest.find('\u{1}') {
        let Some(j) = rest[i + 1..].find('\u{1}').map(|j| i + 1 + j) else { break };
        resolved.push_str(&rest[..i]);
        match scripts.get(&rest[i..=j]) {
            Some(v) => resolved.push_str(v),
            None => resolved.push_str(&rest[i..=j]),
        }
        rest = &rest[j + 1..];
    }
    resolved.push_str(rest);
    let out = resolved;
    debug_assert!(!out.contains('\u{1}'), "a hook script was left unresolved");
    Written { text: out, findings, needs, blocks, guards }
}

/// Whether any scope asks for Basic authentication with a password file.
/// Basic authentication against a password file: what lighttpd's mod_auth carries.
pub(crate) fn basic_auth(a: &crate::model::access::AccessConfig) -> bool {
    a.auth_user_file.is_some() && a.auth_type.as_ref().is_some_and(|t| t.value.eq_ignore_ascii_case("basic"))
}

/// The User and Group lighttpd drops to when started as root (Apache's, unless root:
/// lighttpd refuses to "set uid to 0").
pub fn run_as(model: &Model) -> (Option<&Spanned<String>>, Option<&Spanned<String>>) {
    let host = model.server.settings.host();
    (host.user.as_ref().filter(|u| u.value != "root"), host.group.as_ref().filter(|g| g.value != "root"))
}

/// Whether a section sets `AuthType Basic` (the password file may come from another).
pub(crate) fn asks_basic(a: &crate::model::access::AccessConfig) -> bool {
    a.auth_type.as_ref().is_some_and(|t| t.value.eq_ignore_ascii_case("basic"))
}

/// Whether any section of the model sets `AuthType Basic`: lighttpd.conf loads mod_auth
/// and the conversion writes lua/realm.lua.
pub fn uses_basic_auth(model: &Model) -> bool {
    let mut found = false;
    let mut check = |s: &crate::model::Scope| {
        visit_scopes(s, &mut |sc| {
            if sc.enabled && asks_basic(sc.settings.access()) {
                found = true;
            }
        })
    };
    check(&model.server);
    for v in &model.vhosts {
        check(&v.scope);
    }
    for h in model.htaccess.iter().filter_map(|h| h.scope.as_ref()) {
        check(h);
    }
    found
}

/// The first conditional that `conf` repeats among its siblings (lighttpd refuses such a
/// file: "Duplicate config variable in conditional"), as `line: condition`.  The emitter
/// never writes one; this is the check that holds it to that.
pub fn repeated_conditional(conf: &str) -> Option<String> {
    // One set of conditions per open block; `else` chains count as siblings.
    let mut levels: Vec<std::collections::BTreeSet<String>> = vec![Default::default()];
    for (n, line) in conf.lines().enumerate() {
        let t = line.trim();
        if t.starts_with('#') {
            continue;
        }
        if let Some(head) = t.strip_suffix('{') {
            let cond = head.trim().trim_start_matches("else").trim().to_string();
            if cond.starts_with('$') && !levels.last_mut()?.insert(cond.clone()) {
                return Some(format!("{}: {cond}", n + 1));
            }
            levels.push(Default::default());
        } else if t == "}" || t.starts_with("} ") {
            levels.pop();
            if levels.is_empty() {
                return Some(format!("{}: unbalanced }}", n + 1));
            }
        }
    }
    None
}

/// The certificate for a TLS listener: the first vhost's SSLCertificateFile (and key)
/// when it exists here, else the fallback the caller provides.
fn certificate(
    model: &Model,
    hosts: &[Option<usize>],
    on_port: &[usize],
    opts: &Options,
    site: &Site,
    findings: &mut Vec<Finding>,
    need: &dyn Fn(NeedKind, &str, Option<Span>),
) -> (String, Option<String>) {
    for &n in on_port {
        let Some(i) = hosts[n] else { continue };
        let tls = &model.vhosts[i].scope.settings.host().tls;
        if let Some(c) = &tls.certificate_file {
            let cert = (opts.map_path)(&c.value);
            let key = tls.certificate_key_file.as_ref().map(|k| (opts.map_path)(&k.value));
            if std::path::Path::new(&cert).exists() || opts.fallback_cert.is_none() {
                need(NeedKind::Certificate, &cert, Some(c.span));
                if let (Some(k), Some(ks)) = (&key, &tls.certificate_key_file) {
                    need(NeedKind::Key, k, Some(ks.span));
                }
                return (cert, key);
            }
            if let Some((fc, fk)) = &opts.fallback_cert {
                findings.push(Finding::approximated(
                    Code::StandInCertificate,
                    c.span,
                    format!("{} is not on this machine: a stand-in certificate is used", c.value),
                ));
                return (fc.clone(), Some(fk.clone()));
            }
        }
    }
    let _ = site;
    let (c, k) = match &opts.fallback_cert {
        Some((c, k)) => (c.clone(), k.clone()),
        None => {
            ("/etc/ssl/certs/ssl-cert-snakeoil.pem".into(), "/etc/ssl/private/ssl-cert-snakeoil.key".into())
        }
    };
    let at = on_port.iter().find_map(|&n| hosts[n]).map(|i| model.vhosts[i].scope.at);
    need(NeedKind::Certificate, &c, at);
    need(NeedKind::Key, &k, at);
    (c, Some(k))
}

/// The PHP backend of a host: the FastCGI address its handlers name (php-fpm), a
/// php-cgi lighttpd spawns for mod_php and mod_fcgid, or the caller's override.
/// `pool`: the socket of the host's own php-fpm pool (`fpm::plan`), for PHP that Apache ran
/// as the site's user.
#[allow(clippy::too_many_arguments)]
fn php_block(
    model: &Model,
    host: Option<usize>,
    n: usize,
    exts: &[String],
    opts: &Options,
    pool: Option<&super::fpm::Pool>,
    site_refused: bool,
    pad: &str,
    need: &dyn Fn(NeedKind, &str, Option<Span>),
) -> String {
    let (found, found_at) = match php_handler(model, host) {
        Some((h, at)) => (Some(h), Some(at)),
        None => (None, None),
    };
    if opts.php_backend.is_none() && site_refused {
        return format!(
            "{pad}# PHP refused: no php-fpm pool may run it as Apache ran it (report.md says why)\n\
             {pad}fastcgi.server = ( )\n"
        );
    }
    if let (None, Some(p)) = (&opts.php_backend, pool) {
        need(NeedKind::Program, &super::fpm::binary(), Some(p.at));
        need(NeedKind::PoolUser, &format!("{}:{}", p.user, p.group), Some(p.at));
        let entries: Vec<String> =
            exts.iter().map(|e| format!("{pad}  {} => (( \"socket\" => {} ))", q(e), q(&p.socket))).collect();
        return format!(
            "{pad}# PHP as {}:{}, as Apache ran it (SuexecUserGroup): php-fpm's pool {} (php-fpm/{}.conf)\n\
             {pad}fastcgi.server = (\n{}\n{pad})\n",
            p.user,
            p.group,
            p.name,
            p.name,
            entries.join(",\n")
        );
    }
    let server = match (&opts.php_backend, found) {
        (Some(b), Some(_)) if b.starts_with('/') => {
            need(NeedKind::Socket, b, found_at);
            format!("\"socket\" => {}", q(b))
        }
        (Some(b), Some(_)) => {
            let (h, p) = b.rsplit_once(':').unwrap_or((b.as_str(), "9000"));
            format!("\"host\" => {}, \"port\" => {p}", q(h))
        }
        (None, Some(Handler::FastCgi { socket: Some(sock), .. })) => {
            need(NeedKind::Socket, &sock, found_at);
            format!("\"socket\" => {}", q(&sock))
        }
        (None, Some(Handler::FastCgi { address: Some(a), .. })) => {
            let (h, p) = a.rsplit_once(':').unwrap_or((a.as_str(), "9000"));
            format!("\"host\" => {}, \"port\" => {p}", q(h))
        }
        (None, Some(_)) => {
            need(NeedKind::Program, "/usr/bin/php-cgi", found_at);
            format!(
                "\"bin-path\" => \"/usr/bin/php-cgi\", \"socket\" => {}, \"max-procs\" => 1",
                q(&format!("{}/php-{n}.sock", opts.runtime_dir.to_string_lossy()))
            )
        }
        (_, None) => return String::new(),
    };
    let entries: Vec<String> = exts.iter().map(|e| format!("{pad}  {} => (( {server} ))", q(e))).collect();
    format!("{pad}fastcgi.server = (\n{}\n{pad})\n", entries.join(",\n"))
}

/// The host's DocumentRoot as Apache names it.
fn docroot_apache(model: &Model, host: Option<usize>) -> String {
    match host {
        Some(i) => model.vhosts[i].document_root.clone(),
        None => model.server.settings.host().document_root.as_ref().map(|d| d.value.clone()),
    }
    .unwrap_or_else(|| "/var/www/html".into())
}

/// The URLs of a `<Files>` name (literal or glob) in the folder served at `rest` and under
/// it, then `tail` (PATH_INFO for an exception).
pub(crate) fn files_regex(rest: &str, name: &str, tail: &str) -> String {
    let glob = crate::translate::site::glob_to_regex(name, true);
    let glob = glob.trim_start_matches('^').trim_end_matches('$');
    let prefix = area_regex(&format!("{rest}/"));
    let prefix = prefix.trim_end_matches("(?:/|$)");
    format!("{prefix}/(?:.*/)?{glob}{tail}$")
}

/// The URL-paths a `<Location PATH>` matches, as `ap_location_walk` does: PATH as a
/// prefix, which must end at a slash unless PATH ends in one.
pub(crate) fn location_regex(path: &str) -> String {
    if path.ends_with('/') { format!("^{}", escape_re(path)) } else { area_regex(path) }
}

/// The URLs of a directory served at `url` (ending in `/`): the folder with or without
/// its slash and everything under it, never a sibling that shares the prefix.
pub(crate) fn area_regex(url: &str) -> String {
    format!("^{}(?:/|$)", escape_re(url.trim_end_matches('/')))
}

/// `s` as a literal in a lighttpd (PCRE) pattern.
fn escape_re(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\^$.|?*+()[]{}".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The first PHP backend a host's configuration names (server, vhost, its .htaccess files),
/// with where.
pub fn php_handler(model: &Model, host: Option<usize>) -> Option<(Handler, Span)> {
    let mut scopes: Vec<&crate::model::Scope> = vec![&model.server];
    if let Some(i) = host {
        scopes.push(&model.vhosts[i].scope);
    }
    scopes.extend(
        model.htaccess.iter().filter(|h| h.host_ids.contains(&host)).filter_map(|h| h.scope.as_ref()),
    );
    let mut found: Option<(Handler, Span)> = None;
    for s in scopes {
        visit_handlers(s, &mut |h, at| {
            if found.is_none() && h.is_backend() {
                found = Some((h.clone(), at));
            }
        });
    }
    found
}

fn visit_handlers(s: &crate::model::Scope, f: &mut dyn FnMut(&Handler, Span)) {
    for h in &s.settings.mime().handlers {
        f(&h.handler, h.at);
    }
    for c in &s.children {
        visit_handlers(c, f);
    }
}

/// The server's scope, each vhost's and each .htaccess file's: every directive the
/// configuration holds is in one of them or below.
fn top_scopes(model: &Model) -> impl Iterator<Item = &crate::model::Scope> {
    std::iter::once(&model.server)
        .chain(model.vhosts.iter().map(|v| &v.scope))
        .chain(model.htaccess.iter().filter_map(|h| h.scope.as_ref()))
}

/// mod_autoindex's `IndexIgnore` patterns for host `host` (a vhost, or the main server
/// for `None`): from the main server's scopes, the vhost's and every .htaccess the host
/// reads, as anchored Lua patterns over an entry's name. A listing that would show a name
/// one of them matches is refused (403) rather than shown (lighttpd's listing hides
/// dotfiles only). All of the host's for every folder of it, and the last segment of a
/// pattern with a `/`: a superset of what Apache hides in any one folder, so the
/// approximation only refuses more (`listing-look`). `IndexIgnoreReset` is left out the
/// same way.
pub fn index_ignore(model: &Model, host: Option<usize>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let add = |s: &crate::model::Scope| {
        s.walk(&mut |s| {
            for d in s.directives.iter().filter(|d| d.enabled && d.name.eq_ignore_ascii_case("IndexIgnore")) {
                for (_, _, w) in crate::model::rewrite::split_args(&d.args) {
                    let last = w.rsplit('/').next().unwrap_or(&w);
                    let p = glob_to_lua(last);
                    if !last.is_empty() && !out.contains(&p) {
                        out.push(p);
                    }
                }
            }
        })
    };
    std::iter::once(&model.server)
        .chain(host.map(|i| &model.vhosts[i].scope))
        .chain(model.htaccess.iter().filter(|h| h.host_ids.contains(&host)).filter_map(|h| h.scope.as_ref()))
        .for_each(add);
    out
}

/// [`index_ignore`] as the Lua list both runtimes read (`index_ignore` of a host's
/// data), or `None` when the host has no pattern.
pub fn index_ignore_list(model: &Model, host: Option<usize>) -> Option<super::lua::Value> {
    let patterns = index_ignore(model, host);
    if patterns.is_empty() {
        return None;
    }
    let mut list = super::lua::Value::table();
    for p in patterns {
        list.push(p);
    }
    Some(list)
}

/// An fnmatch wildcard (`*`, `?`, `[...]`, `[!...]`) as an anchored Lua pattern.
fn glob_to_lua(glob: &str) -> String {
    let mut out = String::from("^");
    let mut chars = glob.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' => out.push_str(".*"),
            '?' => out.push('.'),
            '[' => {
                let mut class = String::from("[");
                if matches!(chars.peek(), Some('!') | Some('^')) {
                    chars.next();
                    class.push('^');
                }
                let mut closed = false;
                for d in chars.by_ref() {
                    if d == ']' {
                        closed = true;
                        break;
                    }
                    if d.is_ascii_alphanumeric() || d == '-' {
                        class.push(d);
                    } else {
                        class.push('%');
                        class.push(d);
                    }
                }
                if closed {
                    class.push(']');
                    out.push_str(&class);
                } else {
                    // an unclosed '[' is a literal one to fnmatch: match anything from here
                    // (stricter)
                    out.push_str(".*");
                    return out;
                }
            }
            c if c.is_ascii_alphanumeric() => out.push(c),
            c if c.is_ascii() => {
                out.push('%');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push('$');
    out
}

/// The file extensions PHP may be handed under: every AddHandler extension of a PHP
/// handler, and the usual ones a `<FilesMatch>` SetHandler names.
pub fn php_extensions(model: &Model) -> Vec<String> {
    let mut exts = std::collections::BTreeSet::new();
    exts.insert(".php".to_string());
    let add = |s: &crate::model::Scope| {
        visit_scopes(s, &mut |sc| {
            for h in &sc.settings.mime().handlers {
                if !h.handler.is_backend() {
                    continue;
                }
                for e in &h.extensions {
                    exts.insert(format!(".{}", e.trim_start_matches('.').to_ascii_lowercase()));
                }
                if h.extensions.is_empty()
                    && let Some(crate::model::Matcher::Regex(re)) = &sc.matcher
                {
                    for cand in ["php", "phtml", "phar", "php3", "php4", "php5", "php7", "php8", "phps"] {
                        if crate::eval::dirconf_regex_matches(re, &format!("x.{cand}")) {
                            exts.insert(format!(".{cand}"));
                        }
                    }
                }
            }
        });
    };
    top_scopes(model).for_each(add);
    exts.into_iter().collect()
}

fn visit_scopes(s: &crate::model::Scope, f: &mut dyn FnMut(&crate::model::Scope)) {
    f(s);
    for c in &s.children {
        visit_scopes(c, f);
    }
}

/// The types AddOutputFilterByType DEFLATE names anywhere Apache reads it.
pub fn deflate_types(model: &Model, findings: &mut Vec<Finding>) -> Vec<String> {
    let mut types = std::collections::BTreeSet::new();
    let mut scopes: Vec<&crate::model::Scope> = vec![&model.server];
    scopes.extend(model.vhosts.iter().map(|v| &v.scope));
    scopes.extend(model.htaccess.iter().filter_map(|h| h.scope.as_ref()));
    for s in scopes {
        visit_scopes(s, &mut |sc| {
            if !sc.enabled {
                return;
            }
            for d in sc
                .directives
                .iter()
                .filter(|d| d.enabled && d.name.eq_ignore_ascii_case("AddOutputFilterByType"))
            {
                let words: Vec<String> = d
                    .args
                    .split_whitespace()
                    .map(|w| w.trim_matches('"').trim_matches('\'').to_string())
                    .collect();
                let Some((filters, list)) = words.split_first() else { continue };
                if filters.split(';').any(|f| f.eq_ignore_ascii_case("DEFLATE")) {
                    types.extend(list.iter().filter(|t| !t.is_empty()).cloned());
                    if !matches!(
                        sc.kind,
                        crate::model::ScopeKind::Server | crate::model::ScopeKind::VirtualHost
                    ) {
                        findings.push(Finding::approximated(
                            Code::CompressionScope,
                            d.at,
                            "lighttpd compresses these types everywhere, not only under this section".into(),
                        ));
                    }
                }
            }
        });
    }
    types.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::{comment, q};

    #[test]
    fn vhost_addresses_are_read_as_apache_resolves_them() {
        let one = |h: &str| super::addresses_of(h);
        assert_eq!(one("*"), None);
        assert_eq!(one("_default_"), None);
        assert_eq!(one("0.0.0.0"), None, "Apache takes 0.0.0.0 as *");
        assert_eq!(one("[::]"), None);
        assert_eq!(one("127.1"), Some(vec!["127.0.0.1".to_string()]));
        assert_eq!(one("[0:0:0:0:0:0:0:1]"), Some(vec!["::1".to_string()]));
        assert_eq!(one("[::ffff:127.0.0.2]"), Some(vec!["127.0.0.2".to_string()]));
        assert!(one("localhost").is_some_and(|l| l.contains(&"127.0.0.1".to_string())));
        assert_eq!(one("no-such-host.invalid"), Some(Vec::new()));
    }

    #[test]
    fn no_apache_text_ends_a_string_or_a_comment_early() {
        // lighttpd ends a string at its line's end and takes `\"` as a quote; a comment
        // ends at a carriage return as well as at a line feed
        assert_eq!(q("realm\\"), "\"realm\"");
        assert_eq!(q("a\\\"b"), "\"a\\\"b\"");
        assert_eq!(q("a\rinclude_shell \"id\"\nb"), "\"a include_shell \\\"id\\\" b\"");
        assert_eq!(q("C:\\path\\x"), "\"C:\\path\\x\"");
        assert_eq!(comment("x\rserver.tag = 1\n#"), "x server.tag = 1 #");
    }
}
