-- lighten_plans.lua: what both tiers share: the decision cache (lighten_core.lua's
-- `decide`, lighten.lua's M.physical), the symbolic-link lookup, the .htaccess safety
-- net, Apache's check of the Host header and mod_alias's matching.
--
-- Fixed text shipped by lighten (templates/lua/lighten_plans.lua).  What a tier decides
-- for a request is a function of what it reads: the key (method, request-target,
-- scheme, and whatever else the tier puts there), the request headers it looks at, and
-- what it finds on disk.  An evaluation reads the headers through `recorder` and notes
-- each path it stats with `saw` (a "fact": the file's kind, and for lighten.lua its size
-- and mode); its outcome is kept with those reads, and answers a later request with the
-- same key when every recorded header has the same value and every recorded path the
-- same fact.  A tier marks what it cannot check that way (`reads.no`), and nothing is
-- kept.  At most 4 outcomes a key and 256 keys an owner (a site or a virtual host), then
-- it starts afresh; a target over 512 bytes or headers read over 2 KB are not kept.

local M = {}
local byte, sub, find = string.byte, string.sub, string.find

local KEYS, A_KEY, HEADERS = 256, 4, 2048
M.TARGET = 512

--@ auth: auth
-- The user lighttpd's mod_auth authenticated, when Apache would have read the same login
-- as the same user; else nil. Apache's password file reader trims each line, so none of
-- its users begins or ends with a space (lighttpd's keeps them: " alice" would pass); and
-- Apache decodes the base64 credentials only up to the first character outside the
-- alphabet, where lighttpd skips it ("YWxp Y2U6..." is "ali" to Apache).
function M.login(user, authorization)
  if user == nil or user == "" or find(user, "^%s") or find(user, "%s$") then return nil end
  local creds = authorization and authorization:match("^%s*[Bb][Aa][Ss][Ii][Cc]%s+(.-)%s*$")
  if creds == nil or not find(creds, "^[A-Za-z0-9+/]*=*$") then return nil end
  return user
end
--@ end

-- The reads of one evaluation: headers (hn, hv), paths and their facts.
function M.reads()
  return { hn = {}, hv = {}, hbytes = 0, seen = {}, paths = {}, facts = {} }
end

-- A table that reads `headers` and notes in `rd` each name read and its value.
function M.recorder(headers, rd)
  local seen, hn, hv = {}, rd.hn, rd.hv
  return setmetatable({}, { __index = function(_, name)
    local v = headers[name]
    if not seen[name] then
      seen[name] = true
      hn[#hn + 1], hv[#hv + 1] = name, v or false
      if v then rd.hbytes = rd.hbytes + #v end
    end
    return v
  end })
end

-- A path the evaluation stat'ed, with what it found (the first time only).
function M.saw(rd, path, fact)
  if not rd.seen[path] then
    rd.seen[path] = true
    local n = #rd.paths + 1
    rd.paths[n], rd.facts[n] = path, fact
  end
end

-- The kept outcome for `key` whose headers read the same in `headers` and whose paths
-- `fact_of` finds as they were, or nil.
function M.find(owner, key, headers, fact_of)
  local list = owner.plans and owner.plans[key]
  if not list then return nil end
  for i = 1, #list do
    local p = list[i]
    local hn, hv = p.hn, p.hv
    local ok = true
    for j = 1, #hn do
      if (headers[hn[j]] or false) ~= hv[j] then
        ok = false
        break
      end
    end
    if ok then
      local paths, facts = p.paths, p.facts
      for j = 1, #paths do
        if fact_of(paths[j]) ~= facts[j] then
          ok = false
          break
        end
      end
      if ok then return p end
    end
  end
  return nil
end

-- The paths of `rd` to look at again, and their facts: each path once (a//b names what
-- a/b names), and no folder found as a plain "dir" when something under it was found:
-- a stat through a path succeeds only where each folder on the way is one.  Nil when
-- one path was seen two ways (it changed during the evaluation).
local function essential(paths, facts)
  local fact, order = {}, {}
  for i = 1, #paths do
    local p = paths[i]
    if find(p, "//", 1, true) then p = p:gsub("//+", "/") end
    local f = facts[i]
    local had = fact[p]
    if had == nil then
      fact[p], order[#order + 1] = f, p
    elseif had ~= f then
      return nil
    end
  end
  if #order > 64 then
    local fs = {}
    for i = 1, #order do fs[i] = fact[order[i]] end
    return order, fs
  end
  local out_p, out_f = {}, {}
  for i = 1, #order do
    local p = order[i]
    local f = fact[p]
    local implied = false
    if f == "dir" then
      local under = byte(p, -1) == 47 and p or p .. "/"
      for j = 1, #order do
        local q = order[j]
        if #q > #under and sub(q, 1, #under) == under and not find(fact[q], "^missing") then
          implied = true
          break
        end
      end
    end
    if not implied then out_p[#out_p + 1], out_f[#out_f + 1] = p, f end
  end
  return out_p, out_f
end

-- Keeps `outcome` with the reads `rd` under `key`, unless they cannot be checked.
function M.keep(owner, key, rd, outcome)
  if rd.no or rd.hbytes > HEADERS then return end
  local paths, facts = essential(rd.paths, rd.facts)
  if not paths then return end
  outcome.hn, outcome.hv, outcome.paths, outcome.facts = rd.hn, rd.hv, paths, facts
  local plans = owner.plans
  if not plans or plans.n >= KEYS then
    plans = { n = 0 }
    owner.plans = plans
  end
  local list = plans[key]
  if not list then
    list = {}
    plans[key] = list
    plans.n = plans.n + 1
  end
  if #list >= A_KEY then table.remove(list, 1) end
  list[#list + 1] = outcome
end

--@ links: links
---------------------------------------------------------------------------------------
-- Symbolic links, for both tiers.

-- The value `t` holds for the longest prefix of `path` that ends a name, and the rest of
-- the path after it; nil when `t` holds none.
local function longest_prefix(t, path)
  local byte, sub = string.byte, string.sub
  local e = #path
  while e > 1 and byte(path, e) == 47 do e = e - 1 end
  while e > 1 do
    local v = t[sub(path, 1, e)]
    if v ~= nil then return v, sub(path, e + 1) end
    repeat e = e - 1 until e <= 1 or byte(path, e) == 47
    e = e - 1
  end
  return nil
end

-- The links found at conversion (lighty.c.stat cannot see a link), path to target or
-- false: nil when Apache refuses a link on the way to `path` (the directory walk answers
-- 403, src/eval/symlink.rs), else the path to hand lighttpd: through the target of the
-- longest link on the way, for a host where lighttpd's server.follow-symlink is off and
-- would refuse the link itself.  No links: `path`.
function M.through_links(links, path)
  if not links then return path end
  local v, rest = longest_prefix(links, path)
  if v == nil then return path end
  if v == false then return nil end
  return v .. rest
end

--@ end
---------------------------------------------------------------------------------------
-- The safety net for .htaccess files written after the conversion (issue: a security
-- plugin adds a deny rule while the site runs).  lighten_htaccess.lua, generated, has the
-- files the conversion read (inode, size, modification time) and the folders where
-- Apache reads them.  `htaccess_changed(dir, lighty.c)` looks at every such folder from `dir`
-- up: a file that changed, went or appeared there is named (and logged), and the tier
-- answers 503 until the next conversion.  Each folder is looked at once a second at most
-- (lighttpd's own stat cache trusts an entry for about as long); the folders above a
-- folder are remembered (bounded).

local H
local ok_at, ok = nil, {}
local chains, nchains = {}, 0

local function parent_of(d)
  local p = d:match("^(.*)/[^/]*$")
  if p == nil or p == "" then return "/" end
  return p
end

-- The folders at and above `dir` where Apache reads .htaccess files: each takes the
-- value of the deepest folder listed at or above it; above the top listed, none.
local function chain_of(dir)
  local reads, out, pending = H.reads, {}, {}
  local d = dir
  while true do
    local v = reads[d]
    if v ~= nil then
      if v then
        out[#out + 1] = d
        for i = 1, #pending do out[#out + 1] = pending[i] end
      end
      pending = {}
    else
      pending[#pending + 1] = d
    end
    if d == "/" then break end
    d = parent_of(d)
  end
  return out
end

-- Whether what lighttpd's stat cache says of `path` (`seen`: inode, size, modification
-- time, or nil) is only what the file was before the conversion now in force: the cache
-- trusts an entry for the rest of the second it was made in, and `lighten watch` may have
-- put conversions in force within that second.  The hook scripts keep the tables of the
-- conversions they replaced, and when, in package.loaded["lighten:replaced"]; a value one
-- of those recorded in the last two seconds is the cache's, not a new change.
local function seen_before(lc, path, seen)
  local replaced = package.loaded["lighten:replaced"]
  if not replaced then return false end
  local now = lc.time()
  for i = #replaced, 1, -1 do
    local r = replaced[i]
    if now - r.at > 1 then break end
    if r.htaccess.files[path] == seen then return true end
  end
  return false
end

-- Called by a hook script as its Lua state forgets the modules of this conversion for a
-- new one (lighten watch wrote it): the safety net's table is kept for seen_before.
function M.replaced(lc)
  local now, kept = lc.time(), {}
  for _, r in ipairs(package.loaded["lighten:replaced"] or kept) do
    if now - r.at <= 1 then kept[#kept + 1] = r end
  end
  if H then kept[#kept + 1] = { at = now, htaccess = H } end
  package.loaded["lighten:replaced"] = kept
end

-- Whether each of the folder's access files is as the conversion saw it.
local function unchanged(d, lc)
  local base = d == "/" and "" or d
  for _, name in ipairs(H.names) do
    local path = base .. "/" .. name
    local st = lc.stat(path)
    local seen = st and (st.st_ino .. " " .. st.st_size .. " " .. st.st_mtime)
    if seen ~= H.files[path] and not seen_before(lc, path, seen) then
      return false, path
    end
  end
  return true
end

-- The folders to look at for `dir` (see chain_of), remembered.
function M.htaccess_chain(dir)
  if not H then H = require("lighten_htaccess") end
  if dir == "" then dir = "/" end
  local c = chains[dir]
  if not c then
    if nchains >= 4096 then chains, nchains = {}, 0 end
    c = chain_of(dir)
    chains[dir], nchains = c, nchains + 1
  end
  return c
end

-- The access file on the way to `dir` that changed since the conversion, else nil;
-- `lc`, lighty.c (for its stat); `c`, the folders to look at when the caller has them
-- (htaccess_chain).
function M.htaccess_changed(dir, lc, c)
  c = c or M.htaccess_chain(dir)
  -- lighttpd's clock of the current second (os.time() can be a system call)
  local now = lc.time()
  if c.at == now then return nil end
  if now ~= ok_at then ok_at, ok = now, {} end
  for i = 1, #c do
    local d = c[i]
    local v = ok[d]
    if v == nil then
      local same, path = unchanged(d, lc)
      v = same or path
      ok[d] = v
      if not same then
        print("lighten: " .. path .. " has changed since the conversion; requests that meet it are"
          .. " refused (503) until `lighten convert` is run again")
      end
    end
    if v ~= true then return v end
  end
  -- the whole chain is as it was this second (callers may test `c.at` themselves)
  c.at = now
  return nil
end

-- The folders to look at before answering a request: those on the way to what was
-- asked for (`asked`, the decoded path under the document root) and to what answers
-- (`answered`, a file or folder; not a URL).  A kept outcome keeps the list.
local function chain_above(list, p)
  if type(p) == "string" and byte(p, 1) == 47 then
    list[#list + 1] = M.htaccess_chain(p:match("^(.*)/") or "")
  end
end

function M.refusal_chains(asked, answered)
  local list = {}
  chain_above(list, asked)
  chain_above(list, answered)
  return list
end

-- Whether a request is refused for an access file changed in one of the folders of
-- `list` (refusal_chains): the check both tiers make before answering.
function M.chains_refused(lc, list)
  local now = lc.time()
  for i = 1, #list do
    local c = list[i]
    if c.at ~= now and M.htaccess_changed(nil, lc, c) then return true end
  end
  return false
end

function M.htaccess_refused(lc, asked, answered)
  return M.chains_refused(lc, M.refusal_chains(asked, answered))
end

-- An environment variable as Apache's tables find it: the name in any case.
function M.env_get(env, name)
  local v = env[name]
  if v ~= nil then return v end
  local l = string.lower(name)
  for k, x in pairs(env) do
    if string.lower(k) == l then return x end
  end
  return nil
end

-- Sets (or with nil, unsets) an environment variable as Apache's tables do: the name in
-- any case is the same variable.
function M.env_set(env, name, value)
  local l = string.lower(name)
  for k in pairs(env) do
    if k ~= name and string.lower(k) == l then env[k] = nil end
  end
  env[name] = value
end

-- The protocol of the request line as sent (HTTP/1.0, HTTP/1.1; HTTP/2.0 for h2).
function M.protocol(lc)
  return lc.r.req_attr["request.protocol"] or "HTTP/1.1"
end

-- ap_getparents() on a URL-path without decoding it: `.` segments and empty ones dropped,
-- `..` taking the one before it back, a trailing `/`, `/.` or `/..` kept as `/`. The second
-- value says a `..` went above the root (kept at the root).
function M.remove_dot_segments(p)
  local trailing = sub(p, -1) == "/" or sub(p, -2) == "/." or sub(p, -3) == "/.."
  local parts, above = {}, false
  for seg in p:gmatch("[^/]+") do
    if seg == ".." then
      if #parts == 0 then above = true end
      parts[#parts] = nil
    elseif seg ~= "." then
      parts[#parts + 1] = seg
    end
  end
  local out = "/" .. table.concat(parts, "/")
  if trailing and out ~= "/" then out = out .. "/" end
  return out, above
end

-- A DirectoryIndex name's sub-request in folder `folder` (asked for as `dir_uri`): its URL,
-- with its dot segments removed as ap_process_request_internal does, and the file it names;
-- nil for a name that climbs above the root (the sub-request answers 400).
function M.index_candidate(name, dir_uri, docroot, folder)
  local uri, file
  if byte(name, 1) == 47 then
    uri, file = name, docroot .. name
  else
    local e = #folder
    while e > 0 and byte(folder, e) == 47 do e = e - 1 end
    uri, file = dir_uri .. name, sub(folder, 1, e) .. "/" .. name
  end
  local above
  uri, above = M.remove_dot_segments(uri)
  if above then return nil end
  return uri, file
end

-- A URL-path with its leading slashes merged into one, as Apache parses a request-target
-- (`//s/x` is `/s/x` to mod_setenvif's Request_URI, not a host `s`).
function M.merge_leading_slashes(p)
  if byte(p, 2) ~= 47 then return p end
  return (p:gsub("^//+", "/"))
end

-- The methods Apache 2.4 knows (ap_method_number_of, WebDAV and DeltaV included).
local APACHE_METHODS = {}
for m in ("GET HEAD PUT POST DELETE CONNECT OPTIONS TRACE PATCH PROPFIND PROPPATCH MKCOL COPY MOVE "
    .. "LOCK UNLOCK VERSION-CONTROL CHECKOUT UNCHECKOUT CHECKIN UPDATE LABEL REPORT MKWORKSPACE "
    .. "MKACTIVITY BASELINE-CONTROL MERGE"):gmatch("%S+") do
  APACHE_METHODS[m] = true
end

-- What Apache's default handler (core.c's default_handler) and mod_autoindex answer for
-- `method` on what the walk found (`kind`: "file", "dir" or "missing"), or nil to go on:
-- autoindex lists a folder for GET (and HEAD) only, and the default handler serves GET
-- and POST alike but never a folder (404, "attempt to serve directory"); it answers
-- OPTIONS itself (200: the caller answers with `answer_options`), a method Apache does
-- not know with 501 and any other with 405, whatever the path names (measured on
-- 2.4.71; the evaluator's `handle` in Rust is the same).
function M.default_handler_refuses(method, kind)
  if method == "OPTIONS" then return 200 end
  if method == "GET" or method == "HEAD" then return nil end
  if method == "POST" then return kind == "dir" and 404 or nil end
  return APACHE_METHODS[method] and 405 or 501
end

-- The default handler's answer to OPTIONS (ap_send_http_options, measured on 2.4.71): no
-- body, and the methods it takes (TRACE unless TraceEnable is off).
function M.answer_options(r, trace_off)
  local h = r.resp_header
  h["Allow"] = trace_off and "POST,OPTIONS,HEAD,GET" or "POST,OPTIONS,HEAD,GET,TRACE"
  h["Content-Type"] = "text/html"
  r.resp_body.set({ "" })
  return 200
end

-- Whether Apache answers 400 for this Host ("Client sent malformed Host header"): the
-- check of vhost.c's fix_hostname under HttpProtocolOptions Strict, measured on 2.4.71
-- (eval::request::apache_host_ok is the same in Rust).  lighttpd.conf turns lighttpd's
-- own host checks off so that the Lua sees the Host as sent (port and trailing dot kept;
-- lighttpd still lower-cases it), so this is the only check.  Accepted values are
-- remembered (256 at most).
local function ipv6_ok(s)
  if s == "" or find(s, ":::", 1, true) or find(s, "%", 1, true) then return false end
  local dc = find(s, "::", 1, true)
  if dc and find(s, "::", dc + 1, true) then return false end
  local function groups(part, last)
    if part == "" then return 0 end
    local n, items = 0, {}
    for g in (part .. ":"):gmatch("([^:]*):") do items[#items + 1] = g end
    for k, g in ipairs(items) do
      if k == #items and last and find(g, ".", 1, true) then
        local o = {}
        for x in (g .. "."):gmatch("([^.]*)%.") do o[#o + 1] = x end
        if #o ~= 4 then return nil end
        for _, x in ipairs(o) do
          if not x:match("^%d%d?%d?$") or (#x > 1 and sub(x, 1, 1) == "0") or tonumber(x) > 255 then
            return nil
          end
        end
        n = n + 2
      elseif not g:match("^%x%x?%x?%x?$") then
        return nil
      else
        n = n + 1
      end
    end
    return n
  end
  if dc then
    local head, tail = sub(s, 1, dc - 1), sub(s, dc + 2)
    if find(head, ".", 1, true) then return false end
    local h, t = groups(head, false), groups(tail, true)
    return h ~= nil and t ~= nil and h + t <= 7
  end
  return groups(s, true) == 8
end

local function host_ok(h)
  local digits = #(h:match("%d*$"))
  local name, port = h, nil
  if digits == #h then
    port = h
  elseif byte(h, #h - digits) == 58 and (byte(h, 1) ~= 91 or byte(h, #h - digits - 1) == 93) then
    name, port = sub(h, 1, #h - digits - 1), sub(h, #h - digits + 1)
  end
  if port then
    local p = tonumber(port)
    if port == "" or not p or p < 1 or p > 65535 then return false end
  end
  if byte(name, 1) == 91 then
    return byte(name, -1) == 93 and ipv6_ok(sub(name, 2, -2))
  end
  if find(name, "..", 1, true) or find(name, "[/\\]") then return false end
  if byte(name, -1) == 46 then name = sub(name, 1, -2) end
  if find(name, "[^%w%-_.]") then return false end
  if not find(name, "[^%d.]") then
    local o = {}
    for x in (name .. "."):gmatch("([^.]*)%.") do o[#o + 1] = x end
    if #o ~= 4 then return false end
    for _, x in ipairs(o) do
      if x == "" or (#x > 1 and sub(x, 1, 1) == "0") then return false end
    end
    return true
  end
  local last = name:match("%.([^.]*)$")
  return not last or last == "" or find(last, "^%a") ~= nil
end

--@ alias: translate redirects alias_match regex_redirect escape_path
---------------------------------------------------------------------------------------
-- mod_alias

-- alias_matches(): how many bytes of `uri` the URL-path `from` covers (a run of slashes
-- in one matches a run in the other; the last segment whole), or nil.
function M.alias_match(uri, from)
  local i, j = 1, 1
  local nu, na = #uri, #from
  while j <= na do
    if byte(from, j) == 47 then
      if i > nu or byte(uri, i) ~= 47 then return nil end
      while j <= na and byte(from, j) == 47 do j = j + 1 end
      while i <= nu and byte(uri, i) == 47 do i = i + 1 end
    else
      if i > nu or byte(uri, i) ~= byte(from, j) then return nil end
      i, j = i + 1, j + 1
    end
  end
  if byte(from, na) ~= 47 and i <= nu and byte(uri, i) ~= 47 then return nil end
  return i - 1
end

-- A RedirectMatch target after substitution, as mod_alias escapes it: the URL without
-- its query and fragment through `escape` (ap_escape_uri), then those as they are.
function M.regex_redirect(url, escape)
  local rest, frag = url, ""
  local h = find(url, "#", 1, true)
  if h then rest, frag = sub(url, 1, h - 1), sub(url, h) end
  local q = find(rest, "?", 1, true)
  local query = ""
  if q then rest, query = sub(rest, 1, q - 1), sub(rest, q) end
  return escape(rest) .. query .. frag
end
--@ end

local good_hosts, n_good = {}, 0
function M.host_refused(h)
  if h == nil or h == "" or good_hosts[h] then return false end
  if not host_ok(h) then return true end
  if n_good >= 256 then good_hosts, n_good = {}, 0 end
  good_hosts[h], n_good = true, n_good + 1
  return false
end

return M
