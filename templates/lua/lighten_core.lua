-- lighten_core.lua: what every compiled site shares, for lighttpd's mod_magnet.
--
-- Fixed text shipped by lighten (templates/lua/lighten_core.lua), without the parts no
-- site of the conversion uses.  Each site's module (lua/<site>.lua) holds what its
-- configuration decides, merged per folder and file name at conversion time; this file
-- runs it in the order of Apache 2.4's phases, as lighten's evaluator does (src/eval,
-- which lighten's tests hold against real Apache):
--   1. the URL-path decoded and normalised from the request as sent;
--   2. the directory walk under the document root, PATH_INFO split off;
--   3. the configuration of that folder and name (site.dirconf), its access control;
--   4. the folder's RewriteRules, mod_dir's slash redirect, the internal redirect the
--      rules asked for (another round), else DirectoryIndex;
--   5. the handler: a file, PHP (lighttpd's mod_fastcgi), a listing (mod_dirlisting),
--      or an error.
-- mod_headers and mod_expires run when the response starts (M.response).

local M = {}

local lighty
local byte, sub, find, lower, format = string.byte, string.sub, string.find, string.lower, string.format

local MAX_REDIRECTS = 10
local plans = require("lighten_plans")

-- What the evaluation in progress has read (see "the decision cache" below), or nil.
local reads

local function ends(s, p) return p == "" or sub(s, -#p) == p end

local function trim_end_slashes(s)
  if byte(s, -1) ~= 47 then return s end
  local e = #s
  while e > 0 and byte(s, e) == 47 do e = e - 1 end
  return sub(s, 1, e)
end

-- Everything before the last slash ("/a/b" -> "/a", "/a/b/" -> "/a/b", "/a" -> "").
-- (A loop from the end: an unanchored string.match would try every start position.)
local function parent(p)
  local i = #p
  while i > 0 and byte(p, i) ~= 47 do i = i - 1 end
  if i == 0 then return "" end
  return sub(p, 1, i - 1)
end

-- The last name, trailing slashes aside ("/a/b/" -> "b"); remembered, as the same few
-- paths come back on every request.
local names, nnames = {}, 0
local function basename(p)
  local b = names[p]
  if b then return b end
  local t = trim_end_slashes(p)
  local i = #t
  while i > 0 and byte(t, i) ~= 47 do i = i - 1 end
  b = sub(t, i + 1)
  if nnames >= 4096 then names, nnames = {}, 0 end
  names[p], nnames = b, nnames + 1
  return b
end

-- The last extension of a path's name with its dot (".php"), or nil.
local function last_ext(p)
  local i = #p
  while i > 0 do
    local c = byte(p, i)
    if c == 46 then return sub(p, i) end
    if c == 47 then return nil end
    i = i - 1
  end
  return nil
end

local function split_host_port(h)
  if h == nil then return nil, nil end
  if byte(h, 1) == 91 then
    local close = find(h, "]", 1, true)
    if close then
      local rest = sub(h, close + 1)
      if byte(rest, 1) == 58 then return sub(h, 1, close), sub(rest, 2) end
      return sub(h, 1, close), nil
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
  if not find(p, "[^%w$%-_.+!*'(),:@&=/~]") then return p end
  return (p:gsub("[^%w]", function(ch)
    if SAFE[byte(ch)] then return ch end
    return format("%%%02x", byte(ch))
  end))
end

---------------------------------------------------------------------------------------
-- the URL-path: ap_unescape_url(), dot segments, MergeSlashes

local function decode_path(raw)
  -- Most paths have nothing to decode and nothing to normalise.
  if byte(raw, 1) == 47 and not find(raw, "%", 1, true) and not find(raw, "//", 1, true)
    and not find(raw, "/.", 1, true) then
    return raw
  end
  if byte(raw, 1) == 47 and not find(raw, "%", 1, true) and not find(raw, "/.", 1, true) then
    return (raw:gsub("//+", "/"))
  end
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
  if byte(s, 1) ~= 47 then return nil, 400 end
  local p, above = plans.remove_dot_segments(s)
  if above then return nil, 400 end
  return p
end

-- The URL of an internal redirect: a space and `?` stay encoded for the next round; a
-- `%` is decoded again there, as Apache decodes the new URL again (src/eval reencode).
local function reencode(p)
  if not find(p, "[ ?]") then return p end
  return (p:gsub("[ ?]", { [" "] = "%20", ["?"] = "%3f" }))
end

---------------------------------------------------------------------------------------
-- the filesystem

-- lighty.c.stat makes a new userdata each time: the last one is kept until the hook
-- returns (the walk, a -f test and the file sent name the same path).
local last_path, last_st
local function raw_stat(path)
  if path == last_path then return last_st end
  local st = lighty.c.stat(path)
  last_path, last_st = path, st
  return st
end

-- "file", "dir", "other" or "missing".
local function kind_of(path)
  local st = raw_stat(path)
  if not st then return "missing" end
  if st.is_file then return "file" end
  if st.is_dir then return "dir" end
  return "other"
end

-- The same, noted in the reads of the evaluation under way.
local function stat(path)
  local k = kind_of(path)
  if reads then plans.saw(reads, path, k) end
  return k
end

-- What the decision cache cannot check again cheaply: the decision is not kept.
local function uncacheable()
  if reads then reads.no = true end
end

-- RewriteCond's file tests.
function M.test_file(cx, kind, path)
  local k = stat(path)
  if kind == "f" or kind == "F" then return k == "file" end
  if kind == "s" then
    uncacheable()
    return k == "file" and raw_stat(path).st_size > 0
  end
  if kind == "d" then return k == "dir" end
  if kind == "x" then
    uncacheable()
    return k ~= "missing" and (raw_stat(path).st_mode & 73) ~= 0
  end
  if kind == "U" then return stat(cx.site.docroot .. path) ~= "missing" end
  error("lighten_core: unknown file test -" .. tostring(kind))
end

-- Apache's directory walk: the longest prefix that is a directory, then the next
-- component as the filename, the rest as PATH_INFO.
local function walk(path)
  local kind = stat(path)
  if kind ~= "missing" and not (kind == "file" and byte(path, -1) == 47) then
    return path, nil, kind
  end
  local segs = {}
  local start = 2
  while true do
    local slash = find(path, "/", start, true)
    if not slash then
      segs[#segs + 1] = sub(path, start)
      break
    end
    segs[#segs + 1] = sub(path, start, slash - 1)
    start = slash + 1
  end
  local cur = ""
  for i, seg in ipairs(segs) do
    cur = cur .. "/" .. seg
    local k = stat(cur)
    if not (k == "dir" and i < #segs) then
      local rest = nil
      if i < #segs then rest = "/" .. table.concat(segs, "/", i + 1) end
      return cur, rest, k
    end
  end
  return path, nil, kind
end

-- Symbolic links (site.links, found at conversion): lighten_plans.lua (nil when no site
-- of the conversion has any; every call is behind `site.links`).
local through_links = plans.through_links

-- A name longer than 255 bytes met by the directory walk while every name before it is
-- a directory: ENAMETOOLONG, which Apache answers with 403 (lighty.c.stat says nil).
local LONG_NAME = "[^/]" .. string.rep("[^/]", 255)
local function name_too_long(path)
  if #path <= 256 then return false end
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
-- the request's variables, for the compiled conditions

--@ header: header
-- A request header a RewriteCond reads: when the request has it, Apache varies on it when
-- the rule applies (lookup_header(); never on Host, which the compiler reads with
-- header_nv).  The compiled rule adds cx.pv to Vary when it applies.
function M.header(cx, name)
  local v = cx.headers[name]
  if v == nil or v == "" then return "" end
  local pv = cx.pv
  if pv then pv[#pv + 1] = name else cx.pv = { name } end
  return v
end
--@ end

--@ header_or_env: header_or_env
-- What a SetEnvIf rule tests for a plain name: the header, else an earlier variable of
-- that name, else the empty string (mod_setenvif's match_headers).
function M.header_or_env(cx, name)
  local v = cx.headers[name]
  if v == nil and cx.env then v = plans.env_get(cx.env, name) end
  return v or ""
end
--@ end

--@ raw_path: raw_path
-- The request's URL-path as sent (percent-encoded, not normalised): what mod_setenvif
-- reads as Request_URI in the server's and the host's own rules (post_read_request).
-- Its leading slashes merged (Apache parses `//s/x` as `/s/x`); an internal redirect's
-- URL once one has run (post_read_request runs for it too: cx.setenvif_path).
function M.raw_path(cx)
  if cx.setenvif_path then return cx.setenvif_path end
  local t = cx.target
  local q = find(t, "?", 1, true)
  return plans.merge_leading_slashes(q and sub(t, 1, q - 1) or t)
end
--@ end

-- A request header without Vary ([NV]).
function M.header_nv(cx, name)
  local v = cx.headers[name]
  if v == nil then return "" end
  return v
end

function M.server_name(cx)
  local sn = cx.sn
  if sn then return sn end
  local site = cx.site
  local h = cx.headers["Host"]
  -- Apache's r->hostname: without the port and one trailing dot, in lower case
  local host = h and h ~= "" and lower(split_host_port(h) or "") or ""
  if byte(host, -1) == 46 then host = sub(host, 1, -2) end
  if site.canonical or host == "" then sn = site.name else sn = host end
  cx.sn = sn
  return sn
end
local server_name = M.server_name

local function server_port(cx)
  local h = cx.headers["Host"]
  local _, port = split_host_port(h ~= "" and h or nil)
  local p = port and tonumber(port)
  if p then return p end
  return cx.https and 443 or 80
end

local function self_url(cx)
  local scheme = cx.https and "https" or "http"
  local port = server_port(cx)
  if port == (cx.https and 443 or 80) then return scheme .. "://" .. server_name(cx) end
  return scheme .. "://" .. server_name(cx) .. ":" .. port
end
M.self_url = self_url

--@ variables: var remote server_addr
local TIME = {
  TIME_YEAR = "%Y", TIME_MON = "%m", TIME_DAY = "%d", TIME_HOUR = "%H", TIME_MIN = "%M",
  TIME_SEC = "%S", TIME_WDAY = "%w", TIME = "%Y%m%d%H%M%S",
}

-- The client's and the server's address, read from lighttpd when a condition asks.
local function attr_once(cx, field, name, default)
  uncacheable()
  local v = cx[field]
  if not v then
    v = lighty.r.req_attr[name] or default
    cx[field] = v
  end
  return v
end

function M.remote(cx) return attr_once(cx, "remote", "request.remote-addr", "") end
function M.server_addr(cx) return attr_once(cx, "server_addr", "request.server-addr", "127.0.0.1") end
--@ end

--@ variables: var remote server_addr
-- The variables the compiler does not inline (%{NAME}).
function M.var(cx, name)
  if name == "THE_REQUEST" then return cx.orig_method .. " " .. cx.target .. " " .. plans.protocol(lighty) end
  if name == "REQUEST_SCHEME" then return cx.https and "https" or "http" end
  if name == "SERVER_PORT" then return tostring(server_port(cx)) end
  if name == "SERVER_ADDR" then return M.server_addr(cx) end
  if name == "REMOTE_ADDR" or name == "REMOTE_HOST" then return M.remote(cx) end
  if name == "PATH_INFO" then return cx.path_info or "" end
  if name == "SERVER_PROTOCOL" then return plans.protocol(lighty) end
  if name == "REMOTE_PORT" then
    uncacheable()
    return tostring(lighty.r.req_attr["request.remote-port"] or "")
  end
  if name == "CONN_REMOTE_ADDR" then return M.remote(cx) end
  if name == "SERVER_ADMIN" then return cx.site.server_admin or "" end
  if name == "SERVER_SOFTWARE" then return "Apache" end
  if name == "IS_SUBREQ" then return "false" end
  if name == "API_VERSION" then return "20120211:139" end
  if name == "CONTEXT_PREFIX" or name == "REMOTE_USER" or name == "REMOTE_IDENT" or name == "AUTH_TYPE" then
    return ""
  end
  local t = TIME[name]
  if t then
    uncacheable()
    return os.date(t)
  end
  -- (any other name is empty to mod_rewrite: only %{ENV:name} reads the environment)
  return ""
end
--@ end

M.env_get = plans.env_get

-- The protocol of the request line as sent (part of the decision cache's key).
function M.protocol() return plans.protocol(lighty) end

function M.set_env(cx, name, value)
  local env = cx.env
  if not env then
    env = {}
    cx.env = env
  end
  plans.env_set(env, name, value)
end

--@ comparisons: bytecmp lexcmp atoi
-- Byte-wise three-way compare (strcmp on unsigned bytes; Lua's `<` follows the locale).
local function bytecmp(a, b)
  if a == b then return 0 end
  local la, lb = #a, #b
  for i = 1, la < lb and la or lb do
    local x, y = byte(a, i), byte(b, i)
    if x ~= y then return x < y and -1 or 1 end
  end
  return la < lb and -1 or 1
end
M.bytecmp = bytecmp

-- `compare_lexicography()`: the longer string is greater; equal lengths compare bytes.
function M.lexcmp(a, b)
  if #a ~= #b then return #a > #b and 1 or -1 end
  return bytecmp(a, b)
end

-- C's atoi() as mod_rewrite's integer comparisons read it.
function M.atoi(s)
  local sign, digits = s:match("^[ \t\n\v\f\r]*([+-]?)([0-9]*)")
  local d = digits:gsub("^0+", "")
  local n
  if d == "" then
    n = 0
  elseif #d > 19 or (#d == 19 and bytecmp(d, "9223372036854775807") > 0) then
    n = math.maxinteger
  else
    n = math.tointeger(tonumber(d))
  end
  if sign == "-" then n = -n end
  return n
end
--@ end

---------------------------------------------------------------------------------------
-- what a compiled rule does after its substitution

-- The prefixes of mod_rewrite's is_absolute_uri(), by scheme: true when "//" must follow.
local ABSOLUTE = {
  http = true, https = true, ftp = true, ajp = true, fcgi = true, scgi = true, ws = true,
  wss = true, h2 = true, h2c = true, uwsgi = true, mailto = false, nntp = true, news = false,
  ldap = true, gopher = true, balancer = true, unix = false,
}

local function is_absolute_uri(s)
  local c = find(s, ":", 1, true)
  if not c or c > 9 then return false end
  local slashes = ABSOLUTE[lower(sub(s, 1, c - 1))]
  if slashes == nil then return false end
  return not slashes or (byte(s, c + 1) == 47 and byte(s, c + 2) == 47)
end

local function scheme_of(s)
  local c = find(s, ":", 1, true)
  if not c or c == 1 or byte(s, c + 1) ~= 47 or byte(s, c + 2) ~= 47 then return nil end
  local sc = sub(s, 1, c - 1)
  if find(sc, "[^0-9A-Za-z+%-.]") then return nil end
  return sc
end

-- Captures of no match at all: `$1` and `%1` expand to "".
M.EMPTY = {}

--@ fail: fail
-- A regex that ran into PCRE2's limits (or that this PCRE2 refuses): the rule fails
-- closed with 403.
function M.fail(cx)
  uncacheable()
  print("lighten: " .. sub(tostring(cx.target), 1, 200) .. " refused (fails closed): a rewrite pattern reached PCRE2's match limit")
  cx.status = 403
  return "status"
end
--@ end

--@ proxy: proxy_refused
-- A [P] rule of the server or a virtual host applied: lighttpd is not set up to proxy it,
-- and the request is refused rather than answered some other way.
function M.proxy_refused(cx)
  print("lighten: " .. sub(tostring(cx.target), 1, 200) .. " refused (fails closed): a [P] rule (proxy)")
  cx.status = 403
  return "status"
end
--@ end

--@ files_regex: matches
-- Whether a <Files> regex matches.  When PCRE2 gives up (its limits), the request stops
-- with an error, which mod_magnet answers with 500: neither the section's settings (it may
-- grant) nor their absence (it may deny) would be safe to assume.
local re_test
function M.matches(prog, s)
  re_test = re_test or require("lighten_re").test
  local m, why = re_test(prog, s)
  if m == nil then error("lighten: a <Files> pattern could not be matched against " .. s .. ": " .. tostring(why)) end
  return m
end
--@ end

-- A record that is `base` with the fields of `changes` (false for a field `base` has
-- and this one has not); made once, when the site module loads.
function M.extend(base, changes)
  local t = {}
  for k, v in pairs(base) do t[k] = v end
  for k, v in pairs(changes) do
    if v == false then t[k] = nil else t[k] = v end
  end
  return t
end

-- What a per-directory rule matches: the filename with its PATH_INFO, without the
-- directory prefix.
function M.subject(cx, perdir)
  local subject = cx.filename
  local pi = cx.path_info
  if pi and pi ~= "" then subject = subject .. pi end
  if sub(subject, 1, #perdir) == perdir then subject = sub(subject, #perdir + 1) end
  return subject
end

--@ dollars: dollars
-- SetEnvIf's value with `$1`..`$9` from the match.
function M.dollars(v, caps)
  return (v:gsub("%$(%d)", function(d) return caps[tonumber(d)] or "" end))
end
--@ end

---------------------------------------------------------------------------------------
--@ alias: translate redirects alias_match regex_redirect escape_path
-- mod_alias, for the compiled alias functions

M.alias_match = plans.alias_match
M.escape_path = escape_path

function M.regex_redirect(url) return plans.regex_redirect(url, escape_path) end

-- What a mod_alias function answered for a request: a redirect's status (the Location
-- made absolute, the query kept unless the target has one), or nil and the aliased path.
local function alias_outcome(cx, kind, a, b)
  if kind == "redirect" then
    if a < 300 or a >= 400 then return a end
    local loc = byte(b, 1) == 47 and (M.self_url(cx) .. b) or b
    if cx.args and not find(loc, "?", 1, true) then loc = loc .. "?" .. cx.args end
    cx.location = loc
    return a
  elseif kind == "file" or kind == "cgi" then
    cx.cgi = kind == "cgi" or nil
    -- (`Alias /ht /srv/ht/` makes /srv/ht//in for /ht/in: Apache's directory walk merges
    -- the slashes, apr_filepath_merge)
    if find(a, "//", 1, true) then a = (a:gsub("//+", "/")) end
    return nil, a
  elseif kind == "fail" then
    uncacheable()
    print("lighten: " .. sub(tostring(cx.target), 1, 200) .. " refused (fails closed): an AliasMatch or RedirectMatch pattern reached PCRE2's match limit")
    return 500
  end
  return nil
end
--@ end

--@ type_flag: type_flag
-- [T=type] as Apache stores it (ap_content_type_tolower): type and subtype in lower
-- case, parameters as written.
function M.type_flag(cx, t)
  local i = find(t, ";", 1, true)
  if i then t = lower(sub(t, 1, i - 1)) .. sub(t, i) else t = lower(t) end
  cx.forced_type = t
end
--@ end

--@ env_flag: env_flag
-- [E=VAR:VAL], [E=VAR], [E=!VAR]
function M.env_flag(cx, v)
  if byte(v) == 33 then
    M.set_env(cx, sub(v, 2), nil)
    return
  end
  local colon = find(v, ":", 1, true)
  if colon then
    M.set_env(cx, sub(v, 1, colon - 1), sub(v, colon + 1))
  else
    M.set_env(cx, v, "")
  end
end
--@ end

--@ marks: marks
-- The byte ranges of an expansion that came from back-references: `kinds` says for each
-- piece whether it is literal ("L") or a back-reference ("B").  Only needed when the
-- request has an encoded `?` (%3f).
function M.marks(kinds, ...)
  local marks, len = {}, 0
  for i = 1, #kinds do
    local v = select(i, ...)
    if byte(kinds, i) == 66 then
      marks[#marks + 1] = len + 1
      marks[#marks + 1] = len + #v
    end
    len = len + #v
  end
  return marks
end
--@ end

--@ split_query: split_query
-- splitout_queryargs(): `?` in the result replaces (with [QSA] prepends to) the query;
-- [QSD] drops it; [QSL] splits at the last `?`.  `how` holds the rule's query flags
-- ("A" QSA, "D" QSD, "L" QSL).  Returns the URL without its query, or nil when the `?`
-- lies in one of the `unsafe` ranges (since 2.4.60, without [UnsafeAllow3F]).
function M.split_query(cx, new, how, unsafe)
  if is_absolute_uri(new) and not find(new, "?", 1, true) then
    local sc = scheme_of(new)
    if sc ~= "http" and sc ~= "https" and sc ~= "ftp" then
      cx.args = nil
      return new
    end
  end
  if find(how, "D", 1, true) then cx.args = nil end
  local sc = scheme_of(new)
  local p = find(new, "?", (sc and #sc + 3 or 0) + 1, true)
  if p and find(how, "L", 1, true) then
    while true do
      local q = find(new, "?", p + 1, true)
      if not q then break end
      p = q
    end
  end
  if p then
    if unsafe then
      for k = 1, #unsafe, 2 do
        if unsafe[k] <= p and p <= unsafe[k + 1] then return nil end
      end
    end
    local q = sub(new, p + 1)
    new = sub(new, 1, p - 1)
    if find(how, "A", 1, true) then
      if q ~= "" then
        local old = cx.args
        cx.args = old and (q .. "&" .. old) or q
      end
    else
      cx.args = q
    end
    local a = cx.args
    if a and byte(a, -1) == 38 then a = sub(a, 1, -2) end
    if a == "" then a = nil end
    cx.args = a
  end
  return new
end
--@ end

--@ vary: vary_list add_vary
-- The Vary of a rule without [OR] that applied: those of the headers its conditions read
-- that the request has.
function M.vary_list(cx, names)
  local h = cx.headers
  local pv
  for i = 1, #names do
    local v = h[names[i]]
    if v ~= nil and v ~= "" then
      pv = pv or {}
      pv[#pv + 1] = names[i]
    end
  end
  if pv then
    cx.pv = pv
    M.add_vary(cx)
  end
end

-- The rule's Vary: the headers its conditions read, once each (case-insensitively).
function M.add_vary(cx)
  local pv = cx.pv
  cx.pv = nil
  if not pv then return end
  local vary = cx.vary
  if not vary then
    vary = {}
    cx.vary = vary
  end
  for _, n in ipairs(pv) do
    local dup = false
    for _, m in ipairs(vary) do if lower(m) == lower(n) then dup = true end end
    if not dup then vary[#vary + 1] = n end
  end
end
--@ end

--@ substituted: substituted
-- After a substitution: what the new filename means.  `flags` holds "R" for [R], and
-- `perdir` is the directory prefix.  Sets cx.filename.
function M.substituted(cx, new, perdir, redirect)
  if perdir and byte(new, 1) ~= 47 and not is_absolute_uri(new) then new = perdir .. new end
  if redirect then
    if not is_absolute_uri(new) then
      local base = self_url(cx)
      if byte(new, 1) == 47 then new = base .. new else new = base .. "/" .. new end
    end
    cx.filename = new
    return
  end
  if is_absolute_uri(new) then
    local scheme, rest = new:match("^([%a][%w+.-]*)://(.*)$")
    if scheme then
      local slash = find(rest, "/", 1, true)
      local hostport, path = rest, "/"
      if slash then hostport, path = sub(rest, 1, slash - 1), sub(rest, slash) end
      local host, port = split_host_port(hostport)
      local p = tonumber(port or "") or (lower(scheme) == "https" and 443 or 80)
      if host and lower(host) == lower(server_name(cx)) and p == server_port(cx) then new = path end
    end
  end
  cx.filename = new
end
--@ end

---------------------------------------------------------------------------------------
-- outcomes

local function with_query(loc, args, raw)
  if args and args ~= "" then
    if raw then return loc .. "?" .. args end
    return loc .. "?" .. escape_path(args)
  end
  return loc
end

--@ redirect: substituted server_rules
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
  if sub(path, 1, #directory) == directory then
    return sub(url, 1, i + 2) .. sub(rest, 1, j - 1) .. trim_end_slashes(base) .. "/" .. sub(path, #directory + 1)
  end
  return url
end
--@ end

-- The handler for a file under a directory configuration: "php" or nil.
local function handler(dc, fname)
  if dc.set_handler then return dc.set_handler end
  local hs = dc.handlers
  if not hs then return nil end
  local found
  local base = basename(fname)
  local dot = find(base, ".", 1, true)
  while dot do
    local nxt = find(base, ".", dot + 1, true)
    local h = hs[lower(sub(base, dot + 1, (nxt or 0) - 1))]
    if h ~= nil then found = h end
    dot = nxt
  end
  return found
end

-- The site's memo `name` (entries counted in `n`), afresh once it holds MEMO_LIMIT.
local MEMO_LIMIT = 4096
local function memo_of(site, name)
  local memo = site[name]
  if not memo or memo.n >= MEMO_LIMIT then
    memo = { n = 0 }
    site[name] = memo
  end
  return memo
end

-- The compiled configuration of a folder and a name in it (site.dirconf), remembered per
-- site: the records are constants, and a busy site asks for the same few again and again.
local function dirconf(site, dir, base, uri)
  -- (with <Location> sections the URL decides too: config_for keeps those by URL)
  if site.locations then return site.dirconf(dir, base, uri) end
  local memo = site.memo
  if not memo then
    memo = { n = 0 }
    site.memo = memo
  end
  local md = memo[dir]
  local dc = md and md[base]
  if dc then return dc end
  dc = site.dirconf(dir, base)
  if memo.n >= MEMO_LIMIT then
    memo = { n = 0 }
    site.memo = memo
  end
  md = memo[dir]
  if not md then
    md = {}
    memo[dir] = md
  end
  md[base] = dc
  memo.n = memo.n + 1
  return dc
end

-- The configuration for a walked path, remembered by the path itself (and the URL-path
-- `uri` it was asked by, for a site with <Location> sections; nil leaves them out).
local function config_for(site, fname, kind, uri)
  local memo = memo_of(site, kind == "dir" and "paths_dir" or "paths")
  local key = fname
  if site.locations and uri then key = uri .. "\0" .. fname end
  local dc = memo[key]
  if dc then return dc end
  -- <Files> see the name after the last slash, as Apache's file walk takes it: "" for
  -- a folder asked for with its trailing slash.
  local name = basename(fname)
  if kind == "dir" and byte(fname, -1) == 47 then name = "" end
  dc = dirconf(site, kind == "dir" and trim_end_slashes(fname) or parent(fname), name, uri)
  memo[key] = dc
  memo.n = memo.n + 1
  return dc
end

--@ auth: auth
-- Whether the user lighttpd's mod_auth authenticated passes a folder's `Require
-- valid-user` or `Require user` (dc.auth): only a login checked against the folder's own
-- AuthUserFile counts, never another realm's.
local function login_ok(cx, a)
  local user = cx.user
  return user ~= nil and cx.auth_file == a.file and (a.users == nil or a.users[user] == true)
end
--@ end

--@ listing: may_hide index_ignore
-- Whether mod_autoindex would leave out an entry of `dir` that lighttpd's listing shows
-- (it hides dotfiles only): one that is denied, or one an IndexIgnore pattern names
-- (site.index_ignore, every pattern the host reads).  Then the listing is refused rather
-- than showing the name.  Only sites with a denial or an IndexIgnore anywhere look.
local function listing_hides(cx, dir)
  uncacheable()
  local names = lighty.c.readdir(dir)
  if type(names) ~= "function" then return true end
  local base = byte(dir, -1) == 47 and dir or (dir .. "/")
  local url = byte(cx.uri, -1) == 47 and cx.uri or (cx.uri .. "/")
  local ignore = cx.site.index_ignore
  for name in names do
    if byte(name, 1) ~= 46 then
      if ignore then
        for i = 1, #ignore do
          if find(name, ignore[i]) then return true end
        end
      end
      local p = base .. name
      -- A link Apache refuses (lighttpd's listing leaves out only a dangling one).
      if cx.site.links and cx.site.links[p] == false and stat(p) ~= "missing" then return true end
      local d = stat(p) == "dir" and p or dir
      local dc = dirconf(cx.site, trim_end_slashes(d), name, url .. name)
      if dc.denied then return true end
--@ auth: auth
      if dc.auth and not login_ok(cx, dc.auth) then return true end
--@ end
    end
  end
  return false
end
--@ end

-- What a folder's configuration answers before the fixups, or nil: a broken .htaccess
-- (500), then its SetEnvIf and access control.  Its ErrorDocuments are in force from here.
local function folder_refused(cx, dc)
  cx.errdocs = dc.errdocs
  if dc.broken then return 500 end
  -- (per-directory SetEnvIf: header_parser, which Apache runs for the main request only)
  if dc.env and not cx.subreq then dc.env(cx) end
  -- (a DirectoryIndex sub-request that merges the folder's own configuration: Apache does
  -- not check access there again)
  if cx.skip_access and cx.skip_access == cx.filename then return nil end
  -- SSLRequireSSL: mod_ssl's access check comes first.
  if dc.require_ssl and not cx.https then return 403 end
  if dc.denied then return dc.denied end
--@ auth: auth
  if dc.auth and not login_ok(cx, dc.auth) then
    -- mod_auth_basic asks for the password again (a realm without AuthType or AuthName
    -- is a record denied with 500 by the compiler)
    cx.realm = dc.auth.realm
    return 401
  end
--@ end
  return nil
end

-- The handler's answer for a mapped file: the status and what serves it.
local function handle(cx, dc, fname, path_info, kind)
--@ alias: translate redirects alias_match regex_redirect escape_path
  -- A ScriptAlias program: Apache runs it, lighttpd is not set up to; never its source.
  if cx.cgi and not dc.set_handler then
    if kind == "file" then
      print("lighten: " .. sub(tostring(cx.target), 1, 200) .. " refused (fails closed): " .. fname
        .. " is a ScriptAlias program, which Apache runs as CGI")
      return 403
    end
    -- mod_cgid: "attempt to invoke directory as script"
    if kind == "dir" then return 403 end
  end
--@ end
  if handler(dc, fname) == "php" then
    if kind ~= "file" then return 404 end
    -- mod_env's fixup: what the script receives.
    if dc.setenv then
      for _, e in ipairs(dc.setenv) do M.set_env(cx, e[1], e[2]) end
    end
    cx.served, cx.script, cx.path_info, cx.dc = "php", fname, path_info, dc
    return 200
  end
  local refused = plans.default_handler_refuses(cx.method, kind)
  if refused == 200 then
    cx.served = "options"
    return 200
  end
  if refused then return refused end
  if kind == "file" then
    if path_info then return 404 end
    cx.served, cx.path, cx.dc = "file", fname, dc
    return 200
  elseif kind == "dir" then
    if not cx.site.autoindex then return 404 end
    if dc.indexes then
--@ listing: may_hide index_ignore
      if cx.site.may_hide and listing_hides(cx, fname) then return 403 end
--@ end
      cx.served, cx.path, cx.dc = "listing", fname, dc
      return 200
    end
    return 403
  end
  return 404
end

--@ end_flag: END
-- [END], what a rule returns as its third value: the rewritten URL is served without
-- another rewrite round (serve_after_end).
M.END = true

-- After [END]: the rewritten URL is served without another rewrite round.
local function serve_after_end(cx, url, args)
  local site = cx.site
  cx.uri, cx.args = url, args
  if name_too_long(site.docroot .. url) then return 403 end
  local fname, path_info, kind = walk(site.docroot .. url)
  cx.filename, cx.path_info = fname, path_info
  if site.links and not through_links(site.links, fname) then return 403 end
  local dc = config_for(site, fname, kind, cx.uri)
  -- The internal redirect is a request of its own: access control runs on where it
  -- leads (only the rewrite rules are skipped).
  local refused = folder_refused(cx, dc)
  if refused then return refused end
  return handle(cx, dc, fname, path_info, kind)
end
--@ end

local round

--@ redirect: substituted server_rules
-- The redirect a rule's absolute URL (cx.filename) makes: its Location with the query
-- string (escaped unless [NE] or unchanged), and the [R] status (302 by default).  `dc`
-- for a folder's rules (RewriteBase), nil for the server's.
local function redirect_to(cx, action, code, args, dc)
  local f = cx.filename
  if not is_absolute_uri(f) then return 500 end
  if cx.args and find(cx.args, "[%c ]") and action == "noescape" then return 403 end
  if dc and dc.base then f = replace_base_in_url(f, dc.perdir, dc.base) end
  local raw = action == "noescape" or (args ~= nil and cx.args == args)
  cx.location = with_query(escape_location(f, action == "noescape"), cx.args, raw)
  if not code or code < 300 or code >= 400 then code = 302 end
  return code
end
--@ end

-- What a round may change of cx, to undo a DirectoryIndex sub-request that does not serve.
local function snapshot(cx)
  local env, vary = cx.env, cx.vary
  local e2, v2
  if env then
    e2 = {}
    for k, v in pairs(env) do e2[k] = v end
  end
  if vary then v2 = { table.unpack(vary) } end
  return { cx.uri, cx.filename, cx.path_info, e2, v2, cx.forced_type, cx.served, cx.errdocs }
end

local function restore(cx, s, args)
  cx.uri, cx.filename, cx.path_info, cx.env, cx.vary, cx.forced_type, cx.served, cx.errdocs =
    s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8]
  -- (a sub-request's realm goes with it: mod_dir keeps only the status of a refused
  -- index, so Apache's remembered 401 carries no WWW-Authenticate)
  cx.args, cx.location, cx.status, cx.realm = args, nil, nil, nil
end

-- mod_dir's DirectoryIndex (fixup_dir): each name is looked up as a sub-request, a whole
-- round up to the handler (the rules without their [NS] and [R] ones, access control).
-- The first that comes out 200 on a regular file answers; a rewrite there is the main
-- request's internal redirect.  A redirect is passed on, as a 401 is when there is one
-- name; any other error is remembered and answered if no name serves: never a listing
-- instead of a refused index file.  Nothing (nil, nil) when no name serves.
local function directory_index(cx, names, fname)
  local site, args, dir_uri = cx.site, cx.args, cx.uri
  local notfound
  for _, name in ipairs(names) do
    local cand_uri, cand_file = plans.index_candidate(name, dir_uri, site.docroot, fname)
    if not cand_uri then
      notfound = 400
      goto next_name
    end
    local saved = snapshot(cx)
    -- (the sub-request is a GET, whatever the request's method: ap_sub_req_lookup_uri;
    -- one whose record is the folder's own merges its configuration, and Apache does not
    -- check access there again)
    local method = cx.method
    -- (a plain name in the folder itself, and only while the sub-request still maps to
    -- that file: an Alias or a rewrite that takes it elsewhere is checked)
    local same = not find(name, "/", 1, true) and dirconf(site, trim_end_slashes(fname), "", dir_uri)
      == dirconf(site, trim_end_slashes(fname), name, cand_uri)
    cx.subreq, cx.method, cx.skip_access = true, "GET", same and cand_file or nil
    local status, next_uri, next_args = round(cx, cand_uri, args)
    cx.subreq, cx.method, cx.skip_access = nil, method, nil
    if status == 200 and cx.served == "php" then return 200 end
    if status == 200 and cx.served == "file" then
      -- the main request's handler, with its own method
      local refused = plans.default_handler_refuses(method, "file")
      if refused == 200 then cx.served = "options" end
      return refused or 200
    end
    if status == nil then
      if stat(cand_file) == "file" then
        cx.redirect_url = cand_uri
        return nil, next_uri, next_args
      end
    elseif (status >= 300 and status < 400) or (status == 401 and #names == 1) then
      return status
    elseif status ~= 200 and status ~= 404 then
      notfound = status
    end
    restore(cx, saved, args)
    ::next_name::
  end
  return notfound
end

-- One round of request processing: the status, or nil and the internal redirect's
-- URL-path and query for the next round.  cx.location is set for a redirect.
function round(cx, uri, args)
  local site = cx.site
  cx.uri, cx.args, cx.path_info = uri, args, nil
  local filename = site.docroot .. uri
  cx.cgi = nil
  cx.errdocs = site.error_docs
--@ server_rules: server_rules
  -- mod_rewrite's rules of the virtual host and the server ([P] rules only), on the URL-path
  if site.server_rules then
    cx.filename = uri
    local action, code = site.server_rules(cx)
    if action == "status" then return cx.status end
    -- (the compiler lets in no substitution here but an [R] redirect's absolute URL)
    if action then return redirect_to(cx, action, code, args) end
  end
--@ end
--@ alias: translate redirects alias_match regex_redirect escape_path
  -- mod_alias of the virtual host and the server (translate_name)
  if site.translate then
    local status, file = alias_outcome(cx, site.translate(uri))
    if status then return status end
    if file then filename = file end
  end
--@ end
  -- TRACE is answered by the core before the directory walk; lighttpd does not.
  if cx.method == "TRACE" then return 405 end
  if name_too_long(filename) then return 403 end
  local fname, path_info, kind = walk(filename)
  cx.filename, cx.path_info = fname, path_info
  if site.links and not through_links(site.links, fname) then return 403 end
  local dc = config_for(site, fname, kind, cx.uri)
  local refused = folder_refused(cx, dc)
  if refused then return refused end

  local pending, pending_args
  local rules = dc.rules
  -- mod_rewrite declines a folder's rules for the folder itself asked for without its
  -- slash, leaving it to mod_dir (unless RewriteOptions AllowNoSlash).
  if rules and not dc.allow_no_slash and #fname == #dc.perdir - 1 and byte(dc.perdir, -1) == 47
    and sub(dc.perdir, 1, -2) == fname then
    rules = nil
  end
  if rules and not dc.symlinks then return 403 end
  -- The list cannot change what an existing file is answered with (files_pass, decided
  -- by the compiler): lighttpd serves it without running the rules.
  if rules and dc.files_pass and kind == "file" and not path_info and byte(uri, -1) ~= 47
    and handler(dc, fname) ~= "php" then
    rules = nil
  end
  if rules then
    local ofilename = fname
    local action, code, final = rules(cx, dc.perdir)
    if action == "status" then return cx.status end
    if action then
      local f = cx.filename
      local absolute = byte(f, 1) ~= 47 and is_absolute_uri(f)
      if cx.args and find(cx.args, "[%c ]") and not (absolute and action ~= "noescape") then
        return 403
      end
--@ redirect: substituted server_rules
      if absolute then return redirect_to(cx, action, code, args, dc) end
--@ end
      if byte(f, 1) ~= 47 then return 400 end
      if f == ofilename then
        cx.filename = ofilename
      else
        local url
        local perdir = dc.perdir
        if dc.base and sub(f, 1, #perdir) == perdir then
          url = trim_end_slashes(dc.base) .. "/" .. sub(f, #perdir + 1)
        elseif dc.base then
          url = f
        else
          local root = site.docroot
          if sub(f, 1, #root) == root and (#f == #root or byte(f, #root + 1) == 47) then
            url = sub(f, #root + 1)
          else
            url = f
          end
        end
--@ end_flag: END
        if final then return serve_after_end(cx, url, cx.args) end
--@ end
        local target = cx.args and (url .. "?" .. cx.args) or url
        local q = find(target, "?", 1, true)
        if q then
          pending, pending_args = reencode(sub(target, 1, q - 1)), sub(target, q + 1)
        else
          pending = reencode(target)
        end
      end
    end
  end

--@ alias: translate redirects alias_match regex_redirect escape_path
  -- mod_alias's fixup: the folder's redirects, after its rules
  if dc.redirects then
    local status = alias_outcome(cx, dc.redirects(cx.uri))
    if status then return status end
  end
--@ end
  if kind == "dir" and not path_info and byte(cx.uri, -1) ~= 47 and dc.slash then
    cx.location = with_query(self_url(cx) .. escape_path(cx.uri) .. "/", cx.args, true)
    return 301
  end
  if pending then return nil, pending, pending_args end
  if kind == "dir" and dc.index and not cx.subreq then
    local status, next_uri, next_args = directory_index(cx, dc.index, fname)
    if status or next_uri then return status, next_uri, next_args end
  end
  return handle(cx, dc, fname, path_info, kind)
end

--@ early_env: early_env
-- An internal redirect runs post_read_request again: the server's and the host's own
-- SetEnvIf on its URL (the new request's variables are the old ones as REDIRECT_*).
local function rerun_server_env(cx, path)
  if not cx.site.early_env then return end
  cx.setenvif_path = plans.merge_leading_slashes(path)
  cx.site.early_env(cx)
end
--@ end

-- The whole request: rounds until an answer.
local function run(cx)
  local raw = cx.target
  -- A fragment is not part of a request-target: Apache answers 400 (lighttpd would take
  -- '#' as a path byte).
  if find(raw, "#", 1, true) then return 400 end
  local qpos = find(raw, "?", 1, true)
  local rawpath, args = raw, nil
  if qpos then rawpath, args = sub(raw, 1, qpos - 1), sub(raw, qpos + 1) end
  local uri, err = decode_path(rawpath)
  if not uri then return err end
--@ keep_slashes: keep_slashes
  -- MergeSlashes Off: Apache's sections and rules would see the '//' decode_path merges
  -- (leading ones too: Apache merges those in an origin-form target but not in an
  -- absolute-form one, and lighttpd hands both over alike).
  if cx.site.keep_slashes and find(rawpath, "//", 1, true) then
    print("lighten: " .. sub(raw, 1, 200) .. " refused (fails closed): MergeSlashes Off and '//' in the path")
    return 403
  end
--@ end
  cx.asked = cx.site.docroot .. uri
--@ early_env: early_env
  if cx.site.early_env then
    cx.uri = uri
    cx.site.early_env(cx)
  end
--@ end
  local rounds = 0
  local error_round
  while true do
    rounds = rounds + 1
    if rounds > MAX_REDIRECTS + 1 then return 500 end
    local status, next_uri, next_args = round(cx, uri, args)
--@ errdocs: error_docs errdocs
    if status and error_round then
      -- The ErrorDocument's own round: what it serves goes out with the error's status;
      -- an error on the way is the first error, without a document.
      cx.error_round = error_round
      if status >= 400 then
        cx.served = nil
        return error_round
      end
      return status == 200 and error_round or status
    end
    local ed = status and status >= 400 and not cx.served and not cx.location and cx.errdocs and cx.errdocs[status]
    if ed then
      local kind, value = ed[1], ed[2]
      if kind == "remote" then
        cx.location = value
        return 302
      elseif kind == "text" then
        cx.text = value
        return status
      elseif kind ~= "local" then
        return status
      end
      -- ap_die(): an internal redirect to the document, by GET, with the error's status.
      local env = {}
      if cx.env then
        for k, v in pairs(cx.env) do env["REDIRECT_" .. k] = v end
      end
      env.REDIRECT_URL = uri
      env.REDIRECT_STATUS = tostring(status)
      if args then env.REDIRECT_QUERY_STRING = args end
      cx.env = env
      if cx.method ~= "GET" and cx.method ~= "HEAD" then cx.method = "GET" end
      local q = find(value, "?", 1, true)
      local u, a = value, nil
      if q then u, a = sub(value, 1, q - 1), sub(value, q + 1) end
--@ early_env: early_env
      rerun_server_env(cx, u)
--@ end
      local d = decode_path(u)
      if not d then return status end
      uri, args = d, a
      cx.filename, cx.path_info = nil, nil
      error_round = status
      goto continue
    end
--@ end
    if status then return status end
    -- [T=] lives in the request's notes, which the new request does not inherit.
    cx.forced_type = nil
    local env = {}
    if cx.env then
      for k, v in pairs(cx.env) do env["REDIRECT_" .. k] = v end
    end
    env.REDIRECT_URL = cx.redirect_url or uri
    cx.redirect_url = nil
    env.REDIRECT_STATUS = "200"
    if args then env.REDIRECT_QUERY_STRING = args end
    cx.env = env
--@ early_env: early_env
    rerun_server_env(cx, next_uri)
--@ end
    do
      local d, e = decode_path(next_uri)
      if not d then return e end
      uri, args = d, next_args
    end
    ::continue::
  end
end

---------------------------------------------------------------------------------------
-- answering in lighttpd

-- The Content-Type Apache's mod_mime gives a file: ForceType, else the type of the last
-- extension that has one (per-directory AddType over TypesConfig), with a charset from
-- AddCharset or AddDefaultCharset for text/plain and text/html; and its encoding.
local function content_type_of(site, dc, path, forced)
  local t = forced or dc.force_type
  local enc, charset
  local types, encodings, charsets = dc.types, dc.encodings, dc.charsets
  local mime = site.mime
  local base = basename(path)
  local dot = find(base, ".", 1, true)
  while dot do
    local nxt = find(base, ".", dot + 1, true)
    local e = lower(sub(base, dot + 1, (nxt or 0) - 1))
    dot = nxt
    if not (forced or dc.force_type) then
      local v
      if types then v = types[e] end
      if v == nil then v = mime[e] end
      if v then t = v end
    end
    if encodings and encodings[e] then enc = encodings[e] end
    if charsets and charsets[e] then charset = charsets[e] end
  end
  local cs = dc.default_charset
  if t and (charset or cs) and not find(t, "charset=", 1, true) then
    if charset then
      t = t .. "; charset=" .. charset
    elseif sub(t, 1, 10) == "text/plain" or sub(t, 1, 9) == "text/html" then
      t = t .. "; charset=" .. cs
    end
  end
  return t, enc
end

-- The same, remembered per path and configuration when no [T=] forces a type.
local function content_type(site, dc, path, forced)
  if forced then return content_type_of(site, dc, path, forced) end
  local memo = memo_of(site, "ctypes")
  local e = memo[path]
  if e and e[3] == dc then return e[1], e[2] end
  local t, enc = content_type_of(site, dc, path, nil)
  memo[path] = { t, enc, dc }
  memo.n = memo.n + 1
  return t, enc
end

-- The Expires date of a second, formatted once per second.
local last_at, last_date
local function http_date(at)
  if at ~= last_at then
    last_at, last_date = at, os.date("!%a, %d %b %Y %H:%M:%S GMT", at)
  end
  return last_date
end

-- Vary values as fixup_vary() leaves them, remembered (a site sends a few).
local varies, nvaries = {}, 0

-- A Content-Type without its parameters: as written, for ExpiresByType, and lower-cased
-- without blanks, for mod_deflate's types; remembered (a site sends a few).
local type_keys, ntype_keys = {}, 0
local function type_key(ctype)
  local k = type_keys[ctype]
  if k then return k[1], k[2] end
  local e = ctype:match("^[^;]+")
  local d = lower(ctype:match("^[^;%s]+") or "")
  if ntype_keys >= 256 then type_keys, ntype_keys = {}, 0 end
  type_keys[ctype], ntype_keys = { e, d }, ntype_keys + 1
  return e, d
end

-- mod_expires, mod_headers and mod_deflate's Vary for a response of `status` under `dc`,
-- on the headers `rh`; `mtime` and `len` of the file, when known.  Returns what else the
-- headers depend on: nil for nothing, n when only Expires does (now + n seconds), false
-- when the file's time does (or a Header edited the Expires); and whether `len` mattered.
local function finish(rh, site, dc, status, mtime, len, nogzip, errdoc)
  local ctype = rh["Content-Type"]
  local ekey, dkey
  local dep, expires, len_used = nil, nil, false
  if ctype then ekey, dkey = type_key(ctype) end
  local ex = dc.expires
  if ex and status >= 200 and status < 300 then
    local rule = (ekey and ex.by_type and ex.by_type[ekey]) or ex.default
    if rule then
      local now = os.time()
      local base = now
      if rule[1] == "M" then
        base = mtime or now
        dep = false
      else
        dep = rule[2]
      end
      local at = base + rule[2]
      local max = at - now
      if max < 0 then max = 0 end
      rh["Cache-Control"] = "max-age=" .. max
      expires = http_date(at)
      rh["Expires"] = expires
    end
  end
  local headers = dc.headers
  if headers then headers(rh, status, errdoc) end
  if dep and rh["Expires"] ~= expires then dep = false end
  -- mod_deflate notes that it looked at Accept-Encoding for the types it compresses,
  -- whether or not it compresses this response (a body under 69 bytes is left alone).
  if dkey and next(site.deflate) then
    local ce = rh["Content-Encoding"]
    if site.deflate[dkey] and not nogzip then
      len_used = len ~= nil
      if not (len and len < 69) and (ce == nil or ce == "" or ce == "identity" or rh["Vary"]) then
        local v = rh["Vary"]
        rh["Vary"] = (v and v ~= "") and (v .. ",Accept-Encoding") or "Accept-Encoding"
      end
    end
  end
  -- Apache's fixup_vary(): one Vary, tokens once each (case-insensitively).
  local vary = rh["Vary"]
  if vary and find(vary, "[, \t]") then
    local fixed = varies[vary]
    if not fixed then
      local seen, out = {}, {}
      for tok in vary:gmatch("[^,%s]+") do
        if not seen[lower(tok)] then
          seen[lower(tok)] = true
          out[#out + 1] = tok
        end
      end
      fixed = table.concat(out, ",")
      if nvaries >= 256 then varies, nvaries = {}, 0 end
      varies[vary], nvaries = fixed, nvaries + 1
    end
    rh["Vary"] = fixed
  end
  return dep, len_used
end

-- lighttpd's uri.scheme once the physical-path stage has sent a response whole:
-- lighttpd.conf attaches the response-start hook only where the scheme is not this.  No
-- request can carry it (lighttpd sets the scheme from the connection).
local SENT = "lighten-sent"

-- The static file a request names, when `run` would come to serving it as it is: a
-- path with nothing to decode or normalise and no query, naming a regular file whose
-- configuration denies nothing, sets no variable, has no rule that could change it
-- (files_pass) and no PHP; else nil, and `run` decides.  What the configuration says of
-- a target is remembered: { path, configuration, Content-Type, Content-Encoding, whole
-- (nothing for mod_expires, mod_headers or mod_deflate to add), the safety net's
-- folders }, or false.  Whether the file exists is asked every time.
local function plain_target(site, target)
  if site.early_env or #target > 256 or byte(target, -1) == 47
    or find(target, "%", 1, true) or find(target, "?", 1, true) or find(target, "#", 1, true)
    or find(target, "//", 1, true) or find(target, "/.", 1, true) then
    return false
  end
  -- (a target mod_alias redirects or maps is not the document root's file; the rules of
  -- the server read the request, so its hosts take the decision cache's way)
  if site.server_rules or (site.translate and site.translate(target)) then return false end
  local path = site.docroot .. target
  local dc = config_for(site, path, "file", target)
  if dc.broken or dc.denied or dc.auth or dc.env or dc.redirects or dc.require_ssl or (dc.rules and not (dc.symlinks and dc.files_pass))
    or handler(dc, path) == "php" then
    return false
  end
  local ctype, enc = content_type_of(site, dc, path, nil)
  local whole = not (dc.expires or dc.headers)
  if whole and ctype and next(site.deflate) then
    local _, dkey = type_key(ctype)
    if site.deflate[dkey] then whole = false end
  end
  return { path, dc, ctype, enc, whole, plans.refusal_chains(nil, path) }
end

local function plain_file(site, target, method)
  -- (GET, HEAD and POST only: the default handler answers other methods itself)
  if method ~= "GET" and method ~= "HEAD" and method ~= "POST" then return nil end
  local memo = site.plain
  local e = memo and memo[target]
  if e == nil then
    memo = memo_of(site, "plain")
    e = plain_target(site, target)
    memo[target], memo.n = e, memo.n + 1
  end
  if not e then return nil end
  local path = e[1]
  local st = raw_stat(path)
  if not (st and st.is_file) then return nil end
  if site.links and through_links(site.links, path) ~= path then return nil end
  return e
end

-- A static file: lighttpd sends it, with what mod_mime, mod_headers and mod_expires give
-- it; `vary`, the Vary of the rules that led here.  `memo` (kept with the decision)
-- keeps what is the same each time: the file, its type, and per status the headers when
-- only the status (and the clock, for an Expires) decides them.
local function send_file(l, site, dc, path, uri, forced, nogzip, vary, errdoc, memo)
  local r = l.r
  local f = memo and memo.file
  if not f then
    local ctype, enc = content_type(site, dc, path, forced)
    f = { real = site.links and through_links(site.links, path) or path, ctype = ctype, enc = enc, by_status = {} }
    if memo then memo.file = f end
  end
  local real, ctype, enc = f.real, f.ctype, f.enc
  local st = raw_stat(real)
  if not st then return 404 end
  local attr = r.req_attr
  attr["physical.path"] = real
  attr["uri.path"] = uri
  local rh = r.resp_header
  -- Before lighttpd sends it: a Content-Type and ETag already there are kept.
  if ctype then rh["Content-Type"] = ctype end
  if enc then rh["Content-Encoding"] = enc end
  local etag = dc.etag_none and "" or nil
  local status = st["http-response-send-file"]
  -- An ErrorDocument: the file, with the error's status.
  if errdoc and status == 200 then status = errdoc end
  -- FileETag None: lighttpd has just made one.
  if etag then rh["ETag"] = etag end
  if not site.finish then
    if vary then rh["Vary"] = vary end
    return status
  end
  local len = (status == 200 or errdoc) and st.st_size or nil
  local small = len ~= nil and len < 69
  local kept = f.by_status[status]
  if kept and (kept.small == nil or kept.small == small) then
    for i = 1, #kept, 2 do rh[kept[i]] = kept[i + 1] end
    if kept.expires then rh["Expires"] = http_date(os.time() + kept.expires) end
    attr["uri.scheme"] = SENT
    return status
  end
  local h = { ["Content-Type"] = ctype, ["Content-Encoding"] = enc, ETag = etag, Vary = vary }
  local dep, len_used = finish(h, site, dc, status, st.st_mtime, len, nogzip, errdoc ~= nil)
  local list = {}
  for k, v in pairs(h) do
    if not ((k == "Content-Type" and v == ctype) or (k == "Content-Encoding" and v == enc) or (k == "ETag" and v == etag)) then
      rh[k] = v
      if not (dep and k == "Expires") then
        local n = #list
        list[n + 1], list[n + 2] = k, v
      end
    end
  end
  if memo and dep ~= false then
    list.expires = dep
    if len_used then list.small = small end
    f.by_status[status] = list
  end
  attr["uri.scheme"] = SENT
  return status
end

-- The same for a plain_file answer `e`, its headers worked out once.  lighttpd's own
-- physical.path is already the file's (the document root and the target as they are),
-- and the file sent is the one stat'ed.
local function send_plain(l, site, e, target)
  local dc = e[2]
  if not e[5] then return send_file(l, site, dc, e[1], target, nil, nil, nil, nil, e) end
  local r = l.r
  local rh = r.resp_header
  local ctype, enc = e[3], e[4]
  if ctype then rh["Content-Type"] = ctype end
  if enc then rh["Content-Encoding"] = enc end
  local status = raw_stat(e[1])["http-response-send-file"]
  if dc.etag_none then rh["ETag"] = "" end
  if site.finish then r.req_attr["uri.scheme"] = SENT end
  return status
end

---------------------------------------------------------------------------------------
-- the decision cache (lighten_plans.lua)
--
-- `run` reads the method, the request-target and the scheme (the key), the headers it
-- looks at, and the kinds of what it stats.  What it cannot check that way (a file's size
-- or mode, the time, the client's address, a listing) makes the evaluation uncacheable.

-- `run`, or what it answered last time for the same reads; the outcome is `cx`, kept
-- read-only.
local function decide(site, r, method, target, https)
  -- (the protocol is part of the key: THE_REQUEST and SERVER_PROTOCOL read it)
  local proto = r.req_attr["request.protocol"]
  local key = #target <= plans.TARGET
    and ((https and "s" or "-") .. (proto == "HTTP/1.1" and " " or (tostring(proto) .. " ")) .. method .. " " .. target)
    or nil
  local headers = r.req_header
  -- The user lighttpd's mod_auth authenticated, and against which password file
  -- (lighttpd.conf's auth blocks set X-Lighten-Auth-File; it is not for the backend).
  local user, auth_file
--@ auth: auth
  if site.auth then
    user, auth_file = plans.login(r.req_env["REMOTE_USER"], headers["Authorization"]), headers["X-Lighten-Auth-File"]
    if auth_file then headers["X-Lighten-Auth-File"] = "" end
    if key then key = key .. "\0" .. (user or "") .. "\0" .. (auth_file or "") end
  end
--@ end
  if key then
    local p = plans.find(site, key, headers, kind_of)
    if p then return p.cx, p.status, p.vary, p end
  end
  local rd = plans.reads()
  local cx = {
    site = site, https = https, method = method, orig_method = method, target = target,
    headers = plans.recorder(headers, rd), user = user, auth_file = auth_file,
  }
  reads = rd
  local status = run(cx)
  reads = nil
  cx.headers = nil
  local vary = cx.vary and table.concat(cx.vary, ", ")
  local outcome = { cx = cx, status = status, vary = vary }
  if key then plans.keep(site, key, rd, outcome) end
  return cx, status, vary, outcome
end

-- Entry for magnet.attract-physical-path-to: `site` is the compiled module.
function M.physical(l, site)
  lighty = l
  last_path, last_st = nil, nil
  reads = nil
  local r = l.r
  -- A Host Apache would not take: its 400, before anything reads the request.
  if plans.host_refused(r.req_header["Host"]) then return 400 end
  local attr = r.req_attr
  local method = attr["request.method"]
  local target = attr["request.orig-uri"] or attr["request.uri"]
  local plain = plain_file(site, target, method)
  if plain then
    if plans.chains_refused(l.c, plain[6]) then return 503 end
    return send_plain(l, site, plain, target)
  end
  local cx, status, vary, outcome = decide(site, r, method, target, attr["uri.scheme"] == "https")
  -- An .htaccess on the way to what was asked for, or to what answers, written since the
  -- conversion (lighten_plans.lua): refused until the site is converted again.
  local chains = outcome.chains
  if not chains then
    chains = plans.refusal_chains(cx.asked, cx.script or cx.path or cx.filename)
    outcome.chains = chains
  end
  if plans.chains_refused(l.c, chains) then return 503 end
  if cx.realm and (status == 401 or cx.error_round == 401) then
    r.resp_header["WWW-Authenticate"] = 'Basic realm="' .. cx.realm .. '"'
  end
  local served = (status == 200 or cx.error_round) and cx.served
  if served == "file" then
    return send_file(l, site, cx.dc, cx.path, cx.uri, cx.forced_type, cx.env and cx.env["no-gzip"], vary,
      cx.error_round, outcome)
  end
  if vary then r.resp_header["Vary"] = vary end
  -- what the response stage needs to know of an ErrorDocument that PHP answers
  if cx.error_round then r.req_env["LIGHTEN_ERRDOC"] = "1" end
  -- the environment for the backend (E=, REDIRECT_*)
  if cx.env then
    local env = r.req_env
    for k, v in pairs(cx.env) do env[k] = v end
  end
  if cx.location then
    r.resp_header["Location"] = cx.location
    return status
  end
  if served == "php" then
    local script, path_info, docroot = cx.script, cx.path_info, site.docroot
    -- Apache's SCRIPT_NAME is the URL-path without its PATH_INFO.
    local script_name = cx.uri
    if path_info and #path_info < #script_name and ends(script_name, path_info) then
      script_name = sub(script_name, 1, #script_name - #path_info)
    end
    -- lighttpd's mod_fastcgi picks PHP by the name's last extension, where Apache's
    -- mod_mime takes .php anywhere among them (config.php.save): such a script is
    -- refused rather than sent with its source (php-fpm's security.limit_extensions
    -- answers 403 behind Apache too).
    local ext = last_ext(script)
    if not (ext and site.php_exts[ext]) then
      print("lighten: " .. sub(tostring(cx.target), 1, 200) .. " refused (fails closed): " .. script
        .. " is PHP for Apache, but lighttpd's fastcgi.server does not take its extension")
      return 403
    end
    attr["physical.doc-root"] = docroot
    attr["uri.path"] = script_name
    attr["physical.rel-path"] = sub(script, #docroot + 1)
    local real = site.links and through_links(site.links, script) or script
    attr["physical.path"] = real
    -- PHP gets the script's name as Apache gives it, not its target's.
    if real ~= script then r.req_env["SCRIPT_FILENAME"] = script end
    attr["uri.query"] = cx.args
    if path_info then
      r.req_env["PATH_INFO"] = path_info
      -- php-fpm moves PATH_INFO to ORIG_PATH_INFO when REDIRECT_URL is present.
      r.req_env["REDIRECT_URL"] = nil
    end
    return 0
  elseif served == "options" then
    return plans.answer_options(r, site.trace_off)
  elseif served == "listing" then
    local real = site.links and through_links(site.links, cx.path) or cx.path
    attr["physical.path"] = real
    if real ~= cx.path then r.req_env["lighten.path"] = cx.path end
    return 0
  end
--@ errdocs: error_docs errdocs
  -- ErrorDocument "text": the text as the body, as Apache sends it.
  if cx.text then
    r.resp_header["Content-Type"] = "text/html; charset=iso-8859-1"
    r.resp_body.set({ cx.text })
  end
--@ end
  if cx.filename then attr["physical.path"] = cx.filename end
  return status
end

-- Entry for magnet.attract-response-start-to, for sites with mod_headers, mod_expires or
-- mod_deflate directives: those of the file that answered (a static file had them at
-- the physical-path stage already).
function M.response(l, site)
  lighty = l
  last_path, last_st = nil, nil
  local r = l.r
  local attr = r.req_attr
  if attr["uri.scheme"] == SENT then return 0 end
  -- An ErrorDocument PHP answered goes out with the error's status (Apache keeps it).
  local status = r.req_item.http_status
  local errdoc = r.req_env["LIGHTEN_ERRDOC"] ~= nil
  local new_status
  if errdoc then
    local rs = tonumber(r.req_env["REDIRECT_STATUS"] or "")
    if rs and rs ~= 200 and status == 200 then new_status = rs end
  end
  local path = attr["physical.path"]
  if not path then return new_status or 0 end
  -- A link's target handed to lighttpd: the configuration is the link's.
  if site.links then
    local env = r.req_env
    path = env["lighten.path"] or env["SCRIPT_FILENAME"] or path
  end
  local fname, _, kind = walk(path)
  local mtime
  if kind == "file" then
    local st = l.c.stat(fname)
    mtime = st and st.st_mtime
  end
  -- (<Location> sections hold only Options and access control: nothing of this stage)
  finish(r.resp_header, site, config_for(site, fname, kind), new_status or status, mtime,
    tonumber(r.resp_header["Content-Length"] or ""), r.req_env["no-gzip"], errdoc)
  return new_status or 0
end

--@ append: append
-- mod_headers' actions on a response header, for the compiled header functions.
function M.append(rh, name, value, merge)
  local cur = rh[name]
  if not cur or cur == "" then
    rh[name] = value
    return
  end
  if merge then
    for tok in (cur .. ","):gmatch("%s*([^,]-)%s*,") do if tok == value then return end end
  end
  rh[name] = cur .. ", " .. value
end
--@ end

return M
