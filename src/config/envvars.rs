//! Reading Debian's `envvars` file as data.
//!
//! `apache2ctl` sources `/etc/apache2/envvars` before starting Apache, and Debian's
//! apache2.conf relies on it (`${APACHE_LOG_DIR}`, `${APACHE_RUN_USER}`).  lighten does
//! not run shell: it takes the plain `export NAME=value` / `NAME=value` assignments at the
//! top level, substitutes `$NAME` / `${NAME}` from earlier ones, and computes `SUFFIX` the
//! way the file does for multi-instance setups (`/etc/apache2-NAME`).

/// Assignments in file order.
pub fn parse(text: &str, config_dir: &str) -> Vec<(String, String)> {
    let mut vars: Vec<(String, String)> = Vec::new();
    let dir_name = config_dir.trim_end_matches('/').rsplit('/').next().unwrap_or("");
    let suffix = dir_name.strip_prefix("apache2-").map(|s| format!("-{s}")).unwrap_or_default();
    vars.push(("SUFFIX".to_string(), suffix));
    let mut depth = 0usize;
    for line in text.lines() {
        let line = line.trim();
        let first = line.split_whitespace().next().unwrap_or("");
        match first {
            "if" | "case" | "for" | "while" => depth += 1,
            "fi" | "esac" | "done" => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > 0 || line.starts_with('#') {
            continue;
        }
        let assignment = line.strip_prefix("export ").unwrap_or(line).trim();
        let Some((name, value)) = assignment.split_once('=') else { continue };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let value = expand(unquote(value.trim()), &vars);
        vars.retain(|(n, _)| n != name);
        vars.push((name.to_string(), value));
    }
    vars.retain(|(n, _)| n != "SUFFIX");
    vars
}

fn unquote(v: &str) -> &str {
    for q in ['\'', '"'] {
        if let Some(inner) = v.strip_prefix(q).and_then(|r| r.strip_suffix(q)) {
            return inner;
        }
    }
    v
}

fn expand(value: &str, vars: &[(String, String)]) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let (name, tail) = if let Some(body) = after.strip_prefix('{') {
            match body.find('}') {
                Some(end) => (&body[..end], &body[end + 1..]),
                None => ("", after),
            }
        } else {
            let end = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        if name.is_empty() {
            out.push('$');
            rest = after;
            continue;
        }
        if let Some((_, v)) = vars.iter().rev().find(|(n, _)| n == name) {
            out.push_str(v);
        }
        rest = tail;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_debians_file() {
        let text = "unset HOME\nif [ x ] ; then\n\tSUFFIX=\"-x\"\nelse\n\tSUFFIX=\nfi\n\
                    export APACHE_RUN_USER=www-data\nexport APACHE_LOG_DIR=/var/log/apache2$SUFFIX\n\
                    #export APACHE_ARGUMENTS=''\nexport LANG=C\nexport LANG\n";
        let v = parse(text, "/etc/apache2");
        assert_eq!(
            v,
            [
                ("APACHE_RUN_USER".to_string(), "www-data".to_string()),
                ("APACHE_LOG_DIR".to_string(), "/var/log/apache2".to_string()),
                ("LANG".to_string(), "C".to_string()),
            ]
        );
        let v = parse(text, "/etc/apache2-two");
        assert_eq!(v[1].1, "/var/log/apache2-two");
    }
}
