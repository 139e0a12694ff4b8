//! The site-only step: an .htaccess edit in one account of a big server converts that
//! account alone and puts only its own files in force, in tens of milliseconds instead of
//! the seconds a whole server takes; an edit of the account's own Apache files (its
//! vhost.conf) does the same after reading the configuration again ([`Job::step_config_sites`]).
//!
//! The last whole conversion stays in memory ([`Base`]: the configuration read, its model,
//! the digest of each Lua file written). On a change to per-directory files only, the
//! changed paths are read again into the model (`model::reread`), the sites reaching them
//! are converted alone twice, as they were and as they are now (the same conversion
//! `convert --vhost` makes), and the difference is what is written, provided it is made
//! only of files the output holds exactly as the site's conversion made them before: the
//! site's own compiled modules, its entries in the .htaccess safety net's table
//! (lua/lighten_htaccess.lua), the site's host blocks in lighttpd.conf and the modules
//! they load ([`splice_hosts`]), lua/realm.lua when the first password area brings it,
//! lua/lighten_re.lua when the first regex no plain test decides does, the parts of
//! lua/lighten_core.lua and lua/lighten_plans.lua the site newly needs (`translate::runtime`), and
//! the output's identity (lua/lighten_output.lua, from the kept digests). Anything else
//! (the rest of lighttpd.conf, a module another site shares, the interpreter's data, a
//! link on the way, a site's names or addresses) is a whole step. report.md and report.json are
//! brought up to date by the whole conversion watch runs once the folder is quiet, which
//! also confirms the site-only steps: it must find nothing else to write.

use super::{Job, Step};
use crate::config::Config;
use crate::model::{Model, Reread};
use crate::translate::{self, Conversion};
use crate::watch::{self, Outcome, Record};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

/// What the output in force was made from.
pub struct Base {
    pub cfg: Config,
    pub model: Model,
    /// Each Lua file of the output and its digest (`translate::lua_digest`), in the
    /// output's order.
    pub lua: Vec<(PathBuf, u64)>,
    /// What a change to the configuration's files compares the model read again with:
    /// made with the base, after a whole step (no edit waits for it then: about 0.25 s
    /// for 1,000 accounts), and kept while the model stays (`None` after a site-only step
    /// for .htaccess files, which changes the model in place; made again when needed).
    pub prints: Option<crate::model::Prints>,
    /// What the runtime files in force are cut to, module by module.
    pub runtime: translate::runtime::Runtime,
}

impl Base {
    pub fn new(cfg: Config, model: Model, conv: &Conversion, out_dir: &Path) -> Base {
        let lua = conv
            .files
            .iter()
            .filter(|(rel, _)| rel.extension().is_some_and(|e| e == "lua") && rel.as_os_str() != IDENTITY)
            .map(|(rel, text)| (rel.clone(), translate::lua_digest(rel, text, out_dir)))
            .collect();
        let prints = Some(model.prints());
        Base { cfg, model, lua, prints, runtime: conv.runtime.clone() }
    }
}

/// The files a site-only step takes care of itself (the table and the identity), or leaves
/// to the whole conversion that follows (the reports).
const SAFETY_NET: &str = "lua/lighten_htaccess.lua";
const IDENTITY: &str = "lua/lighten_output.lua";

/// What a site-only step writes: the files (the identity last), and each Lua file of the
/// output with its digest once they are written (kept in [`Base`] after the write).
struct Put {
    files: Vec<(PathBuf, String)>,
    lua: Vec<(PathBuf, u64)>,
    runtime: translate::runtime::Runtime,
}
use crate::watch::REPORTS;

/// Whether `rel` is one of the reports (written by whole conversions only).
pub fn is_report(rel: &Path) -> bool {
    REPORTS.iter().any(|r| rel.as_os_str() == *r)
}

impl Job {
    /// The site-only step for `changed` (per-directory files and folders only). `Err` says
    /// why only a whole step is exact here; the base is then no longer the output's
    /// (`model::reread` may have changed it) and must be dropped.
    pub(super) fn step_sites(
        &self,
        base: &mut Base,
        changed: &[PathBuf],
        why: Vec<watch::Why>,
        t0: Instant,
        wall: SystemTime,
    ) -> Result<Step, String> {
        let ms = |d: std::time::Duration| d.as_millis() as u64;
        let mut record = Record::new(changed, why, wall);
        record.outcome = Outcome::Unchanged;
        let named: Vec<String> = record.changed.clone();
        let sites = super::affected_sites(&base.cfg, &base.model, &named)
            .ok_or("the change concerns the main server or a site without a name")?;
        let keep = site_vhosts(&base.model, &sites.indices);
        record.sites = sites.primary.clone();
        let before = base.model.only_vhosts(&keep);
        base.prints = None;
        match crate::model::reread(&mut base.cfg, &mut base.model, changed) {
            Reread::Whole(why) => return Err(why),
            Reread::Same => {
                let put = self.restat(base, changed)?;
                record.convert_ms = ms(t0.elapsed());
                if !put.files.is_empty() {
                    record.written = put.files.iter().map(|(rel, _)| rel.display().to_string()).collect();
                    self.write(base, put)?;
                    record.reload = self.reload(false);
                    record.outcome = Outcome::Converted;
                    record.reason = Some(
                        "the same rules: the .htaccess safety net takes the files' new size and time".into(),
                    );
                }
                record.enforce_ms = ms(t0.elapsed());
                return Ok(Step { record, watched: None, inexact: false, base: None });
            }
            Reread::Changed { vhosts, main } => {
                if main || vhosts.iter().any(|v| !keep.contains(v)) {
                    return Err("the changed files are also read by another site".into());
                }
            }
        }
        let after = base.model.only_vhosts(&keep);
        let convs = self.convert_both((&base.cfg, &before), (&base.cfg, &after))?;
        self.put_sites(base, record, &after, convs, changed, changed, t0)
    }

    /// The site-only step for a change to the configuration's own files (an account's
    /// vhost.conf on a Plesk server, a site's file in sites-enabled): the configuration
    /// is read again, whole (reading a 1,000-account server costs a fraction of converting
    /// it), and when the new model differs from the kept one only in some sites' virtual
    /// hosts and the .htaccess files only they reach, or only they read the changed
    /// files (`Prints::changed_vhosts`), those sites are converted alone, as for an
    /// .htaccess edit. `Err` says why only a whole step is exact here; the base is then
    /// no longer the output's and must be dropped.
    pub(super) fn step_config_sites(
        &self,
        base: &mut Base,
        changed: &[PathBuf],
        why: Vec<watch::Why>,
        t0: Instant,
        wall: SystemTime,
    ) -> Result<Step, String> {
        let mut record = Record::new(changed, why, wall);
        record.outcome = Outcome::Unchanged;
        let (cfg, model) =
            super::super::convert::load_sites(&self.config, &self.load, &self.vhosts, self.color)
                .map_err(|e| format!("{e:#}"))?;
        // The files read that changed: by name, or by identity (Plesk includes an
        // account's httpd.conf through a symbolic link; the event names the file).
        let identity = |p: &Path| {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
        };
        let changed_ids: Vec<(u64, u64)> = changed.iter().filter_map(|c| identity(c)).collect();
        let ids = |cfg: &Config| -> Vec<crate::source::FileId> {
            cfg.sources
                .files()
                .filter(|(_, f)| {
                    let p = super::absolute(Path::new(&f.display)).unwrap_or_default();
                    changed.contains(&p) || identity(&p).is_some_and(|i| changed_ids.contains(&i))
                })
                .map(|(id, _)| id)
                .collect()
        };
        let read = t0.elapsed();
        let was = base.prints.take().unwrap_or_else(|| base.model.prints());
        let now = model.prints();
        let hit = was.changed_vhosts(&ids(&base.cfg), &now, &ids(&cfg))?;
        if std::env::var_os("LIGHTEN_WATCH_DEBUG").is_some() {
            eprintln!(
                "lighten watch: configuration read again in {} ms, compared in {} ms",
                read.as_millis(),
                (t0.elapsed() - read).as_millis()
            );
        }
        let keep = site_vhosts(&model, &hit);
        if keep != site_vhosts(&base.model, &hit) {
            return Err("the sites' virtual hosts are not the same ones".into());
        }
        // lighttpd.conf picks a host by these, in the `$HTTP["host"]` conditions around
        // the host blocks, which a site converted alone does not write (a lone host has
        // none), and the hook scripts find its Lua by its document root among the
        // others': a change there is the whole configuration's.
        let chosen_by = |v: &crate::model::VirtualHost| {
            format!(
                "{:?}",
                (
                    &v.addresses,
                    &v.server_name,
                    &v.aliases,
                    &v.default_for,
                    v.tls,
                    v.scope.enabled,
                    &v.document_root
                )
            )
        };
        if keep.iter().any(|&i| chosen_by(&base.model.vhosts[i]) != chosen_by(&model.vhosts[i])) {
            return Err("a site's names or addresses change (lighttpd.conf picks hosts by them)".into());
        }
        for &i in &keep {
            let name = model.vhosts[i].server_name.clone().ok_or("a site without a name changes")?;
            if !record.sites.contains(&name) {
                record.sites.push(name);
            }
        }
        let watched = super::Watched::of(&cfg, &model, self.ignored());
        if keep.is_empty() {
            // No site reads the change or converts differently: the output stays, and
            // the kept conversion is the new configuration's.
            base.cfg = cfg;
            base.model = model;
            base.prints = Some(now);
            record.convert_ms = t0.elapsed().as_millis() as u64;
            record.enforce_ms = record.convert_ms;
            return Ok(Step { record, watched: Some(watched), inexact: false, base: None });
        }
        let before = base.model.only_vhosts(&keep);
        let after = model.only_vhosts(&keep);
        let convs = self.convert_both((&base.cfg, &before), (&cfg, &after))?;
        // From here the kept conversion is the new configuration's (the caller drops it
        // when this step gives up).
        base.cfg = cfg;
        base.model = model;
        base.prints = Some(now);
        // (the .htaccess files are the same: the safety net's table keeps its entries,
        // and a table that changes is a whole step)
        let mut step = self.put_sites(base, record, &after, convs, changed, &[], t0)?;
        step.watched = Some(watched);
        Ok(step)
    }

    /// The end of a site-only step: the sites converted as they were and as they are
    /// (`convs`), the difference spliced into the output (the safety net's entries at or
    /// below `table_paths` from the new conversion), checked and written.
    #[allow(clippy::too_many_arguments)]
    fn put_sites(
        &self,
        base: &mut Base,
        mut record: Record,
        after: &Model,
        convs: (Conversion, Conversion),
        changed: &[PathBuf],
        table_paths: &[PathBuf],
        t0: Instant,
    ) -> Result<Step, String> {
        let ms = |d: std::time::Duration| d.as_millis() as u64;
        let (old, new) = convs;
        record.convert_ms = ms(t0.elapsed());
        record.counts = new.report.counts.clone();
        record.findings = watch::htaccess_errors(&base.cfg, changed);
        record.findings.extend(watch::findings_in(&new.report, changed));
        let inexact = new.report.inexact();
        let put = self.splice(base, &old, &new, table_paths)?;
        let done = |mut record: Record, outcome: Outcome, reason: Option<String>| {
            record.outcome = outcome;
            record.reason = reason;
            record.enforce_ms = ms(t0.elapsed());
            record
        };
        if put.files.is_empty() {
            let record = done(record, Outcome::Unchanged, None);
            return Ok(Step { record, watched: None, inexact, base: None });
        }
        if self.strict && inexact {
            return Err("--strict, and some directives are not exact".into());
        }
        // The same checks as a whole step's, on the site's own conversion.
        self.check_staged(&new, &put.files)?;
        let checked = self.check_answers(&base.cfg, after, &record.changed, false)?;
        record.checked = checked;
        record.written = put.files.iter().map(|(rel, _)| rel.display().to_string()).collect();
        // (the site's blocks changed in lighttpd.conf: lighttpd reads it again)
        let restart = put.files.iter().any(|(rel, _)| rel.as_os_str() == "lighttpd.conf");
        self.write(base, put)?;
        record.reload = self.reload(restart);
        let record = done(record, Outcome::Converted, None);
        Ok(Step { record, watched: None, inexact, base: None })
    }

    /// Writes the files (the identity last) and keeps the output's digests.
    fn write(&self, base: &mut Base, put: Put) -> Result<(), String> {
        crate::plan::apply(&self.out_dir, &put.files)
            .map_err(|e| format!("writing {}: {e:#}", self.out_dir.display()))?;
        base.lua = put.lua;
        base.runtime = put.runtime;
        Ok(())
    }

    /// The sites converted as they were and as they are, side by side.
    fn convert_both(
        &self,
        was: (&Config, &Model),
        now: (&Config, &Model),
    ) -> Result<(Conversion, Conversion), String> {
        let (old, new) = std::thread::scope(|s| {
            let old = s.spawn(|| self.convert(was.0, was.1));
            let new = self.convert(now.0, now.1);
            (old.join().map_err(|_| "converting the site as it was failed".to_string()), new)
        });
        Ok((old??, new?))
    }

    /// The site converted as `convert --vhost` converts it, for this output.
    fn convert(&self, cfg: &Config, model: &Model) -> Result<Conversion, String> {
        super::super::convert::prepare_model(
            cfg,
            model,
            &self.out_dir,
            &self.listen,
            Some(&self.runtime_dir),
            self.php.as_deref(),
            true,
        )
        .map(|p| p.conv)
        .map_err(|e| format!("{e:#}"))
    }

    /// The files to write, in the order they are written (modules, the safety net's
    /// table, the identity last), when the site's conversion changed only what the output
    /// holds exactly as the site's conversion made it before.
    fn splice(
        &self,
        base: &Base,
        old: &Conversion,
        new: &Conversion,
        changed: &[PathBuf],
    ) -> Result<Put, String> {
        let old_files: BTreeMap<&PathBuf, &String> = old.files.iter().map(|(p, t)| (p, t)).collect();
        let new_files: BTreeMap<&PathBuf, &String> = new.files.iter().map(|(p, t)| (p, t)).collect();
        let on_disk = |rel: &Path| std::fs::read_to_string(self.out_dir.join(rel)).ok();
        let mut out = Vec::new();
        let mut table = None;
        let mut conf = None;
        // (lua/realm.lua and lua/lighten_re.lua when the new conversion has them: counted in
        // the identity whether written or already there)
        let mut shared = Vec::new();
        // The output's runtime with the site's modules as they are now.
        let mut runtime = base.runtime.clone();
        for m in old.runtime.modules.keys() {
            runtime.modules.remove(m);
        }
        runtime.modules.extend(new.runtime.modules.clone());
        let mut runtime_files = Vec::new();
        for rel in old_files.keys().chain(new_files.keys()).collect::<std::collections::BTreeSet<_>>() {
            let (o, n) = (old_files.get(rel).copied(), new_files.get(rel).copied());
            let name = rel.to_string_lossy();
            if name == SAFETY_NET {
                // Always: both conversions read the files as they are now (a comment
                // added changes no module, but the file's size and time).
                let (Some(o), Some(n)) = (o, n) else {
                    return Err(format!("{name} comes or goes"));
                };
                let whole = on_disk(rel).ok_or(format!("{name} is not in the output"))?;
                let t =
                    splice_table(&whole, o, n, changed).ok_or(format!("{name} changes beyond its files"))?;
                table = (t != whole).then_some(t);
                continue;
            }
            if o == n || name == IDENTITY || REPORTS.contains(&name.as_ref()) {
                continue;
            }
            if name == "lighttpd.conf" {
                // Only the site's host blocks (its static lane, password areas, PHP, log)
                // and the modules they need may change there: they are replaced in the
                // whole file, and lighttpd restarted.
                let (Some(o), Some(n)) = (o, n) else {
                    return Err(format!("{name} comes or goes"));
                };
                let whole = on_disk(rel).ok_or(format!("{name} is not in the output"))?;
                let t = splice_hosts(&whole, o, n)
                    .ok_or(format!("{name} changes beyond the site's host blocks"))?;
                conf = Some(t);
                continue;
            }
            if *rel == &Path::new("lua").join(translate::conf::REALM_FILE) {
                // The raw-URL script every password area names, the same for all, which the
                // site's first password area brings (written unless the output holds it:
                // a whole conversion leaves the files it no longer makes). Whether the
                // output still needs it when the site's last area goes depends on the
                // other sites: a whole step.
                let Some(n) = n else {
                    return Err(format!("{name} goes with the site's last password area"));
                };
                if on_disk(rel).as_deref() != Some(n.as_str()) {
                    out.push(((*rel).clone(), n.clone()));
                }
                shared.push(((*rel).clone(), n.clone()));
                continue;
            }
            if let Some(template) = translate::runtime::template_of(rel) {
                // lighten_core.lua or lighten_plans.lua, cut to the parts the output's
                // modules name: worked out again with the site's modules replaced, as the
                // whole conversion would (written before the modules: a new module never
                // runs on a runtime without its parts). Another lighten's copy is a whole
                // step.
                let whole = on_disk(rel).ok_or(format!("{name} is not in the output"))?;
                let kept = translate::runtime::kept(template, &whole);
                if translate::runtime::cut(template, &kept) != whole {
                    return Err(format!("{name} in the output is not this lighten's"));
                }
                let parts = runtime.parts_of(template);
                if parts != kept {
                    runtime_files.push(((*rel).clone(), translate::runtime::cut(template, &parts)));
                }
                continue;
            }
            if name == "lua/lighten_re.lua" {
                // PCRE2, which the output needs while one module (or the interpreter) does:
                // written unless the output has it; when no module needs it any more, it
                // would leave the output's identity, which a whole step takes care of.
                if !runtime.re() {
                    return Err(format!("{name} goes with the output's last regex"));
                }
                let text = translate::RE;
                if on_disk(rel).as_deref() != Some(text) {
                    runtime_files.push(((*rel).clone(), text.to_string()));
                }
                shared.push(((*rel).clone(), text.to_string()));
                continue;
            }
            let (Some(o), Some(n)) = (o, n) else {
                return Err(format!("{name} comes or goes"));
            };
            let own_module = rel.parent() == Some(Path::new("lua"))
                && rel.extension().is_some_and(|e| e == "lua")
                && !translate::is_runtime(rel)
                && base.lua.iter().any(|(r, _)| r == *rel);
            if !own_module {
                return Err(format!("{name} changes"));
            }
            if on_disk(rel).as_deref() != Some(o.as_str()) {
                return Err(format!("{name} in the output is not the site's alone"));
            }
            out.push(((*rel).clone(), n.clone()));
        }
        if out.is_empty() && runtime_files.is_empty() && table.is_none() && conf.is_none() {
            return Ok(Put { files: out, lua: base.lua.clone(), runtime });
        }
        out.splice(0..0, runtime_files);
        out.extend(table.map(|t| (PathBuf::from(SAFETY_NET), t)));
        out.extend(conf.map(|t| (PathBuf::from("lighttpd.conf"), t)));
        let order: Vec<&PathBuf> = new.files.iter().map(|(r, _)| r).collect();
        self.with_identity(base, out, shared, &order, runtime)
    }

    /// `files` followed by the output's new identity, from the kept digests: those of the
    /// files replaced recomputed, and `shared` (lua/realm.lua and lua/lighten_re.lua with
    /// their text, when the new conversion has them) among them, whether they are written
    /// or already there.
    fn with_identity(
        &self,
        base: &Base,
        mut files: Vec<(PathBuf, String)>,
        shared: Vec<(PathBuf, String)>,
        order: &[&PathBuf],
        runtime: translate::runtime::Runtime,
    ) -> Result<Put, String> {
        let identity = PathBuf::from(IDENTITY);
        let now = std::fs::read_to_string(self.out_dir.join(&identity)).ok();
        let kept = translate::output_id_of(base.lua.iter().map(|(_, d)| *d));
        if now.as_deref() != Some(translate::conf::output_file(&kept).as_str()) {
            return Err("the output is not the one watch wrote last".into());
        }
        let counted: Vec<(PathBuf, String)> = files.iter().cloned().chain(shared).collect();
        let lua = digests_with(&base.lua, &counted, order, &self.out_dir)
            .ok_or("a new Lua file has no place in the output's order")?;
        let id = translate::output_id_of(lua.iter().map(|(_, d)| *d));
        files.push((identity, translate::conf::output_file(&id)));
        Ok(Put { files, lua, runtime })
    }

    /// The same per-directory files saved again (or a folder without any made): the
    /// safety net's table takes their new size and time, if they changed.
    fn restat(&self, base: &Base, changed: &[PathBuf]) -> Result<Put, String> {
        let rel = PathBuf::from(SAFETY_NET);
        let whole =
            std::fs::read_to_string(self.out_dir.join(&rel)).map_err(|e| format!("{SAFETY_NET}: {e}"))?;
        let table =
            restat_table(&whole, changed).ok_or(format!("{SAFETY_NET}: an entry cannot be read again"))?;
        if table == whole {
            return Ok(Put { files: Vec::new(), lua: base.lua.clone(), runtime: base.runtime.clone() });
        }
        self.with_identity(base, vec![(rel, table)], Vec::new(), &[], base.runtime.clone())
    }
}

/// The vhosts of the sites `hit` names (a site is the vhosts of one ServerName: its http
/// and https hosts are converted together, as `--vhost` converts them). The same grouping
/// as `wizard::site::sites`, for only the sites hit: that one builds every site, in
/// quadratic time over a server's 2,000 vhosts, on the path of every edit.
fn site_vhosts(model: &Model, hit: &[usize]) -> Vec<usize> {
    let names: Vec<String> = hit
        .iter()
        .filter_map(|&i| model.vhosts[i].server_name.as_ref().map(|n| n.to_ascii_lowercase()))
        .collect();
    (0..model.vhosts.len())
        .filter(|&i| {
            hit.contains(&i)
                || (model.vhosts[i].scope.enabled
                    && model.vhosts[i]
                        .server_name
                        .as_ref()
                        .is_some_and(|n| names.contains(&n.to_ascii_lowercase())))
        })
        .collect()
}

/// The output's Lua files and their digests, in the output's order, once `files` are
/// written: the digest of each replaced recomputed, and a Lua file the output did not
/// count yet (lua/realm.lua, which the first password area brings) in its place: before
/// the first file that follows it in `order` (the new conversion's files, in the order
/// `translate::convert` writes every output's) and is counted. `None` when a new Lua
/// file is not in `order`.
fn digests_with(
    kept: &[(PathBuf, u64)],
    files: &[(PathBuf, String)],
    order: &[&PathBuf],
    out_dir: &Path,
) -> Option<Vec<(PathBuf, u64)>> {
    let mut lua = kept.to_vec();
    for (rel, text) in files.iter().filter(|(r, _)| r.extension().is_some_and(|e| e == "lua")) {
        // (lighten_output.lua, the identity itself, is not among them)
        if rel == Path::new(IDENTITY) {
            continue;
        }
        let d = translate::lua_digest(rel, text, out_dir);
        if let Some(slot) = lua.iter_mut().find(|(r, _)| r == rel) {
            slot.1 = d;
            continue;
        }
        let after = order.iter().position(|r| *r == rel)?;
        let at = order[after + 1..]
            .iter()
            .find_map(|next| lua.iter().position(|(r, _)| r == *next))
            .unwrap_or(lua.len());
        lua.insert(at, (rel.clone(), d));
    }
    Some(lua)
}

/// A host's block in a lighttpd.conf (`translate::conf`): from its title comment (the
/// line before its `server.document-root`) to the line before the brace that closes it.
struct HostBody<'a> {
    /// The title, without its indentation: `# vhost NAME (file:line)...`.
    title: &'a str,
    /// First line and line count.
    at: usize,
    len: usize,
    /// The title's indentation, and each line without it.
    indent: usize,
    lines: Vec<&'a str>,
}

fn host_bodies<'a>(lines: &[&'a str]) -> Vec<HostBody<'a>> {
    let indent_of = |l: &str| l.len() - l.trim_start().len();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < lines.len() {
        let (t, next) = (lines[i].trim_start(), lines[i + 1].trim_start());
        if !(t.starts_with("# ") && next.starts_with("server.document-root = ")) {
            i += 1;
            continue;
        }
        let indent = indent_of(lines[i]);
        let mut j = i + 1;
        while j < lines.len() && !lines[j].trim().is_empty() && indent_of(lines[j]) >= indent {
            j += 1;
        }
        out.push(HostBody {
            title: t,
            at: i,
            len: j - i,
            indent,
            lines: lines[i..j].iter().map(|l| &l[indent..]).collect(),
        });
        i = j;
    }
    out
}

/// The modules a `server.modules = ( "a", "b" )` line names.
fn modules_of(line: &str) -> Option<Vec<&str>> {
    let list = line.strip_prefix("server.modules = ( ")?.strip_suffix(" )")?;
    list.split(", ").map(|m| m.strip_prefix('"')?.strip_suffix('"')).collect()
}

/// `whole` with the host blocks the site's conversion changed (from `old` to `new`)
/// replaced, when nothing else of lighttpd.conf changed but the modules it loads, and
/// each block of the site in `whole` is as it was in `old` (the same vhost may have
/// more than one: the default `else` of its port, the IPv4 copy of an IPv6 listener).
/// A module the new blocks need is added to `whole`'s list, in the emitter's order
/// (`translate::conf::MODULES`); blocks that need fewer modules are not a splice. What
/// lighttpd.conf says of a host is the host's block alone: its static lane
/// (`translate::lane`), its password areas (`translate::realms`), its PHP and its log.
fn splice_hosts(whole: &str, old: &str, new: &str) -> Option<String> {
    let (ol, nl): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    let (ob, nb) = (host_bodies(&ol), host_bodies(&nl));
    if ob.len() != nb.len() || ob.iter().zip(&nb).any(|(o, n)| o.title != n.title) {
        return None;
    }
    // The rest of the file, the hosts' blocks and the modules aside, is the same.
    let rest = |lines: &[&str], bodies: &[HostBody]| -> Vec<String> {
        let mut keep: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        for b in bodies.iter().rev() {
            keep.splice(b.at..b.at + b.len, [format!("{}{}", " ".repeat(b.indent), b.title)]);
        }
        keep.retain(|l| !l.starts_with("server.modules = "));
        keep
    };
    if rest(&ol, &ob) != rest(&nl, &nb) {
        return None;
    }
    let mut lines: Vec<String> = whole.lines().map(str::to_string).collect();
    // (a vhost's block can be in the site's own conversion more than once too: the IPv4
    // copy of an IPv6 listener; its first one replaces them all)
    let mut replaced: Vec<(&HostBody, &HostBody)> = Vec::new();
    for (o, n) in ob.iter().zip(&nb) {
        if o.lines == n.lines {
            continue;
        }
        if let Some((po, pn)) = replaced.iter().find(|(po, _)| po.title == o.title) {
            if po.lines != o.lines || pn.lines != n.lines {
                return None;
            }
            continue;
        }
        replaced.push((o, n));
        let now: Vec<&str> = lines.iter().map(String::as_str).collect();
        let found: Vec<(usize, usize, usize)> = host_bodies(&now)
            .into_iter()
            .filter(|b| b.title == o.title)
            .map(|b| (b.lines == o.lines).then_some((b.at, b.len, b.indent)))
            .collect::<Option<_>>()?;
        if found.is_empty() {
            return None;
        }
        // Last first, so the earlier places stay where they are.
        for (at, len, indent) in found.into_iter().rev() {
            let body: Vec<String> = n.lines.iter().map(|l| " ".repeat(indent) + l).collect();
            lines.splice(at..at + len, body);
        }
    }
    // The modules the new blocks need.
    let module_line =
        |ls: &[&str]| ls.iter().find(|l| l.starts_with("server.modules = ")).map(|l| l.to_string());
    if module_line(&ol) != module_line(&nl) {
        let needed = modules_of(&module_line(&nl)?)?.into_iter().map(str::to_string).collect::<Vec<_>>();
        // A module the site's blocks no longer need may be another site's: whether the
        // output still loads it is the whole conversion's to say.
        if modules_of(&module_line(&ol)?)?.iter().any(|m| !needed.iter().any(|x| x == m)) {
            return None;
        }
        let at = lines.iter().position(|l| l.starts_with("server.modules = "))?;
        let have: Vec<String> = modules_of(&lines[at])?.into_iter().map(str::to_string).collect();
        let order = |m: &str| translate::conf::MODULES.iter().position(|(x, _)| *x == m);
        let mut all = have.clone();
        for m in needed {
            if !all.contains(&m) {
                all.push(m);
            }
        }
        if all.len() != have.len() {
            // (a module the emitter does not know: not a splice)
            let mut keyed: Vec<(usize, String)> =
                all.into_iter().map(|m| Some((order(&m)?, m))).collect::<Option<_>>()?;
            keyed.sort();
            let list: Vec<String> = keyed.into_iter().map(|(_, m)| format!("\"{m}\"")).collect();
            lines[at] = format!("server.modules = ( {} )", list.join(", "));
        }
    }
    let mut text = lines.join("\n");
    if whole.ends_with('\n') {
        text.push('\n');
    }
    Some(text)
}

/// The entries of a lighten_htaccess.lua `files` table: its text before them, each entry's
/// line by its file's path, and the text after them. `None` when an entry's path is
/// escaped (its order in the table could then differ from the generator's).
fn table_parts(text: &str) -> Option<(&str, BTreeMap<&str, &str>, &str)> {
    const OPEN: &str = "  files = {\n";
    const CLOSE: &str = "  },\n";
    let start = text.find(OPEN)? + OPEN.len();
    let len = text[start..].find(CLOSE)?;
    let mut entries = BTreeMap::new();
    for line in text[start..start + len].lines() {
        let key = line.trim_start().strip_prefix("[\"")?.split_once("\"] = ")?.0;
        if key.contains('\\') {
            return None;
        }
        entries.insert(key, line);
    }
    Some((&text[..start], entries, &text[start + len..]))
}

fn render_table(head: &str, entries: &BTreeMap<&str, String>, tail: &str) -> String {
    let mut out = head.to_string();
    for line in entries.values() {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(tail);
    out
}

/// Whether the file `key` names is one of `changed` or below one.
fn under_changed(key: &str, changed: &[PathBuf]) -> bool {
    changed.iter().any(|c| Path::new(key).starts_with(c))
}

/// lighten_htaccess.lua of the whole output with the entries of the files at or below
/// `changed` taken from `new` (the site's table as the site's conversion now makes it).
/// `None` when the site's table as it was (`old`) and `new` differ anywhere but in their
/// entries.
fn splice_table(whole: &str, old: &str, new: &str, changed: &[PathBuf]) -> Option<String> {
    let (head, entries, tail) = table_parts(whole)?;
    let (old_head, old_entries, old_tail) = table_parts(old)?;
    let (new_head, new_entries, new_tail) = table_parts(new)?;
    if old_head != new_head || old_tail != new_tail {
        return None;
    }
    // (the entries of files no change names are the same in both: a configuration change
    // that makes the site read other .htaccess files changes beyond them)
    let outside = |e: &BTreeMap<&str, &str>| -> Vec<(String, String)> {
        e.iter()
            .filter(|(k, _)| !under_changed(k, changed))
            .map(|(k, l)| (k.to_string(), l.to_string()))
            .collect()
    };
    if outside(&old_entries) != outside(&new_entries) {
        return None;
    }
    let mut out: BTreeMap<&str, String> = entries
        .into_iter()
        .filter(|(k, _)| !under_changed(k, changed))
        .map(|(k, l)| (k, l.to_string()))
        .collect();
    out.extend(
        new_entries.into_iter().filter(|(k, _)| under_changed(k, changed)).map(|(k, l)| (k, l.to_string())),
    );
    Some(render_table(head, &out, tail))
}

/// lighten_htaccess.lua of the whole output with the entries of the files at or below
/// `changed` as the files are now (the same files, saved again: their size or time
/// changed, nothing else). `None` when an entry cannot be read.
fn restat_table(whole: &str, changed: &[PathBuf]) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let (head, entries, tail) = table_parts(whole)?;
    let mut out = BTreeMap::new();
    for (k, line) in entries {
        if !under_changed(k, changed) {
            out.insert(k, line.to_string());
            continue;
        }
        let m = std::fs::metadata(k).ok()?;
        out.insert(k, format!("    [\"{k}\"] = \"{} {} {}\",", m.ino(), m.size(), m.mtime()));
    }
    Some(render_table(head, &out, tail))
}

#[cfg(test)]
mod tests {
    use super::{splice_hosts, splice_table};
    use std::path::PathBuf;

    fn table(files: &[(&str, &str)]) -> String {
        let mut s = String::from("return {\n  reads = {\n    [\"/\"] = false,\n  },\n  files = {\n");
        for (k, v) in files {
            s.push_str(&format!("    [\"{k}\"] = \"{v}\",\n"));
        }
        s + "  },\n}\n"
    }

    /// A host's block as translate::conf writes it, at `indent`.
    fn host(title: &str, inner: &str, indent: &str) -> String {
        let mut s = format!("{indent}# {title}\n{indent}server.document-root = \"/srv/{title}\"\n");
        for l in inner.lines() {
            s.push_str(&format!("{indent}{l}\n"));
        }
        s
    }

    #[test]
    fn a_sites_host_blocks_are_replaced_in_the_whole_conf() {
        let lane = |url: &str| {
            format!("$HTTP[\"url\"] =~ {url} {{\n  $HTTP[\"host\"] =~ \"h\" {{\n    x = 1\n  }}\n}}\n")
        };
        let auth =
            "auth.backend = \"htpasswd\"\n$HTTP[\"url\"] =~ \"^/a(?:/|$)\" {\n  auth.require = ( )\n}\n";
        let modules = |m: &str| format!("server.modules = ( \"mod_access\", {m}\"mod_magnet\" )\n");
        let modules_whole = "server.modules = ( \"mod_access\", \"mod_magnet\", \"mod_rewrite\" )\n";
        // A site converted alone: its one host at the socket's level.
        let site = |m: &str, inner: &str| {
            format!(
                "{}$SERVER[\"socket\"] == \"x\" {{\n{}}}\n",
                modules(m),
                host("vhost s (f:1)", inner, "  ")
            )
        };
        let whole = |inner: &str, m: &str| {
            format!(
                "{m}$SERVER[\"socket\"] == \"x\" {{\n  $HTTP[\"host\"] =~ \"r\" {{\n{}  }}\n  else $HTTP[\"host\"] =~ \"s\" {{\n{}  }}\n  else {{\n{}  }}\n}}\n",
                host("vhost r (f:9)", &lane("\"^/\""), "    "),
                host("vhost s (f:1)", inner, "    "),
                host("vhost r (f:9)", &lane("\"^/\""), "    "),
            )
        };
        // the lane changes
        let (old, new) = (lane("\"^/\""), lane("\"^/(?!x/)\""));
        let spliced = splice_hosts(&whole(&old, modules_whole), &site("", &old), &site("", &new)).unwrap();
        assert_eq!(spliced, whole(&new, modules_whole));
        // a password area comes, and with it the modules it needs (in the emitter's order)
        let with_auth = format!("{old}{auth}");
        let spliced = splice_hosts(
            &whole(&old, modules_whole),
            &site("", &old),
            &site("\"mod_auth\", \"mod_authn_file\", ", &with_auth),
        )
        .unwrap();
        assert_eq!(
            spliced,
            whole(
                &with_auth,
                "server.modules = ( \"mod_access\", \"mod_magnet\", \"mod_auth\", \"mod_authn_file\", \"mod_rewrite\" )\n"
            )
        );
        // the site's last password area goes: whether mod_auth stays is not the site's to say
        assert_eq!(
            splice_hosts(&spliced, &site("\"mod_auth\", \"mod_authn_file\", ", &with_auth), &site("", &old)),
            None
        );
        // The other host's blocks (its own, and the port's default `else`) are as they were.
        assert_eq!(spliced.matches("# vhost r (f:9)").count(), 2);
        // The site's own conversion with its block twice (the IPv4 copy of an IPv6
        // listener): both copies in the whole file are replaced, once.
        let twice = |inner: &str| {
            let one = site("", inner);
            let socket = one.split_once('\n').unwrap().1.to_string();
            format!("{one}{}", socket.replace("\"x\"", "\"x4\""))
        };
        let whole_twice = |inner: &str| {
            let w = whole(inner, modules_whole);
            let socket = w.split_once('\n').unwrap().1.to_string();
            format!("{w}{}", socket.replace("\"x\"", "\"x4\""))
        };
        assert_eq!(splice_hosts(&whole_twice(&old), &twice(&old), &twice(&new)).unwrap(), whole_twice(&new));
        // anything else changed: not a splice
        let other = site("", &new).replace("$SERVER[\"socket\"] == \"x\"", "$SERVER[\"socket\"] == \"y\"");
        assert_eq!(splice_hosts(&whole(&old, modules_whole), &site("", &old), &other), None);
        // the whole file's block is not the one the site's conversion made before
        assert_eq!(splice_hosts(&whole(auth, modules_whole), &site("", &old), &site("", &new)), None);
        // a block that is not in the whole file
        let elsewhere = |inner: &str| site("", inner).replace("vhost s (f:1)", "vhost t (f:2)");
        assert_eq!(splice_hosts(&whole(&old, modules_whole), &elsewhere(&old), &elsewhere(&new)), None);
    }

    #[test]
    fn the_site_entries_are_replaced_in_the_whole_table() {
        let whole =
            table(&[("/a/.htaccess", "1 2 3"), ("/b/.htaccess", "4 5 6"), ("/b/x/.htaccess", "7 8 9")]);
        let old = table(&[("/b/.htaccess", "4 5 6")]);
        let new = table(&[("/b/.htaccess", "4 9 6"), ("/b/y/.htaccess", "1 1 1")]);
        // /b/.htaccess edited, /b/x/.htaccess removed (the site's old table no longer
        // names it: it is gone), /b/y/.htaccess new
        let changed: Vec<PathBuf> =
            ["/b/.htaccess", "/b/x", "/b/y/.htaccess"].iter().map(PathBuf::from).collect();
        assert_eq!(
            splice_table(&whole, &old, &new, &changed).unwrap(),
            table(&[("/a/.htaccess", "1 2 3"), ("/b/.htaccess", "4 9 6"), ("/b/y/.htaccess", "1 1 1")])
        );
        // anything else differing is not the site's alone
        let other = new.replace("[\"/\"] = false", "[\"/\"] = true");
        assert_eq!(splice_table(&whole, &old, &other, &changed), None);
        let escaped = table(&[("/b/\\\"q/.htaccess", "1 1 1")]);
        assert_eq!(splice_table(&whole, &old, &escaped, &changed), None);
    }
}
