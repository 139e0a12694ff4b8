//! Unit tests of the compiler side: the byte tables against the real PCRE2 on all 256
//! bytes, how escapes and classes parse, what is refused, and the program text. Running
//! programs through `lua5.4` is `tests/luare.rs`.

use super::ast::{GroupKind, Node};
use super::byteset::ByteSet;
use super::parser::parse;
use super::program::Op;
use super::{LUA_MODULE, Options, compile, compile_with};

fn options(caseless: bool) -> Options {
    Options { caseless, ..Options::default() }
}

/// The set a one-byte pattern parses to.
fn parsed_set(pattern: &str, caseless: bool) -> ByteSet {
    let parsed = parse(pattern, &options(caseless)).unwrap_or_else(|e| panic!("{pattern:?}: {e}"));
    match parsed.root {
        Node::Set(s) => s,
        Node::Literal { .. } => parsed.root.single_byte().expect("one byte"),
        other => panic!("{pattern:?} parsed to {other:?}"),
    }
}

/// The bytes the real PCRE2 matches with `pattern` as a whole one-byte subject.
fn pcre_set(pattern: &str, caseless: bool) -> ByteSet {
    let re = pcre2::bytes::RegexBuilder::new()
        .caseless(caseless)
        .build(&format!(r"\A(?:{pattern})\z"))
        .unwrap_or_else(|e| panic!("{pattern:?}: {e}"));
    let mut set = ByteSet::EMPTY;
    for b in 0..=255u8 {
        if re.is_match(&[b]).expect("match") {
            set.insert(b);
        }
    }
    set
}

#[test]
fn sets_match_pcre2_on_every_byte() {
    let mut patterns: Vec<String> = [
        r"\d",
        r"\D",
        r"\w",
        r"\W",
        r"\s",
        r"\S",
        r"\h",
        r"\H",
        r"\v",
        r"\V",
        r"\N",
        ".",
        "(?s).",
        "[^a]",
        "[Z-a]",
        "[^Z-a]",
        r"[\d-]",
        r"[a-]",
        "[]a]",
        "[^]a]",
        r"[\x00-\x1f\x7f]",
        r"[\w.-]",
        r"[^\W_]",
        r"[\Qa-\E]",
        r"[\Q\E^a]",
        r"[\Q]\E]",
        r"[a\Q-\Ec]",
        r"[a-\Qc\E]",
        r"[\b]",
        r"[\8\9]",
        r"[\101-\103]",
        r"[\x{41}-\x43]",
        r"[\cA\c[]",
        r"[\e\a\f\t\r\n]",
        r"[%--]",
        "[a-c-e]",
        r"[\xc9-\xe9]",
        "[[:alpha:][:digit:]]",
        "[[]",
        r"[\]]",
        r"[^\s\S]",
        "[[:^alpha:]x]",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for class in [
        "alpha", "lower", "upper", "alnum", "ascii", "blank", "cntrl", "digit", "graph", "print", "punct",
        "space", "word", "xdigit",
    ] {
        patterns.push(format!("[[:{class}:]]"));
        patterns.push(format!("[[:^{class}:]]"));
        patterns.push(format!("[^[:{class}:]]"));
    }
    for p in &patterns {
        for caseless in [false, true] {
            assert_eq!(parsed_set(p, caseless), pcre_set(p, caseless), "{p:?} caseless={caseless}");
        }
    }
}

#[test]
fn single_byte_escapes_and_caseless_literals_match_pcre2() {
    for b in 0..=255u8 {
        for (pattern, caseless) in
            [(format!(r"\x{b:02x}"), true), (format!(r"\x{{{b:x}}}"), false), (format!(r"\o{{{b:o}}}"), true)]
        {
            assert_eq!(parsed_set(&pattern, caseless), pcre_set(&pattern, caseless), "{pattern:?}");
        }
    }
    for c in 0x20..0x7fu8 {
        let pattern = format!(r"\c{}", c as char);
        if c == b'\\' {
            continue; // `\c\` would escape the closing parenthesis of the wrapper
        }
        assert_eq!(parsed_set(&pattern, false), pcre_set(&pattern, false), "{pattern:?}");
    }
}

#[test]
fn digits_after_backslash_follow_pcre2() {
    // (pattern, expected tree shape): octal where PCRE2 reads octal.
    let node = |p: &str| parse(p, &options(false)).unwrap_or_else(|e| panic!("{p}: {e}")).root;
    let lit = |b: u8| Node::Literal { byte: b, caseless: false };
    assert_eq!(node(r"\0"), lit(0));
    assert_eq!(node(r"\012"), lit(0o12));
    assert_eq!(node(r"\0123"), Node::Concat(vec![lit(0o12), lit(b'3')]));
    assert_eq!(node(r"\101"), lit(b'A'));
    // \10 with fewer than 10 groups open is octal \010.
    let Node::Concat(v) = node(r"(a)\10") else { panic!() };
    assert_eq!(v[1], lit(0o10));
    // \18: not that many groups, so octal \1 followed by a literal 8.
    let Node::Concat(v) = node(r"(a)\18") else { panic!() };
    assert_eq!(v[1..], [lit(1), lit(b'8')]);
    // \1..\9 are always references.
    let Node::Concat(v) = node(r"(a)\1") else { panic!() };
    assert_eq!(v[1], Node::Backref { group: 1, caseless: false });
    let ten = "(a)".repeat(10) + r"\10";
    let Node::Concat(v) = node(&ten) else { panic!() };
    assert_eq!(v[10], Node::Backref { group: 10, caseless: false });
    // Relative and named references.
    let Node::Concat(v) = node(r"(a)(b)\g{-2}\g-1\g{+1}(c)") else { panic!() };
    assert_eq!(
        v[2..5],
        [
            Node::Backref { group: 1, caseless: false },
            Node::Backref { group: 2, caseless: false },
            Node::Backref { group: 3, caseless: false },
        ]
    );
    let Node::Concat(v) = node(r"\k<late>(?<late>x)") else { panic!() };
    assert_eq!(v[0], Node::Backref { group: 1, caseless: false });
}

#[test]
fn options_apply_to_the_rest_of_the_group_and_later_branches() {
    let root = parse("(a(?i)b|c)d", &options(false)).expect("parses").root;
    let Node::Concat(items) = root else { panic!("{root:?}") };
    let Node::Group(g) = &items[0] else { panic!() };
    assert_eq!(g.kind, GroupKind::Capture(1));
    let Node::Alt(branches) = &g.body else { panic!() };
    assert_eq!(
        branches[0],
        Node::Concat(vec![
            Node::Literal { byte: b'a', caseless: false },
            Node::Literal { byte: b'b', caseless: true },
        ])
    );
    assert_eq!(branches[1], Node::Literal { byte: b'c', caseless: true });
    assert_eq!(items[1], Node::Literal { byte: b'd', caseless: false });
}

#[test]
fn patterns_pcre2_refuses_are_errors() {
    for p in [
        "(",
        ")",
        "[a",
        "a**",
        "x{3,2}",
        r"\",
        r"\1",
        r"(a)\2",
        r"\k<nope>",
        "[z-a]",
        r"[\d-z]",
        "[[:foo:]]",
        "[:alpha:]",
        r"\x{100}",
        r"\400",
        "(?<=a+)b",
        "a{99999}",
        r"\y",
        r"\c",
        "^*",
        "(?P=n)",
    ] {
        let e = compile(p, false).expect_err(p);
        assert!(e.reason.starts_with("PCRE2: "), "{p:?}: {e}");
    }
}

#[test]
fn constructs_not_implemented_exactly_are_unsupported() {
    for (p, reason) in [
        (r"\p{L}", "Unicode"),
        (r"\X", "Unicode"),
        (r"a\Kb", r"\K"),
        (r"\C", r"\C"),
        ("(?R)", "recursion"),
        ("(a)(?1)", "recursion"),
        ("(?&n)(?<n>a)", "recursion"),
        (r"(a)\g<1>", "subroutine"),
        ("(?(1)a|b)(a)", "conditional"),
        ("(?|(a)|(b))", "branch reset"),
        ("(?C1)a", "callouts"),
        ("(*UTF)a", "VERB"),
        ("a(*SKIP)b", "VERB"),
        ("(?J)(?<n>a)|(?<n>b)", "duplicate"),
        ("(?<n>a)|(?<n>b)", "duplicate group names"),
        ("x{,3}", "differs between PCRE2 versions"),
        ("x{ 2 }", "differs between PCRE2 versions"),
        (r"\x{ 41 }", "version-dependent"),
        (r"(a)\g{ 1 }", "version-dependent"),
        ("(?<=a{1,3})b", "fixed length"),
        ("(?<=a|bc?)d", "fixed length"),
        (r"(a)(?<=\1)b", "back references inside lookbehind"),
        ("(?:a|(?=b)){0}", "{0}"),
        (r"\N{U+41}", r"\N{"),
        ("(?=b)a*b", "lookahead"),
        (r"\b(?i:(?=x))\w+", "lookahead"),
        ("(?aD)a", "option letter"),
    ] {
        let e = compile(p, false).expect_err(p);
        assert!(e.reason.contains(reason), "{p:?}: {e}");
        assert!(!e.reason.starts_with("PCRE2") || p.starts_with(r"\N"), "{p:?} should pass PCRE2: {e}");
    }
}

#[test]
fn groups_and_names_are_reported() {
    let c = compile(r"(?<year>\d+)-(\d+)(?:x)(?P<z>.)(?'w'y)", false).expect("compiles");
    assert_eq!(c.groups, 4);
    assert_eq!(c.names, vec![("year".to_string(), 1), ("z".to_string(), 3), ("w".to_string(), 4)]);
    let c = compile("(?n)(a)(?<b>b)", false).expect("compiles");
    assert_eq!((c.groups, c.names), (1, vec![("b".to_string(), 1)]));
}

#[test]
fn program_text_is_deterministic_and_readable() {
    let a = compile_with(r"^/(.*)\.php$", &Options::apache(true)).expect("compiles");
    let b = compile_with(r"^/(.*)\.php$", &Options::apache(true)).expect("compiles");
    assert_eq!(a, b);
    // `^` anchors; a match starts with `/` and contains a `p` or `P`; `/` is a Char; `(.*)` is Open, Star over the full set, Close; `\.php`
    // caseless is StrFold; `$` with DOLLAR_ENDONLY is End.
    assert_eq!(
        a.program,
        "{v=1,ng=1,nr=5,anchor=1,fb=47,rb=112,rbi=1,code={14,0,0,0,2,47,0,0,9,5,0,0,11,1,0,-1,10,1,5,0,5,1,4,0,17,0,0,0,1,0,0,0},\
         sets={\"ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff\"},strs={\".php\"}}"
    );
}

#[test]
fn opcodes_match_the_lua_module() {
    let mut declared = Vec::new();
    for line in LUA_MODULE.lines() {
        if let Some(rest) = line.strip_prefix("local OP_") {
            let (name, value) = rest.split_once(" = ").expect("local OP_X = n");
            declared.push((name.to_string(), value.trim().parse::<u8>().expect("number")));
        }
    }
    let expected: Vec<(String, u8)> = Op::ALL.iter().map(|op| (op.lua_name(), *op as u8)).collect();
    assert_eq!(declared, expected);
}

#[test]
fn only_lookaheads_pcre2_10_42_mishandles_are_refused() {
    for p in ["^(?=b)a*b", "(?=.*b)a*b", "(?=[ab])a*b", "(?!b)a*b", "x(?=b)", "(?=b)a*b|(?!x)"] {
        let refused = compile(p, false).is_err();
        assert_eq!(refused, p == "(?=b)a*b|(?!x)", "{p}");
    }
}

#[test]
fn lookbehind_branches_may_differ_in_length_but_not_vary() {
    assert!(compile("(?<=a|bc)d", false).is_ok());
    assert!(compile("(?<=a(?:b|c))d", false).is_ok());
    assert!(compile("(?<!x{3})y", false).is_ok());
    assert!(compile("(?<=a(?:b|cd))e", false).is_err());
}
