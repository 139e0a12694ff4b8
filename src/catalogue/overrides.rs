//! `AllowOverride` classes: the five groups of directives a .htaccess file may be allowed.
//!
//! Follows <https://httpd.apache.org/docs/2.4/mod/core.html#allowoverride>.  A directive
//! whose catalogue entry says `All` is admitted whenever AllowOverride is not `None`
//! (`<IfModule>`, `<Files>`, ...).

use serde::{Serialize, Serializer};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OverrideClass {
    AuthConfig,
    FileInfo,
    Indexes,
    Limit,
    Options,
}

impl OverrideClass {
    pub const ALL: [OverrideClass; 5] = [
        OverrideClass::AuthConfig,
        OverrideClass::FileInfo,
        OverrideClass::Indexes,
        OverrideClass::Limit,
        OverrideClass::Options,
    ];

    pub fn name(self) -> &'static str {
        match self {
            OverrideClass::AuthConfig => "AuthConfig",
            OverrideClass::FileInfo => "FileInfo",
            OverrideClass::Indexes => "Indexes",
            OverrideClass::Limit => "Limit",
            OverrideClass::Options => "Options",
        }
    }

    pub fn parse(s: &str) -> Option<OverrideClass> {
        OverrideClass::ALL.into_iter().find(|c| c.name().eq_ignore_ascii_case(s))
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// A set of override classes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Overrides(u8);

impl Overrides {
    pub const NONE: Overrides = Overrides(0);
    pub const ALL: Overrides = Overrides(0b11111);

    pub fn of(classes: &[OverrideClass]) -> Overrides {
        Overrides(classes.iter().fold(0, |acc, c| acc | c.bit()))
    }

    pub fn contains(self, c: OverrideClass) -> bool {
        self.0 & c.bit() != 0
    }

    pub fn insert(&mut self, c: OverrideClass) {
        self.0 |= c.bit();
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn intersects(self, other: Overrides) -> bool {
        self.0 & other.0 != 0
    }

    pub fn classes(self) -> impl Iterator<Item = OverrideClass> {
        OverrideClass::ALL.into_iter().filter(move |c| self.contains(*c))
    }

    /// The catalogue column: `-` (not in .htaccess), `All`, or `AuthConfig+Limit`.
    pub fn parse_column(s: &str) -> Option<Overrides> {
        match s {
            "-" | "" => None,
            "All" => Some(Overrides::ALL),
            list => {
                Some(Overrides::of(&list.split('+').filter_map(OverrideClass::parse).collect::<Vec<_>>()))
            }
        }
    }
}

impl std::fmt::Display for Overrides {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if *self == Overrides::ALL {
            return f.write_str("All");
        }
        if self.is_empty() {
            return f.write_str("None");
        }
        let names: Vec<&str> = self.classes().map(|c| c.name()).collect();
        f.write_str(&names.join(" "))
    }
}

impl Serialize for Overrides {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.classes().map(|c| c.name()))
    }
}
