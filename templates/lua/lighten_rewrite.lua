--[[
lighten_rewrite: mod_rewrite's rule engine for lighttpd's mod_magnet (Lua 5.4).

A line-for-line port of lighten's evaluator (src/eval/rewrite.rs and src/eval/expand.rs),
which is itself held against real Apache: the pattern is matched before the conditions
(so `$1` works in a RewriteCond), conditions combine with [OR], the flags steer what
happens next, and a substitution is expanded as mod_rewrite's do_expand() does.
tests/luarewrite.rs runs this module and the Rust side by side on every rule list of the
fixtures and requires the same action, flags, state, environment changes and trace.

It decides nothing about lighttpd and reads nothing itself: variables, maps, file tests
and the environment come from the `env` object the caller passes, regexes run through
lighten_re.  It keeps no state between calls and never writes the rule lists (lighten_re
caches decoded byte sets inside its programs).

    local rw = require "lighten_rewrite"
    local action, flags = rw.apply_list(rules, perdir, state, env, trace)

rules   the translator's rule list (see the rule format below)
perdir  nil for server context, else the directory prefix ("/var/www/html/")
state   { filename=, path_info=, args=, forced_type=, forced_handler=, status=,
          literal_prefix=, unsafe_prefix_stat= }, changed in place (nil for None)
env     an object answering, called as env:var(name) etc.:
          var(name) -> string            %{NAME}, "HTTP:x", "ENV:x", "THE_REQUEST" ...
          map(mapname, key) -> string|nil
          test_file(kind, path) -> bool  kind as in a condition ("file-exists", ...)
          is_self(url) -> path|nil       a full URL naming this server, reduced to its path
          self_url() -> string           "http://example.test" for [R] targets
          set_env(name, value|nil)       [E=VAR:VAL] / [E=!VAR]
          expr_cond(cond) -> bool        RewriteCond expr: the env calls cond.expr
trace   nil (no trace work at all), or an array that gets {at=, depth=, text=} steps
action  "none" | "changed" | "changed-no-escape" | "status"
flags   { passthrough=bool, ["end"]=bool, proxy=bool, redirect=code|nil }

A rule:  { at=, pattern=, re=<lighten_re program>|false, negated=true|nil, subst=,
           literal_prefix=, flags={ {k="last"}, {k="redirect", v="301"}, ... },
           conds={ { at=, test=, kind=, operand=, negated=, nocase=, ornext=,
                     re=<program>|false (kind "regex"), expr=<function>|false (kind "expr") } } }
Flag and condition kinds are the kebab-case names of RuleFlagKind and CondKind.

Where this port fails closed: a regex lighten_re could not compile (`re = false`), one
that ran out of its step budget, or an expr condition the translator could not compile
(`expr = false`) answers 403 when the rule or condition is reached, with a trace step
that says so.  Apache itself would have run the regex; answering 403 is the
safe side of not knowing (a match that is skipped could widen what a rule lets through).

Bytes, not characters: Lua strings are bytes, as Apache's are.  The Rust evaluator turns
captures into UTF-8 lossily, so the two differ where a group splits a multi-byte
character (this module keeps the bytes, as Apache does); on every other input they agree.
string.lower() is ASCII-only in the "C" locale, which lighttpd never changes.
]]

local re = require "lighten_re"

local byte, sub, find, lower, format, gsub, concat =
  string.byte, string.sub, string.find, string.lower, string.format, string.gsub, table.concat
local exec = re.exec

local M = {}

-- A content type as Apache stores it (ap_content_type_tolower): type and subtype in
-- lower case, parameters as written.
function M.type_lower(t)
  local i = find(t, ";", 1, true)
  if i then return lower(sub(t, 1, i - 1)) .. sub(t, i) end
  return lower(t)
end

-- Captures of no match at all: `$1` and `%1` expand to "".
local EMPTY = {}

-- ---------------------------------------------------------------------------------------
-- small helpers

-- The first flag of kind `k` (RewriteRule::flag), or nil.
-- The rule's flags by kind, built on first use and kept on the rule (site data lives
-- as long as the Lua state).
local function flag(rule, k)
  local m = rule._fm
  if not m then
    m = {}
    local fl = rule.flags
    if fl then
      for i = #fl, 1, -1 do m[fl[i].k] = fl[i] end
    end
    rule._fm = m
  end
  return m[k]
end

-- Byte-wise three-way compare (Rust's Ord for str; strcmp on unsigned bytes).  Lua's own
-- `<` goes through strcoll and would follow the locale.
local function bytecmp(a, b)
  if a == b then return 0 end
  local la, lb = #a, #b
  local n = la < lb and la or lb
  for i = 1, n do
    local x, y = byte(a, i), byte(b, i)
    if x ~= y then return x < y and -1 or 1 end
  end
  return la < lb and -1 or 1
end

-- Rust's `str::parse::<uN>()`: an optional '+', ASCII digits only, at most `max` (given
-- as its decimal text).  nil when it does not parse.
local function parse_uint(v, max)
  if byte(v, 1) == 43 then v = sub(v, 2) end
  if v == "" or find(v, "[^0-9]") then return nil end
  local d = gsub(v, "^0+", "")
  if d == "" then return 0 end
  if #d > #max or (#d == #max and bytecmp(d, max) > 0) then return nil end
  return tonumber(d)
end

local U16_MAX, U64_MAX, I64_MAX = "65535", "18446744073709551615", "9223372036854775807"

-- C's atoi() (saturating where C overflows): leading white space (isspace(), where the
-- Rust also skips Unicode spaces), a sign, digits, then stop.
local function atoi(s)
  local sign, digits = s:match("^[ \t\n\v\f\r]*([+-]?)([0-9]*)")
  local d = gsub(digits, "^0+", "")
  local n
  if d == "" then
    n = 0
  elseif #d > #I64_MAX or (#d == #I64_MAX and bytecmp(d, I64_MAX) > 0) then
    n = math.maxinteger
  else
    n = math.tointeger(tonumber(d))
  end
  if sign == "-" then n = -n end
  return n
end

--- `compare_lexicography()`: the longer string is greater; equal lengths compare bytes.
function M.compare_lexicography(a, b)
  local la, lb = #a, #b
  if la ~= lb then return la > lb and 1 or -1 end
  return bytecmp(a, b)
end
local compare_lexicography = M.compare_lexicography

-- ---------------------------------------------------------------------------------------
-- URLs

-- The prefixes of mod_rewrite's is_absolute_uri(), by scheme: true when "//" must follow
-- the colon.
local ABSOLUTE = {
  http = true, https = true, ftp = true, ajp = true, fcgi = true, scgi = true, ws = true,
  wss = true, h2 = true, h2c = true, uwsgi = true, mailto = false, nntp = true, news = false,
  ldap = true, gopher = true, balancer = true, unix = false,
}

--- mod_rewrite's is_absolute_uri(): a scheme it knows followed by `://` (or `mailto:`...).
function M.is_absolute_uri(s)
  local c = find(s, ":", 1, true)
  -- The longest known scheme is "balancer".
  if not c or c > 9 then return false end
  local slashes = ABSOLUTE[lower(sub(s, 1, c - 1))]
  if slashes == nil then return false end
  return not slashes or (byte(s, c + 1) == 47 and byte(s, c + 2) == 47)
end
local is_absolute_uri = M.is_absolute_uri

-- The scheme of "scheme://...": letters, digits, "+-."; nil when there is none.
local function scheme_of(s)
  local c = find(s, ":", 1, true)
  if not c or c == 1 or byte(s, c + 1) ~= 47 or byte(s, c + 2) ~= 47 then return nil end
  local sc = sub(s, 1, c - 1)
  if find(sc, "[^0-9A-Za-z+%-.]") then return nil end
  return sc
end

-- ---------------------------------------------------------------------------------------
-- expansion (expand.rs)

--- The literal text a substitution starts with, up to its first expansion.
function M.literal_prefix(s)
  local i = 1
  while true do
    i = find(s, "[\\$%%]", i)
    if not i then return s end
    if byte(s, i) == 92 then return sub(s, 1, i - 1) end
    local n = byte(s, i + 1)
    if n and ((n >= 48 and n <= 57) or n == 123) then return sub(s, 1, i - 1) end
    i = i + 1
  end
end

--- mod_rewrite's escape_backref(): with `e` = { all=, only=, ctls=, keep=, no_plus= }
--- ([B], [B=chars], [BCTLS], [BNE=chars], [BNP]), a candidate byte other than a letter,
--- digit or `_` becomes `%xx` (lower-case hex), a space `+` (unless no_plus).
function M.escape_backref(s, e)
  local all, only, ctls, keep, plus = e.all and e.only == nil, e.only, e.ctls, e.keep, not e.no_plus
  return (gsub(s, "[^0-9A-Za-z_]", function(c)
    local b = byte(c)
    local candidate = all
      or (only ~= nil and find(only, c, 1, true) ~= nil)
      or (ctls and (b <= 32 or b == 127))
    if not candidate or (keep ~= nil and find(keep, c, 1, true)) then return nil end
    if b == 32 and plus then return "+" end
    return format("%%%02x", b)
  end))
end
local escape_backref = M.escape_backref

-- The `}` closing a `{` opened before `from`, allowing nesting.
local function find_close(s, from)
  local depth = 1
  local i = from
  while true do
    i = find(s, "[{}]", i)
    if not i then return nil end
    if byte(s, i) == 123 then
      depth = depth + 1
    else
      depth = depth - 1
      if depth == 0 then return i end
    end
    i = i + 1
  end
end

local expand

-- `${map:key|default}` without its `${` `}`.
local function map_lookup(inner, rc, cc, esc, env)
  local colon = find(inner, ":", 1, true)
  if not colon then return "${" .. inner .. "}" end
  local map, rest = sub(inner, 1, colon - 1), sub(inner, colon + 1)
  local bar = find(rest, "|", 1, true)
  local key, default = rest, nil
  if bar then key, default = sub(rest, 1, bar - 1), sub(rest, bar + 1) end
  local v = env:map(map, expand(key, rc, cc, esc, env))
  if v ~= nil then return v end
  if default ~= nil then return expand(default, rc, cc, esc, env) end
  return ""
end

-- Templates (substitutions, test strings, flag values: all from the configuration)
-- parsed once into flat {kind, value, kind, value, ...} lists: 0 literal text, 2 `$N`,
-- 3 `%N`, 4 `%{VAR}` (value: the name, itself a template), 5 `${map:...}` (value: what
-- is between the braces). Bounded, in case something unexpected is expanded.
local templates, ntemplates = {}, 0

local function parse_template(s)
  local ops = {}
  local start = 1
  local i = find(s, "[\\$%%]")
  while i do
    local nx = byte(s, i + 1)
    if nx == nil then break end
    local c = byte(s, i)
    local kind, val, after = nil, nil, nil
    if c == 92 then
      kind, val, after = 0, sub(s, i + 1, i + 1), i + 2
    elseif nx >= 48 and nx <= 57 then
      kind, val, after = (c == 36) and 2 or 3, nx - 48, i + 2
    elseif nx == 123 then
      local close = find_close(s, i + 2)
      if close then
        kind, val, after = (c == 37) and 4 or 5, sub(s, i + 2, close - 1), close + 1
      end
    end
    if kind then
      if i > start then
        ops[#ops + 1] = 0
        ops[#ops + 1] = sub(s, start, i - 1)
      end
      ops[#ops + 1] = kind
      ops[#ops + 1] = val
      start = after
      i = find(s, "[\\$%%]", after)
    else
      -- Not an expansion: the byte stays as it is.
      i = find(s, "[\\$%%]", i + 1)
    end
  end
  if start <= #s then
    ops[#ops + 1] = 0
    ops[#ops + 1] = sub(s, start)
  end
  return ops
end

--- Expands `s` as do_expand() does: `$N` from `rc` (the rule's captures), `%N` from `cc`
--- (the last matched condition's), `%{VAR}` through env:var, `${map:key|default}` through
--- env:map, `\` taking the next byte literally.  Captures are lighten_re's (caps[0] the
--- whole match, `false` for a group that did not take part).  `esc` ([B] and friends, as
--- for escape_backref) escapes `$N`/`%N`; nil for none.  When `marks` is a table, the
--- byte ranges of the result that came from back-references and maps are appended to it
--- as pairs (first, last), 1-based and inclusive.
function M.expand(s, rc, cc, esc, env, marks)
  local ops = templates[s]
  if not ops then
    ops = parse_template(s)
    if ntemplates < 8192 then
      templates[s] = ops
      ntemplates = ntemplates + 1
    end
  end
  local nops = #ops
  if nops == 0 then return "" end
  if nops == 2 and ops[1] == 0 then return ops[2] end
  local out, n, len = nil, 0, 0
  local one
  for k = 1, nops, 2 do
    local kind, val = ops[k], ops[k + 1]
    local v, mark = nil, false
    if kind == 0 then
      v = val
    elseif kind == 2 then
      v = rc[val] or ""
      if esc then v = escape_backref(v, esc) end
      mark = true
    elseif kind == 3 then
      v = cc[val] or ""
      if esc then v = escape_backref(v, esc) end
      mark = true
    elseif kind == 4 then
      -- The name as written: %{HTTP:X-$1} is the header "X-$1".
      v = env:var(val)
    else
      v, mark = map_lookup(val, rc, cc, esc, env), true
    end
    if mark and marks then
      marks[#marks + 1] = len + 1
      marks[#marks + 1] = len + #v
    end
    if n == 0 then one = v elseif n == 1 then out = { one, v } else out[n + 1] = v end
    n = n + 1
    len = len + #v
  end
  if n == 1 then return one end
  return concat(out, "", 1, n)
end
expand = M.expand

-- ---------------------------------------------------------------------------------------
-- the rule engine (rewrite.rs)

local COND_OP = {
  ["regex"] = "", ["file-exists"] = "-f", ["file-size"] = "-s", ["file-link"] = "-l",
  ["file-dir"] = "-d", ["file-executable"] = "-x", ["lookup-url"] = "-U",
  ["lookup-file"] = "-F", ["str-lt"] = "<", ["str-le"] = "<=", ["str-eq"] = "=",
  ["str-gt"] = ">", ["str-ge"] = ">=", ["int-lt"] = "-lt", ["int-le"] = "-le",
  ["int-eq"] = "-eq", ["int-gt"] = "-gt", ["int-ge"] = "-ge", ["expr"] = "expr ",
}

local FILE_TEST = {
  ["file-exists"] = true, ["file-size"] = true, ["file-link"] = true, ["file-dir"] = true,
  ["file-executable"] = true, ["lookup-url"] = true, ["lookup-file"] = true,
}

--- The status a `[R]` flag asks for: `[R]` 302, `[R=permanent]` 301, `[R=temp]` 302,
--- `[R=seeother]` 303, `[R=NNN]` NNN (302 when it is not a number); nil without [R].
function M.redirect_code(rule)
  local f = flag(rule, "redirect")
  if not f then return nil end
  local v = f.v
  if v == nil then return 302 end
  local l = lower(v)
  if l == "permanent" then return 301 end
  if l == "temp" then return 302 end
  if l == "seeother" then return 303 end
  return parse_uint(v, U16_MAX) or 302
end
local redirect_code = M.redirect_code

-- Runs a compiled regex: its captures on a match, nil on none, or false and the reason
-- when it cannot say (the translator could not compile it, or it ran out of steps).
local function run_re(prog, subject)
  if not prog then return false, "lighten_re cannot run this pattern" end
  local caps, msg = exec(prog, subject, 1)
  if caps == false then return false, msg or "the regex ran out of steps" end
  return caps
end

local function fail_closed(state, trace, at, depth, what, why)
  state.status = 403
  if trace then
    trace[#trace + 1] = { at = at, depth = depth, text = what .. ": " .. why .. ": 403 (fail closed)" }
  end
end

-- Outcomes of one rule.
local NOMATCH, MATCHED, SUBSTITUTED, STATUS, SKIPPED = 0, 1, 2, 3, 4

-- One condition: true/false, the condition captures from now on, and nil; or nil, nil
-- and the reason it failed closed.
local function apply_cond(c, rc, cc, env, trace)
  local input = expand(c.test, rc, cc, nil, env)
  local kind, operand, nocase = c.kind, c.operand or "", c.nocase
  local rcode
  if kind == "regex" then
    local caps, why = run_re(c.re, input)
    if caps == false then return nil, nil, why end
    if caps then
      if not c.negated then cc = caps end
      rcode = true
    else
      rcode = false
    end
  elseif kind == "str-eq" then
    if nocase then rcode = lower(input) == lower(operand) else rcode = input == operand end
  elseif kind == "str-gt" or kind == "str-ge" or kind == "str-lt" or kind == "str-le" then
    local cmp
    if nocase then cmp = bytecmp(lower(input), lower(operand)) else cmp = compare_lexicography(input, operand) end
    if kind == "str-gt" then
      rcode = cmp > 0
    elseif kind == "str-ge" then
      rcode = cmp >= 0
    elseif kind == "str-lt" then
      rcode = cmp < 0
    else
      rcode = cmp <= 0
    end
  elseif kind == "int-eq" or kind == "int-lt" or kind == "int-le" or kind == "int-gt" or kind == "int-ge" then
    local a, b = atoi(input), atoi(operand)
    if kind == "int-eq" then
      rcode = a == b
    elseif kind == "int-lt" then
      rcode = a < b
    elseif kind == "int-le" then
      rcode = a <= b
    elseif kind == "int-gt" then
      rcode = a > b
    else
      rcode = a >= b
    end
  elseif FILE_TEST[kind] then
    rcode = env:test_file(kind, input) and true or false
  elseif kind == "expr" then
    if c.expr == false then return nil, nil, "the expression cannot be evaluated here" end
    rcode = env:expr_cond(c) and true or false
  else
    return nil, nil, "unknown condition kind '" .. tostring(kind) .. "'"
  end
  local result = rcode ~= (c.negated == true)
  if trace then
    trace[#trace + 1] = {
      at = c.at,
      depth = 1,
      text = "RewriteCond '" .. input .. "' " .. (c.negated and "!" or "") .. COND_OP[kind] .. operand
        .. ": " .. (result and "true" or "false") .. (c.ornext and " [OR]" or ""),
    }
  end
  return result, cc
end

-- splitout_queryargs(): `?` in the result replaces (or with [QSA] prepends to) the query;
-- [QSD] drops it; [QSL] splits at the last `?`.  Returns the URL without its query, or
-- nil when the splitting `?` lies in one of the `unsafe` ranges (pairs as M.expand marks).
local function split_query(new, state, rule, unsafe)
  if is_absolute_uri(new) and not find(new, "?", 1, true) then
    local sc = scheme_of(new)
    if sc ~= "http" and sc ~= "https" and sc ~= "ftp" then
      state.args = nil
      return new
    end
  end
  if flag(rule, "qs-discard") then state.args = nil end
  local sc = scheme_of(new)
  local skip = sc and #sc + 3 or 0
  local p = find(new, "?", skip + 1, true)
  if p and flag(rule, "qs-last") then
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
    if flag(rule, "qs-append") then
      -- An empty new query leaves the old one as it is.
      if q ~= "" then
        local old = state.args
        state.args = old and (q .. "&" .. old) or q
      end
    else
      state.args = q
    end
    local a = state.args
    if a and byte(a, -1) == 38 then a = sub(a, 1, -2) end
    if a == "" then a = nil end
    state.args = a
  end
  return new
end

-- What a rule matches: the filename, per-directory with PATH_INFO and without the
-- directory prefix.
local function subject_of(filename, path_info, perdir)
  local subject = filename
  if perdir then
    if path_info and path_info ~= "" then subject = subject .. path_info end
    if sub(subject, 1, #perdir) == perdir then subject = sub(subject, #perdir + 1) end
  end
  return subject
end

local function apply_rule(rule, subject, perdir, state, env, trace)
  local caps, why = run_re(rule.re, subject)
  if caps == false then
    fail_closed(state, trace, rule.at, 0, "RewriteRule " .. (rule.negated and "!" or "") .. rule.pattern, why)
    return STATUS
  end
  local matched = (caps ~= nil) ~= (rule.negated == true)
  if trace then
    trace[#trace + 1] = {
      at = rule.at,
      depth = 0,
      text = "RewriteRule " .. (rule.negated and "!" or "") .. rule.pattern .. " against '" .. subject
        .. "': " .. (matched and "matches" or "no match"),
    }
  end
  if not matched then return NOMATCH end
  local rc = (rule.negated or not caps) and EMPTY or caps
  local cc = EMPTY
  local conds = rule.conds
  -- Request headers the conditions read go to Vary when the rule applies (unless [NV]).
  local vary
  if conds then
    local i, nc = 1, #conds
    -- The headers one condition reads, in a table reused across conditions.
    local vc = {}
    while i <= nc do
      local c = conds[i]
      env.vary_cond = vc
      local ok, ncc, cwhy = apply_cond(c, rc, cc, env, trace)
      local nv = #vc
      if nv > 0 then
        if not c.novary then
          vary = vary or {}
          for k = 1, nv do vary[#vary + 1] = vc[k] end
        end
        for k = nv, 1, -1 do vc[k] = nil end
      end
      env.vary_cond = nil
      if ok == nil then
        fail_closed(state, trace, c.at, 1, "RewriteCond " .. c.test, cwhy)
        return STATUS
      end
      cc = ncc
      if c.ornext then
        if ok then
          -- The rest of the [OR] chain is skipped.
          while i <= nc and conds[i].ornext do i = i + 1 end
        end
      elseif not ok then
        if trace then
          trace[#trace + 1] = { at = rule.at, depth = 1, text = "conditions fail: rule not applied" }
        end
        return NOMATCH
      end
      i = i + 1
    end
  end
  if vary and env.add_vary then env:add_vary(vary) end
  local esc
  local fb, fctls = flag(rule, "escape"), flag(rule, "escape-ctls")
  if fb or fctls then
    local bne = flag(rule, "escape-no-escape")
    esc = {
      all = fb ~= nil,
      only = fb and fb.v,
      ctls = fctls ~= nil,
      keep = bne and bne.v,
      no_plus = flag(rule, "escape-no-plus") ~= nil,
    }
  end
  -- [E=VAR:VAL] is expanded whether or not there is a substitution, after it (a
  -- %{ENV:VAR} in the same rule's substitution sees the value before), without [B].
  local fl = rule.flags
  local function set_env()
    if not fl then return end
    for k = 1, #fl do
      local f = fl[k]
      if f.k == "env" then
        local v = expand(f.v or "", rc, cc, nil, env)
        if byte(v) == 33 then
          env:set_env(sub(v, 2), nil)
        else
          local colon = find(v, ":", 1, true)
          if colon then
            env:set_env(sub(v, 1, colon - 1), sub(v, colon + 1))
          else
            env:set_env(v, "")
          end
        end
      end
    end
  end
  local ft = flag(rule, "type")
  if ft and ft.v then state.forced_type = M.type_lower(expand(ft.v, rc, cc, esc, env)) end
  local fh = flag(rule, "handler")
  if fh and fh.v then state.forced_handler = expand(fh.v, rc, cc, esc, env) end
  local status
  if flag(rule, "forbidden") then
    status = 403
  elseif flag(rule, "gone") then
    status = 410
  else
    local code = redirect_code(rule)
    if code and not (code >= 300 and code < 400) then status = code end
  end
  local subst = rule.subst
  if subst == "-" or status then
    set_env()
    if status then
      state.status = status
      if trace then trace[#trace + 1] = { at = rule.at, depth = 1, text = "answers " .. status } end
      return STATUS
    end
    if trace then trace[#trace + 1] = { at = rule.at, depth = 1, text = "no substitution ('-')" } end
    return MATCHED
  end
  local marks = {}
  local new = expand(subst, rc, cc, esc, env, marks)
  set_env()
  if trace then
    trace[#trace + 1] = { at = rule.at, depth = 1, text = "rewrite '" .. subject .. "' -> '" .. new .. "'" }
  end
  if perdir and flag(rule, "discard-path-info") then state.path_info = nil end
  -- Since 2.4.60 a `?` that a back-reference brought in (from an encoded `%3f` in the
  -- request) does not start a query unless [UnsafeAllow3F].
  local unsafe_3f = not flag(rule, "unsafe-allow3-f") and find(lower(env:var("THE_REQUEST")), "%3f", 1, true)
  new = split_query(new, state, rule, unsafe_3f and marks or nil)
  if not new then
    state.status = 403
    if trace then
      trace[#trace + 1] = {
        at = rule.at,
        depth = 1,
        text = "a '?' from a back-reference would start the query (no UnsafeAllow3F): 403",
      }
    end
    return STATUS
  end
  state.literal_prefix = rule.literal_prefix or M.literal_prefix(subst)
  state.unsafe_prefix_stat = flag(rule, "unsafe-prefix-stat") ~= nil
  if perdir and byte(new, 1) ~= 47 and not is_absolute_uri(new) then new = perdir .. new end
  if flag(rule, "proxy") then
    state.filename = "proxy:" .. new
    return SUBSTITUTED
  end
  if flag(rule, "redirect") then
    if not is_absolute_uri(new) then
      local base = env:self_url()
      if byte(new, 1) == 47 then new = base .. new else new = base .. "/" .. new end
    end
    state.filename = new
    return SUBSTITUTED
  end
  -- A full URL naming this server is reduced to its path.
  if is_absolute_uri(new) then
    local path = env:is_self(new)
    if path ~= nil then new = path end
  end
  state.filename = new
  return SUBSTITUTED
end

--- Runs `rules` (see the module doc); returns the action and the flags.
function M.apply_list(rules, perdir, state, env, trace)
  local changed = "none"
  local flags = { passthrough = false, ["end"] = false, proxy = false, redirect = nil }
  local rounds = 0
  local n = #rules
  local i = 1
  -- The subject is built again only when a rule changed the filename or PATH_INFO.
  local sf, spi, subject = nil, nil, nil
  while i <= n do
    local rule = rules[i]
    local f, pi = state.filename, state.path_info
    if subject == nil or f ~= sf or pi ~= spi then
      sf, spi, subject = f, pi, subject_of(f, pi, perdir)
    end
    local r
    if env.subreq and (flag(rule, "no-subreq") or flag(rule, "redirect")) then
      -- mod_dir's DirectoryIndex sub-request skips [NS] and [R] rules.
      r = SKIPPED
    else
      r = apply_rule(rule, subject, perdir, state, env, trace)
    end
    if r == SKIPPED then
      i = i + 1
    elseif r == NOMATCH then
      -- A failed rule skips the rules chained to it.
      while i <= n and flag(rules[i], "chain") do i = i + 1 end
      i = i + 1
    elseif r == STATUS then
      return "status", flags
    else
      if r == SUBSTITUTED then
        changed = flag(rule, "no-escape") and "changed-no-escape" or "changed"
      end
      local code = redirect_code(rule)
      if code then flags.redirect = code end
      if flag(rule, "pass-through") then
        flags.passthrough = true
        break
      end
      if flag(rule, "end") then
        flags["end"] = true
        break
      end
      if flag(rule, "proxy") then
        flags.proxy = true
        break
      end
      if flag(rule, "last") then break end
      if flag(rule, "next") then
        rounds = rounds + 1
        if rounds >= 32000 then
          state.status = 500
          return "status", flags
        end
        i = 1
      else
        local fs = flag(rule, "skip")
        local skip = fs and fs.v and parse_uint(fs.v, U64_MAX)
        if skip then i = i + skip end
        i = i + 1
      end
    end
  end
  return changed, flags
end

return M
