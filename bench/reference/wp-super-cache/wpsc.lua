-- WP Super Cache (mod_rewrite mode) and the WordPress front controller, by hand.
-- The .htaccess rules, in the order Apache tries them: a cached page when the request may
-- have one (GET, no query, a URL ending in /, no logged-in cookie, no mobile profile),
-- gzipped when the client takes gzip; else a file or folder as it is; else index.php.
local r = lighty.r
local attr, hdr = r.req_attr, r.req_header
local find, byte = string.find, string.byte
local stat = lighty.c.stat

local function is_file(p)
  local st = stat(p)
  return st and st.is_file
end

-- RewriteCond %{HTTP:X-Wap-Profile} !^[a-z0-9\"]+ [NC], the same for Profile
local function mobile(v)
  return v ~= nil and find(v, '^[%w"]') ~= nil
end

local function cached_page()
  if attr["request.method"] == "POST" then return nil end
  local q = attr["uri.query"]
  if q and q ~= "" then return nil end
  local path = attr["uri.path"]
  if byte(path, -1) ~= 47 or find(path, "//", 1, true) then return nil end
  local cookie = hdr["Cookie"]
  if cookie and (find(cookie, "comment_author_", 1, true) or find(cookie, "wordpress_logged_in", 1, true)
      or find(cookie, "wp-postpass_", 1, true)) then
    return nil
  end
  if mobile(hdr["X-Wap-Profile"]) or mobile(hdr["Profile"]) then return nil end
  local host = (attr["uri.authority"] or ""):gsub(":%d+$", "")
  local page = attr["physical.doc-root"] .. "/wp-content/cache/supercache/" .. host .. path
    .. (attr["uri.scheme"] == "https" and "index-https.html" or "index.html")
  local ae = hdr["Accept-Encoding"]
  if ae and find(ae, "gzip", 1, true) and is_file(page .. ".gz") then return page .. ".gz", true end
  if is_file(page) then return page, false end
  return nil
end

local page, gz = cached_page()
if page then
  attr["physical.path"] = page
  -- wp-content/cache/.htaccess: Header set Vary, Header set Cache-Control
  r.resp_header["Vary"] = "Accept-Encoding, Cookie"
  r.resp_header["Cache-Control"] = "max-age=3, must-revalidate"
  if gz then
    -- <FilesMatch "\.html\.gz$"> ForceType text/html, FileETag None; AddEncoding gzip .gz
    r.resp_header["Content-Type"] = "text/html; charset=UTF-8"
    r.resp_header["Content-Encoding"] = "gzip"
    r.resp_header["ETag"] = ""
  end
  return 0
end

-- WordPress: RewriteRule ^index\.php$ - [L]; !-f, !-d: RewriteRule . /index.php [L]
local st = stat(attr["physical.path"])
if st and (st.is_file or st.is_dir) then return 0 end
if attr["uri.path"] == "/index.php" then return 0 end
attr["uri.path"] = "/index.php"
attr["physical.path"] = nil
return lighty.RESTART_REQUEST
