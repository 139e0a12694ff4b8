//! parse -> print -> parse gives the same tree, and printing twice gives the same bytes,
//! for every configuration file in the fixtures.

use crate::helpers::files_under;
use lighten::source::FileId;
use lighten::syntax::{self, Node};
use std::path::Path;

/// A tree without spans, for comparing two parses.
#[derive(Debug, PartialEq)]
pub enum Shape {
    Directive(String, Vec<String>, String),
    Section(String, Vec<String>, String, Vec<Shape>),
    Comment(String),
}

pub fn shape(nodes: &[Node]) -> Vec<Shape> {
    nodes
        .iter()
        .map(|n| match n {
            Node::Directive(d) => Shape::Directive(
                d.name.value.clone(),
                d.args.iter().map(|a| a.value.clone()).collect(),
                d.raw.text.clone(),
            ),
            Node::Section(s) => Shape::Section(
                s.name.value.clone(),
                s.args.iter().map(|a| a.value.clone()).collect(),
                s.raw.text.clone(),
                shape(&s.children),
            ),
            Node::Comment(c) => Shape::Comment(c.text.clone()),
        })
        .collect()
}

/// Checks the round trip for one text; returns a description of the first failure.
pub fn round_trip(text: &str) -> Result<(), String> {
    let (first, _) = syntax::parse(FileId(0), text);
    let printed = syntax::print(&first);
    let (second, _) = syntax::parse(FileId(0), &printed);
    if shape(&first.nodes) != shape(&second.nodes) {
        return Err(format!("tree changed after printing:\n{printed}"));
    }
    let again = syntax::print(&second);
    if again != printed {
        return Err(format!("printing twice differs:\n{printed}\n---\n{again}"));
    }
    Ok(())
}

fn is_config(p: &Path) -> bool {
    let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    name.ends_with(".conf") || name == ".htaccess" || name == "htaccess.txt" || name.ends_with(".conf.in")
}

#[test]
fn every_fixture_config_survives_print_and_parse() {
    let mut checked = 0;
    for path in files_under(Path::new("fixtures")).into_iter().filter(|p| is_config(p)) {
        let bytes = std::fs::read(&path).expect("readable");
        let text = String::from_utf8_lossy(&bytes);
        if let Err(e) = round_trip(&text) {
            panic!("{}: {e}", path.display());
        }
        checked += 1;
    }
    assert!(checked > 150, "only {checked} configuration files found");
}
