//! Tests as data: expressions against a small request, parse errors with offsets, and
//! printing round trips.

use super::*;
use proptest::prelude::*;
use std::collections::HashMap;

/// A request: variables, request headers, environment, and a few files. Functions and
/// tests it does not know answer `None`, as a real context's unsupported ones do.
#[derive(Default)]
struct Request {
    vars: HashMap<String, String>,
    headers: Vec<(String, String)>,
    env: HashMap<String, String>,
    files: Vec<String>,
    dirs: Vec<String>,
}

impl Request {
    fn new() -> Request {
        let mut r = Request::default();
        for (k, v) in [
            ("REQUEST_URI", "/user/bob/login"),
            ("REQUEST_METHOD", "POST"),
            ("QUERY_STRING", "a=1&p=2"),
            ("HTTP_HOST", "example.com"),
            ("HTTPS", "off"),
            ("REMOTE_ADDR", "10.1.2.3"),
            ("REQUEST_FILENAME", "/srv/www/index.php"),
            ("SERVER_PORT", "80"),
        ] {
            r.vars.insert(k.to_string(), v.to_string());
        }
        r.headers.push(("Accept-Encoding".to_string(), "gzip, deflate".to_string()));
        r.headers.push(("User-Agent".to_string(), "Mozilla/5.0".to_string()));
        r.env.insert("HAVE_X".to_string(), "1".to_string());
        r.files.push("/srv/www/index.php".to_string());
        r.dirs.push("/srv/www".to_string());
        r
    }

    fn with(mut self, name: &str, value: &str) -> Request {
        self.vars.insert(name.to_string(), value.to_string());
        self
    }
}

impl Context for Request {
    fn var(&mut self, name: &str) -> String {
        self.vars.get(name).cloned().unwrap_or_default()
    }

    fn func(&mut self, name: &str, arg: &str) -> Option<String> {
        match name {
            "req" | "http" => Some(
                self.headers
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(arg))
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default(),
            ),
            "reqenv" | "env" => Some(self.env.get(arg).cloned().unwrap_or_default()),
            _ => None,
        }
    }

    fn file_test(&mut self, op: char, path: &str) -> Option<bool> {
        let file = self.files.iter().any(|f| f == path);
        let dir = self.dirs.iter().any(|d| d == path);
        match op {
            'f' => Some(file),
            'd' => Some(dir),
            'e' => Some(file || dir),
            _ => None,
        }
    }

    fn list_func(&mut self, name: &str, arg: &str) -> Option<Vec<String>> {
        (name == "peerextlist").then(|| vec![arg.to_uppercase(), "X".to_string()])
    }
}

fn eval_in(src: &str, cx: &mut Request) -> Value {
    match parse(src) {
        Ok(e) => e.eval(cx),
        Err(e) => panic!("{src:?} does not parse: {} at {}", e.message, e.offset),
    }
}

/// Each case: expression, expected value (`?` for unknown).
fn check(cases: &[(&str, &str)]) {
    for (src, want) in cases {
        let got = eval_in(src, &mut Request::new());
        let got = match got {
            Value::True => "true",
            Value::False => "false",
            Value::Unknown(_) => "?",
        };
        assert_eq!(got, *want, "{src}");
    }
}

/// Each case: expression, byte offset, a piece of the message.
fn check_errors(cases: &[(&str, usize, &str)]) {
    for (src, offset, msg) in cases {
        match parse(src) {
            Ok(e) => panic!("{src:?} parsed as {e}"),
            Err(e) => {
                assert!(e.message.contains(msg), "{src:?}: message {:?} lacks {msg:?}", e.message);
                assert_eq!(e.offset, *offset, "{src:?}: {}", e.message);
            }
        }
    }
}

/// Each case: expression, canonical print.
fn check_print(cases: &[(&str, &str)]) {
    for (src, want) in cases {
        let printed = parse(src).unwrap_or_else(|e| panic!("{src:?}: {}", e.message)).to_string();
        assert_eq!(printed, *want, "{src}");
        let again = parse(&printed).unwrap_or_else(|e| panic!("{printed:?}: {}", e.message)).to_string();
        assert_eq!(again, printed, "reprint of {src}");
    }
}

#[test]
fn constants_and_logic() {
    check(&[
        ("true", "true"),
        ("false", "false"),
        ("!true", "false"),
        ("not false", "true"),
        ("true && false", "false"),
        ("true and true", "true"),
        ("false || true", "true"),
        ("false or false", "false"),
        ("(false)", "false"),
        ("!!true", "true"),
    ]);
}

#[test]
fn precedence() {
    check(&[
        // `&&` binds tighter than `||`: true || (false && false).
        ("true || false && false", "true"),
        ("false && false || true", "true"),
        ("(true || false) && false", "false"),
        // `!` binds tighter than `&&` and `||`.
        ("!false && false", "false"),
        ("!true || true", "true"),
        ("!(true || true)", "false"),
        // ...but a comparison is one unit: !(%{HTTPS} == 'on').
        ("!%{HTTPS} == 'on'", "true"),
    ]);
}

#[test]
fn string_comparisons() {
    check(&[
        ("%{HTTP_HOST} == 'example.com'", "true"),
        ("%{HTTP_HOST} = \"example.com\"", "true"),
        ("%{HTTP_HOST} != 'example.com'", "false"),
        ("'abc' < 'abd'", "true"),
        ("'abc' <= 'abc'", "true"),
        ("'b' > 'abc'", "true"),
        ("'a' >= 'b'", "false"),
        // Strings compare as bytes, so "10" sorts before "9".
        ("'10' < '9'", "true"),
        ("%{NOT_SET} == ''", "true"),
    ]);
}

#[test]
fn integer_comparisons() {
    check(&[
        ("10 -gt 9", "true"),
        ("'10' gt '9'", "true"),
        ("%{SERVER_PORT} -eq 80", "true"),
        ("%{SERVER_PORT} eq 443", "false"),
        ("5 -ne 5", "false"),
        ("-3 -lt 2", "true"),
        ("2 -le 2", "true"),
        ("1 -ge 2", "false"),
        // Leading integers, as apr_atoi64 reads them.
        ("'10abc' -eq 10", "true"),
        ("'abc' -eq 0", "true"),
        ("' 7' -eq 7", "true"),
    ]);
}

#[test]
fn in_lists() {
    check(&[
        ("%{REQUEST_METHOD} -in {'GET', 'HEAD'}", "false"),
        ("%{REQUEST_METHOD} in {'GET', 'POST'}", "true"),
        ("'x' -in {'y', %{NOT_SET} . 'x'}", "true"),
        ("'A' -in PeerExtList('a')", "true"),
        ("'B' -in PeerExtList('a')", "false"),
        ("'A' -in OtherList('a')", "?"),
        // A match anywhere decides, whatever the unknown elements.
        ("'a' -in {md5('x'), 'a'}", "true"),
        ("'b' -in {md5('x'), 'a'}", "?"),
    ]);
}

#[test]
fn regex_matching() {
    check(&[
        ("%{REQUEST_URI} =~ m#/login$#", "true"),
        ("%{REQUEST_URI} !~ /admin/", "true"),
        ("%{HTTP_HOST} =~ /EXAMPLE/", "false"),
        ("%{HTTP_HOST} =~ /EXAMPLE/i", "true"),
        ("%{HTTP_HOST} =~ m|^example\\.com$|", "true"),
        ("req('Accept-Encoding') =~ /gzip/", "true"),
        ("http('accept-encoding') =~ /br/", "false"),
    ]);
}

#[test]
fn regex_captures_feed_later_words() {
    check(&[
        ("%{REQUEST_URI} =~ m#^/user/(\\w+)/# && $1 == 'bob'", "true"),
        ("%{REQUEST_URI} =~ m#^/user/(\\w+)/# && $0 == '/user/bob/'", "true"),
        ("%{REQUEST_URI} =~ m#^/user/(\\w+)/# && \"user:$1\" == 'user:bob'", "true"),
        ("%{REQUEST_URI} =~ m#^/user/(\\w+)/# && $2 == ''", "true"),
        (
            "%{REQUEST_URI} =~ m#^/(u)(s)(e)(r)/(b)(o)(b)/(l)(o)(g)# && $9 == 'o' && $0 == '/user/bob/log'",
            "true",
        ),
        // A miss with groups empties the captures...
        ("%{REQUEST_URI} =~ /(bob)/ && (%{REQUEST_URI} =~ /(alice)/ || $1 == '')", "true"),
        // ...while a regex without groups leaves them alone.
        ("%{REQUEST_URI} =~ /(bob)/ && %{REQUEST_URI} =~ /user/ && $1 == 'bob'", "true"),
        ("%{REQUEST_URI} =~ /(bob)/ && %{REQUEST_URI} !~ /nothing/ && $1 == 'bob'", "true"),
        // Before any match, `$1` is empty.
        ("$1 == ''", "true"),
        // Captures also reach function arguments.
        ("%{REQUEST_URI} =~ /(BOB)/i && toupper($1) == 'BOB'", "true"),
    ]);
}

#[test]
fn unary_operators() {
    check(&[
        ("-n %{HTTP_HOST}", "true"),
        ("-n ''", "false"),
        ("-z %{NOT_SET}", "true"),
        ("-z 'x'", "false"),
        ("-T 'on'", "true"),
        ("-T 'Off'", "false"),
        ("-T 0", "false"),
        ("-T %{NOT_SET}", "false"),
        ("-f %{REQUEST_FILENAME}", "true"),
        ("-d %{REQUEST_FILENAME}", "false"),
        ("-d '/srv/www'", "true"),
        ("-e '/srv/www'", "true"),
        ("!-f '/nope'", "true"),
        ("-s %{REQUEST_FILENAME}", "?"),
        ("-U '/index.php'", "?"),
        ("-R '10.0.0.0/8'", "true"),
        ("-R '192.168.0.0/16'", "false"),
        ("-R '10.1.2.3'", "true"),
        ("-R '10.1'", "true"),
    ]);
}

#[test]
fn remote_address_unknown_or_ipv6() {
    let mut no_addr = Request::new().with("REMOTE_ADDR", "");
    assert!(matches!(eval_in("-R '10.0.0.0/8'", &mut no_addr), Value::Unknown(_)));
    let mut mapped = Request::new().with("REMOTE_ADDR", "::ffff:10.9.8.7");
    assert_eq!(eval_in("-R '10.0.0.0/8'", &mut mapped), Value::True);
    let mut v6 = Request::new().with("REMOTE_ADDR", "2001:db8::5");
    assert_eq!(eval_in("-R '2001:db8::/32'", &mut v6), Value::True);
    assert_eq!(eval_in("-R '10.0.0.0/8'", &mut v6), Value::False);
}

#[test]
fn binary_operators() {
    check(&[
        ("%{REMOTE_ADDR} -ipmatch '10.0.0.0/8'", "true"),
        ("'192.168.1.1' -ipmatch '10.0.0.0/255.0.0.0'", "false"),
        ("'' -ipmatch '10.0.0.0/8'", "false"),
        ("'example.com' -ipmatch '10.0.0.0/8'", "?"),
        ("%{REQUEST_URI} -strmatch '/user/*'", "true"),
        ("%{REQUEST_URI} -strmatch '/USER/*'", "false"),
        ("%{REQUEST_URI} -strcmatch '/USER/*'", "true"),
        ("%{REQUEST_URI} -STRCMATCH '/USER/*'", "true"),
        ("%{REQUEST_URI} -fnmatch '/user/*'", "false"),
        ("%{REQUEST_URI} -fnmatch '/user/*/*'", "true"),
        ("'a.php' -strmatch '*.[jp]h?'", "true"),
    ]);
}

#[test]
fn words_and_functions() {
    check(&[
        ("'a' . 'b' . 1 == 'ab1'", "true"),
        ("%{HTTP_HOST} . %{REQUEST_URI} == 'example.com/user/bob/login'", "true"),
        ("\"%{HTTP_HOST}:%{SERVER_PORT}\" == 'example.com:80'", "true"),
        ("tolower('AbC') == 'abc'", "true"),
        ("TOUPPER('abc') == 'ABC'", "true"),
        ("escape('/a b?') == '/a%20b%3f'", "true"),
        ("unescape('a%20b%2fc') == 'a b%2fc'", "true"),
        ("base64('foo') == 'Zm9v'", "true"),
        ("unbase64('Zm9v') == 'foo'", "true"),
        ("%{tolower:ABC} == 'abc'", "true"),
        ("%{req:User-Agent} =~ /Mozilla/", "true"),
        ("'%{req:user-agent}' == 'Mozilla/5.0'", "true"),
        ("reqenv('HAVE_X') == '1'", "true"),
        ("tolower(toupper(tolower('aBc'))) == 'abc'", "true"),
        // Core variable names ignore case, as Apache's lookup does.
        ("%{http_host} == 'example.com'", "true"),
        // Unknown variables read as empty.
        ("%{NO_SUCH_THING} == ''", "true"),
    ]);
}

#[test]
fn string_escapes() {
    check(&[
        ("'it\\'s' == \"it's\"", "true"),
        ("'a\\tb' == \"a\\011b\"", "true"),
        ("'\\101\\102' == 'AB'", "true"),
        ("'\\q' == 'q'", "true"),
        ("'50\\%{x}' == '50%' . '{x}'", "true"),
        ("'cost \\$1' == 'cost $' . '1'", "true"),
        ("'a\\0b' == 'a'", "true"),
        ("'100%' == '100' . '%'", "true"),
    ]);
}

#[test]
fn unknown_propagation() {
    // `md5` is not computed here and this context does not support it.
    check(&[
        ("md5('x') == 'y'", "?"),
        ("!(md5('x') == 'y')", "?"),
        ("false && md5('x') == 'y'", "false"),
        ("md5('x') == 'y' && false", "false"),
        ("true || md5('x') == 'y'", "true"),
        ("md5('x') == 'y' || true", "true"),
        ("true && md5('x') == 'y'", "?"),
        ("false || md5('x') == 'y'", "?"),
        ("-x '/bin/sh' && true", "?"),
        ("'%{md5:x}' == ''", "?"),
        ("%{md5:x} . 'a' == ''", "?"),
    ]);
}

#[test]
fn unknown_reaches_captures() {
    check(&[
        // The subject is unknown, so the captures are too: not a wrong "false".
        ("resp('X') =~ /(a)/ && $1 == 'a'", "?"),
        // Whether the second regex ran depends on an unknown.
        ("(md5('x') == 'y' && %{REQUEST_URI} =~ /(bob)/) || $1 == 'bob'", "?"),
        // A regex without groups keeps known captures known.
        (
            "%{REQUEST_URI} =~ /(bob)/ && (md5('x') == 'y' || %{REQUEST_URI} =~ /no/) && $1 == 'alice'",
            "false",
        ),
    ]);
    let e = parse("resp('X') =~ /(a)/").unwrap();
    assert_eq!(e.eval(&mut Request::new()), Value::Unknown("function 'resp' not supported".to_string()));
}

#[test]
fn real_world_conditions() {
    check(&[
        ("%{REQUEST_URI} =~ m#/login$#", "true"),
        ("%{HTTP_HOST} == 'example.com'", "true"),
        ("-f %{REQUEST_FILENAME}", "true"),
        ("%{QUERY_STRING} =~ /(^|&)p=/ && !(%{REQUEST_METHOD} -in {'GET','HEAD'})", "true"),
        ("req('Accept-Encoding') =~ /gzip/", "true"),
        ("%{HTTPS} != 'on'", "true"),
        ("-R '10.0.0.0/8'", "true"),
        ("%{HTTP_HOST} !~ /^www\\./ && %{HTTP_HOST} =~ /^example\\.com$/i", "true"),
        ("%{REQUEST_URI} =~ m#^/wp-admin# && ! -R '127.0.0.1'", "false"),
        // This request has no `HTTP_USER_AGENT`: empty, no match.
        ("%{HTTP_USER_AGENT} =~ /bot/i || %{QUERY_STRING} =~ /debug=1/", "false"),
    ]);
    let mut r = Request::new().with("HTTP_USER_AGENT", "Googlebot");
    assert_eq!(eval_in("%{HTTP_USER_AGENT} =~ /bot/i || %{QUERY_STRING} =~ /debug=1/", &mut r), Value::True);
}

#[test]
fn parse_errors_point_at_the_problem() {
    check_errors(&[
        ("", 0, "empty expression"),
        ("   ", 3, "empty expression"),
        ("%{HTTP_HOST} == 'example.com", 16, "unterminated string"),
        ("%{A} == \"x", 8, "unterminated string"),
        ("'a\nb' == 'a'", 2, "line break"),
        ("%{A} -foo 'x'", 5, "binary operator '-foo' does not exist"),
        ("-q 'x'", 0, "unary operator '-q' does not exist"),
        ("%{A} -EQ 1", 5, "binary operator '-EQ' does not exist"),
        ("(true && false", 14, "missing ')'"),
        ("((true) || (false)", 18, "missing ')'"),
        ("true)", 4, "unmatched ')'"),
        ("true false", 5, "unexpected 'false'"),
        ("%{A} & %{B}", 5, "parse error near '&'"),
        ("%{A} == 'x' | true", 12, "parse error near '|'"),
        ("%{A} =~ /(/", 8, "cannot compile regular expression '('"),
        ("%{A} =~ /abc", 8, "unterminated regex"),
        ("%{A} =~ /abc/x", 13, "unexpected 'x' after a complete condition"),
        // No escape for the delimiter, as in Apache: the regex is `^\`.
        ("%{A} =~ /^\\/user/", 8, "cannot compile regular expression '^\\'"),
        ("%{A} =~ 'abc'", 8, "expected a regex after '=~'"),
        ("%{A} !~ %{B}", 8, "expected a regex after '!~'"),
        ("%{A", 0, "unterminated variable"),
        ("%{A B} == 1", 3, "invalid character ' ' in variable name"),
        ("%{} == 1", 2, "missing variable name"),
        ("%{1A} == 1", 2, "invalid character '1'"),
        ("%{f:} == 1", 4, "missing argument"),
        ("%{f:abc", 0, "unterminated variable"),
        ("'a' 'b'", 4, "expected an operator after the word"),
        ("'a'", 3, "expected an operator"),
        ("%{A} ==", 7, "expected a word"),
        ("foo == 1", 4, "expected '(' after the function name 'foo'"),
        ("foo('a' == 1", 8, "missing ')' after the argument of 'foo'"),
        ("%{A} -in 'a'", 9, "expected '{' or a list function"),
        ("%{A} -in {'a' 'b'}", 14, "expected ',' or '}'"),
        ("%{A} -in {}", 10, "expected a word"),
        ("'\\8' == 1", 1, "bad escape sequence"),
        ("'\\1234' == 1", 1, "bad escape sequence"),
        ("'\\400' == 1", 1, "escape sequence out of bound"),
        ("-R %{REMOTE_ADDR}", 3, "-R requires subnet/netmask as constant argument"),
        ("-R 'example.com'", 3, "parsing of subnet/netmask 'example.com' failed"),
        ("-R 10", 3, "constant argument"),
        ("%{A} -ipmatch '10.0.0.0/0'", 14, "parsing of subnet/netmask"),
        ("%{A} == 1 @", 10, "parse error near '@'"),
        ("%{A} == 'é' || é", 16, "parse error near 'é'"),
        ("-f", 2, "expected a word"),
        ("true && ", 8, "expected a condition"),
        ("!", 1, "expected a condition"),
        // 2.5 syntax that 2.4 does not have.
        ("%{A} =~ /a/s", 11, "unexpected 's'"),
        ("'a' -in split(/,/, %{B})", 14, "expected a word"),
    ]);
}

#[test]
fn deep_nesting_is_refused_not_a_crash() {
    let deep = format!("{}true{}", "(".repeat(10_000), ")".repeat(10_000));
    assert!(parse(&deep).unwrap_err().message.contains("nested"));
    let nots = format!("{}true", "!".repeat(10_000));
    assert!(parse(&nots).unwrap_err().message.contains("nested"));
    let calls = format!("{}'a'{} == 'a'", "tolower(".repeat(10_000), ")".repeat(10_000));
    assert!(parse(&calls).unwrap_err().message.contains("nested"));
    // Long flat chains are fine.
    let chain = vec!["true"; 10_000].join(" && ");
    assert_eq!(parse(&chain).unwrap().eval(&mut Request::new()), Value::True);
    let concat = format!("{} == ''", vec!["''"; 10_000].join(" . "));
    assert_eq!(parse(&concat).unwrap().eval(&mut Request::new()), Value::True);
}

#[test]
fn apache_string_limit() {
    let long = format!("'{}' == ''", "a".repeat(9000));
    assert!(parse(&long).unwrap_err().message.contains("string too long"));
    let fits = format!("'{}' == ''", "a".repeat(8000));
    assert!(parse(&fits).is_ok());
}

#[test]
fn canonical_printing() {
    check_print(&[
        ("%{A} = \"x\" and %{B} eq 5", "%{A} == 'x' && %{B} -eq 5"),
        ("not -f %{F} or %{U} in {\"a\",'b'}", "!-f %{F} || %{U} -in {'a', 'b'}"),
        ("(a(1) == 1 || true) && false", "(a(1) == 1 || true) && false"),
        ("true || (true && false)", "true || true && false"),
        ("(true && true) && false", "(true && true) && false"),
        ("true && (true && false)", "true && (true && false)"),
        ("!(true && false)", "!(true && false)"),
        ("!!  true", "!!true"),
        ("%{U} =~ m#^a#", "%{U} =~ /^a/"),
        ("%{U} =~ m#^/a#i", "%{U} =~ m#^/a#i"),
        ("%{U} !~ /x/", "%{U} !~ /x/"),
        ("\"it's $1 %{A} %{f:a\\}b}\" == ''", "'it\\'s $1 %{A} %{f:a\\}b}' == ''"),
        ("'\\$1 \\%{A}' == ''", "'\\$1 \\%{A}' == ''"),
        ("'a\\tb\\n' == ''", "'a\\tb\\n' == ''"),
        ("%{req:Host}.'x' . -5 == 1", "%{req:Host} . 'x' . -5 == 1"),
        ("-R '10.0.0.0/8'", "-R '10.0.0.0/8'"),
        ("%{A} -IPMATCH '::1'", "%{A} -ipmatch '::1'"),
        ("%{A} -in PeerExtList ( 'x' )", "%{A} -in PeerExtList('x')"),
        ("$0 == ''", "$0 == ''"),
    ]);
}

#[test]
fn string_expressions() {
    let cases = [
        ("", "", ""),
        ("plain 'quoted' \"text\"", "plain 'quoted' \"text\"", "plain 'quoted' \"text\""),
        ("%{HTTP_HOST}%{REQUEST_URI}", "example.com/user/bob/login", "%{HTTP_HOST}%{REQUEST_URI}"),
        (
            "https://%{req:Host}/x?%{QUERY_STRING}",
            "https:///x?a=1&p=2",
            "https://%{req:Host}/x?%{QUERY_STRING}",
        ),
        ("%{tolower:ABC}-%{escape:a b}", "abc-a%20b", "%{tolower:ABC}-%{escape:a b}"),
        ("50% off, $ and \\$1", "50% off, $ and $1", "50% off, $ and \\$1"),
        ("tab\\there\\", "tab\there\\", "tab\\there\\\\"),
        ("$1", "", "$1"),
    ];
    for (src, value, printed) in cases {
        let e = parse_string(src).unwrap_or_else(|e| panic!("{src:?}: {}", e.message));
        assert_eq!(e.eval(&mut Request::new()).as_deref(), Ok(value), "{src:?}");
        assert_eq!(e.to_string(), printed, "{src:?}");
        assert_eq!(parse_string(printed).unwrap(), e, "{printed:?}");
    }
    assert_eq!(
        parse_string("%{md5:x}").unwrap().eval(&mut Request::new()),
        Err("function 'md5' not supported".to_string())
    );
    let e = parse_string("a\nb").unwrap_err();
    assert_eq!((e.offset, e.message.as_str()), (1, "line break in a string"));
    assert_eq!(parse_string("x %{A").unwrap_err().offset, 2);
}

#[test]
fn the_tree_is_there_for_translators() {
    let e = parse("%{HTTP_HOST} == 'example.com' && -f %{REQUEST_FILENAME}").unwrap();
    let Cond::And(items) = e.root() else { panic!("{:?}", e.root()) };
    assert_eq!(
        items[0],
        Cond::Compare(
            Word::Var("HTTP_HOST".to_string()),
            CompareOp::StrEq,
            Word::Str(vec![Part::Text("example.com".to_string())])
        )
    );
    assert_eq!(items[1], Cond::Unary(UnaryOp::File('f'), Word::Var("REQUEST_FILENAME".to_string())));
}

/// Fragments that make valid expressions often, and odd ones sometimes.
fn fragment() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "true",
        "false",
        "!",
        "not",
        "&&",
        "and",
        "||",
        "or",
        "(",
        ")",
        "%{REQUEST_URI}",
        "%{http_host}",
        "%{req:Host}",
        "%{f:a\\}b}",
        "'x'",
        "\"a$1b\"",
        "'%{A}\\''",
        "'\\101'",
        "''",
        "1",
        "-5",
        "$1",
        "==",
        "=",
        "!=",
        "<",
        ">=",
        "-eq",
        "lt",
        "-in",
        "{",
        "}",
        ",",
        "=~",
        "!~",
        "/a(b)/",
        "/x/i",
        "m#/y#",
        "m_z_",
        "-n",
        "-z",
        "-T",
        "-f",
        "-d",
        "-R",
        "'10.0.0.0/8'",
        "-ipmatch",
        "-strmatch",
        "-fnmatch",
        ".",
        "tolower",
        "md5",
        "req",
        "-x",
        "-foo",
        "'\\n'",
        "\\",
        "%",
        "$",
        "m",
        "é",
        "\t",
        ":",
    ])
}

/// A valid expression, built from the grammar with varied spelling.
fn expression() -> impl Strategy<Value = String> {
    let word = || {
        let atom = prop::sample::select(vec![
            "%{REQUEST_URI}",
            "%{http_host}",
            "%{req:Host}",
            "%{f:a\\}b}",
            "'x'",
            "\"a$1b\"",
            "'%{A}\\''",
            "'\\101'",
            "''",
            "1",
            "-5",
            "$1",
            "$0",
            "tolower('A')",
            "md5(%{A})",
            "'\\$2 50\\%{'",
            "\"it's\"",
            "'é\\t'",
        ]);
        prop::collection::vec(atom, 1..3).prop_map(|v| v.join(" . "))
    };
    let op = prop::sample::select(vec![
        "==",
        "=",
        "!=",
        "<",
        "<=",
        ">",
        ">=",
        "-eq",
        "lt",
        "-ge",
        "-strmatch",
        "-fnmatch",
        "-STRCMATCH",
    ]);
    let leaf = prop_oneof![
        Just("true".to_string()),
        Just("false".to_string()),
        Just("-R '10.0.0.0/8'".to_string()),
        (word(), op, word()).prop_map(|(a, o, b)| format!("{a} {o} {b}")),
        (prop::sample::select(vec!["-n", "-z", "-T", "-f", "-d", "-x"]), word())
            .prop_map(|(o, w)| format!("{o} {w}")),
        (
            word(),
            prop::sample::select(vec!["=~", "!~"]),
            prop::sample::select(vec!["/a(b)/", "/x/i", "m#/y#", "m_(.)_i", "/^$/"])
        )
            .prop_map(|(w, o, r)| format!("{w} {o} {r}")),
        (word(), prop::collection::vec(word(), 1..3))
            .prop_map(|(w, l)| format!("{w} -in {{{}}}", l.join(", "))),
    ];
    leaf.prop_recursive(4, 24, 3, |inner| {
        prop_oneof![
            inner.clone().prop_map(|c| format!("!{c}")),
            inner.clone().prop_map(|c| format!("not ({c})")),
            inner.clone().prop_map(|c| format!("({c})")),
            (inner.clone(), prop::sample::select(vec!["&&", "||", "and", "or"]), inner)
                .prop_map(|(a, o, b)| format!("{a} {o} {b}")),
        ]
    })
}

/// Apache refuses at startup a variable or a function none of its providers has
/// (checked with `apache2 -t`: `%{REQUEST_LINE}`, `%{SSL_PROTOCOL}` without mod_ssl,
/// `%{H2_PUSH}` without mod_http2, `filemod()` and `%{foo:x}` are refused; `%{request_uri}`,
/// `%{HTTP2}`, `ToLower()`, `%{REQ:x}` and `ldap()` are taken).
#[test]
fn names_apache_does_not_have_are_found() {
    let cond = |src: &str| unknown_name(src, false, false, false);
    let var = |n: &str, at: usize| Some((format!("Variable '{n}' does not exist"), at));
    let func = |n: &str, at: usize| Some((format!("Function '{n}' does not exist"), at));
    assert_eq!(cond("%{REQUEST_LINE} == 'x'"), var("REQUEST_LINE", 0));
    assert_eq!(cond("%{request_uri} == 'x' && %{HTTP2} == 'on'"), None);
    assert_eq!(cond("'a' == 'b' || -n '%{FOO}'"), var("FOO", 18));
    assert_eq!(cond("%{HTTP:X-Anything} == 'x' && %{ENV:any} == '' && %{REQ:x} == ''"), None);
    assert_eq!(cond("ToLower('A') == 'a' && ldap('x') == 'x' && md5('') == ''"), None);
    assert_eq!(cond("%{foo:x} == 'x'"), func("foo", 0));
    assert_eq!(cond("filemod('/x') == '1'"), func("filemod", 0));
    assert_eq!(cond("%{SSL_PROTOCOL} == 'TLSv1.3'"), var("SSL_PROTOCOL", 0));
    assert_eq!(unknown_name("%{SSL_PROTOCOL} == 'TLSv1.3'", false, true, false), None);
    assert_eq!(cond("'x' -in PeerExtList('1.2')"), func("PeerExtList", 8));
    assert_eq!(unknown_name("'x' -in PeerExtList('1.2')", false, true, false), None);
    assert_eq!(cond("%{H2_PUSH} == 'on'"), var("H2_PUSH", 0));
    assert_eq!(unknown_name("%{H2_PUSH} == 'on'", false, false, true), None);
    // a string expression (mod_headers' expr= value)
    assert_eq!(unknown_name("a %{REQUEST_LINE} b", true, false, false), var("REQUEST_LINE", 2));
    assert_eq!(unknown_name("%{tolower:%{HTTP_HOST}}", true, false, false), None);
    // what does not parse is parse's to report
    assert_eq!(cond("%{FOO} =="), None);
}

proptest! {
    #[test]
    fn arbitrary_text_never_panics(src in any::<String>()) {
        if let Ok(e) = parse(&src) {
            let printed = e.to_string();
            let again = parse(&printed).map_err(|e| TestCaseError::fail(format!("{printed:?}: {}", e.message)))?;
            prop_assert_eq!(again.to_string(), printed);
        }
        let _ = parse_string(&src);
    }

    #[test]
    fn token_soup_round_trips(parts in prop::collection::vec(fragment(), 1..12), glue in prop::sample::select(vec![" ", ""])) {
        let src = parts.join(glue);
        match parse(&src) {
            Ok(e) => {
                let printed = e.to_string();
                let again = parse(&printed).map_err(|err| TestCaseError::fail(format!("{src:?} printed {printed:?}: {}", err.message)))?;
                prop_assert_eq!(again.to_string(), printed.clone());
                prop_assert_eq!(again.eval(&mut Request::new()), e.eval(&mut Request::new()));
            }
            Err(e) => prop_assert!(e.offset <= src.len()),
        }
        if let Ok(s) = parse_string(&src) {
            let printed = s.to_string();
            prop_assert_eq!(parse_string(&printed).ok(), Some(s));
        }
    }

    #[test]
    fn grammar_round_trips(src in expression()) {
        let e = parse(&src).map_err(|err| TestCaseError::fail(format!("{src:?}: {} at {}", err.message, err.offset)))?;
        let printed = e.to_string();
        let again = parse(&printed).map_err(|err| TestCaseError::fail(format!("{src:?} printed {printed:?}: {}", err.message)))?;
        prop_assert_eq!(&again, &e);
        prop_assert_eq!(again.to_string(), printed);
        prop_assert_eq!(again.eval(&mut Request::new()), e.eval(&mut Request::new()));
    }
}
