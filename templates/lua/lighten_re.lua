-- lighten_re: a backtracking regex VM for lighttpd's mod_magnet (Lua 5.4).
--
-- Installed by lighten. It runs programs that lighten's `luare` compiler built from
-- Apache's PCRE2 patterns (see src/luare/mod.rs for the program format), so that a
-- RewriteRule or RewriteCond pattern matches here exactly as it matched in Apache:
-- bytes, not UTF-8; leftmost match; PCRE's backtracking order, so the same captures.
-- lighttpd's Lua has no regex library and Lua patterns are not PCRE.
--
--   local re = require "lighten_re"
--   local caps = re.exec(PROG, subject [, init])
--
-- re.exec returns
--   nil                      no match;
--   a table `caps`           caps[0] is the whole match, caps[1..ng] the groups
--                            (false for a group that did not take part), caps.s and
--                            caps.e the 1-based first and last index of the match
--                            (caps.e == caps.s - 1 for an empty match);
--   false, message           the step budget (re.STEP_LIMIT backtracking steps) or
--                            the stack budget (re.STACK_LIMIT) ran out. Treat this as
--                            an error, never as "no match": a negated condition would
--                            otherwise become true.
-- re.match is re.exec but raises a Lua error instead of returning false, which in
-- mod_magnet answers 500: fail closed.
--
-- PROG is the table lighten printed. The first call stores decoded sets in PROG.rt.
-- mod_magnet runs a script's top level on every request but keeps `require`d modules,
-- so keep program tables in re.cache; the constructor after `or` only runs once:
--   local P1 = re.cache["site/.htaccess:12"] or re.keep("site/.htaccess:12", {...})
-- init (default 1) is where the search starts, like pcre2_match's start offset:
-- `^` and `\A` still mean the subject start, `\G` means init, and lookbehind may look
-- at bytes before init.

local M = {}

M.VERSION = 1
-- Backtracking steps per exec call (PCRE2's own default match limit is 10000000 calls).
M.STEP_LIMIT = 1000000
-- Backtrack stack slots (5 per choice point); only loops over long subjects get near it.
M.STACK_LIMIT = 1000000

local byte, sub, find, char, rep = string.byte, string.sub, string.find, string.char, string.rep

-- Opcodes. The numbers must match `Op` in src/luare/program.rs (a unit test checks).
local OP_MATCH = 1
local OP_CHAR = 2
local OP_SET = 3
local OP_STR = 4
local OP_STR_FOLD = 5
local OP_SPLIT = 6
local OP_SPLIT_JUMP = 7
local OP_JUMP = 8
local OP_OPEN = 9
local OP_CLOSE = 10
local OP_STAR = 11
local OP_LAZY = 12
local OP_POSSESSIVE = 13
local OP_START = 14
local OP_LINE_START = 15
local OP_END_OR_FINAL_NEWLINE = 16
local OP_END = 17
local OP_LINE_END = 18
local OP_WORD_BOUNDARY = 19
local OP_NOT_WORD_BOUNDARY = 20
local OP_SEARCH_START = 21
local OP_ATOMIC = 22
local OP_ATOMIC_END = 23
local OP_LOOK = 24
local OP_LOOK_END = 25
local OP_NEG_LOOK = 26
local OP_NEG_LOOK_END = 27
local OP_BACK = 28
local OP_MARK = 29
local OP_LOOP_GREEDY = 30
local OP_LOOP_LAZY = 31
local OP_REF = 32
local OP_REF_FOLD = 33

-- Kinds of backtrack entries. Each entry is 5 slots on `bt`:
-- kind, pc, pos, trail height, aux.
local K_ALT = 1      -- resume at pc with pos
local K_BARRIER = 2  -- start of an atomic group or lookaround: keep failing
local K_NEG = 3      -- a negative lookaround's body failed: resume after it
local K_STAR = 4     -- give back one byte of a greedy repeat; aux = least end
local K_LAZY = 5     -- take one more byte of a lazy repeat at pc; aux = greatest end

-- PCRE2's default (C locale) tables: word bytes and ASCII-only case folding.
local WORD, FOLD = {}, {}
for b = 0, 255 do
  WORD[b] = (b >= 48 and b <= 57) or (b >= 65 and b <= 90) or (b >= 97 and b <= 122) or b == 95
  FOLD[b] = (b >= 65 and b <= 90) and b + 32 or b
end

-- Two sets are shared tables so the repeat instruction can recognise `.*` with and
-- without (?s) and skip the byte loop.
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

local function prepare(prog)
  if prog.v ~= M.VERSION then
    error("lighten_re: program format " .. tostring(prog.v) .. ", module format " .. M.VERSION)
  end
  local sets = {}
  for k, hex in ipairs(prog.sets) do sets[k] = decode(hex) end
  local rt = { sets = sets }
  if prog.fs then rt.first = sets[prog.fs] end
  if prog.fb then rt.fbc = char(prog.fb) end
  if prog.rb then
    -- A byte every match contains: a plain byte, or a caseless letter as a Lua class.
    if prog.rbi then
      rt.need, rt.needplain = "[" .. char(prog.rb) .. char(prog.rb - 32) .. "]", false
    else
      rt.need, rt.needplain = char(prog.rb), true
    end
  end
  prog.rt = rt
  return rt
end

-- Scratch state, reused across calls (exec never re-enters itself).
local regs, bt, tr = {}, {}, {}

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

function M.exec(prog, s, init)
  local f = prog.fast
  if f and (init == nil or init == 1) then return fast_exec(f, s) end
  local rt = prog.rt or prepare(prog)
  init = init or 1
  local n = #s
  if init < 1 or init > n + 1 then return nil end
  if rt.need and not find(s, rt.need, init, rt.needplain) then return nil end
  local code, sets, strs = prog.code, rt.sets, prog.strs
  local ng = prog.ng
  for i = 1, prog.nr do regs[i] = -1 end
  local steps, stack_limit = M.STEP_LIMIT, M.STACK_LIMIT
  local last = n + 1
  local anchor = prog.anchor
  if anchor == 1 then
    if init ~= 1 then return nil end
    last = 1
  elseif anchor == 2 then
    last = init
  end
  local fbc, first = rt.fbc, rt.first
  local tn = 0
  local start = init
  while start <= last do
    if fbc then
      local p = find(s, fbc, start, true)
      if not p or p > last then return nil end
      start = p
    elseif first then
      while start <= n and not first[byte(s, start)] do start = start + 1 end
      if start > n or start > last then return nil end
    end
    local pc, pos, bn = 1, start, 0
    while true do
      -- Run forward until an instruction fails (break) or the program matches.
      while true do
        local op = code[pc]
        if op == OP_CHAR then
          if byte(s, pos) ~= code[pc + 1] then break end
          pos = pos + 1
          pc = pc + 4
        elseif op == OP_SET then
          local b = byte(s, pos)
          if not b or not sets[code[pc + 1]][b] then break end
          pos = pos + 1
          pc = pc + 4
        elseif op == OP_STR then
          local len = code[pc + 2]
          if sub(s, pos, pos + len - 1) ~= strs[code[pc + 1]] then break end
          pos = pos + len
          pc = pc + 4
        elseif op == OP_STAR or op == OP_POSSESSIVE then
          local set, mn, mx = sets[code[pc + 1]], code[pc + 2], code[pc + 3]
          local lim = n
          if mx >= 0 and pos + mx - 1 < n then lim = pos + mx - 1 end
          local p = pos
          if set == ALL then
            p = lim + 1
          elseif set == NONL then
            local q = find(s, "\n", pos, true)
            if q and q <= lim then p = q else p = lim + 1 end
          else
            while p <= lim and set[byte(s, p)] do p = p + 1 end
          end
          local least = pos + mn
          if p < least then break end
          if op == OP_STAR and p > least then
            bt[bn + 1] = K_STAR; bt[bn + 2] = pc + 4; bt[bn + 3] = p; bt[bn + 4] = tn; bt[bn + 5] = least
            bn = bn + 5
          end
          pos = p
          pc = pc + 4
        elseif op == OP_SPLIT then
          bt[bn + 1] = K_ALT; bt[bn + 2] = code[pc + 1]; bt[bn + 3] = pos; bt[bn + 4] = tn
          bn = bn + 5
          pc = pc + 4
        elseif op == OP_JUMP then
          pc = code[pc + 1]
        elseif op == OP_OPEN then
          local r = code[pc + 1]
          tr[tn + 1] = r; tr[tn + 2] = regs[r]; tn = tn + 2
          regs[r] = pos
          pc = pc + 4
        elseif op == OP_CLOSE then
          local r = 2 * code[pc + 1] + 1
          tr[tn + 1] = r; tr[tn + 2] = regs[r]; tr[tn + 3] = r + 1; tr[tn + 4] = regs[r + 1]; tn = tn + 4
          regs[r] = regs[code[pc + 2]]
          regs[r + 1] = pos
          pc = pc + 4
        elseif op == OP_MATCH then
          local caps = { [0] = sub(s, start, pos - 1), s = start, e = pos - 1 }
          for g = 1, ng do
            local a = regs[2 * g + 1]
            if a >= 0 then caps[g] = sub(s, a, regs[2 * g + 2] - 1) else caps[g] = false end
          end
          return caps
        elseif op == OP_START then
          if pos ~= 1 then break end
          pc = pc + 4
        elseif op == OP_END_OR_FINAL_NEWLINE then
          if pos <= n and not (pos == n and byte(s, pos) == 10) then break end
          pc = pc + 4
        elseif op == OP_END then
          if pos <= n then break end
          pc = pc + 4
        elseif op == OP_STR_FOLD then
          local lit, len = strs[code[pc + 1]], code[pc + 2]
          if pos + len - 1 > n then break end
          local k = 0
          while k < len and FOLD[byte(s, pos + k)] == byte(lit, k + 1) do k = k + 1 end
          if k < len then break end
          pos = pos + len
          pc = pc + 4
        elseif op == OP_SPLIT_JUMP then
          bt[bn + 1] = K_ALT; bt[bn + 2] = pc + 4; bt[bn + 3] = pos; bt[bn + 4] = tn
          bn = bn + 5
          pc = code[pc + 1]
        elseif op == OP_MARK then
          local r = code[pc + 1]
          tr[tn + 1] = r; tr[tn + 2] = regs[r]; tn = tn + 2
          regs[r] = pos
          pc = pc + 4
        elseif op == OP_LOOP_GREEDY then
          -- PCRE's KETRMAX: an iteration that matched nothing ends the loop.
          if pos == regs[code[pc + 1]] then
            pc = pc + 4
          elseif bn > stack_limit then
            while tn > 0 do regs[tr[tn - 1]] = tr[tn]; tn = tn - 2 end
            return false, "lighten_re: stack limit exceeded"
          else
            bt[bn + 1] = K_ALT; bt[bn + 2] = pc + 4; bt[bn + 3] = pos; bt[bn + 4] = tn
            bn = bn + 5
            pc = code[pc + 2]
          end
        elseif op == OP_LOOP_LAZY then
          if pos == regs[code[pc + 1]] then
            pc = pc + 4
          elseif bn > stack_limit then
            while tn > 0 do regs[tr[tn - 1]] = tr[tn]; tn = tn - 2 end
            return false, "lighten_re: stack limit exceeded"
          else
            bt[bn + 1] = K_ALT; bt[bn + 2] = code[pc + 2]; bt[bn + 3] = pos; bt[bn + 4] = tn
            bn = bn + 5
            pc = pc + 4
          end
        elseif op == OP_LAZY then
          local set, mn, mx = sets[code[pc + 1]], code[pc + 2], code[pc + 3]
          local least = pos + mn
          if least - 1 > n then break end
          local p = pos
          while p < least and set[byte(s, p)] do p = p + 1 end
          if p < least then break end
          local most = n + 1
          if mx >= 0 and pos + mx < most then most = pos + mx end
          if p < most then
            bt[bn + 1] = K_LAZY; bt[bn + 2] = pc; bt[bn + 3] = p; bt[bn + 4] = tn; bt[bn + 5] = most
            bn = bn + 5
          end
          pos = p
          pc = pc + 4
        elseif op == OP_LINE_START then
          -- Not after a newline that ends the subject (PCRE2 without ALT_CIRCUMFLEX).
          if pos ~= 1 and (pos > n or byte(s, pos - 1) ~= 10) then break end
          pc = pc + 4
        elseif op == OP_LINE_END then
          if pos <= n and byte(s, pos) ~= 10 then break end
          pc = pc + 4
        elseif op == OP_WORD_BOUNDARY or op == OP_NOT_WORD_BOUNDARY then
          local a = pos > 1 and WORD[byte(s, pos - 1)] or false
          local b = pos <= n and WORD[byte(s, pos)] or false
          if (a ~= b) ~= (op == OP_WORD_BOUNDARY) then break end
          pc = pc + 4
        elseif op == OP_SEARCH_START then
          if pos ~= init then break end
          pc = pc + 4
        elseif op == OP_ATOMIC then
          regs[code[pc + 1]] = bn
          bt[bn + 1] = K_BARRIER; bt[bn + 4] = tn
          bn = bn + 5
          pc = pc + 4
        elseif op == OP_ATOMIC_END then
          -- Drop every choice made inside the group, and the barrier.
          bn = regs[code[pc + 1]]
          pc = pc + 4
        elseif op == OP_LOOK then
          local r = code[pc + 1]
          regs[r] = bn
          regs[r + 1] = pos
          bt[bn + 1] = K_BARRIER; bt[bn + 4] = tn
          bn = bn + 5
          pc = pc + 4
        elseif op == OP_LOOK_END then
          local r = code[pc + 1]
          bn = regs[r]
          pos = regs[r + 1]
          pc = pc + 4
        elseif op == OP_NEG_LOOK then
          regs[code[pc + 1]] = bn
          bt[bn + 1] = K_NEG; bt[bn + 2] = code[pc + 2]; bt[bn + 3] = pos; bt[bn + 4] = tn
          bn = bn + 5
          pc = pc + 4
        elseif op == OP_NEG_LOOK_END then
          -- The body matched, so the negative assertion fails.
          bn = regs[code[pc + 1]]
          break
        elseif op == OP_BACK then
          local len = code[pc + 1]
          if pos - 1 < len then break end
          pos = pos - len
          pc = pc + 4
        elseif op == OP_REF or op == OP_REF_FOLD then
          local g = code[pc + 1]
          local a = regs[2 * g + 1]
          if a < 0 then break end
          local len = regs[2 * g + 2] - a
          if pos + len - 1 > n then break end
          local k = 0
          if op == OP_REF then
            while k < len and byte(s, a + k) == byte(s, pos + k) do k = k + 1 end
          else
            while k < len and FOLD[byte(s, a + k)] == FOLD[byte(s, pos + k)] do k = k + 1 end
          end
          if k < len then break end
          pos = pos + len
          pc = pc + 4
        else
          error("lighten_re: bad opcode " .. tostring(op) .. " at " .. pc)
        end
      end
      -- Backtrack: take the most recent choice that still has an alternative.
      local resumed = false
      while bn > 0 do
        steps = steps - 1
        if steps < 0 then
          while tn > 0 do regs[tr[tn - 1]] = tr[tn]; tn = tn - 2 end
          return false, "lighten_re: step limit exceeded"
        end
        local k, th = bt[bn - 4], bt[bn - 1]
        while tn > th do regs[tr[tn - 1]] = tr[tn]; tn = tn - 2 end
        if k == K_ALT then
          pc = bt[bn - 3]
          pos = bt[bn - 2]
          bn = bn - 5
          resumed = true
          break
        elseif k == K_STAR then
          local p, least = bt[bn - 2] - 1, bt[bn]
          pc = bt[bn - 3]
          -- When a literal follows (maybe after closing a group), skip the ends it
          -- would refuse at once: `(.*)/index` gives back bytes until a '/'.
          local q = pc
          if code[q] == OP_CLOSE then q = q + 4 end
          local nop, c = code[q], nil
          if nop == OP_CHAR then c = code[q + 1] elseif nop == OP_STR then c = byte(strs[code[q + 1]], 1) end
          if c then
            while p > least and byte(s, p) ~= c do p = p - 1 end
          end
          if p == least then bn = bn - 5 else bt[bn - 2] = p end
          pos = p
          resumed = true
          break
        elseif k == K_LAZY then
          local lpc, p = bt[bn - 3], bt[bn - 2]
          local b = byte(s, p)
          if b and sets[code[lpc + 1]][b] then
            p = p + 1
            if p == bt[bn] then bn = bn - 5 else bt[bn - 2] = p end
            pc = lpc + 4
            pos = p
            resumed = true
            break
          end
          bn = bn - 5
        elseif k == K_NEG then
          pc = bt[bn - 3]
          pos = bt[bn - 2]
          bn = bn - 5
          resumed = true
          break
        else
          bn = bn - 5
        end
      end
      if not resumed then break end
    end
    -- No match from this start: the trail restores every register for the next one.
    while tn > 0 do regs[tr[tn - 1]] = tr[tn]; tn = tn - 2 end
    start = start + 1
  end
  return nil
end

M.cache = {}

function M.keep(key, prog)
  M.cache[key] = prog
  return prog
end

function M.match(prog, s, init)
  local caps, err = M.exec(prog, s, init)
  if caps == false then error(err, 2) end
  return caps
end

return M
