//! How many directives of each catalogue status the input holds: the first answer to
//! "how much of this site can lighten carry over".

use super::scope::Scope;
use super::{Htaccess, VirtualHost};
use crate::catalogue::Status;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, Serialize)]
pub struct Coverage {
    pub translated: usize,
    pub approximated: usize,
    pub ignored: usize,
    pub unsupported: usize,
    /// Not in the catalogue.
    pub unknown: usize,
    /// Inside false conditionals: Apache never sees them.
    pub disabled: usize,
    /// Enabled directives the catalogue marks unsupported or does not know, by name.
    pub unsupported_names: BTreeMap<String, usize>,
}

impl Coverage {
    /// The directives of the main server, the virtual hosts and the .htaccess files read.
    pub fn count(server: &Scope, vhosts: &[VirtualHost], htaccess: &[Htaccess]) -> Coverage {
        let mut c = Coverage::default();
        c.add_scope(server);
        for v in vhosts {
            c.add_scope(&v.scope);
        }
        for s in htaccess.iter().filter_map(|h| h.scope.as_ref()) {
            c.add_scope(s);
        }
        c
    }

    pub fn add_scope(&mut self, scope: &Scope) {
        scope.walk(&mut |s| {
            for d in &s.directives {
                if !d.enabled {
                    self.disabled += 1;
                    continue;
                }
                match d.status {
                    Some(Status::Translated) => self.translated += 1,
                    Some(Status::Approximated) => self.approximated += 1,
                    Some(Status::Ignored) => self.ignored += 1,
                    Some(Status::Unsupported) => {
                        self.unsupported += 1;
                        *self.unsupported_names.entry(d.name.to_string()).or_default() += 1;
                    }
                    None => {
                        self.unknown += 1;
                        *self.unsupported_names.entry(d.name.to_string()).or_default() += 1;
                    }
                }
            }
        });
    }

    pub fn total(&self) -> usize {
        self.translated + self.approximated + self.ignored + self.unsupported + self.unknown + self.disabled
    }
}
