//! The argument shapes of httpd's `command_rec` (`TAKE1`, `ITERATE`, `FLAG`, ...).

use serde::{Serialize, Serializer};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arity {
    /// `NO_ARGS`.
    None,
    /// `TAKE1` .. `TAKE3`, `TAKE12`, `TAKE23`, `TAKE123`: between `min` and `max`.
    Between(u8, u8),
    /// `TAKE13`: one or three.
    OneOrThree,
    /// `ITERATE` (1+) and `ITERATE2` (2+).
    AtLeast(u8),
    /// `FLAG`: exactly `On` or `Off`.
    Flag,
    /// `RAW_ARGS` / `TAKE_ARGV`: the module reads the line itself.
    Raw,
    /// A `<Section>`; its handler checks its own arguments.
    Section,
}

impl Arity {
    pub fn parse(s: &str) -> Arity {
        match s {
            "none" => Arity::None,
            "1" => Arity::Between(1, 1),
            "2" => Arity::Between(2, 2),
            "3" => Arity::Between(3, 3),
            "1-2" => Arity::Between(1, 2),
            "2-3" => Arity::Between(2, 3),
            "1-3" => Arity::Between(1, 3),
            "1|3" => Arity::OneOrThree,
            "1+" => Arity::AtLeast(1),
            "2+" => Arity::AtLeast(2),
            "flag" => Arity::Flag,
            "section" => Arity::Section,
            _ => Arity::Raw,
        }
    }

    /// Whether `n` arguments are accepted; `None` when the shape does not say.
    pub fn accepts(self, n: usize) -> Option<bool> {
        Some(match self {
            Arity::None => n == 0,
            Arity::Between(lo, hi) => (lo as usize..=hi as usize).contains(&n),
            Arity::OneOrThree => n == 1 || n == 3,
            Arity::AtLeast(lo) => n >= lo as usize,
            Arity::Flag => n == 1,
            Arity::Raw | Arity::Section => return None,
        })
    }

    /// Apache's own wording ("takes one argument") for error messages.
    pub fn describe(self) -> &'static str {
        match self {
            Arity::None => "takes no arguments",
            Arity::Between(1, 1) => "takes one argument",
            Arity::Between(2, 2) => "takes two arguments",
            Arity::Between(3, 3) => "takes three arguments",
            Arity::Between(1, 2) => "takes one or two arguments",
            Arity::Between(2, 3) => "takes two or three arguments",
            Arity::Between(1, 3) => "takes one, two or three arguments",
            Arity::Between(..) => "takes a fixed number of arguments",
            Arity::OneOrThree => "takes one or three arguments",
            Arity::AtLeast(1) => "requires at least one argument",
            Arity::AtLeast(_) => "requires at least two arguments",
            Arity::Flag => "must be On or Off",
            Arity::Raw | Arity::Section => "reads its own arguments",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Arity::None => "none",
            Arity::Between(1, 1) => "1",
            Arity::Between(2, 2) => "2",
            Arity::Between(3, 3) => "3",
            Arity::Between(1, 2) => "1-2",
            Arity::Between(2, 3) => "2-3",
            Arity::Between(1, 3) => "1-3",
            Arity::Between(..) => "n",
            Arity::OneOrThree => "1|3",
            Arity::AtLeast(1) => "1+",
            Arity::AtLeast(_) => "2+",
            Arity::Flag => "flag",
            Arity::Raw => "raw",
            Arity::Section => "section",
        }
    }
}

impl Serialize for Arity {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}
