//! The sites offered for migration: the virtual hosts grouped by ServerName, because a
//! hosting server writes one `<VirtualHost>` per address and port for the same domain
//! (Plesk: one for :80 and one for :443) and an admin moves domains, not blocks.

use crate::model::{Model, vhost::name_matches};
use crate::source::SourceMap;

/// One site: every enabled virtual host with the same ServerName (a vhost without one is
/// a site of its own).
#[derive(Clone, Debug)]
pub struct Site {
    pub name: Option<String>,
    pub aliases: Vec<String>,
    /// Indices into `Model::vhosts`.
    pub vhosts: Vec<usize>,
    /// `203.0.113.10:443 tls`, one per address of each vhost.
    pub addresses: Vec<String>,
    pub document_roots: Vec<String>,
    /// `file:line` of the first vhost.
    pub at: String,
}

impl Site {
    /// How the list and the questions name it.
    pub fn title(&self) -> String {
        self.name.clone().unwrap_or_else(|| format!("(no ServerName, {})", self.at))
    }

    /// Whether `--vhost NAME` means this site: its ServerName or a ServerAlias (wildcards
    /// as Apache matches them), without regard to case.
    pub fn answers_to(&self, name: &str) -> bool {
        self.name.iter().chain(&self.aliases).any(|n| n.eq_ignore_ascii_case(name) || name_matches(n, name))
    }

    /// The list entry: names, addresses, document root, where it is written; on one line
    /// when `compact` (a server of many sites), else the names and addresses first and the
    /// rest on lines below.
    pub fn describe(&self, compact: bool) -> Vec<String> {
        let mut head = format!("{}  on {}", self.title(), self.addresses.join(", "));
        let mut rest = Vec::new();
        if !self.aliases.is_empty() {
            rest.push(format!("aliases: {}", self.aliases.join(", ")));
        }
        let root = if self.document_roots.is_empty() {
            String::new()
        } else {
            format!("root: {}  ", self.document_roots.join(", "))
        };
        rest.push(format!("{root}({})", self.at));
        if compact {
            head.push_str(&format!("  {}", rest.join("  ")));
            return vec![head];
        }
        std::iter::once(head).chain(rest).collect()
    }

    /// The short form for a checklist item.
    pub fn item(&self) -> String {
        format!("{}  [{}]", self.title(), self.addresses.join(", "))
    }
}

/// The sites of `model`, in the order of their first virtual host.
pub fn sites(model: &Model, sources: &SourceMap) -> Vec<Site> {
    let mut out: Vec<Site> = Vec::new();
    for (i, v) in model.vhosts.iter().enumerate().filter(|(_, v)| v.scope.enabled) {
        let key = v.server_name.as_ref().map(|n| n.to_ascii_lowercase());
        let existing = key.as_ref().and_then(|k| {
            out.iter_mut().find(|s| s.name.as_ref().is_some_and(|n| n.eq_ignore_ascii_case(k)))
        });
        let site = match existing {
            Some(s) => s,
            None => {
                out.push(Site {
                    name: v.server_name.clone(),
                    aliases: Vec::new(),
                    vhosts: Vec::new(),
                    addresses: Vec::new(),
                    document_roots: Vec::new(),
                    at: sources.line_ref(v.scope.at),
                });
                out.last_mut().expect("just pushed")
            }
        };
        site.vhosts.push(i);
        for a in &v.aliases {
            if !site.aliases.iter().any(|x| x.eq_ignore_ascii_case(a)) {
                site.aliases.push(a.clone());
            }
        }
        for a in &v.addresses {
            let addr = format!("{}{}", a.key(), if v.tls { " tls" } else { "" });
            if !site.addresses.contains(&addr) {
                site.addresses.push(addr);
            }
        }
        if let Some(d) = &v.document_root
            && !site.document_roots.contains(d)
        {
            site.document_roots.push(d.clone());
        }
    }
    out
}

/// The sites `--vhost` names, in list order; an error names what matched nothing.
pub fn pick(sites: &[Site], names: &[String]) -> Result<Vec<usize>, String> {
    let mut picked = Vec::new();
    for n in names {
        let hits: Vec<usize> = (0..sites.len()).filter(|&i| sites[i].answers_to(n)).collect();
        if hits.is_empty() {
            let all: Vec<String> = sites.iter().map(Site::title).collect();
            return Err(format!(
                "--vhost {n}: no site has this name or alias; the sites are: {}",
                all.join(", ")
            ));
        }
        picked.extend(hits);
    }
    picked.sort_unstable();
    picked.dedup();
    Ok(picked)
}

/// Keeps only the sites `--vhost` names (`convert`, `watch`, `verify`, `bench --compare`):
/// the model as if the other virtual hosts were not configured. No names keeps every site.
pub fn keep_named(model: &mut Model, sources: &SourceMap, names: &[String]) -> Result<(), String> {
    if names.is_empty() {
        return Ok(());
    }
    let sites = sites(model, sources);
    let picked = pick(&sites, names)?;
    let keep: Vec<usize> = picked.iter().flat_map(|&i| sites[i].vhosts.iter().copied()).collect();
    model.keep_vhosts(&keep);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{self, LoadOptions};
    use crate::source::Sysroot;

    #[test]
    fn plesk_domains_are_one_site_each_with_every_address() {
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/plesk");
        let opts = LoadOptions { sysroot: Sysroot::at(&root), ..LoadOptions::default() };
        let mut cfg = config::load(&root.join("var/www/vhosts"), &opts).unwrap();
        let (model, _) = crate::model::build(&mut cfg);
        let s = sites(&model, &cfg.sources);
        let titles: Vec<String> = s.iter().map(Site::title).collect();
        assert_eq!(
            titles,
            [
                "default",
                "default-203_0_113_10",
                "default-2001_db8__10",
                "blog.example",
                "shop.example",
                "static.example"
            ]
        );
        let shop = &s[4];
        assert_eq!(shop.vhosts.len(), 2);
        assert_eq!(shop.addresses, ["203.0.113.10:443 tls", "203.0.113.10:80"]);
        assert!(shop.aliases.contains(&"www.shop.example".to_string()));
        assert_eq!(pick(&s, &["WWW.shop.example".into(), "blog.example".into()]), Ok(vec![3, 4]));
        let err = pick(&s, &["nope.example".into()]).unwrap_err();
        assert!(err.contains("--vhost nope.example") && err.contains("static.example"), "{err}");
    }
}
