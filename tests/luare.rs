//! Differential tests of `lighten::luare` and `templates/lua/lighten_re.lua`: a pattern as
//! lighten prints it, run by the real `lua5.4` through lighten_re (the system's PCRE2 via
//! lua-rex-pcre2, with the options lighten wrote, or a fast path), must report what PCRE2
//! itself reports (the `pcre2` crate, and the system's libpcre2-8 with Apache's exact
//! options): match or not, where, and every group's text or unset.
//!
//! Three layers: hand-written cases from real configurations, a property test over
//! random patterns and subjects, and every regex in the repository's fixtures. Lua runs
//! once per batch of cases. Without `lua5.4` the tests say "skipped", unless `CI` is set.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use lighten::luare::{self, Compiled, LUA_MODULE, Options};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};

// ---------------------------------------------------------------------------------------
// The two matchers
// ---------------------------------------------------------------------------------------

/// What a matcher reported for one subject. Positions are 0-based, end exclusive.
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    NoMatch,
    Match {
        start: usize,
        end: usize,
        groups: Vec<Option<Vec<u8>>>,
    },
    /// lighten_re's match limit ran out (or PCRE2's): not compared.
    Limit,
    /// The system's PCRE2 (which lighten_re runs, as Apache does) refused the pattern at
    /// its first use; lighten_re reports it as an error: the rule fails closed.
    Refused,
}

/// Options given to the real PCRE2. DOLLAR_ENDONLY is not among them (the crate does not
/// offer it); the property test renders `$` as `\z` for PCRE2 instead, which is what
/// DOLLAR_ENDONLY makes of it outside multiline mode.
#[derive(Debug, Clone, Copy, Default)]
struct PcreOptions {
    caseless: bool,
    dotall: bool,
    multiline: bool,
}

fn pcre(pattern: &str, o: PcreOptions) -> Result<pcre2::bytes::Regex, pcre2::Error> {
    pcre2::bytes::RegexBuilder::new()
        .caseless(o.caseless)
        .dotall(o.dotall)
        .multi_line(o.multiline)
        .build(pattern)
}

fn pcre_outcome(re: &pcre2::bytes::Regex, subject: &[u8], init: usize) -> Outcome {
    let mut locs = re.capture_locations();
    match re.captures_read_at(&mut locs, subject, init - 1) {
        Err(_) => Outcome::Limit,
        Ok(None) => Outcome::NoMatch,
        Ok(Some(m)) => Outcome::Match {
            start: m.start(),
            end: m.end(),
            groups: (1..locs.len()).map(|g| locs.get(g).map(|(s, e)| subject[s..e].to_vec())).collect(),
        },
    }
}

/// Debian's own libpcre2-8, loaded with `dlopen` when installed: on Debian 12 it is
/// PCRE2 10.42, the library Apache links, and it takes every option Apache passes
/// (DOLLAR_ENDONLY and DUPNAMES too, which the crate does not offer).
mod system_pcre {
    use super::Outcome;
    use std::ffi::{CStr, c_int, c_void};

    pub const CASELESS: u32 = 0x08;
    pub const DOLLAR_ENDONLY: u32 = 0x10;
    pub const DOTALL: u32 = 0x20;
    pub const DUPNAMES: u32 = 0x40;
    const INFO_CAPTURECOUNT: u32 = 4;
    const CONFIG_VERSION: u32 = 11;

    type Compile =
        unsafe extern "C" fn(*const u8, usize, u32, *mut c_int, *mut usize, *mut c_void) -> *mut c_void;
    type CreateMatchData = unsafe extern "C" fn(*const c_void, *mut c_void) -> *mut c_void;
    type Match =
        unsafe extern "C" fn(*const c_void, *const u8, usize, usize, u32, *mut c_void, *mut c_void) -> c_int;
    type Ovector = unsafe extern "C" fn(*mut c_void) -> *mut usize;
    type Free = unsafe extern "C" fn(*mut c_void);
    type Info = unsafe extern "C" fn(*const c_void, u32, *mut c_void) -> c_int;
    type Config = unsafe extern "C" fn(u32, *mut c_void) -> c_int;

    pub struct Lib {
        compile: Compile,
        create_match_data: CreateMatchData,
        matcher: Match,
        ovector: Ovector,
        free_match_data: Free,
        free_code: Free,
        info: Info,
        pub version: String,
    }

    pub struct Regex<'a> {
        lib: &'a Lib,
        code: *mut c_void,
        data: *mut c_void,
        pub groups: usize,
    }

    /// SAFETY: `T` must be the function pointer type the symbol has.
    unsafe fn symbol<T: Copy>(h: *mut c_void, name: &CStr) -> T {
        // SAFETY: a valid handle and C string; the caller vouches for `T`.
        unsafe {
            let p = libc::dlsym(h, name.as_ptr());
            assert!(!p.is_null(), "{name:?} missing");
            assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<*mut c_void>());
            std::mem::transmute_copy::<*mut c_void, T>(&p)
        }
    }

    impl Lib {
        pub fn open() -> Option<Lib> {
            // SAFETY: dlopen with a valid C string; each symbol gets the signature pcre2.h
            // declares for it.
            unsafe {
                let h = libc::dlopen(c"libpcre2-8.so.0".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
                if h.is_null() {
                    return None;
                }
                let config: Config = symbol(h, c"pcre2_config_8");
                let mut buf = [0u8; 64];
                config(CONFIG_VERSION, buf.as_mut_ptr().cast());
                let version = CStr::from_bytes_until_nul(&buf).ok()?.to_string_lossy().into_owned();
                Some(Lib {
                    compile: symbol(h, c"pcre2_compile_8"),
                    create_match_data: symbol(h, c"pcre2_match_data_create_from_pattern_8"),
                    matcher: symbol(h, c"pcre2_match_8"),
                    ovector: symbol(h, c"pcre2_get_ovector_pointer_8"),
                    free_match_data: symbol(h, c"pcre2_match_data_free_8"),
                    free_code: symbol(h, c"pcre2_code_free_8"),
                    info: symbol(h, c"pcre2_pattern_info_8"),
                    version,
                })
            }
        }

        pub fn compile(&self, pattern: &str, options: u32) -> Option<Regex<'_>> {
            let (mut code, mut offset) = (0, 0);
            // SAFETY: pattern pointer and length describe a live buffer; the results are
            // checked for null before use.
            unsafe {
                let re = (self.compile)(
                    pattern.as_ptr(),
                    pattern.len(),
                    options,
                    &mut code,
                    &mut offset,
                    std::ptr::null_mut(),
                );
                if re.is_null() {
                    return None;
                }
                let mut groups: u32 = 0;
                (self.info)(re, INFO_CAPTURECOUNT, (&raw mut groups).cast());
                let data = (self.create_match_data)(re, std::ptr::null_mut());
                Some(Regex { lib: self, code: re, data, groups: groups as usize })
            }
        }
    }

    impl Regex<'_> {
        pub fn outcome(&self, subject: &[u8], init: usize) -> Outcome {
            // A NUL-terminated copy, as Apache passes: 10.42 misbehaves on the dangling
            // pointer of an empty slice (`(?!.{3,})` with DOTALL then fails on "").
            let c_string = [subject, b"\0"].concat();
            // SAFETY: the match data was created for this pattern, so the ovector has
            // groups + 1 pairs.
            unsafe {
                let rc = (self.lib.matcher)(
                    self.code,
                    c_string.as_ptr(),
                    subject.len(),
                    init - 1,
                    0,
                    self.data,
                    std::ptr::null_mut(),
                );
                if rc == -1 {
                    return Outcome::NoMatch;
                }
                if rc < 0 {
                    return Outcome::Limit;
                }
                let ov = std::slice::from_raw_parts((self.lib.ovector)(self.data), 2 * (self.groups + 1));
                let group =
                    |g: usize| (ov[2 * g] != usize::MAX).then(|| subject[ov[2 * g]..ov[2 * g + 1]].to_vec());
                Outcome::Match { start: ov[0], end: ov[1], groups: (1..=self.groups).map(group).collect() }
            }
        }
    }

    impl Drop for Regex<'_> {
        fn drop(&mut self) {
            // SAFETY: both were allocated by this library and are freed once.
            unsafe {
                (self.lib.free_match_data)(self.data);
                (self.lib.free_code)(self.code);
            }
        }
    }
}

/// The PCRE2 a test compares with.
#[derive(Clone, Copy)]
enum Oracle<'a> {
    /// The `pcre2` crate's bundled PCRE2.
    Crate,
    /// The system's libpcre2-8 (Apache's on Debian 12), with Apache's exact options.
    System(&'a system_pcre::Lib),
}

enum OracleRegex<'a> {
    Crate(pcre2::bytes::Regex),
    System(system_pcre::Regex<'a>),
}

impl<'a> Oracle<'a> {
    /// `vm_text` is the pattern as compiled for the VM; `pcre_text` the same with `$`
    /// spelled `\z` where the crate has to stand in for DOLLAR_ENDONLY.
    fn compile(
        self,
        vm_text: &str,
        pcre_text: &str,
        caseless: bool,
        apache: bool,
    ) -> Option<OracleRegex<'a>> {
        match self {
            Oracle::Crate => pcre(pcre_text, PcreOptions { caseless, dotall: apache, multiline: false })
                .ok()
                .map(OracleRegex::Crate),
            Oracle::System(lib) => {
                let mut o = if caseless { system_pcre::CASELESS } else { 0 };
                if apache {
                    o |= system_pcre::DOTALL | system_pcre::DOLLAR_ENDONLY | system_pcre::DUPNAMES;
                }
                lib.compile(vm_text, o).map(OracleRegex::System)
            }
        }
    }
}

impl OracleRegex<'_> {
    fn groups(&self) -> usize {
        match self {
            OracleRegex::Crate(re) => re.captures_len() - 1,
            OracleRegex::System(re) => re.groups,
        }
    }

    fn outcome(&self, subject: &[u8], init: usize) -> Outcome {
        match self {
            OracleRegex::Crate(re) => pcre_outcome(re, subject, init),
            OracleRegex::System(re) => re.outcome(subject, init),
        }
    }
}

/// `lua5.4` and a folder holding `lighten_re.lua` (the copy compiled into the library).
struct Lua {
    exe: PathBuf,
    dir: tempfile::TempDir,
}

fn lua() -> Option<Lua> {
    let exe = PathBuf::from("/usr/bin/lua5.4");
    let found = if exe.exists() {
        Some(exe)
    } else {
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .map(|d| d.join("lua5.4"))
            .find(|p| p.exists())
    };
    let Some(exe) = found else {
        assert!(std::env::var_os("CI").is_none(), "lua5.4 is required in CI");
        eprintln!("skipped: lua5.4 not found");
        return None;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("lighten_re.lua"), LUA_MODULE).expect("write lighten_re.lua");
    Some(Lua { exe, dir })
}

/// One subject to run a program on.
struct Case {
    program: usize,
    subject: Vec<u8>,
    /// 1-based search start, as `re.exec` takes it.
    init: usize,
}

fn lua_string(bytes: &[u8]) -> String {
    let mut s = String::from("\"");
    for &b in bytes {
        let _ = write!(s, "\\{b:03}");
    }
    s.push('"');
    s
}

impl Lua {
    /// Runs every case in one `lua5.4` process.
    fn run(&self, programs: &[&Compiled], cases: &[Case]) -> Vec<Outcome> {
        let mut script = String::new();
        let module_dir = self.dir.path().display();
        let _ = writeln!(script, "package.path = \"{module_dir}/?.lua;\" .. package.path");
        // PCRE2's own default limit, as the oracle has it.
        script
            .push_str("local re = require \"lighten_re\"\nre.MATCH_LIMIT = 10000000\nlocal P, NG = {}, {}\n");
        for (k, p) in programs.iter().enumerate() {
            let _ = writeln!(script, "P[{}] = {}\nNG[{}] = {}", k + 1, p.program, k + 1, p.groups);
        }
        script.push_str("local C = {\n");
        for c in cases {
            let _ = writeln!(script, "{},{},{},", c.program + 1, lua_string(&c.subject), c.init);
        }
        script.push_str(
            r#"}
local out = {}
local function hex(x) return (x:gsub(".", function(c) return string.format("%02x", c:byte()) end)) end
for i = 1, #C, 3 do
  local prog = P[C[i]]
  local caps, err = re.exec(prog, C[i + 1], C[i + 2])
  if caps == nil then
    out[#out + 1] = "N"
  elseif caps == false and not err:find("LIMIT") then
    out[#out + 1] = "E"
  elseif caps == false then
    out[#out + 1] = "L"
  else
    local t = { "M", caps.s, caps.e, "=" .. hex(caps[0]) }
    for g = 1, NG[C[i]] do
      local v = caps[g]
      t[#t + 1] = v and ("=" .. hex(v)) or "-"
    end
    out[#out + 1] = table.concat(t, " ")
  end
end
io.write(table.concat(out, "\n"), "\n")
"#,
        );
        let path = self.dir.path().join("batch.lua");
        std::fs::write(&path, script).expect("write batch");
        let out = Command::new(&self.exe).arg(&path).output().expect("run lua5.4");
        assert!(out.status.success(), "lua5.4 failed: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).expect("ASCII output");
        let outcomes: Vec<Outcome> = text.lines().filter(|l| !l.is_empty()).map(parse_line).collect();
        assert_eq!(outcomes.len(), cases.len(), "one line per case");
        outcomes
    }
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}

fn parse_line(line: &str) -> Outcome {
    let mut words = line.split(' ');
    match words.next() {
        Some("N") => Outcome::NoMatch,
        Some("L") => Outcome::Limit,
        Some("E") => Outcome::Refused,
        Some("M") => {
            let s: usize = words.next().and_then(|w| w.parse().ok()).expect("start");
            let e: usize = words.next().and_then(|w| w.parse().ok()).expect("end");
            let _whole = words.next();
            let groups = words.map(|w| w.strip_prefix('=').map(unhex)).collect();
            Outcome::Match { start: s - 1, end: e, groups }
        }
        _ => panic!("bad line from lua: {line}"),
    }
}

fn show(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|&b| if (0x20..0x7f).contains(&b) { (b as char).to_string() } else { format!("\\x{b:02x}") })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Hand-written cases
// ---------------------------------------------------------------------------------------

const SUBJECTS: &[&[u8]] = &[
    b"",
    b"/",
    b"index.php",
    b"/index.php",
    b"index.phpx",
    b"wp-content/cache/supercache/example.com/2024/post/index.html",
    b"/.well-known/acme-challenge/token",
    b"/.WELL-KNOWN/security.txt",
    b"/.well-known/openid-configuration",
    b"style.css",
    b"app.MJS",
    b"img/logo.webp",
    b"model.tflite\n",
    b"build/x",
    b"config/lib",
    b"3rdparty/",
    b"a/b/",
    b"a//b",
    b"abc",
    b"x=1&v=2",
    b"v=1",
    b"x&v=",
    b"foo",
    b"foo/",
    b"foo/bar",
    b"xxy",
    b"xxxy",
    b"xxxxy",
    b"aa",
    b"abab",
    b"bb",
    b"/foo",
    b"x/foo",
    b"caf\xe9",
    b"CAF\xc9",
    b"line\n",
    b"line\nnext",
    b"\n",
];

/// Patterns from real configurations and the brief, each run on every subject with
/// PCRE2's defaults and Apache's options, caseless and not.
const HAND: &[&str] = &[
    r"^(.*)$",
    r"^index\.php$",
    r".",
    r"^wp-content/cache/supercache/(.*)",
    r"(?i)^/.well-known/(?!acme-challenge)",
    r"\.(css|js|mjs|svg|gif|png|jpg|webp|ico|wasm|tflite)$",
    r"^(?:build|tests|config|lib|3rdparty|templates)/.*",
    r"^(.+)/$",
    r"^.*[^/]$",
    r"^.*//.*$",
    r"(^|&)v=",
    r"^([^/]+)/?$",
    r"^/(.*)",
    r"x{2,3}?y",
    r"(a|b)\1",
    r"(?<=/)foo",
    r"caf\xe9",
    r"(?i)caf\xe9",
    r"[\xc9\xe9]",
    r"\w+",
    r"line$",
    r"line\Z",
    r"line\z",
    r"(?m)^next",
    r"(?s)line.next",
    r"line.next",
    r"(a)|b",
    r"(a)?(b)?",
    r"(a|ab)(c|bcd)?",
    r"^(a+)+$",
    r"(?>a+)b",
    r"a++b",
    r"(\w+?)(\w*)",
    r"(?<n>o)\k<n>",
    r"(?P<x>[ab])(?P=x)",
    r"\bfoo\b",
    r"\Bo",
    r"(?<!/)foo",
    r"(?=.*\.php)(.*)",
    r"^(?=b)a*b",
    r"[[:alpha:]]+",
    r"[[:^alpha:]]",
    r"\Qa.b\E|x",
    r"(?x) f o o  # comment",
    r"(a*)*b",
    r"(a|)*b",
    r"(?:x|y){2,}",
    r"^\G.",
    r"(a|b\1)+",
    r"(a)|\1",
    r"(a*)+b",
    r"(a|b)*?\1",
    r"((a)|b)+",
    r"^(?=(a))\1",
    r"(?!(x))a|(b)",
    r"(?<=(a))b|(?<!(a))b",
    r"\x41\101\o{102}\x{43}|\cA|\e|\0",
    r"(a)\10",
    r"[\Q]\E-]+",
    r"\R|\N+",
    r"(?x) a b # c",
    r"(?xx)[a b]+",
    r"(?i)[^a]b",
    r"(?U)(a+)(b?)",
    r"^(?:(a)|b)*$",
    r"(a){2}(b){0,1}",
    r"(?>(a|ab))(c?)",
    r"(a|ab)++b",
    r"[[:<:]]ab|b[[:>:]]",
    r"(?m)$\n?",
    r"a*(?#c)?b?",
    r"(?x)a+ +b | a* ? (b)",
    r"a{1,2}\E?",
];

/// Runs patterns over subjects through both matchers and panics on the first difference.
/// With the crate as oracle, Apache's DOLLAR_ENDONLY is covered by leaving out subjects
/// that end in a newline (the only ones where it makes a difference).
fn check_all(lua: &Lua, oracle: Oracle, cases: &[(&str, bool, bool)], subjects: &[&[u8]]) -> usize {
    let mut programs = Vec::new();
    let mut regexes = Vec::new();
    for &(pattern, caseless, apache) in cases {
        let options =
            if apache { Options::apache(caseless) } else { Options { caseless, ..Options::default() } };
        let compiled = luare::compile_with(pattern, &options)
            .unwrap_or_else(|e| panic!("{pattern:?} (apache={apache}) did not compile: {e}"));
        let re = oracle.compile(pattern, pattern, caseless, apache).expect("PCRE2 compiles it");
        programs.push(compiled);
        regexes.push((re, apache));
    }
    let mut batch = Vec::new();
    for (k, (_, apache)) in regexes.iter().enumerate() {
        for s in subjects {
            if *apache && matches!(oracle, Oracle::Crate) && s.last() == Some(&b'\n') {
                continue;
            }
            for init in [1, 2] {
                if init <= s.len() + 1 {
                    batch.push(Case { program: k, subject: s.to_vec(), init });
                }
            }
        }
    }
    let refs: Vec<&Compiled> = programs.iter().collect();
    let got = lua.run(&refs, &batch);
    for (case, got) in batch.iter().zip(&got) {
        let (re, apache) = &regexes[case.program];
        let want = re.outcome(&case.subject, case.init);
        let (pattern, caseless, _) = cases[case.program];
        assert_eq!(
            got,
            &want,
            "pattern {pattern:?} caseless={caseless} apache={apache} subject {:?} init {}\nprogram {}",
            show(&case.subject),
            case.init,
            programs[case.program].program
        );
    }
    batch.len()
}

/// The crate's PCRE2, and the system's when installed.
fn oracles(system: Option<&system_pcre::Lib>) -> Vec<(Oracle<'_>, String)> {
    let mut v = vec![(Oracle::Crate, "pcre2 crate".to_string())];
    if let Some(lib) = system {
        v.push((Oracle::System(lib), format!("system PCRE2 {}", lib.version)));
    }
    v
}

#[test]
fn hand_written_patterns_match_like_pcre2() {
    let Some(lua) = lua() else { return };
    let mut cases = Vec::new();
    for p in HAND {
        for caseless in [false, true] {
            for apache in [false, true] {
                cases.push((*p, caseless, apache));
            }
        }
    }
    let system = system_pcre::Lib::open();
    for (oracle, name) in oracles(system.as_ref()) {
        let n = check_all(&lua, oracle, &cases, SUBJECTS);
        eprintln!("hand-written ({name}): {} patterns x options, {n} cases agree", cases.len());
    }
}

/// The documented edge cases, as explicit expectations (not only "same as PCRE2").
#[test]
fn dollar_and_dot_follow_the_options() {
    let Some(lua) = lua() else { return };
    let default = luare::compile("^line$", false).expect("compiles");
    let apache = luare::compile_with("^line$", &Options::apache(false)).expect("compiles");
    let dot_default = luare::compile("^a.b$", false).expect("compiles");
    let dot_apache = luare::compile_with("^a.b$", &Options::apache(false)).expect("compiles");
    let programs = [&default, &apache, &dot_default, &dot_apache];
    let cases = [
        Case { program: 0, subject: b"line\n".to_vec(), init: 1 },
        Case { program: 1, subject: b"line\n".to_vec(), init: 1 },
        Case { program: 2, subject: b"a\nb".to_vec(), init: 1 },
        Case { program: 3, subject: b"a\nb".to_vec(), init: 1 },
    ];
    let got = lua.run(&programs, &cases);
    assert_eq!(got[0], Outcome::Match { start: 0, end: 4, groups: vec![] }, "$ before a final newline");
    assert_eq!(got[1], Outcome::NoMatch, "DOLLAR_ENDONLY");
    assert_eq!(got[2], Outcome::NoMatch, ". stops at newline");
    assert_eq!(got[3], Outcome::Match { start: 0, end: 3, groups: vec![] }, "DOTALL");
}

/// A pattern that backtracks without end stops at lighten_re's match limit, as an error
/// (`false`), never as "no match"; the limit keeps a hostile subject cheap.
#[test]
fn running_out_of_budget_is_an_error_not_a_mismatch() {
    let Some(lua) = lua() else { return };
    let script = format!(
        r#"package.path = "{dir}/?.lua;" .. package.path
local re = require "lighten_re"
local P = {nested}
local t = os.clock()
print(re.exec(P, string.rep("a", 40) .. "!"))
print(pcall(re.match, P, string.rep("a", 40) .. "!"))
print(os.clock() - t < 1)
print(re.exec({alternation}, string.rep("ab", 1000)).e)
"#,
        dir = lua.dir.path().display(),
        nested = luare::compile("^(a+)+$", false).expect("compiles").program,
        alternation = luare::compile("(a|b)*", false).expect("compiles").program,
    );
    let path = lua.dir.path().join("limit.lua");
    std::fs::write(&path, script).expect("write");
    let out = Command::new(&lua.exe).arg(&path).output().expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.first().copied(),
        Some("false\tPCRE2: error PCRE2_ERROR_MATCHLIMIT"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(lines[1].starts_with("false\t") && lines[1].contains("MATCHLIMIT"), "{text}");
    assert_eq!(lines[2], "true", "two limited searches took a second or more: {text}");
    assert_eq!(lines[3], "2000", "{text}");
}

/// Each pattern is compiled by PCRE2 once, on first use, and kept in its table (the site
/// data lives as long as mod_magnet's Lua state).
#[test]
fn patterns_are_compiled_once() {
    let Some(lua) = lua() else { return };
    let program = luare::compile(r"^/(\w+)", false).expect("compiles").program;
    let script = format!(
        r#"package.path = "{dir}/?.lua;" .. package.path
local re = require "lighten_re"
local P = {program}
local a = re.exec(P, "/abc")[1]
local first = P.rx
local b = re.exec(P, "/xyz")[1]
print(a, b, first ~= nil and P.rx == first)
"#,
        dir = lua.dir.path().display(),
    );
    let path = lua.dir.path().join("cache.lua");
    std::fs::write(&path, script).expect("write");
    let out = Command::new(&lua.exe).arg(&path).output().expect("run");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "abc\txyz\ttrue\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

// ---------------------------------------------------------------------------------------
// Property test: random patterns over a small alphabet
// ---------------------------------------------------------------------------------------

/// A pattern as the generator builds it, printed twice: for the VM and for PCRE2.
#[derive(Debug, Clone)]
enum Pat {
    Atom(&'static str),
    /// `$`, which is `\z` for PCRE2 when the case uses Apache's options.
    Dollar,
    Concat(Vec<Pat>),
    Alt(Vec<Pat>),
    /// An opener such as `(?:`; `(?<N>` gets a fresh name `n0`, `n1`, ...
    Group(&'static str, Box<Pat>),
    Repeat(Box<Pat>, &'static str, &'static str),
}

fn render(p: &Pat, for_pcre: bool, apache: bool, names: &mut usize, out: &mut String) {
    match p {
        Pat::Atom(a) if apache && (*a == "(?m)" || *a == "(?-m)") => out.push_str("(?s)"),
        Pat::Atom(a) => out.push_str(a),
        Pat::Dollar => out.push_str(if for_pcre && apache { r"\z" } else { "$" }),
        Pat::Concat(v) => v.iter().for_each(|x| render(x, for_pcre, apache, names, out)),
        Pat::Alt(v) => {
            for (k, x) in v.iter().enumerate() {
                if k > 0 {
                    out.push('|');
                }
                render(x, for_pcre, apache, names, out);
            }
        }
        Pat::Group(open, body) => {
            if *open == "(?<N>" {
                let _ = write!(out, "(?<n{names}>");
                *names += 1;
            } else {
                out.push_str(open);
            }
            render(body, for_pcre, apache, names, out);
            out.push(')');
        }
        Pat::Repeat(inner, q, suffix) => {
            let atomic = matches!(**inner, Pat::Atom(_) | Pat::Group(..) | Pat::Dollar);
            if !atomic {
                out.push_str("(?:");
            }
            render(inner, for_pcre, apache, names, out);
            if !atomic {
                out.push(')');
            }
            out.push_str(q);
            out.push_str(suffix);
        }
    }
}

fn one_byte() -> impl Strategy<Value = Pat> {
    prop_oneof![
        8 => prop::sample::select(vec!["a", "b", "A", "B", "/", r"\.", "-", "1", "_", " ", r"\n", r"\xe9", r"\xC9", "é"]),
        3 => prop::sample::select(vec![
            r"\d", r"\D", r"\w", r"\W", r"\s", r"\S", r"\h", r"\H", r"\v", r"\V", r"\N", r"\x41", r"\101",
            r"\x{62}", r"\o{142}", r"\cJ", ".", r"\R",
        ]),
        3 => prop::sample::select(vec![
            "[ab]", "[^a]", "[a-c]", "[^/]", "[[:alpha:]]", "[[:^lower:]]", r"[\d_]", r"[\xe9A]", "[]a]", "[a-]",
            r"[^\n]", "[.]", "[[:upper:]b]", r"[\w.-]", "[^]b]", r"[\Qa-\E]", r"[\s\x00-\x1f]", "[[:punct:]]",
            r"[^\W_]", r"[A-b]",
        ]),
    ]
    .prop_map(Pat::Atom)
}

fn leaf() -> impl Strategy<Value = Pat> {
    prop_oneof![
        12 => one_byte(),
        2 => prop::sample::select(vec!["^", r"\A", r"\z", r"\Z", r"\b", r"\B", r"\G"]).prop_map(Pat::Atom),
        1 => Just(Pat::Dollar),
        1 => prop::sample::select(vec!["(?i)", "(?-i)", "(?s)", "(?-s)", "(?m)", "(?-m)", "(?U)", "(?^)", "(?x)", "(?n)"])
            .prop_map(Pat::Atom),
        1 => prop::sample::select(vec!["", r"\Q.a\E", r"\E", "(?#c)", "#", r"\Qb"]).prop_map(Pat::Atom),
        1 => prop::sample::select(vec![r"\1", r"\2", r"\g{-1}", r"\k<n0>", "(?P=n1)", r"\g1"]).prop_map(Pat::Atom),
    ]
}

/// Bodies for lookbehind branches: fixed length, as PCRE2 10.42 requires.
fn fixed_branch() -> impl Strategy<Value = Pat> {
    prop::collection::vec(
        prop_oneof![8 => one_byte(), 1 => Just(Pat::Atom(r"\b")), 1 => Just(Pat::Atom("^"))],
        0..3,
    )
    .prop_map(Pat::Concat)
}

fn pattern() -> impl Strategy<Value = Pat> {
    leaf().prop_recursive(4, 20, 4, |inner| {
        prop_oneof![
            4 => prop::collection::vec(inner.clone(), 1..4).prop_map(Pat::Concat),
            2 => prop::collection::vec(inner.clone(), 2..4).prop_map(Pat::Alt),
            3 => (
                prop::sample::select(vec!["(", "(", "(?:", "(?>", "(?=", "(?!", "(?<N>", "(?i:", "(?-i:"]),
                inner.clone()
            )
                .prop_map(|(o, b)| Pat::Group(o, Box::new(b))),
            3 => (
                inner.clone(),
                prop::sample::select(vec!["*", "*", "+", "+", "?", "{2}", "{0,2}", "{1,3}", "{2,}", "{0}", "{1}", "{3,}"]),
                prop::sample::select(vec!["", "", "", "?", "+"])
            )
                .prop_map(|(p, q, s)| Pat::Repeat(Box::new(p), q, s)),
            1 => (
                prop::sample::select(vec!["(?<=", "(?<!"]),
                prop::collection::vec(fixed_branch(), 1..3)
            )
                .prop_map(|(o, b)| Pat::Group(o, Box::new(Pat::Alt(b)))),
        ]
    })
}

/// Whole patterns: sometimes led by a zero-width item, where PCRE2's start-of-match
/// optimisations (first code unit, start bits, required byte) are most fragile.
fn top() -> impl Strategy<Value = Pat> {
    prop_oneof![
        4 => pattern(),
        1 => (
            prop::sample::select(vec![
                "(?=a|b)", "(?=[ab])", r"\b", "(?!a)", "(?<=a)", "(?=.*b)", "(?=a*)", "(?i)(?=[a_])",
            ]),
            pattern()
        )
            .prop_map(|(prefix, p)| Pat::Concat(vec![Pat::Atom(prefix), p])),
    ]
}

fn subject() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop::sample::select(vec![
            b'a', b'a', b'b', b'b', b'A', b'B', b'/', b'.', b'\n', 0xe9, 0xc9, b'-', b'1', b'_', b' ', 0xc3,
        ]),
        0..14,
    )
}

#[derive(Debug, Clone)]
struct Generated {
    pattern: Pat,
    caseless: bool,
    apache: bool,
    subjects: Vec<(Vec<u8>, usize)>,
}

fn generated() -> impl Strategy<Value = Generated> {
    (
        top(),
        any::<bool>(),
        prop::bool::weighted(0.3),
        prop::collection::vec((subject(), prop::sample::select(vec![1usize, 1, 1, 1, 2, 3])), 6),
    )
        .prop_map(|(pattern, caseless, apache, subjects)| Generated {
            pattern,
            caseless,
            apache,
            subjects,
        })
}

#[derive(Default)]
struct Tally {
    patterns: AtomicUsize,
    rejected_by_pcre: AtomicUsize,
    unsupported: AtomicUsize,
    compared: AtomicUsize,
    matched: AtomicUsize,
    limit: AtomicUsize,
    /// Accepted by the pcre2 crate (a newer PCRE2), refused by the system's at run time.
    refused_by_system: AtomicUsize,
    /// Answers where the system's PCRE2 agrees with lighten_re and the crate's does not.
    version_differences: AtomicUsize,
    reasons: std::sync::Mutex<std::collections::BTreeMap<String, usize>>,
}

/// `system`, with the crate as the oracle: the system's PCRE2, which lighten_re runs, to
/// tell a difference between the two PCRE2 versions (not lighten's) from a wrong answer.
fn check_generated(
    lua: &Lua,
    oracle: Oracle,
    system: Option<&system_pcre::Lib>,
    batch: &[Generated],
    tally: &Tally,
) -> Result<(), TestCaseError> {
    let mut programs = Vec::new();
    let mut meta = Vec::new();
    let mut cases = Vec::new();
    for g in batch {
        tally.patterns.fetch_add(1, Ordering::Relaxed);
        let (mut vm_text, mut pcre_text) = (String::new(), String::new());
        render(&g.pattern, false, g.apache, &mut 0, &mut vm_text);
        render(&g.pattern, true, g.apache, &mut 0, &mut pcre_text);
        let options = if g.apache {
            Options::apache(g.caseless)
        } else {
            Options { caseless: g.caseless, ..Options::default() }
        };
        let ours = luare::compile_with(&vm_text, &options);
        let Some(re) = oracle.compile(&vm_text, &pcre_text, g.caseless, g.apache) else {
            match ours {
                // The system's PCRE2 refuses what the crate's accepted: lighten_re must
                // refuse it at run time (fail closed), whatever the subject.
                Ok(c) if matches!(oracle, Oracle::System(_)) => {
                    let got = lua.run(&[&c], &[Case { program: 0, subject: b"a".to_vec(), init: 1 }]);
                    prop_assert_eq!(
                        &got[0],
                        &Outcome::Refused,
                        "{:?} runs in Lua, the system PCRE2 refuses it",
                        vm_text
                    );
                    tally.refused_by_system.fetch_add(1, Ordering::Relaxed);
                }
                Ok(_) => prop_assert!(false, "PCRE2 rejects {vm_text:?} but compile() accepted it"),
                Err(_) => {
                    tally.rejected_by_pcre.fetch_add(1, Ordering::Relaxed);
                }
            }
            continue;
        };
        let compiled = match ours {
            Ok(c) => c,
            Err(e) => {
                if matches!(oracle, Oracle::Crate) {
                    prop_assert!(
                        !e.reason.starts_with("PCRE2") && !e.reason.starts_with("internal"),
                        "{vm_text:?}: {e}"
                    );
                }
                tally.unsupported.fetch_add(1, Ordering::Relaxed);
                *tally.reasons.lock().expect("tally").entry(e.reason).or_default() += 1;
                continue;
            }
        };
        prop_assert_eq!(compiled.groups, re.groups(), "group count of {:?}", vm_text);
        for (subject, init) in &g.subjects {
            if *init <= subject.len() + 1 {
                cases.push(Case { program: programs.len(), subject: subject.clone(), init: *init });
            }
        }
        programs.push(compiled);
        meta.push((vm_text, g.caseless, g.apache, re));
    }
    let refs: Vec<&Compiled> = programs.iter().collect();
    let got = lua.run(&refs, &cases);
    for (case, got) in cases.iter().zip(got) {
        let (text, caseless, apache, re) = &meta[case.program];
        let want = re.outcome(&case.subject, case.init);
        if got == Outcome::Refused && matches!(oracle, Oracle::Crate) {
            // A pattern only the crate's newer PCRE2 accepts (the random_*_system_pcre2
            // test holds these to the system's verdict).
            tally.refused_by_system.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        if got == Outcome::Limit || want == Outcome::Limit {
            tally.limit.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        if got != want
            && matches!(oracle, Oracle::Crate)
            && let Some(lib) = system
            && Oracle::System(lib)
                .compile(text, text, *caseless, *apache)
                .is_some_and(|r| r.outcome(&case.subject, case.init) == got)
        {
            // PCRE2 10.42 (Apache's, lighten_re's) and the crate's newer one disagree.
            tally.version_differences.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        tally.compared.fetch_add(1, Ordering::Relaxed);
        if want != Outcome::NoMatch {
            tally.matched.fetch_add(1, Ordering::Relaxed);
        }
        if got != want && std::env::var_os("LUARE_KEEP_GOING").is_some() {
            // For investigating a batch of differences at once.
            eprintln!(
                "DIFF {text:?} caseless={caseless} apache={apache} {:?} init {}: lua {got:?} pcre {want:?}",
                show(&case.subject),
                case.init
            );
            continue;
        }
        prop_assert_eq!(
            &got,
            &want,
            "pattern {:?} caseless={} apache={} subject {:?} init {}\nprogram {}",
            text,
            caseless,
            apache,
            show(&case.subject),
            case.init,
            programs[case.program].program
        );
    }
    Ok(())
}

/// Runs the property test against `oracle` and prints what it covered.
fn run_random(lua: &Lua, oracle: Oracle, system: Option<&system_pcre::Lib>, name: &str) {
    let tally = Tally::default();
    // LUARE_CASES=n runs n batches instead (for longer local runs).
    let cases = std::env::var("LUARE_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(48);
    let config = Config { cases, max_shrink_iters: 400, failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new(config);
    let result = runner.run(&prop::collection::vec(generated(), 64), |batch| {
        check_generated(lua, oracle, system, &batch, &tally)
    });
    let n = |a: &AtomicUsize| a.load(Ordering::Relaxed);
    let accepted = n(&tally.patterns) - n(&tally.rejected_by_pcre);
    eprintln!(
        "{name}: {} patterns ({} refused by PCRE2 and by compile, {} unsupported), {} subject cases compared \
         ({} matched), {} hit a step limit, {} refused by the system PCRE2 only, {} answered as the \
         system PCRE2 answers where the crate's differs",
        n(&tally.patterns),
        n(&tally.rejected_by_pcre),
        n(&tally.unsupported),
        n(&tally.compared),
        n(&tally.matched),
        n(&tally.limit),
        n(&tally.refused_by_system),
        n(&tally.version_differences)
    );
    for (reason, count) in tally.reasons.lock().expect("tally").iter() {
        eprintln!("  unsupported {count:>5}: {reason}");
    }
    match result {
        Ok(()) => {}
        // The batch itself is long and says less than the message, which names the case.
        Err(TestError::Fail(reason, _)) => panic!("{reason}"),
        Err(TestError::Abort(reason)) => panic!("{reason}"),
    }
    assert!(n(&tally.unsupported) * 100 <= accepted * 5, "more than 5% of PCRE2-valid patterns unsupported");
    assert!(n(&tally.limit) * 1000 <= n(&tally.compared), "too many step-limit cases");
}

#[test]
fn random_patterns_match_like_pcre2() {
    let Some(lua) = lua() else { return };
    let system = system_pcre::Lib::open();
    run_random(&lua, Oracle::Crate, system.as_ref(), "random (pcre2 crate)");
}

/// The same against the system's libpcre2-8 with Apache's exact options: on Debian 12
/// that is 10.42, the PCRE2 Apache runs, where the crate bundles a newer one.
#[test]
fn random_patterns_match_like_the_system_pcre2() {
    let Some(lua) = lua() else { return };
    let Some(lib) = system_pcre::Lib::open() else {
        eprintln!("skipped: libpcre2-8.so.0 not installed");
        return;
    };
    run_random(&lua, Oracle::System(&lib), None, &format!("random (system PCRE2 {})", lib.version));
}

// ---------------------------------------------------------------------------------------
// Every regex in the fixtures
// ---------------------------------------------------------------------------------------

/// Fixture patterns that `compile` refuses, with the reason it gives.
const UNSUPPORTED_IN_FIXTURES: &[(&str, &str)] = &[];

/// Splits a directive's arguments like `ap_getword_conf`: quotes group, `\"` is a quote.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= b.len() {
            break;
        }
        let mut w = Vec::new();
        if b[i] == b'"' || b[i] == b'\'' {
            let q = b[i];
            i += 1;
            while i < b.len() && b[i] != q {
                if b[i] == b'\\' && i + 1 < b.len() && b[i + 1] == q {
                    i += 1;
                }
                w.push(b[i]);
                i += 1;
            }
            i += 1;
        } else {
            while i < b.len() && !b[i].is_ascii_whitespace() {
                w.push(b[i]);
                i += 1;
            }
        }
        out.push(String::from_utf8_lossy(&w).into_owned());
    }
    out
}

/// (pattern, caseless) for every regex argument of the directives that take one.
fn fixture_patterns(root: &Path) -> Vec<(String, bool)> {
    let mut found = Vec::new();
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == ".htaccess")
                || p.extension().is_some_and(|x| x == "conf")
            {
                files.push(p);
            }
        }
    }
    files.sort();
    for f in files {
        let Ok(bytes) = std::fs::read(&f) else { continue };
        for line in String::from_utf8_lossy(&bytes).lines() {
            let w = words(line.trim());
            let Some(directive) = w.first() else { continue };
            let flags =
                w.last().filter(|l| l.starts_with('[')).map(|l| l.to_ascii_lowercase()).unwrap_or_default();
            let nocase = flags.contains("nc") || flags.contains("nocase");
            let regex = |s: &str| s.strip_prefix('!').unwrap_or(s).to_string();
            match directive.to_ascii_lowercase().as_str() {
                "rewriterule" if w.len() >= 3 => found.push((regex(&w[1]), nocase)),
                "rewritecond" if w.len() >= 3 && w[1] != "expr" => {
                    let p = regex(&w[2]);
                    let test = p.starts_with('-') && p.len() >= 2 && p.as_bytes()[1].is_ascii_alphabetic();
                    let compare = p.starts_with('=') || p.starts_with('<') || p.starts_with('>');
                    if !test && !compare {
                        found.push((p, nocase));
                    }
                }
                "<filesmatch" | "<locationmatch" | "<directorymatch" if w.len() >= 2 => {
                    found.push((w[1].trim_end_matches('>').to_string(), false));
                }
                "<files" | "<location" | "<directory" if w.len() >= 3 && w[1] == "~" => {
                    found.push((w[2].trim_end_matches('>').to_string(), false));
                }
                "redirectmatch" if w.len() >= 3 => {
                    let status = w[1].chars().all(|c| c.is_ascii_digit())
                        || ["permanent", "temp", "seeother", "gone"]
                            .contains(&w[1].to_ascii_lowercase().as_str());
                    found.push((w[if status { 2 } else { 1 }].clone(), false));
                }
                "aliasmatch" | "scriptaliasmatch" | "browsermatch" if w.len() >= 2 => {
                    found.push((w[1].clone(), false))
                }
                "browsermatchnocase" if w.len() >= 2 => found.push((w[1].clone(), true)),
                "setenvif" if w.len() >= 3 => found.push((w[2].clone(), false)),
                "setenvifnocase" if w.len() >= 3 => found.push((w[2].clone(), true)),
                _ => {}
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

/// Subjects for the corpus: every request target of the fixtures (with and without the
/// leading slash, path and query apart) and values other conditions test.
fn corpus_subjects(root: &Path) -> Vec<Vec<u8>> {
    let mut subjects: Vec<Vec<u8>> = [
        "",
        "on",
        "off",
        "gzip, deflate, br",
        "br",
        "POST",
        "GET",
        "TRACE",
        "www.example.com",
        "WWW.BLOG.EXAMPLE",
        "example.com:8080",
        "wordpress_logged_in_123=x; foo=bar",
        "Mozilla/5.0 (X11; Linux x86_64)",
        "MSIE 6.0",
        "DavClnt",
        "v=1",
        "a=1&v=2",
        "GLOBALS=1",
        "_REQUEST[x]",
        "base64_encode(x)",
        "<script>",
        "%3Cscript%3E",
        "/.well-known/acme-challenge/t",
        "/.well-known/carddav",
        "/index.php/x",
        "style.CSS",
        "a//b",
        "x/",
        "/core/img/favicon.ico",
        "/mail/config-v1.1.xml",
        "/autodiscover/autodiscover.xml",
        "/a/b::b",
        "caf\u{e9}",
        "/.htaccess",
        "/.git/config",
        "file.php~",
        "x.bak",
        "wp-admin/",
        "TXT",
        "lucky13",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    subjects.push(b"caf\xe9/\xc9".to_vec());
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "requests.txt") {
                for line in std::fs::read_to_string(&p).unwrap_or_default().lines() {
                    let Some(target) = line.split_whitespace().nth(1) else { continue };
                    if line.starts_with('#') {
                        continue;
                    }
                    let (path, query) = target.split_once('?').unwrap_or((target, ""));
                    for s in [target, path, path.trim_start_matches('/'), query] {
                        subjects.push(s.as_bytes().to_vec());
                    }
                }
            }
        }
    }
    subjects.sort();
    subjects.dedup();
    subjects
}

#[test]
fn fixture_regexes_compile_and_match_like_pcre2() {
    let Some(lua) = lua() else { return };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let patterns = fixture_patterns(&root);
    let subjects = corpus_subjects(&root);
    assert!(patterns.len() > 50, "found only {} patterns", patterns.len());
    let mut programs = Vec::new();
    let mut compiled = Vec::new();
    let mut refused = Vec::new();
    for (pattern, nocase) in &patterns {
        if pcre(pattern, PcreOptions { caseless: *nocase, ..PcreOptions::default() }).is_err() {
            // Not a valid regex for Apache either (the diagnostics fixtures hold some).
            assert!(luare::compile(pattern, *nocase).is_err(), "{pattern:?}");
            refused.push((pattern.clone(), "refused by PCRE2".to_string()));
            continue;
        }
        for apache in [false, true] {
            let options = if apache {
                Options::apache(*nocase)
            } else {
                Options { caseless: *nocase, ..Options::default() }
            };
            // With Apache's options the program carries its fast path, as the
            // conversion emits it: the Lua fast paths are checked here too.
            match luare::compile_with(pattern, &options) {
                Ok(c) => {
                    programs.push(if apache { luare::fast::attach(pattern, &options, c) } else { c });
                    compiled.push((pattern.clone(), *nocase, apache));
                }
                Err(e) if !apache => refused.push((pattern.clone(), e.reason.clone())),
                Err(_) => {}
            }
        }
    }
    let mut cases = Vec::new();
    for k in 0..compiled.len() {
        for s in &subjects {
            cases.push(Case { program: k, subject: s.clone(), init: 1 });
            cases.push(Case { program: k, subject: [s.as_slice(), b"\n"].concat(), init: 1 });
        }
    }
    let refs: Vec<&Compiled> = programs.iter().collect();
    let got = lua.run(&refs, &cases);
    let system = system_pcre::Lib::open();
    for (oracle, name) in oracles(system.as_ref()) {
        let regexes: Vec<OracleRegex> = compiled
            .iter()
            .map(|(p, nocase, apache)| oracle.compile(p, p, *nocase, *apache).expect("PCRE2 compiles it"))
            .collect();
        let (mut compared, mut matched) = (0, 0);
        for (case, got) in cases.iter().zip(&got) {
            let (pattern, nocase, apache) = &compiled[case.program];
            if *apache && matches!(oracle, Oracle::Crate) && case.subject.last() == Some(&b'\n') {
                continue; // the crate cannot set DOLLAR_ENDONLY
            }
            let want = regexes[case.program].outcome(&case.subject, 1);
            compared += 1;
            if want != Outcome::NoMatch {
                matched += 1;
            }
            assert_eq!(
                got,
                &want,
                "fixture pattern {pattern:?} nocase={nocase} apache={apache} subject {:?} ({name})",
                show(&case.subject)
            );
        }
        eprintln!(
            "fixtures ({name}): {} distinct patterns, {} compiled (x2 option sets), {compared} cases \
             ({matched} matches) agree",
            patterns.len(),
            patterns.len() - refused.len(),
        );
    }
    for (p, reason) in &refused {
        eprintln!("  not compiled: {p:?}: {reason}");
    }
    let expected: Vec<(String, String)> =
        UNSUPPORTED_IN_FIXTURES.iter().map(|(p, r)| (p.to_string(), r.to_string())).collect();
    let unsupported: Vec<(String, String)> =
        refused.into_iter().filter(|(_, r)| r != "refused by PCRE2").collect();
    assert_eq!(unsupported, expected, "fixture patterns compile() refuses");
}

// ---------------------------------------------------------------------------------------
// Speed
// ---------------------------------------------------------------------------------------

/// Prints matches per second in lua5.4 for two typical patterns; fails only if the VM is
/// absurdly slow (a per-request matcher must not be).
#[test]
fn matching_is_fast_enough_for_per_request_use() {
    let Some(lua) = lua() else { return };
    // (name, pattern, [NC], subject): 30-byte subjects, as a request path would be.
    let cases = [
        ("^(.*)$", "^(.*)$", false, "/wp-content/uploads/2024/a.jpg"),
        ("wpsc", "^wp-content/cache/supercache/(.*)", false, "wp-content/cache/supercache/ab"),
        (
            "wpsc-deep",
            r"^wp-content/cache/supercache/([^/]+)/(.*)/index\.html$",
            false,
            "wp-content/cache/supercache/example.com/2024/post/index.html",
        ),
        (
            "ext [NC]",
            r"\.(css|js|mjs|svg|gif|png|jpg|webp|ico|wasm|tflite)$",
            true,
            "/wp-content/themes/tw/style.CSS",
        ),
        (
            "no match",
            r"^(?:build|tests|config|lib|3rdparty|templates)/.*",
            false,
            "/wp-content/uploads/2024/a.jpg",
        ),
    ];
    let mut script = format!(
        r#"package.path = "{dir}/?.lua;" .. package.path
local re = require "lighten_re"
local function bench(name, prog, s)
  local n = 200000
  local t = os.clock()
  for _ = 1, n do re.exec(prog, s) end
  local dt = os.clock() - t
  print(string.format("%d %d %s", math.floor(n / dt), #s, name))
end
"#,
        dir = lua.dir.path().display(),
    );
    for (name, pattern, nocase, subject) in cases {
        let program = luare::compile_with(pattern, &Options::apache(nocase)).expect("compiles").program;
        let _ = writeln!(script, "bench({name:?}, {program}, {subject:?})");
    }
    let path = lua.dir.path().join("bench.lua");
    std::fs::write(&path, script).expect("write");
    let out = Command::new(&lua.exe).arg(&path).output().expect("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let mut words = line.splitn(3, ' ');
        let rate: u64 = words.next().and_then(|w| w.parse().ok()).expect("rate");
        let len = words.next().expect("length");
        let name = words.next().expect("name");
        eprintln!("lua5.4: {name} on {len} bytes: {rate} matches/s");
        assert!(rate > 20_000, "{name}: only {rate} matches/s");
    }
}
