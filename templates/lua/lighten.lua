-- lighten.lua: Apache httpd's request processing, for lighttpd's mod_magnet.
--
-- Fixed text shipped by lighten (templates/lua/lighten.lua); the site's configuration is
-- data (lighten_site.lua, generated).  This is a port of lighten's evaluator (src/eval in
-- the lighten sources), which the project's tests hold against real Apache; the
-- converted site is held against Apache the same way.
--
-- For one request it follows what Apache 2.4 does:
--   1. the URL-path is decoded and normalised from the request as sent;
--   2. translate: server-context RewriteRules, then mod_alias, then the DocumentRoot;
--   3. the directory walk splits off PATH_INFO; the per-directory configuration is
--      merged (<Directory>, .htaccess, <DirectoryMatch>, <Files>, <Location>, <If>);
--   4. access control (Require, Order/Allow/Deny, Satisfy);
--   5. fixups: per-directory RewriteRules, per-directory Redirect, mod_dir's slash
--      redirect, then the internal redirect the rules asked for, else DirectoryIndex or
--      FallbackResource;
--   6. the handler: a file, PHP (handed back to lighttpd's mod_fastcgi), a listing (handed
--      to mod_dirlisting), or an error; a local ErrorDocument is one more round.
-- What the data marks as untranslatable answers 403: the site fails closed.

local re = require "lighten_re"
local rw = require "lighten_rewrite"

local M = {}

-- mod_magnet gives each run its own environment holding `lighty`; the entry points
-- receive it and keep it here for the helpers below.
local lighty

local byte, sub, find, lower, upper, format = string.byte, string.sub, string.find, string.lower, string.upper, string.format
local plans = require("lighten_plans")

local MAX_REDIRECTS = 10

---------------------------------------------------------------------------------------
-- small helpers

local function starts(s, p) return sub(s, 1, #p) == p end
local function ends(s, p) return p == "" or sub(s, -#p) == p end

local function trim_end_slashes(s)
  local e = #s
  while e > 0 and byte(s, e) == 47 do e = e - 1 end
  return sub(s, 1, e)
end

local function parent(p)
  local i = #p
  while i > 0 and byte(p, i) ~= 47 do i = i - 1 end
  if i == 0 then return "" end
  return sub(p, 1, i - 1)
end

local function basename(p)
  local t = trim_end_slashes(p)
  local i = #t
  while i > 0 and byte(t, i) ~= 47 do i = i - 1 end
  return sub(t, i + 1)
end

local function count_char(s, c)
  local n = 0
  for i = 1, #s do if byte(s, i) == c then n = n + 1 end end
  return n
end

local function split_host_port(h)
  if h == nil then return nil, nil end
  if sub(h, 1, 1) == "[" then
    local close = find(h, "]", 1, true)
    if close then
      local host = sub(h, 1, close)
      local rest = sub(h, close + 1)
      if sub(rest, 1, 1) == ":" then return host, sub(rest, 2) end
      return host, nil
    end
  end
  local c = find(h, ":", 1, true)
  if c then return sub(h, 1, c - 1), sub(h, c + 1) end
  return h, nil
end

local function hexval(c)
  if c >= 48 and c <= 57 then return c - 48 end
  if c >= 65 and c <= 70 then return c - 55 end
  if c >= 97 and c <= 102 then return c - 87 end
  return nil
end

-- ap_escape_uri(): letters, digits and $-_.+!*'(),:@&=/~ stay; the rest is %xx (lower case).
local SAFE = {}
for c in ("$-_.+!*'(),:@&=/~"):gmatch(".") do SAFE[byte(c)] = true end
local function escape_path(p)
  return (p:gsub("[^%w]", function(ch)
    local b = byte(ch)
    if SAFE[b] then return ch end
    return format("%%%02x", b)
  end))
end
M.escape_path = escape_path

-- A regex test on a compiled program; a program the translator could not compile is
-- `false` and makes the site fail closed.
local Untranslatable = {}
Untranslatable.__index = Untranslatable
local function refuse(why) error(setmetatable({ why = why }, Untranslatable), 2) end
local function rx(prog, subject)
  if prog == false then refuse("a regular expression lighten could not translate") end
  local caps, err = re.exec(prog, subject, 1)
  if caps == false then refuse("regex step budget exhausted: " .. tostring(err)) end
  return caps
end

---------------------------------------------------------------------------------------
-- the URL-path: ap_unescape_url(), dot segments, MergeSlashes

local function decode_path(raw)
  -- Most paths have nothing to decode and nothing to normalise.
  if not find(raw, "[%%]") and not find(raw, "//", 1, true) and not find(raw, "/%.") and byte(raw, 1) == 47 then
    return raw
  end
  -- Percent-decoding, a run of plain bytes at a time.
  local s = raw
  if find(raw, "%", 1, true) then
    local out, n, i = {}, 0, 1
    while true do
      local p = find(raw, "%", i, true)
      if not p then
        n = n + 1
        out[n] = sub(raw, i)
        break
      end
      n = n + 1
      out[n] = sub(raw, i, p - 1)
      local h, l = hexval(byte(raw, p + 1) or 0), hexval(byte(raw, p + 2) or 0)
      if h == nil or l == nil then return nil, 400 end
      local v = h * 16 + l
      if v == 47 or v == 0 then return nil, 404 end
      n = n + 1
      out[n] = string.char(v)
      i = p + 3
    end
    s = table.concat(out, "", 1, n)
  end
  if sub(s, 1, 1) ~= "/" then return nil, 400 end
  local p, above = plans.remove_dot_segments(s)
  if above then return nil, 400 end
  return p
end
M.decode_path = decode_path

-- The URL of an internal redirect: a space and `?` stay encoded for the next round; a
-- `%` is decoded again there, as Apache decodes the new URL again (src/eval reencode).
local function reencode(p)
  return (p:gsub("[ ?]", { [" "] = "%20", ["?"] = "%3f" }))
end

---------------------------------------------------------------------------------------
-- the filesystem

-- What the evaluation in progress has read (see "the decision cache" at M.physical).
local reads

local function stat(path)
  local st = lighty.c.stat(path)
  local kind, size, exec = "missing", 0, false
  if st then
    kind = st.is_file and "file" or (st.is_dir and "dir" or "other")
    size, exec = st.st_size, (st.st_mode & 73) ~= 0
  end
  if reads then plans.saw(reads, path, kind .. " " .. size .. (exec and " x" or "")) end
  return kind, size, exec
end
M.stat = stat

-- What the decision cache checks of a path: its kind, size and executable bit.
local function fact_of(path)
  local kind, size, exec = stat(path)
  return kind .. " " .. size .. (exec and " x" or "")
end

-- Apache's directory walk: the longest prefix that is a directory, then the next
-- component as the filename, the rest as PATH_INFO.
local function walk(path)
  local kind = stat(path)
  if kind ~= "missing" and not (kind == "file" and ends(path, "/")) then
    return path, nil, kind
  end
  local segs = {}
  for seg in sub(path, 2):gmatch("([^/]*)/?") do segs[#segs + 1] = seg end
  -- gmatch above yields a trailing empty capture; rebuild the segments exactly.
  segs = {}
  local start = 2
  while true do
    local slash = find(path, "/", start, true)
    if slash then
      segs[#segs + 1] = sub(path, start, slash - 1)
      start = slash + 1
    else
      segs[#segs + 1] = sub(path, start)
      break
    end
  end
  local cur = ""
  for i, seg in ipairs(segs) do
    cur = cur .. "/" .. seg
    local k = stat(cur)
    if not (k == "dir" and i < #segs) then
      local rest = {}
      for j = i + 1, #segs do rest[#rest + 1] = "/" .. segs[j] end
      local info = #rest > 0 and table.concat(rest) or nil
      return cur, info, k
    end
  end
  return path, nil, kind
end
M.walk = walk

-- Symbolic links (the vhost's `links`, found at conversion): lighten_plans.lua.
local through_links = plans.through_links

-- Whether Apache's directory walk meets a name longer than the filesystem takes (255
-- bytes) while every name before it is a directory: ENAMETOOLONG, which Apache answers
-- with 403 before any .htaccess or access rule is read (lighty.c.stat only says nil).
-- Only a path that has such a name costs a stat per folder before it.
local LONG_NAME = "[^/]" .. string.rep("[^/]", 255)
local function name_too_long(path)
  local long = find(path, LONG_NAME)
  if not long then return false end
  local start = 2
  while true do
    local slash = find(path, "/", start, true)
    if not slash or slash >= long then return true end
    if stat(sub(path, 1, slash - 1)) ~= "dir" then return false end
    start = slash + 1
  end
end

---------------------------------------------------------------------------------------
-- IP addresses (Require ip, Allow from)

local function parse_v4(s)
  local a, b, c, d = s:match("^(%d+)%.(%d+)%.(%d+)%.(%d+)$")
  if not a then return nil end
  a, b, c, d = tonumber(a), tonumber(b), tonumber(c), tonumber(d)
  if a > 255 or b > 255 or c > 255 or d > 255 then return nil end
  return ((a * 256 + b) * 256 + c) * 256 + d
end

local function parse_v6(s)
  s = s:gsub("^%[", ""):gsub("%]$", "")
  if not find(s, ":", 1, true) then return nil end
  local head, tail = s, nil
  local dc = find(s, "::", 1, true)
  if dc then head, tail = sub(s, 1, dc - 1), sub(s, dc + 2) end
  local function groups(part)
    local g = {}
    if part == "" then return g end
    for x in (part .. ":"):gmatch("([^:]*):") do
      if x:find("%.") then
        local v4 = parse_v4(x)
        if not v4 then return nil end
        g[#g + 1] = v4 // 65536
        g[#g + 1] = v4 % 65536
      else
        local v = tonumber(x, 16)
        if not v or #x > 4 then return nil end
        g[#g + 1] = v
      end
    end
    return g
  end
  local h = groups(head)
  if not h then return nil end
  local t = tail and groups(tail) or {}
  if not t then return nil end
  local all = {}
  for _, v in ipairs(h) do all[#all + 1] = v end
  if tail then for _ = 1, 8 - #h - #t do all[#all + 1] = 0 end end
  for _, v in ipairs(t) do all[#all + 1] = v end
  if #all ~= 8 then return nil end
  return all
end

local function ip_matches(spec, ip)
  local net, bits = spec:match("^(.-)/(.*)$")
  if net then
    local n4, i4 = parse_v4(net), parse_v4(ip)
    if n4 and i4 then
      -- (the translation writes a network as a.b.c.d/m.m.m.m; a mask may have holes, as
      -- APR takes it)
      local m = parse_v4(bits)
      if not m then
        local prefix = tonumber(bits)
        if not prefix then return false end
        if prefix > 32 then prefix = 32 end
        m = prefix == 0 and 0 or ((0xffffffff << (32 - prefix)) & 0xffffffff)
      end
      return (n4 & m) == (i4 & m)
    end
    local n6, i6 = parse_v6(net), parse_v6(ip)
    if n6 and i6 then
      local prefix = tonumber(bits)
      if not prefix then return false end
      for g = 1, 8 do
        local take = math.max(0, math.min(16, prefix - (g - 1) * 16))
        local m = take == 0 and 0 or ((0xffff << (16 - take)) & 0xffff)
        if (n6[g] & m) ~= (i6[g] & m) then return false end
      end
      return true
    end
    return false
  end
  local e4, i4 = parse_v4(spec), parse_v4(ip)
  if e4 then return e4 == i4 end
  local e6, i6 = parse_v6(spec), parse_v6(ip)
  if e6 then
    if not i6 then return false end
    for g = 1, 8 do if e6[g] ~= i6[g] then return false end end
    return true
  end
  -- a partial IPv4 address: whole octets
  if i4 then
    local parts = {}
    for p in (spec:gsub("%.$", "")):gmatch("[^.]+") do parts[#parts + 1] = p end
    if #parts >= 4 or #parts == 0 then return false end
    local octets = { (i4 >> 24) & 255, (i4 >> 16) & 255, (i4 >> 8) & 255, i4 & 255 }
    for k, p in ipairs(parts) do
      local v = p:match("^%d+$") and tonumber(p)
      if not v or v > 255 or v ~= octets[k] then return false end
    end
    return true
  end
  return false
end
M.ip_matches = ip_matches

local function is_loopback(ip)
  local v4 = parse_v4(ip)
  if v4 then return (v4 >> 24) == 127 end
  local v6 = parse_v6(ip)
  if v6 then
    for g = 1, 7 do if v6[g] ~= 0 then return false end end
    return v6[8] == 1
  end
  return false
end

---------------------------------------------------------------------------------------
-- the request context

local Ctx = {}
Ctx.__index = Ctx

local function note(cx, text)
  if cx.trace then cx.trace[#cx.trace + 1] = { depth = 0, text = text } end
end

function Ctx:header(name)
  local v = self.headers[name]
  if v == nil or v == "" then return nil end
  return v
end

function Ctx:host_name()
  local h = self:header("Host")
  if not h then return "" end
  -- Apache's r->hostname: without the port and one trailing dot, in lower case
  local host = lower(split_host_port(h) or "")
  if sub(host, -1) == "." then host = sub(host, 1, -2) end
  return host
end

function Ctx:docroot()
  local d = self.v.docroot_trimmed
  if not d then
    d = trim_end_slashes(self.v.docroot or "/var/www/html")
    self.v.docroot_trimmed = d
  end
  return d
end

function Ctx:server_name()
  if self.sn then return self.sn end
  self.sn = self:server_name_uncached()
  return self.sn
end

function Ctx:server_name_uncached()
  local host = self:host_name()
  if self.v.canonical or host == "" then return self.v.name or "localhost" end
  return host
end

function Ctx:server_port()
  local _, port = split_host_port(self:header("Host"))
  local p = port and tonumber(port)
  if p then return p end
  return self.https and 443 or 80
end

function Ctx:self_url_prefix()
  local scheme = self.https and "https" or "http"
  local port, default = self:server_port(), (self.https and 443 or 80)
  if port == default then return scheme .. "://" .. self:server_name() end
  return scheme .. "://" .. self:server_name() .. ":" .. port
end

-- %{VAR} for mod_rewrite and ap_expr.
local HEADER_VARS = {
  HTTP_HOST = "Host", HTTP_USER_AGENT = "User-Agent", HTTP_REFERER = "Referer", HTTP_COOKIE = "Cookie",
  HTTP_FORWARDED = "Forwarded", HTTP_PROXY_CONNECTION = "Proxy-Connection", HTTP_ACCEPT = "Accept",
}

-- A request header a RewriteCond reads: when the request has it, Apache varies on it
-- (lookup_header(); never on Host).
function Ctx:read_header(h)
  local v = self:header(h)
  -- (ap_expr varies on a header it reads even when the request lacks it: vary_absent)
  if (v or self.vary_absent) and self.vary_cond and lower(h) ~= "host" then
    self.vary_cond[#self.vary_cond + 1] = h
  end
  return v or ""
end

function Ctx:add_vary(names)
  self.vary = self.vary or {}
  for _, n in ipairs(names) do
    local dup = false
    for _, m in ipairs(self.vary) do if lower(m) == lower(n) then dup = true end end
    if not dup then self.vary[#self.vary + 1] = n end
  end
end

local TIME_FMT = {
  TIME_YEAR = function(d) return format("%04d", d.year) end,
  TIME_MON = function(d) return format("%02d", d.month) end,
  TIME_DAY = function(d) return format("%02d", d.day) end,
  TIME_HOUR = function(d) return format("%02d", d.hour) end,
  TIME_MIN = function(d) return format("%02d", d.min) end,
  TIME_SEC = function(d) return format("%02d", d.sec) end,
  TIME_WDAY = function(d) return tostring(d.wday - 1) end,
  TIME = function(d) return format("%04d%02d%02d%02d%02d%02d", d.year, d.month, d.day, d.hour, d.min, d.sec) end,
}

-- Server variables by name (one table lookup per variable, as mod_rewrite's switch).
local VARS = {
  REQUEST_METHOD = function(cx) return cx.method end,
  REQUEST_SCHEME = function(cx) return cx.https and "https" or "http" end,
  REQUEST_URI = function(cx) return cx.uri end,
  REQUEST_FILENAME = function(cx) return cx.filename end,
  SCRIPT_FILENAME = function(cx) return cx.filename end,
  QUERY_STRING = function(cx) return cx.args or "" end,
  THE_REQUEST = function(cx) return cx.orig_method .. " " .. cx.target .. " " .. plans.protocol(lighty) end,
  HTTPS = function(cx) return cx.https and "on" or "off" end,
  SERVER_NAME = function(cx) return cx:server_name() end,
  SERVER_PORT = function(cx) return tostring(cx:server_port()) end,
  SERVER_ADDR = function(cx) return cx.server_addr end,
  SERVER_PROTOCOL = function() return plans.protocol(lighty) end,
  REMOTE_PORT = function()
    if reads then reads.no = true end
    return tostring(lighty.r.req_attr["request.remote-port"] or "")
  end,
  CONN_REMOTE_ADDR = function(cx) return cx.remote end,
  SERVER_ADMIN = function(cx) return cx.v.server_admin or "" end,
  -- (ap_expr's: the URL-path of the document, and whether the client is on IPv6)
  DOCUMENT_URI = function(cx) return cx.uri end,
  IPV6 = function(cx) return find(cx.remote, ":", 1, true) and "on" or "off" end,
  SERVER_SOFTWARE = function() return "Apache" end,
  DOCUMENT_ROOT = function(cx) return cx:docroot() end,
  CONTEXT_DOCUMENT_ROOT = function(cx) return cx:docroot() end,
  CONTEXT_PREFIX = function() return "" end,
  REMOTE_ADDR = function(cx) return cx.remote end,
  REMOTE_HOST = function(cx) return cx.remote end,
  PATH_INFO = function(cx) return cx.path_info or "" end,
  IS_SUBREQ = function() return "false" end,
  API_VERSION = function() return "20120211:139" end,
  REMOTE_USER = function(cx) return cx.user or "" end,
  REMOTE_IDENT = function() return "" end,
  AUTH_TYPE = function(cx) return cx.user and "Basic" or "" end,
  -- r->content_type: the response's type where mod_headers reads it (apply_headers).
  CONTENT_TYPE = function(cx) return cx.content_type or "" end,
}
for name, f in pairs(TIME_FMT) do
  VARS[name] = function()
    if reads then reads.no = true end
    return f(os.date("*t", os.time()))
  end
end

function Ctx:var(name)
  local f = VARS[name]
  if f then return f(self) end
  local h = HEADER_VARS[name]
  if h then return self:read_header(h) end
  -- HTTP:Name and ENV:NAME
  if byte(name, 5) == 58 and sub(name, 1, 4) == "HTTP" then return self:read_header(sub(name, 6)) end
  if byte(name, 4) == 58 and sub(name, 1, 3) == "ENV" then return plans.env_get(self.env, sub(name, 5)) or "" end
  -- (any other name is empty to mod_rewrite: only %{ENV:name} reads the environment)
  return ""
end

-- RewriteMap lookups: txt/rnd maps were read at conversion time; int: maps here.
function Ctx:map(name, key)
  local m = self.maps[name]
  if not m then return nil end
  if m.kind == "int" then
    if m.source == "toupper" then return upper(key) end
    if m.source == "tolower" then return lower(key) end
    if m.source == "escape" then return escape_path(key) end
    if m.source == "unescape" then
      local d = decode_path("/" .. key)
      return d and sub(d, 2) or key
    end
    return nil
  end
  if m.kind == "txt" then return m.entries[key] end
  refuse("RewriteMap " .. name .. " (" .. tostring(m.kind) .. ":)")
end

function Ctx:test_file(kind, path)
  local k, size, exec = stat(path)
  if kind == "file-exists" or kind == "lookup-file" then return k == "file" end
  if kind == "file-size" then return k == "file" and size > 0 end
  if kind == "file-dir" then return k == "dir" end
  if kind == "file-executable" then return k ~= "missing" and exec end
  if kind == "lookup-url" then return stat(self:docroot() .. path) ~= "missing" end
  -- -l: lighttpd's stat follows links; the links found at conversion time decide.
  if kind == "file-link" then return self.site.symlinks[trim_end_slashes(path)] == true end
  refuse("the file test " .. tostring(kind))
end

function Ctx:is_self(url)
  local scheme, rest = url:match("^([%a][%w+.-]*)://(.*)$")
  if not scheme then return nil end
  local slash = find(rest, "/", 1, true)
  local hostport, path = rest, "/"
  if slash then hostport, path = sub(rest, 1, slash - 1), sub(rest, slash) end
  local host, port = split_host_port(hostport)
  local p = tonumber(port or "") or (lower(scheme) == "https" and 443 or 80)
  if host and lower(host) == lower(self:server_name()) and p == self:server_port() then return path end
  return nil
end

function Ctx:self_url() return self:self_url_prefix() end

function Ctx:set_env(name, value) plans.env_set(self.env, name, value) end

function Ctx:expr_cond(cond)
  local v = cond.expr(self)
  if v == nil then refuse("an ap_expr condition it cannot decide") end
  return v
end

---------------------------------------------------------------------------------------
-- per-directory configuration (dirconf)

local OPT = { indexes = 1, includes = 2, followsymlinks = 4, execcgi = 8, includesnoexec = 16,
  symlinksifownermatch = 32, multiviews = 64 }
OPT.all = OPT.indexes | OPT.includes | OPT.followsymlinks | OPT.execcgi

local function new_dirconf()
  return {
    rewrite = nil, authz = nil, legacy = nil, auth_type = nil,
    options = OPT.followsymlinks, index = nil, directory_slash = true, fallback = nil,
    error_docs = {}, set_handler = nil, add_handlers = {}, force_type = nil,
    redirects = {}, env = {}, setenv = {}, headers = {}, expires = nil, types = {}, encodings = {}, charsets = {},
    default_charset = nil, file_etag = nil, ifs = {},
  }
end

-- A method as Apache numbers it: HEAD is GET (M_GET); names are case-sensitive.
local function method_number(m)
  if m == "HEAD" then return "GET" end
  return m
end

local function method_in(methods, m)
  m = method_number(m)
  for _, x in ipairs(methods) do
    if method_number(x) == m then return true end
  end
  return false
end

-- mod_access_compat's Order, Allow, Deny and Satisfy of section `s` that count for the
-- request's method, or nil when the section sets none: one configuration per section (it
-- replaces what the section inherits: the module has no merge), its <Limit> lines tagged
-- by their methods, the Order and Satisfy written last deciding.
local function uses_legacy(l)
  return l ~= nil and (l.order ~= nil or l.satisfy ~= nil or #(l.allow or {}) > 0 or #(l.deny or {}) > 0)
end

local function section_legacy(s, t)
  local own = s.settings.access and s.settings.access.legacy
  local uses = uses_legacy(own)
  local parts = {}
  for _, c in ipairs(s.children or {}) do
    if c.kind == "limit" or c.kind == "limit-except" then
      local cl = c.settings.access and c.settings.access.legacy
      if uses_legacy(cl) then
        uses = true
        if (c.kind == "limit") == method_in(c.methods, t.method) then parts[#parts + 1] = cl end
      end
    end
  end
  if not uses then return nil end
  local l = { allow = {}, deny = {} }
  for _, p in ipairs({ own or {}, table.unpack(parts) }) do
    for _, r in ipairs(p.allow or {}) do l.allow[#l.allow + 1] = r end
    for _, r in ipairs(p.deny or {}) do l.deny[#l.deny + 1] = r end
    if p.order and (l.order_at == nil or (p.order_at or 0) > l.order_at) then
      l.order, l.order_at = p.order, p.order_at or 0
    end
    if p.satisfy and (l.satisfy_at == nil or (p.satisfy_at or 0) > l.satisfy_at) then
      l.satisfy, l.satisfy_at = p.satisfy, p.satisfy_at or 0
    end
  end
  return l
end

local function apply(dc, s, dir, t)
  local st = s.settings
  local server_level = s.kind == "server" or s.kind == "virtual-host"
  local rwc = st.rewrite
  -- mod_rewrite's per-directory merge (config_perdir_merge). Rules written in the server
  -- or vhost itself run in server context, not here; but their RewriteEngine and
  -- RewriteOptions are also the per-directory defaults every section inherits.
  if rwc and server_level and rwc.engine == nil and #(rwc.options or {}) == 0 then rwc = nil end
  if rwc then
    local prev = dc.rewrite
    local inherited = prev and prev.options or {}
    local own = rwc.options or {}
    local options = #own > 0 and own or inherited
    local function has(list, o)
      for _, x in ipairs(list) do if x == o then return true end end
      return false
    end
    local ignore = has(options, "ignoreinherit")
    local after = has(options, "inherit") or (has(inherited, "inheritdown") and not ignore)
    local before = not after
      and (has(options, "inheritbefore") or (has(inherited, "inheritdownbefore") and not ignore))
    local own_rules = server_level and {} or (rwc.rules or {})
    local rules = {}
    if prev and before then
      for _, r in ipairs(prev.rules) do rules[#rules + 1] = r end
    end
    for _, r in ipairs(own_rules) do rules[#rules + 1] = r end
    if prev and after then
      for _, r in ipairs(prev.rules) do rules[#rules + 1] = r end
    end
    local engine = rwc.engine
    if engine == nil then engine = prev and prev.engine or false end
    -- RewriteBase: the section's own, inherited only with MergeBase
    local base = not server_level and rwc.base or nil
    if base == nil and prev and has(options, "mergebase") then base = prev.base end
    dc.rewrite = { engine = engine, base = base, directory = dir, rules = rules,
                   allow_no_slash = has(options, "allownoslash"), options = options }
  end
  local a = st.access
  if a then
    if a.require then
      -- AuthMerging And: what was in force must grant as well (Or is taken as Off).
      if a.merging_and and dc.authz then
        local prev = dc.authz_and or {}
        local list = {}
        for _, x in ipairs(prev) do list[#list + 1] = x end
        list[#list + 1] = dc.authz
        dc.authz_and = list
      elseif not a.merging_and then
        dc.authz_and = nil
      end
      dc.authz = a.require
    end
    -- (Order, Allow, Deny and Satisfy: `section_legacy`, after the <Limit>s are known)
    if a.auth_type then dc.auth_type = a.auth_type end
    if a.auth_name then dc.auth_name = a.auth_name end
    if a.auth_user_file then dc.auth_user_file = a.auth_user_file end
    if a.auth_provider then dc.auth_provider = a.auth_provider end
    if a.auth_digest then dc.auth_digest = a.auth_digest end
    if a.require_ssl then dc.require_ssl = true end
    if a.refuse then dc.refuse = a.refuse end
  end
  for _, line in ipairs(st.options or {}) do
    local signed = false
    for _, ch in ipairs(line) do if ch[1] ~= "=" then signed = true end end
    if not signed then dc.options = 0 end
    for _, ch in ipairs(line) do
      local bit = OPT[lower(ch[2])] or 0
      if ch[1] == "-" then dc.options = dc.options & ~bit else dc.options = dc.options | bit end
    end
  end
  if st.directory_index then dc.index = st.directory_index end
  if st.directory_slash ~= nil then dc.directory_slash = st.directory_slash end
  if st.fallback then dc.fallback = st.fallback end
  for _, e in ipairs(st.error_documents or {}) do dc.error_docs[e.status] = e end
  local m = st.mime
  if m then
    for _, h in ipairs(m.handlers or {}) do
      if #h.exts == 0 then
        -- (SetHandler None cancels the one in force: AddHandler applies again)
        if h.handler.none then dc.set_handler = nil else dc.set_handler = h.handler end
      else
        for _, e in ipairs(h.exts) do dc.add_handlers[#dc.add_handlers + 1] = { e, h.handler } end
      end
    end
    for _, e in ipairs(m.remove_handlers or {}) do
      for i = #dc.add_handlers, 1, -1 do
        if dc.add_handlers[i][1] == e then table.remove(dc.add_handlers, i) end
      end
    end
    if m.force_type then dc.force_type = m.force_type end
    for _, x in ipairs(m.types or {}) do for _, e in ipairs(x.exts) do dc.types[e] = x.value end end
    for _, e in ipairs(m.remove_types or {}) do dc.types[e] = false end
    for _, x in ipairs(m.encodings or {}) do for _, e in ipairs(x.exts) do dc.encodings[e] = x.value end end
    for _, x in ipairs(m.charsets or {}) do for _, e in ipairs(x.exts) do dc.charsets[e] = x.value end end
    if m.default_charset then dc.default_charset = m.default_charset end
    if m.file_etag then dc.file_etag = m.file_etag end
  end
  if not server_level then
    -- mod_alias merges a section's redirects before those it inherits.
    local rs = st.redirects or {}
    if #rs > 0 then
      local merged = {}
      for _, r in ipairs(rs) do merged[#merged + 1] = r end
      for _, r in ipairs(dc.redirects) do merged[#merged + 1] = r end
      dc.redirects = merged
    end
    for _, r in ipairs(st.env or {}) do dc.env[#dc.env + 1] = r end
  end
  for _, h in ipairs(st.headers or {}) do dc.headers[#dc.headers + 1] = h end
  for _, e in ipairs(st.setenv or {}) do dc.setenv[#dc.setenv + 1] = e end
  if st.expires then
    local x = dc.expires or { by_type = {} }
    local merged = { active = x.active, default = x.default, by_type = {} }
    for k, v in pairs(x.by_type) do merged.by_type[k] = v end
    if st.expires.active ~= nil then merged.active = st.expires.active end
    if st.expires.default then merged.default = st.expires.default end
    for _, bt in ipairs(st.expires.by_type or {}) do merged.by_type[bt.type] = bt.value end
    dc.expires = merged
  end
  if s.kind ~= "limit" and s.kind ~= "limit-except" then
    local l = section_legacy(s, t)
    if l then dc.legacy = l end
  end
  for _, c in ipairs(s.children or {}) do
    -- <Limit>'s access rules count for its methods; its AuthType, AuthName and
    -- AuthUserFile for every method, as Apache reads them into the enclosing section.
    local limit = c.kind == "limit" or c.kind == "limit-except"
    if limit and (c.kind == "limit") == method_in(c.methods, t.method) then
      apply(dc, c, dir, t)
    elseif limit then
      local a = c.settings.access
      if a then
        if a.auth_type then dc.auth_type = a.auth_type end
        if a.auth_name then dc.auth_name = a.auth_name end
        if a.auth_user_file then dc.auth_user_file = a.auth_user_file end
      end
    end
    if c.kind == "if" or c.kind == "else-if" or c.kind == "else" then
      dc.ifs[#dc.ifs + 1] = { c, dir }
      dc.met_if = true
    end
  end
end

local function directory_matches(sec, d)
  -- sec is a prepared entry: { path = "/var/www", glob = R[n] | nil, depth = n }
  if sec.glob then
    local parts = {}
    for p in (trim_end_slashes(d) .. "/"):gmatch("([^/]*)/") do parts[#parts + 1] = p end
    if #parts < sec.segments then return false end
    local prefix = table.concat(parts, "/", 1, sec.segments)
    return rx(sec.glob, prefix) ~= nil
  end
  local s = sec.path
  if s == "" then return true end
  local dd = trim_end_slashes(d)
  return dd == s or starts(dd, s .. "/")
end

local function files_match(f, base)
  if f.re ~= nil then return rx(f.re, base) ~= nil end
  return f.name == base
end

local function location_match(l, uri)
  if l.re ~= nil then return rx(l.re, uri) ~= nil end
  local p = l.path
  -- a prefix ending at a slash, or ending in one (`<Location /a/>` is not `/a`)
  return starts(uri, p) and (ends(p, "/") or #uri == #p or byte(uri, #p + 1) == 47)
end

local function resolve_ifs(cx, dc, t)
  local taken = true
  local i = 1
  while i <= #dc.ifs do
    local c, dir = dc.ifs[i][1], dc.ifs[i][2]
    i = i + 1
    if c.kind == "if" then taken = false end
    if not taken then
      local chosen
      if c.kind == "else" then
        chosen = true
      else
        chosen = c.expr(cx)
        if chosen == nil then refuse("an <If> it cannot decide") end
      end
      if chosen then
        taken = true
        apply(dc, c, dir, t)
      end
    end
  end
  dc.ifs = {}
end

-- The per-directory configuration for a walked path.
-- The merged configuration depends on the directory, the file name, the method and,
-- when <Location> sections exist, the URL; <If> chains are decided per request on top.
-- Merges are kept per vhost across requests (the data does not change while lighttpd
-- runs; a new conversion needs a lighttpd restart).
local MEMO_LIMIT = 4096

local function has_locations(v, site)
  if v.has_locations == nil then
    v.has_locations = false
    for _, top in ipairs({ site.server, v.scope }) do
      for _, c in ipairs(top.children or {}) do
        if c.kind == "location" or c.kind == "location-match" then v.has_locations = true end
      end
    end
  end
  return v.has_locations
end

local function copy_dirconf(dc)
  local c = {}
  for k, val in pairs(dc) do
    if type(val) == "table" and k ~= "rewrite" and k ~= "authz" and k ~= "legacy" and k ~= "broken" then
      local t = {}
      for kk, vv in pairs(val) do t[kk] = vv end
      c[k] = t
    else
      c[k] = val
    end
  end
  return c
end

-- The folder a walk of `filename` ends in.
local function walk_folder(filename, is_dir)
  return is_dir and trim_end_slashes(filename) or parent(filename)
end

-- The walk of a request's round (not a sub-request's, whose cache is a copy): what the next
-- round's walk of the same folder reuses (Apache's walk cache: its regex <Directory>
-- sections keep what they matched).
function Ctx:remember_walk(filename, is_dir)
  if self.subreq then return end
  local folder = walk_folder(filename, is_dir)
  if not (self.walked and self.walked[1] == folder) then self.walked = { folder, filename } end
end

function Ctx:dir_config(filename, is_dir, uri)
  local v = self.v
  local subject = filename
  local w = self.walked
  if w and w[1] == walk_folder(filename, is_dir) then subject = w[2] end
  local key = (is_dir and "d" or "f") .. self.method .. "\0" .. filename
  if subject ~= filename then key = key .. "\0" .. subject end
  if has_locations(v, self.site) then key = key .. "\0" .. uri end
  local memo = v.memo
  if not memo then
    memo = { n = 0 }
    v.memo = memo
  end
  local dc = memo[key]
  if not dc then
    dc = self:merge_dir_config(filename, is_dir, uri, subject)
    if memo.n >= MEMO_LIMIT then
      memo = { n = 0 }
      v.memo = memo
    end
    memo[key] = dc
    memo.n = memo.n + 1
  end
  if #dc.ifs == 0 then return dc end
  local own = copy_dirconf(dc)
  resolve_ifs(self, own, { method = self.method })
  return own
end

-- `subject`: what regex <Directory> sections are matched against (the filename, or an
-- earlier walk's of the same folder).
function Ctx:merge_dir_config(filename, is_dir, uri, subject)
  local t = { method = self.method }
  local site, v = self.site, self.v
  local dc = new_dirconf()
  apply(dc, site.server, "/", t)
  apply(dc, v.scope, "/", t)
  local deepest = is_dir and trim_end_slashes(filename) or parent(filename)
  -- ancestors, shortest first: "", "/var", "/var/www", ...
  local levels = { "" }
  do
    local start = 2
    while true do
      local slash = find(deepest, "/", start, true)
      if not slash then break end
      levels[#levels + 1] = sub(deepest, 1, slash - 1)
      start = slash + 1
    end
    if deepest ~= "" then levels[#levels + 1] = deepest end
  end
  local nested = {}
  for _, level in ipairs(levels) do
    local depth = level == "" and 1 or (count_char(level, 47) + 1)
    for _, sec in ipairs(v.dir_sections) do
      if sec.depth == depth and directory_matches(sec, level == "" and "/" or level) then
        apply(dc, sec.scope, sec.path .. "/", t)
        nested[#nested + 1] = sec.scope
      end
    end
    local hs = v.htaccess[level]
    if hs then
      if hs.broken then dc.broken = hs end
      if hs.scope then
        apply(dc, hs.scope, level .. "/", t)
        nested[#nested + 1] = hs.scope
      end
    end
  end
  -- A regex section sees the path as Apache has it (site.unmap: the copy's folders and
  -- where they are on the server).
  -- It is matched against the filename as the walk left it (ap_directory_walk: r->filename,
  -- a file's path or a folder's with the slash it was asked for with).
  subject = subject or filename
  local afile = subject
  for _, u in ipairs(site.unmap or {}) do
    if subject == u[1] or starts(subject, u[1] .. "/") then
      afile = u[2] .. sub(subject, #u[1] + 1)
      break
    end
  end
  for _, top in ipairs({ site.server, v.scope }) do
    for _, c in ipairs(top.children or {}) do
      if c.kind == "directory-match" or (c.kind == "directory" and c.re ~= nil) then
        if rx(c.re, afile) then
          apply(dc, c, deepest .. "/", t)
          nested[#nested + 1] = c
        end
      end
    end
  end
  -- The name after the last slash, as Apache's file walk takes it ("" for a folder
  -- asked for with its trailing slash).
  local base = filename:match("[^/]*$")
  local files = {}
  for _, top in ipairs({ site.server, v.scope }) do
    for _, c in ipairs(top.children or {}) do
      if c.kind == "files" or c.kind == "files-match" then files[#files + 1] = c end
    end
  end
  for _, n in ipairs(nested) do
    for _, c in ipairs(n.children or {}) do
      if c.kind == "files" or c.kind == "files-match" then files[#files + 1] = c end
    end
  end
  -- (the <Files> and <Location> sections that apply, in order: what tells a DirectoryIndex
  -- sub-request's configuration from its folder's, `same_sections`)
  dc.sections = {}
  for _, f in ipairs(files) do
    if files_match(f, base) then
      apply(dc, f, deepest .. "/", t)
      dc.sections[#dc.sections + 1] = f
    end
  end
  for _, top in ipairs({ site.server, v.scope }) do
    for _, l in ipairs(top.children or {}) do
      if (l.kind == "location" or l.kind == "location-match") and location_match(l, uri) then
        apply(dc, l, deepest .. "/", t)
        dc.sections[#dc.sections + 1] = l
      end
    end
  end
  return dc
end

---------------------------------------------------------------------------------------
-- access control

-- UNDECIDED: a provider lighten cannot decide for a known user (Require group: the group
-- file is not read). It is never a grant: negation keeps it, and it folds as 'a user is
-- needed' does, so the user is refused (401), never let in.
local GRANTED, DENIED, NEEDS_USER, NEUTRAL, UNDECIDED = 1, 2, 3, 4, 5

-- authz_core's apply_authz_sections() over a section's results (the evaluator's `fold`):
-- a neutral one is left out; in an AND a refusal decides and 'a user is needed' replaces
-- a grant, in an OR a grant decides and 'a user is needed' replaces a refusal; only
-- neutral ones make the section neutral.
local function authz_fold(all, results)
  local acc = NEUTRAL
  for _, r in ipairs(results) do
    if r ~= NEUTRAL then
      local user_needed = r == NEEDS_USER or r == UNDECIDED
      if all then
        if r == DENIED then return DENIED end
        if (user_needed and acc ~= DENIED) or acc == NEUTRAL then acc = r end
      else
        if r == GRANTED then return GRANTED end
        if (user_needed and acc == DENIED) or acc == NEUTRAL then acc = r end
      end
    end
  end
  return acc
end

-- A negated line or <RequireNone>: a grant refuses; anything else decides nothing (what
-- lighten cannot decide stays undecided).
local function authz_negate(d)
  if d == GRANTED then return DENIED end
  if d == UNDECIDED then return UNDECIDED end
  return NEUTRAL
end

-- What Require line or section `a` decides for the request, with `user` (nil: none yet).
local function authz_eval(a, cx, user)
  if a.combine then
    local results = {}
    for _, ch in ipairs(a.children) do results[#results + 1] = authz_eval(ch, cx, user) end
    if a.combine == "none" then return authz_negate(authz_fold(false, results)) end
    return authz_fold(a.combine == "all", results)
  end
  local d
  local p = a.provider
  if p == "all" then
    d = (a.args[1] and lower(a.args[1]) == "granted") and GRANTED or DENIED
  elseif p == "ip" then
    d = DENIED
    for _, s in ipairs(a.args) do if ip_matches(s, cx.remote) then d = GRANTED end end
  elseif p == "local" then
    d = is_loopback(cx.remote) and GRANTED or DENIED
  elseif p == "env" then
    d = DENIED
    for _, v in ipairs(a.args) do if plans.env_get(cx.env, v) ~= nil then d = GRANTED end end
  elseif p == "method" then
    d = DENIED
    for _, m in ipairs(a.args) do if method_number(m) == method_number(cx.method) then d = GRANTED end end
  elseif p == "valid-user" then
    -- lighttpd's mod_auth checked the password for this URL; the user it found decides.
    d = user and GRANTED or NEEDS_USER
  elseif p == "user" then
    d = user and DENIED or NEEDS_USER
    for _, u in ipairs(a.args) do if user == u then d = GRANTED end end
  elseif p == "group" or p == "file-owner" or p == "file-group" then
    d = user and UNDECIDED or NEEDS_USER
  elseif p == "ssl" then
    -- mod_ssl: the request came over TLS
    d = cx.https and GRANTED or DENIED
  elseif p == "expr" then
    d = a.expr(cx)
    if d == nil then refuse("a Require expr it cannot decide") end
    d = d and GRANTED or DENIED
  else
    -- host and forward-dns need DNS, other providers are not known here: undecided,
    -- which never grants, negated or not (stricter where Apache would let a host in)
    return DENIED
  end
  if a.negated then return authz_negate(d) end
  return d
end

local function host_matches(h, cx)
  local l = lower(h)
  if l == "all" then return true end
  if starts(l, "env=") then
    local var = sub(h, 5)
    if starts(var, "!") then return plans.env_get(cx.env, sub(var, 2)) == nil end
    return plans.env_get(cx.env, var) ~= nil
  end
  return ip_matches(h, cx.remote)
end

local function legacy_allows(l, cx)
  local function matches(rules)
    for _, r in ipairs(rules or {}) do
      for _, h in ipairs(r) do if host_matches(h, cx) then return true end end
    end
    return false
  end
  local allow, deny = matches(l.allow), matches(l.deny)
  if (l.order or "deny,allow") == "deny,allow" then return (not deny) or allow end
  return allow and not deny
end

-- Whether a login in folder configuration `dc` is checked the way lighttpd's mod_auth
-- checked it: AuthType Basic with an AuthName and an AuthUserFile, the file provider, no
-- AuthBasicUseDigestAlgorithm.
local function basic_file(dc)
  return dc.auth_type ~= nil and lower(dc.auth_type) == "basic" and dc.auth_name ~= nil
    and dc.auth_user_file ~= nil and (dc.auth_provider or "file") == "file"
    and (dc.auth_digest or "off") == "off"
end

-- The status access control answers with, or nil; the second value says whether the
-- user must authenticate (AuthType Basic: the caller checks credentials).
-- Whether mod_autoindex would leave out an entry of `dir` that lighttpd's listing shows
-- (it hides dotfiles only): one its subrequest would not serve (a <Files> deny, a realm),
-- or one an IndexIgnore pattern names (the host's index_ignore: every pattern it reads).
-- Then the listing is refused rather than showing the name.
function Ctx:listing_hides(dir)
  if reads then reads.no = true end
  local names = lighty.c.readdir(dir)
  if type(names) ~= "function" then return true end
  local base = ends(dir, "/") and dir or (dir .. "/")
  local url = ends(self.uri, "/") and self.uri or (self.uri .. "/")
  local links = self.v.links
  local ignore = self.v.index_ignore
  for name in names do
    if byte(name, 1) ~= 46 then
      if ignore then
        for i = 1, #ignore do
          if find(name, ignore[i]) then return true end
        end
      end
      -- A link Apache refuses (lighttpd's listing leaves out only a dangling one).
      if links and links[base .. name] == false and stat(base .. name) ~= "missing" then return true end
      local kind = stat(base .. name)
      local dc = self:dir_config(base .. name, kind == "dir", url .. name)
      if self:access(dc) then return true end
    end
  end
  return false
end

function Ctx:access(dc)
  if dc.refuse then refuse(dc.refuse) end
  -- SSLRequireSSL: mod_ssl's access check comes first.
  if dc.require_ssl and not self.https then return 403 end
  local legacy = dc.legacy and legacy_allows(dc.legacy, self)
  local any = dc.legacy and dc.legacy.satisfy == "any"
  if legacy == true and any then return nil end
  if legacy == false and not any then return 403 end
  -- authz_core's two passes: first without a user (a grant lets everybody in, and a
  -- negated line that does not refuse decides nothing); only when a user is needed does
  -- authentication run, and then the user's pass must grant.
  local function decide(user)
    local function any_of(list)
      local results = {}
      for _, a in ipairs(list) do results[#results + 1] = authz_eval(a, self, user) end
      return authz_fold(false, results)
    end
    if not dc.authz then return GRANTED end
    -- AuthMerging And: every level in force must grant, as <RequireAll>.
    local levels = { any_of(dc.authz) }
    for _, prev in ipairs(dc.authz_and or {}) do levels[#levels + 1] = any_of(prev) end
    return authz_fold(true, levels)
  end
  local d = decide(nil)
  if d == GRANTED then return nil end
  if d ~= NEEDS_USER then return 403 end
  -- A user is needed: Apache answers 500 without an AuthType ("AuthType not set") or an
  -- AuthName ("need AuthName").
  if not (dc.auth_type and lower(dc.auth_type) ~= "none" and dc.auth_name) then return 500 end
  if self.user and decide(self.user) == GRANTED then return nil end
  return 401, true
end

---------------------------------------------------------------------------------------
-- mod_setenvif

-- The value a SetEnvIf rule tests (mod_setenvif's match_headers): one of the special
-- names, else the header of that name, else an earlier variable of that name; an
-- attribute that is not a plain header name matches header names as a regex (the last
-- header it matches). `uri` is the URL-path the phase sees (as sent, in the server).
local function setenvif_value(rule, cx, uri)
  local attr = lower(rule.attribute or "")
  if attr == "request_uri" then return uri end
  if attr == "request_method" then return cx.method end
  if attr == "remote_addr" or attr == "remote_host" then return cx.remote end
  if attr == "server_addr" then return cx.server_addr end
  if attr == "request_protocol" then return plans.protocol(lighty) end
  if rule.name_re then
    if reads then reads.no = true end
    local found
    for k, v in pairs(lighty.r.req_header) do
      if rx(rule.name_re, k) then found = v end
    end
    return found or ""
  end
  -- (what is neither is the empty string, which "^$" matches)
  return cx:header(rule.attribute) or plans.env_get(cx.env, rule.attribute) or ""
end

local function apply_setenvif(rule, cx, uri)
  local caps
  if rule.expr ~= nil then
    -- SetEnvIfExpr: the expression decides (false: the translation could not read it;
    -- nil: it cannot decide this request): either fails closed. The headers it reads go
    -- to Vary whatever it decides, as ap_expr adds them.
    if rule.expr == false then refuse("a SetEnvIfExpr it cannot evaluate") end
    local outer = cx.vary_cond
    cx.vary_cond, cx.vary_absent = {}, true
    local v = rule.expr(cx)
    if #cx.vary_cond > 0 then cx:add_vary(cx.vary_cond) end
    cx.vary_cond, cx.vary_absent = outer, nil
    if v == nil then refuse("a SetEnvIfExpr it cannot decide") end
    if not v then return end
    caps = {}
  else
    if not rule.re then return end
    local value = setenvif_value(rule, cx, uri)
    if value == nil then return end
    caps = rx(rule.re, value)
    if not caps then return end
  end
  for _, a in ipairs(rule.assignments) do
    if starts(a, "!") then
      plans.env_set(cx.env, sub(a, 2), nil)
    else
      local eq = find(a, "=", 1, true)
      local n, v = a, "1"
      if eq then n, v = sub(a, 1, eq - 1), sub(a, eq + 1) end
      v = v:gsub("%$(%d)", function(d) return caps[tonumber(d)] or "" end)
      plans.env_set(cx.env, n, v)
    end
  end
end

---------------------------------------------------------------------------------------
-- mod_alias

local alias_matches = plans.alias_match

local function subst_dollars(to, caps)
  return (to:gsub("%$(%d)", function(d) return caps[tonumber(d)] or "" end))
end

function Ctx:try_redirect(r)
  local uri = self.uri
  local target
  if r.regex then
    local caps = rx(r.re, uri)
    if not caps then return nil end
    target = plans.regex_redirect(subst_dollars(r.to or "", caps), escape_path)
  else
    local n = alias_matches(uri, r.from or "/")
    if not n then return nil end
    target = r.to and (r.to .. escape_path(sub(uri, n + 1))) or ""
  end
  if r.status < 300 or r.status >= 400 then return r.status, "" end
  local loc = starts(target, "/") and (self:self_url_prefix() .. target) or target
  if self.args and not find(loc, "?", 1, true) then loc = loc .. "?" .. self.args end
  return r.status, loc
end

local function try_alias(a, uri)
  local f
  if a.regex then
    local caps = rx(a.re, uri)
    if not caps then return nil end
    f = subst_dollars(a.to, caps)
  else
    local n = alias_matches(uri, a.from)
    if not n then return nil end
    f = a.to .. sub(uri, n + 1)
  end
  -- (`Alias /ht /srv/ht/` makes /srv/ht//in for /ht/in: Apache's directory walk merges
  -- the slashes, apr_filepath_merge)
  if f and find(f, "//", 1, true) then f = (f:gsub("//+", "/")) end
  return f
end

---------------------------------------------------------------------------------------
-- outcomes

local function done(status, served) return { status = status, served = served or { type = "error" } } end
local function redirect(status, loc) return { status = status, location = loc, served = { type = "redirect" } } end

local function with_query(loc, args, raw)
  if args and args ~= "" then
    if raw then return loc .. "?" .. args end
    return loc .. "?" .. escape_path(args)
  end
  return loc
end

local function escape_location(url, noescape)
  if noescape then return url end
  local i = find(url, "://", 1, true)
  if i then
    local rest = sub(url, i + 3)
    local j = find(rest, "/", 1, true)
    local host, path = rest, ""
    if j then host, path = sub(rest, 1, j - 1), sub(rest, j) end
    return sub(url, 1, i + 2) .. host .. escape_path(path)
  end
  return escape_path(url)
end

local function replace_base_in_url(url, directory, base)
  local i = find(url, "://", 1, true)
  if not i then return url end
  local rest = sub(url, i + 3)
  local j = find(rest, "/", 1, true)
  if not j then return url end
  local path = sub(rest, j)
  if starts(path, directory) then
    return sub(url, 1, i + 2) .. sub(rest, 1, j - 1) .. trim_end_slashes(base) .. "/" .. sub(path, #directory + 1)
  end
  return url
end

function Ctx:unsafe_query(target, args, action)
  local bad = args and find(args, "[%c ]") ~= nil
  local escaped_redirect = not starts(target, "proxy:") and rw.is_absolute_uri(target) and action ~= "changed-no-escape"
  if bad and not escaped_redirect then return done(403) end
  return nil
end

function Ctx:handler_for(dc, fname)
  if dc.set_handler then return dc.set_handler end
  local base = basename(fname)
  local found
  local first = true
  for ext in (base .. "."):gmatch("([^.]*)%.") do
    if first then
      first = false
    else
      local e = lower(ext)
      for i = #dc.add_handlers, 1, -1 do
        if dc.add_handlers[i][1] == e then found = dc.add_handlers[i][2]; break end
      end
    end
  end
  return found
end

-- The handler's answer for a mapped file.
function Ctx:handle(dc, fname, path_info, kind)
  local h = self:handler_for(dc, fname)
  -- mod_env's fixup, for every request that gets this far: what a script receives, and
  -- what mod_headers' %{VAR}e reads.
  for _, e in ipairs(dc.setenv) do self.env[e[1]] = e[2] end
  -- Apache runs it as a CGI program, which lighttpd is not set up to: never its source.
  if self.cgi_alias and not dc.set_handler then
    if kind == "file" then refuse("a ScriptAlias file, which Apache runs as a CGI program") end
    -- mod_cgid: "attempt to invoke directory as script"
    if kind == "dir" then return done(403) end
  end
  if h and h.backend then
    if kind ~= "file" then return done(404) end
    return done(200, { type = "php", script = fname, path_info = path_info, dc = dc })
  end
  if h and h.other then refuse("the handler " .. tostring(h.other)) end
  local refused = plans.default_handler_refuses(self.method, kind)
  if refused == 200 then return done(200, { type = "options" }) end
  if refused then return done(refused) end
  if kind == "file" then
    if path_info then return done(404) end
    return done(200, { type = "file", path = fname, dc = dc, forced_type = self.forced_type })
  elseif kind == "dir" then
    if not self.site.modules.autoindex then return done(404) end
    if dc.options & OPT.indexes ~= 0 then
      if self:listing_hides(fname) then return done(403) end
      return done(200, { type = "listing", dir = fname, dc = dc })
    end
    return done(403)
  end
  return done(404)
end

function Ctx:server_rules()
  return self.v.server_rules
end

-- After [END] the rewritten URL is served without another rewrite round.
function Ctx:serve_after_end(url, args)
  self.uri, self.args = url, args
  if name_too_long(self:docroot() .. url) then return done(403) end
  local fname, path_info, kind = walk(self:docroot() .. url)
  self.filename, self.path_info = fname, path_info
  if not through_links(self.v.links, fname) then return done(403) end
  local dc = self:dir_config(fname, kind == "dir", url)
  self:remember_walk(fname, kind == "dir")
  -- The internal redirect is a request of its own: access control runs on where it
  -- leads (only the rewrite rules are skipped).
  local refused = self:folder_refused(dc)
  if refused then return refused end
  return self:handle(dc, fname, path_info, kind)
end

-- What a folder's configuration answers before the fixups, or nil: a broken .htaccess
-- (500), then its SetEnvIf and access control.
function Ctx:folder_refused(dc)
  if dc.broken then return done(500) end
  -- (per-directory SetEnvIf runs in the header_parser phase, which Apache runs for the
  -- main request only: a sub-request keeps the main request's variables)
  if not self.subreq then
    for _, r in ipairs(dc.env) do apply_setenvif(r, self, self.uri) end
  end
  -- A user counts for this directory only if lighttpd checked the password against this
  -- directory's AuthUserFile, and that is the check Apache makes here: Basic with an
  -- AuthName, the file provider, no digest algorithm. Another realm's login, or one
  -- Apache checks elsewhere, never satisfies its Require.
  if self.user and not (basic_file(dc) and self.auth_file == dc.auth_user_file) then self.user = nil end
  -- (a DirectoryIndex sub-request that merges the folder's own configuration: Apache does
  -- not check access there again)
  if self.skip_access and self.skip_access == self.filename then return nil end
  local denied, wants_user = self:access(dc)
  if denied then
    if wants_user then return done(401, { type = "error", realm = dc.auth_name }) end
    return done(denied)
  end
  return nil
end

local function copy(t)
  if not t then return nil end
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end

-- mod_dir's DirectoryIndex (fixup_dir): each name is looked up as a sub-request, a whole
-- round up to the handler (the rules without their [NS] and [R] ones, access control).
-- The first that comes out 200 on a regular file answers; a rewrite there is the main
-- request's internal redirect.  A redirect is passed on, as a 401 is when there is one
-- name; any other error is remembered and answered if no name serves: never a listing
-- instead of a refused index file.  Nil when no name serves.
function Ctx:directory_index(names, fname)
  local args, dir_uri = self.args, self.uri
  local notfound
  for _, name in ipairs(names) do
    local cand_uri, cand_file = plans.index_candidate(name, dir_uri, self:docroot(), fname)
    if not cand_uri then
      notfound = 400
      goto next_name
    end
    local saved = { self.uri, self.filename, self.path_info, copy(self.env), copy(self.vary),
      self.forced_type, self.user, self.error_docs }
    -- (the sub-request is a GET, whatever the request's method: ap_sub_req_lookup_uri;
    -- one that merges the folder's own configuration is not checked for access again)
    -- Only a plain name in the folder itself, with no <If> on the way (its conditions may
    -- read the URI, the file or the method, which differ in the sub-request), and only
    -- while the sub-request still maps to that file (an Alias or a rewrite that takes it
    -- elsewhere merges another configuration, which Apache checks).
    local method = self.method
    local same = false
    if not find(name, "/", 1, true) then
      local da, db = self:dir_config(fname, true, dir_uri), self:dir_config(cand_file, false, cand_uri)
      local a, b = da.sections or {}, db.sections or {}
      same = #a == #b and not da.met_if and not db.met_if
      for k = 1, #a do if a[k] ~= b[k] then same = false end end
    end
    self.subreq, self.method, self.skip_access = true, "GET", same and cand_file or nil
    local o = self:round(cand_uri, args)
    self.subreq, self.method, self.skip_access = nil, method, nil
    local t = o.served and o.served.type
    if o.status == 200 and t == "php" then return o end
    if o.status == 200 and t == "file" then
      -- the main request's handler, with its own method
      local refused = plans.default_handler_refuses(method, "file")
      if refused == 200 then return done(200, { type = "options" }) end
      if refused then return done(refused) end
      return o
    end
    if o.internal then
      if stat(cand_file) == "file" then
        self.redirect_url = cand_uri
        return o
      end
    elseif (o.status >= 300 and o.status < 400) or (o.status == 401 and #names == 1) then
      return o
    elseif o.status ~= 200 and o.status ~= 404 then
      notfound = o.status
    end
    self.uri, self.filename, self.path_info, self.env, self.vary, self.forced_type, self.user, self.error_docs =
      saved[1], saved[2], saved[3], saved[4] or {}, saved[5], saved[6], saved[7], saved[8]
    self.args = args
    ::next_name::
  end
  -- (mod_dir keeps only the status of a refused index: a 401 goes out without the
  -- sub-request's WWW-Authenticate)
  if notfound then return done(notfound, { type = "error", quiet = true }) end
  return nil
end

-- One pass of request processing.
function Ctx:round(uri, args)
  self.uri, self.args, self.path_info, self.filename = uri, args, nil, uri
  self.error_docs = self.v.error_docs
  local oargs = args
  local filename
  local rules = self:server_rules()
  if rules and #rules > 0 then
    local st = { filename = uri, args = self.args, status = 200 }
    local action, flags = rw.apply_list(rules, nil, st, self, self.trace)
    if action == "status" then return done(st.status) end
    if action == "changed" or action == "changed-no-escape" then
      self.args = st.args
      local f = st.filename
      local bad = self:unsafe_query(f, st.args, action)
      if bad then return bad end
      if starts(f, "proxy:") then refuse("a [P] rule (proxy)") end
      if rw.is_absolute_uri(f) then
        local raw = action == "changed-no-escape" or (oargs ~= nil and self.args == oargs)
        local loc = with_query(escape_location(f, action == "changed-no-escape"), self.args, raw)
        local code = flags.redirect
        if not code or code < 300 or code >= 400 then code = 302 end
        return redirect(code, loc)
      end
      if flags.passthrough then
        self.uri = f
      else
        if not starts(f, "/") then return done(400) end
        local root = self:docroot()
        local first = f:match("^/([^/]*)") or ""
        local statpath = "/" .. first
        local under_root = starts(f, root) and byte(f, #root + 1) == 47
        local is_fs = under_root or (first ~= "" and stat(statpath) ~= "missing"
          and (st.unsafe_prefix_stat or starts(st.literal_prefix or "", statpath)))
        filename = is_fs and f or (root .. f)
        if st.forced_type then self.forced_type = st.forced_type end
      end
    end
  end
  self.cgi_alias = nil
  if not filename then
    local scopes = { self.v.scope, self.site.server }
    for _, s in ipairs(scopes) do
      for _, r in ipairs(s.settings.redirects or {}) do
        local status, loc = self:try_redirect(r)
        if status then
          if status >= 300 and status < 400 then return redirect(status, loc) end
          return done(status)
        end
      end
    end
    for _, s in ipairs(scopes) do
      for _, a in ipairs(s.settings.aliases or {}) do
        local f = try_alias(a, self.uri)
        if f then
          -- ScriptAlias: the handler is cgi-script (SetHandler still wins)
          self.cgi_alias = a.cgi
          filename = f
          goto translated
        end
      end
    end
    ::translated::
  end
  filename = filename or (self:docroot() .. self.uri)

  -- TRACE is answered by the core before the directory walk; lighttpd does not answer
  -- it, so the translation refuses it.
  if self.method == "TRACE" then
    return done(self.v.trace_enable and 405 or 405)
  end

  if name_too_long(filename) then return done(403) end
  local fname, path_info, kind = walk(filename)
  self.filename, self.path_info = fname, path_info
  if not through_links(self.v.links, fname) then return done(403) end
  local dc = self:dir_config(fname, kind == "dir", self.uri)
  self:remember_walk(fname, kind == "dir")
  local eds = {}
  for k, e in pairs(self.v.error_docs) do eds[k] = e end
  for k, e in pairs(dc.error_docs) do eds[k] = e end
  self.error_docs = eds
  local refused = self:folder_refused(dc)
  if refused then return refused end

  local pending
  local rwd = dc.rewrite
  -- mod_rewrite declines a folder's rules for the folder itself asked for without its
  -- slash, leaving it to mod_dir (unless RewriteOptions AllowNoSlash).
  if rwd and not rwd.allow_no_slash and sub(rwd.directory, -1) == "/" and sub(rwd.directory, 1, -2) == fname then
    rwd = nil
  end
  if rwd and rwd.engine and #rwd.rules > 0 then
    if dc.options & (OPT.followsymlinks | OPT.symlinksifownermatch) == 0 then return done(403) end
    local st = { filename = fname, path_info = path_info, args = self.args, status = 200 }
    local ofilename = st.filename
    local action, flags = rw.apply_list(rwd.rules, rwd.directory, st, self, self.trace)
    if st.forced_type then self.forced_type = st.forced_type end
    if action == "status" then return done(st.status) end
    if action == "changed" or action == "changed-no-escape" then
      local f = st.filename
      local bad = self:unsafe_query(f, st.args, action)
      if bad then return bad end
      if starts(f, "proxy:") then refuse("a [P] rule (proxy)") end
      if rw.is_absolute_uri(f) then
        if rwd.base then f = replace_base_in_url(f, rwd.directory, rwd.base) end
        local raw = action == "changed-no-escape" or (self.args ~= nil and st.args == self.args)
        local loc = with_query(escape_location(f, action == "changed-no-escape"), st.args, raw)
        local code = flags.redirect
        if not code or code < 300 or code >= 400 then code = 302 end
        return redirect(code, loc)
      end
      if not starts(f, "/") then return done(400) end
      if f == ofilename then
        self.args = st.args
      else
        local url
        if rwd.base and starts(f, rwd.directory) then
          url = trim_end_slashes(rwd.base) .. "/" .. sub(f, #rwd.directory + 1)
        elseif rwd.base then
          url = f
        else
          local root = self:docroot()
          if starts(f, root) and (#f == #root or byte(f, #root + 1) == 47) then
            url = sub(f, #root + 1)
          else
            url = f
          end
        end
        if flags["end"] then return self:serve_after_end(url, st.args) end
        local target = st.args and (url .. "?" .. st.args) or url
        local q = find(target, "?", 1, true)
        if q then
          pending = { reencode(sub(target, 1, q - 1)), sub(target, q + 1) }
        else
          pending = { reencode(target), nil }
        end
      end
    end
  end

  for _, r in ipairs(dc.redirects) do
    local status, loc = self:try_redirect(r)
    if status then
      if status >= 300 and status < 400 then return redirect(status, loc) end
      return done(status)
    end
  end

  if kind == "dir" and not path_info and not ends(self.uri, "/") and dc.directory_slash then
    return redirect(301, with_query(self:self_url_prefix() .. escape_path(self.uri) .. "/", self.args, true))
  end
  if pending then return { internal = pending[1], args = pending[2] } end
  if kind == "dir" and not self.subreq then
    local names = dc.index or { "index.html" }
    local disabled = false
    for _, n in ipairs(names) do if lower(n) == "disabled" then disabled = true end end
    if not disabled then
      local o = self:directory_index(names, fname)
      if o then return o end
    end
  elseif kind == "missing" and dc.fallback and lower(dc.fallback) ~= "disabled" then
    return { internal = dc.fallback, args = self.args }
  end
  return self:handle(dc, fname, path_info, kind)
end

-- The whole request: rounds until an answer.
function Ctx:run()
  local raw = self.target
  -- A fragment is not part of a request-target: Apache answers 400 before anything else
  -- looks at the request (lighttpd would take '#' as a path byte).
  if find(raw, "#", 1, true) then return done(400) end
  local qpos = find(raw, "?", 1, true)
  local rawpath, query = raw, nil
  if qpos then rawpath, query = sub(raw, 1, qpos - 1), sub(raw, qpos + 1) end
  local uri, err = decode_path(rawpath)
  if not uri then return done(err) end
  -- MergeSlashes Off: Apache's sections and rules would see the '//' decode_path merges
  -- (leading ones too: Apache merges those in an origin-form target but not in an
  -- absolute-form one, and lighttpd hands both over alike).
  if self.v.keep_slashes and find(rawpath, "//", 1, true) then
    print("lighten: " .. sub(raw, 1, 200) .. " refused (fails closed): MergeSlashes Off and '//' in the path")
    return done(403)
  end
  self.asked = self:docroot() .. uri
  -- The server's and the host's own SetEnvIf (mod_setenvif's post_read_request), on the
  -- URL-path as sent with its leading slashes merged (Apache parses `//s/x` as `/s/x`);
  -- again on each internal redirect's URL, which runs post_read_request too.
  local function server_env(path)
    path = plans.merge_leading_slashes(path)
    for _, s in ipairs({ self.site.server, self.v.scope }) do
      for _, r in ipairs(s.settings.env or {}) do apply_setenvif(r, self, path) end
    end
  end
  server_env(rawpath)
  local args = query
  local error_round
  while true do
    self.rounds = self.rounds + 1
    if self.rounds > MAX_REDIRECTS + 1 then return done(500) end
    local o = self:round(uri, args)
    if o.internal then
      -- [T=] lives in the request's notes, which the new request does not inherit.
      self.forced_type = nil
      local env = {}
      for k, v in pairs(self.env) do env["REDIRECT_" .. k] = v end
      env.REDIRECT_URL = self.redirect_url or uri
      self.redirect_url = nil
      env.REDIRECT_STATUS = "200"
      if args then env.REDIRECT_QUERY_STRING = args end
      self.env = env
      server_env(o.internal)
      local d, e = decode_path(o.internal)
      if not d then return done(e) end
      uri, args = d, o.args
    else
      if error_round then
        o.error_round = true
        if o.status >= 400 then
          o.served = { type = "error" }
          o.status = error_round
        elseif o.status == 200 then
          o.status = error_round
        end
        return o
      end
      if o.served.type == "error" and o.status >= 400 then
        local ed = self.error_docs[o.status]
        if ed and ed.kind == "remote" then
          return redirect(302, ed.value)
        elseif ed and ed.kind == "text" then
          o.text = ed.value
          return o
        elseif ed and ed.kind == "local" then
          local env = {}
          for k, v in pairs(self.env) do env["REDIRECT_" .. k] = v end
          env.REDIRECT_URL = uri
          env.REDIRECT_STATUS = tostring(o.status)
          if args then env.REDIRECT_QUERY_STRING = args end
          self.env = env
          if self.method ~= "GET" and self.method ~= "HEAD" then self.method = "GET" end
          local doc = ed.value
          local q = find(doc, "?", 1, true)
          local u, a = doc, nil
          if q then u, a = sub(doc, 1, q - 1), sub(doc, q + 1) end
          server_env(u)
          local d = decode_path(u)
          if not d then return done(o.status) end
          uri, args = d, a
          error_round = o.status
          goto continue
        end
      end
      return o
    end
    ::continue::
  end
end

---------------------------------------------------------------------------------------
-- answering in lighttpd

-- The Content-Type Apache's mod_mime gives a file: ForceType, else the type of the last
-- extension that has one (per-directory AddType over TypesConfig), with a charset from
-- AddCharset or AddDefaultCharset for text/plain and text/html.
local function content_type(site, dc, path, forced)
  local t = forced or dc.force_type
  local enc
  local charset
  local base = basename(path)
  local first = true
  for ext in (base .. "."):gmatch("([^.]*)%.") do
    if first then
      first = false
    else
      local e = lower(ext)
      if not (forced or dc.force_type) then
        local v = dc.types[e]
        if v == nil then v = site.mime[e] end
        if v then t = v end
      end
      if dc.encodings[e] then enc = dc.encodings[e] end
      if dc.charsets[e] then charset = dc.charsets[e] end
    end
  end
  if t and not find(t, "charset=", 1, true) then
    if charset then
      t = t .. "; charset=" .. charset
    elseif dc.default_charset and lower(dc.default_charset) ~= "off"
      and (starts(t, "text/plain") or starts(t, "text/html")) then
      local cs = dc.default_charset
      if lower(cs) == "on" then cs = "iso-8859-1" end
      t = t .. "; charset=" .. cs
    end
  end
  return t, enc
end
M.content_type = content_type

-- A Header value with %{VAR}e (mod_headers' format string, read at conversion): the
-- request's variable, or "(null)" when unset, line breaks in it sent as spaces.
local function header_value(format, env)
  local out = {}
  for i, p in ipairs(format) do
    if type(p) == "string" then
      out[i] = p
    else
      local v = env[p.env]
      out[i] = v and v:gsub("[\r\n]", " ") or "(null)"
    end
  end
  return table.concat(out)
end

-- mod_headers and mod_expires for a response, from the final directory configuration.
local function apply_headers(cx, dc, status, ctype)
  local rh = lighty.r.resp_header
  cx.content_type = ctype
  if dc.expires and dc.expires.active then
    local rule = (ctype and dc.expires.by_type[(ctype:match("^[^;]+") or ctype)]) or dc.expires.default
    if rule and status >= 200 and status < 300 then
      local base = rule.base == "modification" and (cx.mtime or os.time()) or os.time()
      local at = base + rule.seconds
      local max = at - os.time()
      if max < 0 then max = 0 end
      rh["Cache-Control"] = "max-age=" .. max
      rh["Expires"] = os.date("!%a, %d %b %Y %H:%M:%S GMT", at)
    end
  end
  for _, h in ipairs(dc.headers) do
    local ok = (status < 300 or h.always or cx.error_document) and (h.condition == nil or h.condition(cx))
    if ok then
      local cur = rh[h.name]
      local value = h.value or (h.format and header_value(h.format, cx.env))
      if h.action == "set" then
        rh[h.name] = value
      elseif h.action == "unset" then
        rh[h.name] = ""
      elseif h.action == "append" or h.action == "merge" then
        if cur and cur ~= "" then
          local present = false
          if h.action == "merge" then
            for tok in (cur .. ","):gmatch("%s*([^,]-)%s*,") do if tok == value then present = true end end
          end
          if not present then rh[h.name] = cur .. ", " .. value end
        else
          rh[h.name] = value
        end
      elseif h.action == "add" then
        rh[h.name] = (cur and cur ~= "") and (cur .. ", " .. value) or value
      elseif h.action == "setifempty" then
        if not cur or cur == "" then rh[h.name] = value end
      elseif h.action == "edit" or h.action == "edit*" then
        if cur and h.re then refuse("Header edit") end
      end
    end
  end
end

-- Entry for magnet.attract-physical-path-to: `site` is the data, `n` the vhost.
-- The decision cache (lighten_plans.lua).  The key holds the method, request-target
-- and scheme, the client's and the server's address, the user lighttpd authenticated and
-- the password file it used (the interpreter reads them in many places); each path is
-- checked for its kind, size and executable bit.  The time, a folder's listing, a trace
-- and a refusal are not kept.
function M.physical(l, site, n)
  lighty = l
  reads = nil
  local r = lighty.r
  local attr = r.req_attr
  local headers = r.req_header
  -- A Host Apache would not take: its 400, before anything reads the request.
  if plans.host_refused(headers["Host"]) then return 400 end
  local cx = setmetatable({
    site = site, v = site.vhosts[n], maps = site.vhosts[n].maps or {},
    https = attr["uri.scheme"] == "https",
    method = attr["request.method"], orig_method = attr["request.method"],
    target = attr["request.orig-uri"] or attr["request.uri"],
    headers = headers, remote = attr["request.remote-addr"] or "",
    server_addr = attr["request.server-addr"] or "127.0.0.1",
    env = {}, rounds = 0, trace = nil, user = plans.login(r.req_env["REMOTE_USER"], headers["Authorization"]),
    auth_file = headers["X-Lighten-Auth-File"],
  }, Ctx)
  -- lighten's own marker (lighttpd.conf's auth blocks set it), not for the backend.
  if cx.auth_file then headers["X-Lighten-Auth-File"] = "" end
  if site.trace then cx.trace = {} end
  -- (the protocol is part of the key: THE_REQUEST and SERVER_PROTOCOL read it)
  local key = not cx.trace and #cx.target <= plans.TARGET and table.concat({
    cx.https and "s" or "-", cx.method, cx.target, cx.remote, cx.server_addr, cx.user or "", cx.auth_file or "",
    attr["request.protocol"] or "",
  }, "\0") or nil
  local p = key and plans.find(cx.v, key, headers, fact_of)
  local ok, o
  if p then
    ok, o, cx = true, p.o, p.cx
  else
    local rd = plans.reads()
    cx.headers = plans.recorder(headers, rd)
    reads = rd
    ok, o = xpcall(cx.run, function(e)
      if getmetatable(e) == Untranslatable then return e end
      return debug.traceback(tostring(e), 2)
    end, cx)
    reads = nil
    cx.headers = nil
    if ok and key then plans.keep(cx.v, key, rd, { o = o, cx = cx }) end
  end
  if cx.trace then
    for _, step in ipairs(cx.trace) do
      print("lighten trace " .. tostring(cx.target) .. ": " .. string.rep("  ", step.depth or 0) .. tostring(step.text))
    end
  end
  if not ok then
    if getmetatable(o) == Untranslatable then
      print("lighten: " .. tostring(cx.target) .. " refused (fails closed): " .. o.why)
      return 403
    end
    error(o, 0)
  end
  -- An .htaccess on the way to what was asked for, or to what answers, written since the
  -- conversion (lighten_plans.lua): refused until the site is converted again.
  local served = o.served
  if plans.htaccess_refused(lighty.c, cx.asked, served and (served.script or served.path or served.dir) or cx.filename) then
    return 503
  end
  if cx.vary then r.resp_header["Vary"] = table.concat(cx.vary, ", ") end
  -- hand the environment to the backend (E=, SetEnvIf, REDIRECT_*)
  for k, v in pairs(cx.env) do r.req_env[k] = v end
  if o.error_round then r.req_env["LIGHTEN_ERRDOC"] = "1" end
  local s = o.served
  if o.location then
    r.resp_header["Location"] = o.location
    return o.status
  end
  local links = cx.v.links
  if s.type == "file" then
    local ctype, enc = content_type(site, s.dc, s.path, s.forced_type)
    local real = through_links(links, s.path) or s.path
    local st = lighty.c.stat(real)
    if not st then return 404 end
    attr["physical.path"] = real
    attr["uri.path"] = cx.uri
    if ctype then r.resp_header["Content-Type"] = ctype end
    if enc then r.resp_header["Content-Encoding"] = enc end
    local sent = st["http-response-send-file"]
    if s.dc.file_etag == "none" then r.resp_header["ETag"] = "" end
    if o.status ~= 200 then return o.status end
    return sent
  elseif s.type == "php" then
    local docroot = cx:docroot()
    -- Apache's SCRIPT_NAME is the URL-path without its PATH_INFO.
    local script_name = cx.uri
    if s.path_info and #s.path_info < #script_name and ends(script_name, s.path_info) then
      script_name = sub(script_name, 1, #script_name - #s.path_info)
    end
    -- lighttpd's mod_fastcgi picks PHP by the name's last extension (as written), where
    -- Apache's mod_mime takes .php anywhere among them (config.php.save): a script PHP
    -- would not get is refused rather than sent as a file with its source. (php-fpm's
    -- security.limit_extensions refuses such names with 403 too.)
    local ext = s.script:match("(%.[^./]*)$")
    if not (ext and site.php_exts[ext]) then
      print("lighten: " .. tostring(cx.target) .. " refused (fails closed): " .. s.script
        .. " is PHP for Apache, but lighttpd's fastcgi.server does not take its extension")
      return 403
    end
    attr["physical.doc-root"] = docroot
    attr["uri.path"] = script_name
    attr["physical.rel-path"] = sub(s.script, #docroot + 1)
    local real = through_links(links, s.script) or s.script
    attr["physical.path"] = real
    -- PHP gets the script's name as Apache gives it, not its target's.
    if real ~= s.script then r.req_env["SCRIPT_FILENAME"] = s.script end
    attr["uri.query"] = cx.args
    -- lighttpd does not split what it was handed; the backend gets Apache's PATH_INFO.
    if s.path_info then
      r.req_env["PATH_INFO"] = s.path_info
      -- php-fpm moves PATH_INFO to ORIG_PATH_INFO when REDIRECT_URL is present, unless
      -- the script came from Apache's mod_proxy_fcgi: so it is not passed here.
      r.req_env["REDIRECT_URL"] = nil
    end
    return 0
  elseif s.type == "options" then
    return plans.answer_options(r, cx.v.trace_enable == false)
  elseif s.type == "listing" then
    local real = through_links(links, s.dir) or s.dir
    attr["physical.path"] = real
    if real ~= s.dir then r.req_env["lighten.path"] = s.dir end
    return 0
  end
  if o.text then
    r.resp_header["Content-Type"] = "text/html; charset=iso-8859-1"
    r.resp_body.set({ o.text })
  end
  if o.status == 401 and not s.quiet then
    r.resp_header["WWW-Authenticate"] = 'Basic realm="' .. (s.realm or "") .. '"'
  end
  if cx.filename then attr["physical.path"] = cx.filename end
  return o.status
end

-- Entry for magnet.attract-response-start-to: the status of an ErrorDocument that PHP
-- answered (Apache keeps the error's status), then mod_headers and mod_expires from the
-- configuration of the file that answered.
function M.response(l, site, n)
  lighty = l
  local r = lighty.r
  local attr = r.req_attr
  local status = r.req_item.http_status
  local new_status
  local rs = r.req_env["REDIRECT_STATUS"]
  if rs and rs ~= "200" and status == 200 and r.req_env["LIGHTEN_ERRDOC"] then new_status = tonumber(rs) end
  local v = site.vhosts[n]
  if not v then return 0 end
  local cx = setmetatable({
    site = site, v = v, maps = v.maps or {}, https = attr["uri.scheme"] == "https",
    method = attr["request.method"], orig_method = attr["request.method"],
    target = attr["request.orig-uri"] or attr["request.uri"], headers = r.req_header,
    remote = attr["request.remote-addr"] or "", server_addr = attr["request.server-addr"] or "127.0.0.1",
    env = {}, rounds = 0,
  }, Ctx)
  for k, val in pairs(r.req_env) do cx.env[k] = val end
  -- An ErrorDocument that answered keeps its headers (mod_headers ran for it).
  cx.error_document = r.req_env["LIGHTEN_ERRDOC"] ~= nil
  local path = attr["physical.path"]
  if not path then return new_status or 0 end
  -- A link's target handed to lighttpd: the configuration is the link's.
  if v.links then
    path = r.req_env["lighten.path"] or r.req_env["SCRIPT_FILENAME"] or path
  end
  cx.uri = (attr["uri.path"] or "/") .. (r.req_env["PATH_INFO"] or "")
  cx.args = attr["uri.query"]
  cx.filename = path
  local ok, err = pcall(function()
    local fname, _, kind = walk(path)
    path = fname
    cx.filename = fname
    local dc = cx:dir_config(fname, kind == "dir", attr["uri.path"] or "/")
    if kind == "file" then
      local st = lighty.c.stat(path)
      cx.mtime = st and st.st_mtime
    end
    local ctype = r.resp_header["Content-Type"]
    apply_headers(cx, dc, new_status or status, ctype)
    -- mod_deflate notes that it looked at Accept-Encoding for the types it compresses,
    -- whether or not it compresses this response.
    local base_type = ctype and lower(ctype:match("^[^;%s]+") or "")
    local ce = r.resp_header["Content-Encoding"]
    -- (a whole body under 69 bytes is left alone, as Apache 2.4.71 does: measured)
    local len = tonumber(r.resp_header["Content-Length"] or "")
    if base_type and site.deflate[base_type] and not cx.env["no-gzip"] and not (len and len < 69)
      and (ce == nil or ce == "" or ce == "identity" or r.resp_header["Vary"]) then
      local v = r.resp_header["Vary"]
      r.resp_header["Vary"] = (v and v ~= "") and (v .. ",Accept-Encoding") or "Accept-Encoding"
    end
    -- Apache's fixup_vary(): one Vary, tokens once each (case-insensitively), first
    -- spelling kept.
    local vary = r.resp_header["Vary"]
    if vary and vary ~= "" then
      local seen, out = {}, {}
      for tok in vary:gmatch("[^,%s]+") do
        if not seen[lower(tok)] then
          seen[lower(tok)] = true
          out[#out + 1] = tok
        end
      end
      r.resp_header["Vary"] = table.concat(out, ",")
    end
  end)
  if not ok and getmetatable(err) ~= Untranslatable then error(err, 0) end
  return new_status or 0
end

---------------------------------------------------------------------------------------
-- helpers for the generated ap_expr functions (lighten_site.lua)

local X = {}
M.X = X

-- strtoll() as Apache's ap_expr reads an integer: leading blanks, a sign, digits.
function X.atoi(s)
  local n = s:match("^%s*([+-]?%d+)")
  return n and math.tointeger(tonumber(n)) or 0
end

-- `-R` and `-ipmatch`: the address in the network (written as the translation reads it).
function X.ipmatch(ip, net) return ip_matches(net, ip) end

-- `%{reqenv:NAME}`, `env('NAME')`: the name in any case, as Apache's table finds it.
function X.env(cx, name) return plans.env_get(cx.env, name) end

function X.is_in(w, list)
  for _, x in ipairs(list) do if x == w then return true end end
  return false
end

-- `=~`: a regex with groups sets $0..$9 for what follows (emptied when it fails).
function X.match(st, prog, subject, groups)
  local caps = rx(prog, subject)
  if groups then st.caps = caps or {} end
  return caps ~= nil
end

function X.truthy(s)
  local l = lower(s)
  return not (l == "" or l == "0" or l == "off" or l == "false" or l == "no")
end

function X.file_test(op, path)
  local k, size, exec = stat(path)
  if op == "d" then return k == "dir" end
  if op == "e" then return k ~= "missing" end
  if op == "f" then return k == "file" end
  if op == "s" then return k == "file" and size > 0 end
  if op == "x" then return k ~= "missing" and exec end
  refuse("the file test -" .. op)
end

X.escape = escape_path

return M
