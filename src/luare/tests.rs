//! Unit tests of the compiler side: the byte tables against the real PCRE2 on all 256
//! bytes, how escapes and classes parse, what is refused, and the program text. Running
//! programs through `lua5.4` is `tests/luare.rs`.

use super::ast::{GroupKind, Node};
use super::byteset::ByteSet;
use super::parser::parse;
use super::{Options, compile, compile_with};

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

/// What the Lua regex machine lighten used to ship could not run exactly now runs in
/// PCRE2 itself; only what lighten cannot carry stays refused.
#[test]
fn constructs_pcre2_accepts_compile() {
    for p in [
        r"\p{L}",
        r"\X",
        r"a\Kb",
        "(?R)",
        "(a)(?1)",
        "(?&n)(?<n>a)",
        r"(a)\g<1>",
        "(?(1)a|b)(a)",
        "(?|(a)|(b))",
        "(?C1)a",
        "a(*SKIP)b",
        "x{,3}",
        "x{ 2 }",
        "(?<=a|bc)d",
        "(?:a|(?=b)){0}",
        "(?=b)a*b",
        "(?J)(?<n>a)|(?<n>b)",
    ] {
        compile(p, false).unwrap_or_else(|e| panic!("{p:?}: {e}"));
    }
    // Apache passes PCRE2_DUPNAMES, which the pcre2 crate cannot check with: refused,
    // so the rule fails closed.
    let e = compile("(?<n>a)|(?<n>b)", false).expect_err("duplicate names");
    assert!(e.reason.contains("duplicate"), "{e}");
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
    // The pattern as Apache has it, and the options PCRE2 gets.
    assert_eq!(a.program, r#"{src = "^/(.*)\\.php$", opts = "CASELESS DOTALL DOLLAR_ENDONLY"}"#);
    // A shape that needs no regex engine carries its fast path first.
    let w = compile_with("^(.*)$", &Options::apache(false)).expect("compiles");
    assert_eq!(w.program, r#"{fast = {1,"",ng=1}, src = "^(.*)$", opts = "DOTALL DOLLAR_ENDONLY"}"#);
}
