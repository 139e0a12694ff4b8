//! Attacker variants of a request Apache refused (`lighten verify --attack`, and the
//! differential suites): the same target written the ways someone probing a freshly
//! migrated site writes it (percent-encoding, dot segments, doubled slashes, trailing
//! bytes, case, PATH_INFO, a `#` fragment, other methods, Host variants, a long segment,
//! an absolute-form target, HTTP/1.0 without Host). Each is sent byte for byte to both
//! servers; where Apache refuses the variant too, the converted site must not serve it
//! (fail-open).

use crate::eval::Request;
use crate::eval::request::Wire;

/// The variants of `req` in what it asks for, each with what it changed; none that
/// repeats `req` itself.
pub fn variants(req: &Request) -> Vec<(Request, &'static str)> {
    let mut out: Vec<(Request, &'static str)> = Vec::new();
    let path = req.path.as_str();
    let mut with_path = |p: String, what: &'static str| {
        if p != path && p.starts_with('/') {
            out.push((Request { path: p, ..req.clone() }, what));
        }
    };
    // The last name of the path and what comes before it ("/a/b" -> ("/a/", "b")).
    let trimmed = path.trim_end_matches('/');
    let cut = trimmed.rfind('/').map_or(0, |i| i + 1);
    let (head, last) = (&path[..cut], &trimmed[cut..]);
    let tail = &path[trimmed.len()..];
    if let Some(i) = last.find(|c: char| c.is_ascii_alphabetic()) {
        let b = last.as_bytes()[i];
        with_path(
            format!("{head}{}%{:02X}{}{tail}", &last[..i], b, &last[i + 1..]),
            "a letter percent-encoded",
        );
        with_path(
            format!("{head}{}%{:02x}{}{tail}", &last[..i], b, &last[i + 1..]),
            "a letter percent-encoded (lower-case hex)",
        );
    }
    if !last.is_empty() {
        with_path(format!("{head}{}{tail}", last.to_ascii_uppercase()), "the name upper-cased");
        with_path(format!("{head}./{last}{tail}"), "/./ before the name");
        with_path(format!("{head}x/../{last}{tail}"), "/x/../ before the name");
        with_path(format!("{head}/{last}{tail}"), "// before the name");
        with_path(
            format!("{}%2F{last}{tail}", head.trim_end_matches('/')),
            "the slash before the name as %2F",
        );
        with_path(format!("{trimmed}/"), "a trailing slash");
        with_path(format!("{trimmed}."), "a trailing dot");
        with_path(format!("{trimmed}%20"), "a trailing %20");
        with_path(format!("{trimmed}%00"), "a trailing %00");
        with_path(format!("{trimmed};x"), "a trailing ;x");
        with_path(format!("{trimmed}/extra"), "PATH_INFO after the name");
        with_path(format!("{trimmed}/extra.php"), "PATH_INFO ending .php after the name");
        with_path(format!("{head}{}{}{tail}", "a".repeat(300), last), "a name over 255 bytes");
    }
    with_path(format!("//{}", path.trim_start_matches('/')), "a doubled leading slash");
    with_path(format!("/#/..{path}"), "a # fragment before a dot segment");
    let mut push = |r: Request, what: &'static str| out.push((r, what));
    if req.method == "GET" {
        push(Request { method: "get".into(), ..req.clone() }, "the method in lower case");
        push(Request { method: "HEAD".into(), ..req.clone() }, "HEAD");
        push(Request { method: "POST".into(), ..req.clone() }, "POST");
        push(Request { method: "FOO".into(), ..req.clone() }, "an unknown method");
    }
    if let Some(h) = &req.host {
        let (name, port) = crate::model::server::split_host_port(h);
        let name = name.unwrap_or_else(|| h.clone());
        let default = if req.scheme == "https" { "443" } else { "80" };
        let port = port.unwrap_or(default);
        push(
            Request { host: Some(format!("{}:{port}", name.to_ascii_uppercase())), ..req.clone() },
            "the Host upper-cased",
        );
        push(
            Request { host: Some(format!("{name}.:{port}")), ..req.clone() },
            "the Host with a trailing dot",
        );
    }
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|(r, _)| seen.insert(r.to_line()));
    out
}

/// The variants of `req` that change how it goes on the wire rather than what it asks
/// for: an absolute-form target, HTTP/1.0 without Host (the address's default vhost in
/// both servers), and the Host header with a port the listener does not have (Apache
/// selects the vhost by name alone and, under `UseCanonicalName Off`, reports that port
/// as `SERVER_PORT`).  `host` is the Host header the request is sent with.
pub fn wire_variants(req: &Request, host: &str) -> Vec<(Request, &'static str)> {
    let (name, _) = crate::model::server::split_host_port(host);
    let name = name.unwrap_or_else(|| host.to_string());
    let default = if req.scheme == "https" { "443" } else { "80" };
    [
        (Wire::Absolute, "the target in absolute form"),
        (Wire::Http10NoHost, "HTTP/1.0 without a Host header"),
        (Wire::Host(format!("{name}:{default}")), "the Host with the scheme's default port"),
        (Wire::Host(format!("{name}:1")), "the Host with a port the server does not listen on"),
    ]
    .into_iter()
    .filter(|_| req.wire == Wire::Origin)
    .map(|(wire, what)| (Request { wire, ..req.clone() }, what))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_change_the_target_and_never_repeat_it() {
        let req = Request::parse_url("GET", "http://example.test:80/private/secret.txt").unwrap();
        let v = variants(&req);
        let lines: Vec<String> = v.iter().map(|(r, _)| r.to_line()).collect();
        assert!(lines.contains(&"GET http://example.test:80/private/%73ecret.txt".to_string()), "{lines:#?}");
        assert!(lines.contains(&"GET http://example.test:80/private/./secret.txt".to_string()), "{lines:#?}");
        assert!(lines.contains(&"GET http://example.test:80/private%2Fsecret.txt".to_string()), "{lines:#?}");
        assert!(
            lines.contains(&"GET http://example.test:80/private/secret.txt/extra".to_string()),
            "{lines:#?}"
        );
        assert!(lines.contains(&"GET http://EXAMPLE.TEST:80/private/secret.txt".to_string()), "{lines:#?}");
        assert!(lines.contains(&"GET http://example.test.:80/private/secret.txt".to_string()), "{lines:#?}");
        assert!(!lines.contains(&req.to_line()));
        let unique: std::collections::BTreeSet<&String> = lines.iter().collect();
        assert_eq!(unique.len(), lines.len());
        let wire: Vec<String> =
            wire_variants(&req, "example.test").into_iter().map(|(r, _)| r.to_line()).collect();
        assert_eq!(
            wire,
            [
                "GET http://example.test:80/private/secret.txt | (absolute-form)",
                "GET http://example.test:80/private/secret.txt | (HTTP/1.0, no Host)",
                "GET http://example.test:80/private/secret.txt | (Host: example.test:80)",
                "GET http://example.test:80/private/secret.txt | (Host: example.test:1)",
            ]
        );
        for line in &wire {
            assert_eq!(&Request::parse_line(line).unwrap().unwrap().to_line(), line);
        }
    }
}
