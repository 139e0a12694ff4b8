-- Hostile subjects against lighten_re (PCRE2 through lua-rex-pcre2, as the generated
-- sites run it): each search's cost and its outcome. A search that reaches the match
-- limit is an error (the request fails closed), never "no match".
--   lua5.4 bench/regex_hostile.lua [ROUNDS]
package.path = "templates/lua/?.lua;" .. package.path
local re = require "lighten_re"
local rounds = tonumber(arg[1]) or 20
local cases = {
  { "^(a+)+$", string.rep("a", 8192) .. "!", "nested quantifier (ReDoS)" },
  { "^(\\w+\\s?)*$", string.rep("word ", 1600) .. "!", "word list (ReDoS)" },
  { "(union|select|insert|drop)[^a-z]*.*(from|into|table)", string.rep("union select ", 600), "unanchored SQL filter, 8 KB query" },
  { "(.*a){12}", string.rep("a", 8192), "repeated group" },
  { "^.*(comment_author_|wordpress_logged_in|wp-postpass_).*$", string.rep("x", 8192), "WP Super Cache cookie test (fast path)" },
}
print(string.format("%-40s %5s %12s  %s", "case", "jit", "ms/search", "outcome"))
for _, jit in ipairs({ true, false }) do
re.JIT = jit
for _, c in ipairs(cases) do
  local P = { src = c[1], opts = "DOTALL DOLLAR_ENDONLY CASELESS" }
  if c[1]:find("comment_author_", 1, true) then
    P.fast = { 11, "", alts = { "comment_author_", "wordpress_logged_in", "wp-postpass_" }, ng = 1 }
  end
  re.exec(P, "warm-up")
  local t = os.clock()
  local r, err
  for _ = 1, rounds do r, err = re.exec(P, c[2]) end
  local outcome = r == false and err or (r and "match" or "no match")
  print(string.format("%-40s %5s %12.3f  %s", c[3], jit and "yes" or "no", (os.clock() - t) * 1000 / rounds, outcome))
end
end
