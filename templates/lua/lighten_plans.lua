-- lighten_plans.lua: the decision cache both tiers keep (lighten_core.lua's `decide`,
-- lighten.lua's M.physical).
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

local KEYS, A_KEY, HEADERS = 256, 4, 2048
M.TARGET = 512

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

-- Keeps `outcome` with the reads `rd` under `key`, unless they cannot be checked.
function M.keep(owner, key, rd, outcome)
  if rd.no or rd.hbytes > HEADERS then return end
  outcome.hn, outcome.hv, outcome.paths, outcome.facts = rd.hn, rd.hv, rd.paths, rd.facts
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

return M
