-- lighten_re: Apache's regular expressions for lighttpd's mod_magnet (Lua 5.4), matched by
-- the real PCRE2.
--
-- Installed by lighten. Patterns run through Debian's lua-rex-pcre2 (lrexlib, linked
-- against libpcre2-8, the library Debian's Apache uses), compiled once each with the
-- options Apache compiles them with (DOTALL and DOLLAR_ENDONLY, the default
-- RegexDefaultOptions; CASELESS for [NC]), so a RewriteRule or RewriteCond pattern
-- matches here exactly as it matched in Apache: bytes, not UTF-8, the same captures.
--
--   local re = require "lighten_re"
--   local caps = re.exec(PROG, subject [, init])
--
-- PROG is the table lighten printed: {src = <pattern>, opts = "DOTALL DOLLAR_ENDONLY ..."
-- [, fast = {...}]}. re.exec returns
--   nil                      no match;
--   a table `caps`           caps[0] is the whole match, caps[1..] the groups (false for
--                            a group that did not take part), caps.s and caps.e the
--                            1-based first and last index of the match (caps.e ==
--                            caps.s - 1 for an empty match);
--   false, message           PCRE2 gave up (its match or depth limit, lowered here to
--                            M.MATCH_LIMIT / M.DEPTH_LIMIT so that a hostile subject
--                            costs milliseconds, not the event loop). Treat this as an
--                            error, never as "no match": a negated condition would
--                            otherwise become true.
-- re.match is re.exec but raises a Lua error instead of returning false, which in
-- mod_magnet answers 500: fail closed.
-- init (default 1) is where the search starts, like pcre2_match's start offset: `^`
-- still means the subject start, and lookbehind may look at bytes before init.

local rex = require "rex_pcre2"

local M = {}

M.VERSION = 2
-- pcre2_match() calls and backtracking depth per search (PCRE2's defaults: 10,000,000
-- each). A pattern can only lower them, with (*LIMIT_MATCH=) of its own.
M.MATCH_LIMIT = 1000000
M.DEPTH_LIMIT = 100000
-- JIT-compile each pattern (bench/regex-hostile.sh measures it both ways).
M.JIT = true

local byte, sub, find, rep = string.byte, string.sub, string.find, string.rep

local FLAGS = rex.flags()

-- The compiled regex of a program, made on first use and kept in the program table
-- (mod_magnet keeps `require`d modules, so the site data and this live as long as the
-- Lua state); nil and PCRE2's message when this PCRE2 refuses the pattern (lighten checks
-- patterns with the PCRE2 it links, which may be newer than the system's: Apache, on the
-- system's, would refuse it too).
--
-- Each pattern is JIT-compiled where PCRE2 has a JIT for the machine: the same matches,
-- ~1000x faster on hostile subjects (a quadratic search over an 8 KB query string: 227 ms
-- interpreted, 0.06 ms JIT on this machine). The JIT's own stack is small; a search that
-- outgrows it runs again in the interpreter, which the match limit bounds.
local function plain(prog)
  local cf = 0
  for name in prog.opts:gmatch("%S+") do cf = cf | FLAGS[name] end
  local limits = ("(*LIMIT_MATCH=%d)(*LIMIT_DEPTH=%d)"):format(M.MATCH_LIMIT, M.DEPTH_LIMIT)
  return pcall(rex.new, limits .. prog.src, cf)
end

local function compiled(prog)
  if prog.err then return nil, prog.err end
  local ok, r = plain(prog)
  if not ok then
    prog.err = "PCRE2: " .. tostring(r)
    return nil, prog.err
  end
  if M.JIT then pcall(r.jit_compile, r) end
  prog.rx = r
  return r
end

-- The byte sets of fast paths: 64 hex digits, digit k (1-based) holding bytes
-- 4(k-1)..4(k-1)+3, value 1 being the lowest byte.
local ALL, NONL = {}, {}
for b = 0, 255 do
  ALL[b] = true
  if b ~= 10 then NONL[b] = true end
end
local ALL_HEX = rep("f", 64)
local NONL_HEX = "ffb" .. rep("f", 61)

local HEX = {}
for i = 0, 9 do HEX[48 + i] = i end
for i = 0, 5 do HEX[97 + i] = 10 + i end

-- A set is 64 hex digits; digit k (1-based) holds bytes 4(k-1)..4(k-1)+3, value 1
-- being the lowest byte.
local function decode(hex)
  if hex == ALL_HEX then return ALL end
  if hex == NONL_HEX then return NONL end
  local t = {}
  for k = 1, 64 do
    local v = HEX[byte(hex, k)]
    local base = (k - 1) * 4
    for bit = 0, 3 do
      if v & (1 << bit) ~= 0 then t[base + bit] = true end
    end
  end
  return t
end

-- Fast paths lighten found at conversion (src/luare/fast.rs): a literal or "everything"
-- gives the same match and groups without the machine.
local lower = string.lower
local function fast_exec(f, s)
  local k = f[1]
  if k == 1 then
    local c = { [0] = s, s = 1, e = #s }
    for g = 1, f.ng do c[g] = s end
    return c
  elseif k == 6 then
    if s == "" then return { [0] = "", s = 1, e = 0 } end
    return nil
  elseif k == 7 then
    if #s > 0 then return { [0] = sub(s, 1, 1), s = 1, e = 1 } end
    return nil
  elseif k == 9 then
    -- The last byte in the set: the whole subject.
    local set = f.st or decode(f.set)
    f.st = set
    local n = #s
    if n > 0 and set[byte(s, n)] then return { [0] = s, s = 1, e = n } end
    return nil
  elseif k == 10 then
    -- A run of set bytes at the start, at least f.min long: the run.
    local set = f.st or decode(f.set)
    f.st = set
    local j, n = 1, #s
    while j <= n and set[byte(s, j)] do j = j + 1 end
    if j - 1 >= f.min then return { [0] = sub(s, 1, j - 1), s = 1, e = j - 1 } end
    return nil
  elseif k == 11 then
    -- One of the literals anywhere: the whole subject; the group is the alternative
    -- starting last (greedy .* before it), the first listed among those starting there.
    local x = f.ci and lower(s) or s
    local alts, best, which = f.alts, 0, nil
    for a = 1, #alts do
      local lit, p, last = alts[a], 1, nil
      while true do
        local i = find(x, lit, p, true)
        if not i then break end
        last, p = i, i + 1
      end
      if last and last > best then best, which = last, a end
    end
    if not which then return nil end
    local c = { [0] = s, s = 1, e = #s }
    if f.ng == 1 then c[1] = sub(s, best, best + #alts[which] - 1) end
    return c
  end
  local lit = f[2]
  local x = f.ci and lower(s) or s
  local n, m = #s, #lit
  if k == 2 then
    if x == lit then return { [0] = s, s = 1, e = n } end
  elseif k == 3 then
    if sub(x, 1, m) == lit then return { [0] = sub(s, 1, m), s = 1, e = m } end
  elseif k == 4 then
    if n >= m and sub(x, n - m + 1) == lit then return { [0] = sub(s, n - m + 1), s = n - m + 1, e = n } end
  elseif k == 5 then
    local i = find(x, lit, 1, true)
    if i then return { [0] = sub(s, i, i + m - 1), s = i, e = i + m - 1 } end
  elseif k == 8 then
    if find(x, lit, 1, true) then return { [0] = s, s = 1, e = n } end
  end
  return nil
end

-- A byte set of a fast path as a table (byte -> true), for compiled tests.
M.byteset = decode

local tfind = rex.new("").tfind

function M.exec(prog, s, init)
  local f = prog.fast
  if f and (init == nil or init == 1) then return fast_exec(f, s) end
  local r, why = prog.rx, nil
  if not r then
    r, why = compiled(prog)
    if not r then return false, why end
  end
  local ok, st, en, groups = pcall(tfind, r, s, init or 1)
  if not ok and find(tostring(st), "JIT_STACKLIMIT", 1, true) then
    if not prog.nojit then
      local _, p = plain(prog)
      prog.nojit = p
    end
    ok, st, en, groups = pcall(tfind, prog.nojit, s, init or 1)
  end
  if not ok then return false, "PCRE2: " .. tostring(st) end
  if not st then return nil end
  local caps = { [0] = sub(s, st, en), s = st, e = en }
  for g = 1, #groups do caps[g] = groups[g] end
  return caps
end

-- Whether the pattern matches: true or false without making captures, or nil and the
-- reason when PCRE2 gave up (treat it as exec's false).
function M.test(prog, s)
  local f = prog.fast
  if f then return fast_exec(f, s) ~= nil end
  local r, why = prog.rx, nil
  if not r then
    r, why = compiled(prog)
    if not r then return nil, why end
  end
  local ok, st = pcall(r.find, r, s)
  if not ok then
    local caps, err = M.exec(prog, s)
    if caps == false then return nil, err end
    return caps ~= nil
  end
  return st ~= nil
end

function M.match(prog, s, init)
  local caps, err = M.exec(prog, s, init)
  if caps == false then error(err, 2) end
  return caps
end

return M
