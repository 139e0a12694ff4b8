//! Apache's access logs in lighttpd: a `CustomLog`'s format (`LogFormat`) as
//! `accesslog.format`, and where the file goes.
//!
//! What each directive means in lighttpd 1.4.69 was measured, not read: one request to an
//! Apache and a lighttpd writing the same format side by side (see ARCHITECTURE.md). They
//! write the same for `%h %l %u %t %r %s %>s %b %B %I %a %A %H %m %U %X %k %f` and
//! `%{...}i %{...}o %{...}e %{...}C %{c}a %{...}n`; `%O`, `%D` and `%T` have the same
//! meaning (byte and time counts, which differ between any two servers). `%v` and `%p` are
//! Apache's canonical name and port, which the conversion knows: they are written as
//! text. lighttpd writes `%q` without its `?`, `%V` with the port, nothing for `%P`, and
//! refuses `%L %R %S %^ti`, a status condition (`%400,501{...}i`) and a second time
//! specifier: each of those is reported.

/// An Apache log format in lighttpd's words, and what could not be carried.
#[derive(Debug, PartialEq, Eq)]
pub struct Format {
    pub lighttpd: String,
    /// Each specifier written differently or left out, in Apache's words, with why.
    pub lost: Vec<String>,
}

/// `apache` (a `LogFormat` string, quotes already removed) for a host whose canonical name
/// and port are `name` and `port`.
pub fn format(apache: &str, name: &str, port: u16) -> Format {
    let mut out = String::new();
    let mut lost = Vec::new();
    let mut times = 0;
    let literal = |s: &str| s.replace('%', "%%");
    let mut rest = apache;
    while let Some(i) = rest.find('%') {
        out.push_str(&rest[..i]);
        let spec = &rest[i + 1..];
        // modifiers: `<` / `>` (first or last request of a redirect chain), `!400,501`
        let mut j = 0;
        let b = spec.as_bytes();
        let mut condition = false;
        let mut final_status = false;
        while j < b.len()
            && (b[j] == b'<' || b[j] == b'>' || b[j] == b'!' || b[j] == b',' || b[j].is_ascii_digit())
        {
            if b[j] == b'>' || b[j] == b'<' {
                final_status = true;
            } else {
                condition = true;
            }
            j += 1;
        }
        let (arg, after) = if spec[j..].starts_with('{') {
            match spec[j + 1..].find('}') {
                Some(k) => (Some(&spec[j + 1..j + 1 + k]), j + 1 + k + 1),
                None => (None, spec.len()),
            }
        } else {
            (None, j)
        };
        let Some(letter) = spec[after..].chars().next() else {
            // a lone `%` at the end: Apache writes it as it is
            out.push_str("%%");
            rest = "";
            break;
        };
        let whole = &rest[i..i + 1 + after + letter.len_utf8()];
        rest = &rest[i + 1 + after + letter.len_utf8()..];
        if condition {
            lost.push(format!("{whole}: lighttpd has no status condition; it is written for every status"));
        }
        let keep = |out: &mut String| match arg {
            Some(a) => out.push_str(&format!("%{{{a}}}{letter}")),
            None => out.push_str(&format!("%{letter}")),
        };
        match letter {
            '%' => out.push_str("%%"),
            's' if final_status => out.push_str("%>s"),
            'h' | 'l' | 'u' | 'r' | 's' | 'b' | 'B' | 'I' | 'O' | 'A' | 'H' | 'm' | 'U' | 'X' | 'k' | 'f'
            | 'D' => keep(&mut out),
            'a' if arg.is_none() || arg == Some("c") => keep(&mut out),
            'i' | 'o' | 'e' | 'C' | 'n' if arg.is_some() => keep(&mut out),
            'T' if arg.is_none() || matches!(arg, Some("s" | "ms" | "us")) => keep(&mut out),
            't' => {
                times += 1;
                let plain = match arg {
                    None => true,
                    Some(a) => !a.starts_with("begin:") && !a.starts_with("end:") && !a.contains("sec"),
                };
                if times > 1 {
                    lost.push(format!("{whole}: lighttpd takes one time specifier per log; written as -"));
                    out.push('-');
                } else if plain {
                    keep(&mut out);
                } else {
                    lost.push(format!("{whole}: written as lighttpd's request time, %t"));
                    out.push_str("%t");
                }
            }
            'v' => out.push_str(&literal(name)),
            'p' if matches!(arg, None | Some("canonical")) => out.push_str(&port.to_string()),
            'p' if matches!(arg, Some("local" | "remote")) => keep(&mut out),
            'q' => {
                lost.push(format!("{whole}: lighttpd writes the query string without its '?'"));
                out.push_str("%q");
            }
            'V' => {
                lost.push(format!(
                    "{whole}: lighttpd writes the Host with its port when the client sent one"
                ));
                out.push_str("%V");
            }
            _ => {
                lost.push(format!("{whole}: lighttpd has no such field; written as -"));
                out.push('-');
            }
        }
    }
    out.push_str(rest);
    Format { lighttpd: out, lost }
}

/// Where lighttpd writes an access log Apache writes to `target` (a file, or `|program`).
/// With `apache_paths` (a conversion for the server itself) it is Apache's own file or
/// program; otherwise (a copy read through --sysroot, a sandbox, lighten's stand-in
/// defaults) a file in the runtime folder named after Apache's.
pub fn place(target: &str, runtime_dir: &str, apache_paths: bool) -> String {
    if apache_paths && (target.starts_with('/') || target.starts_with('|')) {
        return target.to_string();
    }
    let name: String = target
        .trim_start_matches('|')
        .split_whitespace()
        .next()
        .unwrap_or("access.log")
        .trim_matches('/')
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_' { c } else { '_' })
        .collect();
    format!("{runtime_dir}/access-{name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_usual_formats_carry_over_exactly() {
        // Debian's combined, Plesk's plesklog
        let combined = r#"%h %l %u %t "%r" %>s %O "%{Referer}i" "%{User-Agent}i""#;
        assert_eq!(format(combined, "example.test", 80), Format { lighttpd: combined.into(), lost: vec![] });
        // vhost_combined: the name and port are the vhost's, as text
        let f = format("%v:%p %h %l %u %t \"%r\" %>s %O", "shop.example", 443);
        assert_eq!(f.lighttpd, "shop.example:443 %h %l %u %t \"%r\" %>s %O");
        assert!(f.lost.is_empty());
        assert_eq!(format("100%% %{ms}T %D", "a", 80).lighttpd, "100%% %{ms}T %D");
    }

    #[test]
    fn what_differs_is_said() {
        let f = format("%h %q %V %P %L %400,501{User-agent}i %t %{%Y}t", "a%b", 80);
        assert_eq!(f.lighttpd, "%h %q %V - - %{User-agent}i %t -");
        assert_eq!(f.lost.len(), 6, "{:?}", f.lost);
        assert!(f.lost[0].starts_with("%q: "), "{:?}", f.lost);
        assert_eq!(format("%v", "a%b", 80).lighttpd, "a%%b");
        assert_eq!(format("%{begin:%d}t", "a", 80).lighttpd, "%t");
        assert_eq!(format("end %", "a", 80).lighttpd, "end %%");
    }

    #[test]
    fn a_log_is_apaches_own_only_for_the_server_itself() {
        assert_eq!(place("/var/log/apache2/access.log", "/run/l", true), "/var/log/apache2/access.log");
        assert_eq!(place("|/usr/bin/rotatelogs /x 86400", "/run/l", true), "|/usr/bin/rotatelogs /x 86400");
        assert_eq!(
            place("/var/log/apache2/access.log", "/run/l", false),
            "/run/l/access-var_log_apache2_access.log"
        );
        assert_eq!(place("logs/access_log", "/run/l", true), "/run/l/access-logs_access_log");
        assert_eq!(place("|/usr/bin/rotatelogs /x", "/run/l", false), "/run/l/access-usr_bin_rotatelogs");
    }
}
