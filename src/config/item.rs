//! The configuration as Apache reads it: includes inlined, `${VAR}` substituted,
//! conditional sections evaluated.
//!
//! An [`Item`] is a directive or section after that reading.  Nothing is dropped: a block
//! inside a false `<IfModule>` stays, marked `enabled: false`, so reports can still point
//! at it.  Comments stay in the syntax tree and are not carried here.

use crate::source::{FileId, MappedText, Span};
use crate::syntax::Word;
use serde::Serialize;

#[derive(Clone, Debug)]
pub struct Item {
    /// Name as written after substitution; sections without `<`.
    pub name: Word,
    pub args: Vec<Word>,
    /// The argument text after substitution, for directives that read it raw.
    pub raw: MappedText,
    pub span: Span,
    /// False inside a conditional section whose condition is false.
    pub enabled: bool,
    pub kind: ItemKind,
}

#[derive(Clone, Debug)]
pub enum ItemKind {
    Directive,
    /// A section; conditional ones (`<IfModule>`, ...) carry their evaluated condition.
    Section {
        children: Vec<Item>,
        close: Option<Span>,
        condition: Option<Condition>,
    },
    /// `Include` / `IncludeOptional`: the files read, in Apache's order, and their items.
    Include {
        files: Vec<FileId>,
        children: Vec<Item>,
    },
}

impl Item {
    pub fn is(&self, name: &str) -> bool {
        self.name.value.eq_ignore_ascii_case(name)
    }

    pub fn is_section(&self) -> bool {
        matches!(self.kind, ItemKind::Section { .. })
    }

    pub fn children(&self) -> &[Item] {
        match &self.kind {
            ItemKind::Section { children, .. } | ItemKind::Include { children, .. } => children,
            ItemKind::Directive => &[],
        }
    }

    pub fn condition(&self) -> Option<&Condition> {
        match &self.kind {
            ItemKind::Section { condition, .. } => condition.as_ref(),
            _ => None,
        }
    }

    /// The argument values.
    pub fn values(&self) -> Vec<&str> {
        self.args.iter().map(|w| w.value.as_str()).collect()
    }

    pub fn arg(&self, i: usize) -> Option<&str> {
        self.args.get(i).map(|w| w.value.as_str())
    }
}

/// The kinds of conditional section Apache evaluates while reading the configuration,
/// plus `<If>`, which it keeps for each request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConditionKind {
    IfModule,
    IfDefine,
    IfVersion,
    IfFile,
    IfDirective,
    IfSection,
    /// `<If>`, `<ElseIf>`, `<Else>`: an expression evaluated per request.
    Expression,
}

impl ConditionKind {
    pub fn of_section(name: &str) -> Option<ConditionKind> {
        let n = name.to_ascii_lowercase();
        Some(match n.as_str() {
            "ifmodule" => ConditionKind::IfModule,
            "ifdefine" => ConditionKind::IfDefine,
            "ifversion" => ConditionKind::IfVersion,
            "iffile" => ConditionKind::IfFile,
            "ifdirective" => ConditionKind::IfDirective,
            "ifsection" => ConditionKind::IfSection,
            "if" | "elseif" | "else" => ConditionKind::Expression,
            _ => return None,
        })
    }
}

#[derive(Clone, Debug)]
pub struct Condition {
    pub kind: ConditionKind,
    /// `Some` when decided while loading; `None` for per-request expressions.
    pub value: Option<bool>,
    /// Why, in a few words ("mod_rewrite.c is loaded").
    pub reason: String,
}

/// Walks items in configuration order, looking through includes and through conditional
/// sections decided while loading; calls `f` for every other item with its `enabled` flag.
pub fn visit_flat<'a>(items: &'a [Item], f: &mut dyn FnMut(&'a Item)) {
    for item in items {
        match &item.kind {
            ItemKind::Include { children, .. } => visit_flat(children, f),
            ItemKind::Section { children, condition: Some(c), .. } if c.kind != ConditionKind::Expression => {
                visit_flat(children, f)
            }
            _ => f(item),
        }
    }
}
