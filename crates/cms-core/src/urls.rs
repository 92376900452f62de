//! Public URLs of items, tags and authors, as static-site front ends build them, and the
//! checks on the URL-valued query parameters.
//!
//! Pretty URLs put the slug in the path (`/blog/hello`); the other form puts it in the
//! query (`/blog/?item=hello`, or `/post/index.php?item=hello` when the page path names a
//! file).

use crate::error::{CoreError, CoreResult};

/// A page path such as `/blog` or `/post/index.php` and whether URLs are pretty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PagePath {
    path: String,
    pretty: bool,
}

impl PagePath {
    /// A page path already known to be good (from the configuration).
    pub fn trusted(path: &str, pretty: bool) -> Self {
        Self { path: path.to_owned(), pretty }
    }

    /// Checks a page path sent by a client (`param` names it in messages): it must start
    /// with `/`, and carry no scheme, host, query, fragment, spaces or control characters.
    pub fn parse(param: &str, raw: &str, pretty: bool) -> CoreResult<Self> {
        let bad =
            |why: &str| CoreError::invalid(format!("{param} {raw:?} {why}; send a site path such as /blog"));
        if !raw.starts_with('/') {
            return Err(bad("must start with '/'"));
        }
        if raw.starts_with("//") {
            return Err(bad("must not start with '//' (that names another host)"));
        }
        if raw.chars().any(|c| c.is_whitespace() || c.is_control() || matches!(c, '?' | '#' | '\\')) {
            return Err(bad("must not contain spaces, control characters, '\\', '?' or '#'"));
        }
        Ok(Self { path: raw.to_owned(), pretty })
    }

    /// The URL of one page under this path: `{path}/{slug}` (pretty), else
    /// `{path}/?{key}={slug}`, or `{path}?{key}={slug}` when the path names a file.
    pub fn url(&self, key: &str, slug: &str) -> String {
        let base = self.path.trim_end_matches('/');
        if self.pretty {
            format!("{base}/{slug}")
        } else if self.names_a_file() {
            format!("{}?{key}={slug}", self.path)
        } else {
            format!("{base}/?{key}={slug}")
        }
    }

    /// `/post/index.php` names a file; `/blog` and `/blog/` name folders.
    fn names_a_file(&self) -> bool {
        !self.path.ends_with('/') && self.path.rsplit('/').next().is_some_and(|last| last.contains('.'))
    }
}

/// Parses a boolean given as a string (`pretty_urls`): `true`/`false`, `1`/`0`, `yes`/`no`.
pub fn parse_flag(param: &str, raw: Option<&str>, default: bool) -> CoreResult<bool> {
    match raw.map(|r| r.trim().to_ascii_lowercase()) {
        None => Ok(default),
        Some(value) => match value.as_str() {
            "" => Ok(default),
            "true" | "1" | "yes" => Ok(true),
            "false" | "0" | "no" => Ok(false),
            _ => Err(CoreError::invalid(format!("{param} must be true or false, got {value:?}"))),
        },
    }
}

/// Checks an absolute site URL sent by a client (`site_url`, `baseUrl`, `link`) and drops
/// a trailing `/`.
pub fn parse_site_url(param: &str, raw: &str) -> CoreResult<String> {
    let rest = raw.strip_prefix("https://").or_else(|| raw.strip_prefix("http://"));
    let host = rest.and_then(|r| r.split(['/', '?', '#']).next()).unwrap_or("");
    if host.is_empty() || raw.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(CoreError::invalid(format!(
            "{param} must be an absolute http(s) URL such as https://example.com, got {raw:?}"
        )));
    }
    Ok(raw.trim_end_matches('/').to_owned())
}

/// A positive whole number (`limit`), defaulting to `default` and capped at `max`.
pub fn parse_limit(param: &str, raw: Option<&str>, default: usize, max: usize) -> CoreResult<usize> {
    match raw.map(str::trim) {
        None | Some("") => Ok(default),
        Some(text) => match text.parse::<usize>() {
            Ok(n) if n >= 1 => Ok(n.min(max)),
            _ => {
                Err(CoreError::invalid(format!("{param} must be a whole number of 1 or more, got {text:?}")))
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretty_and_query_urls() {
        let url = |path: &str, pretty: bool| {
            PagePath::parse("page_path", path, pretty).unwrap().url("item", "hello")
        };
        assert_eq!(url("/blog", true), "/blog/hello");
        assert_eq!(url("/blog/", true), "/blog/hello");
        assert_eq!(url("/", true), "/hello");
        assert_eq!(url("/blog", false), "/blog/?item=hello");
        assert_eq!(url("/blog/", false), "/blog/?item=hello");
        assert_eq!(url("/", false), "/?item=hello");
        assert_eq!(url("/post/index.php", false), "/post/index.php?item=hello");
        assert_eq!(url("/post/index.php", true), "/post/index.php/hello");
        assert_eq!(url("/v1.2/docs/", false), "/v1.2/docs/?item=hello");
    }

    #[test]
    fn refuses_page_paths_that_leave_the_site() {
        for bad in
            ["blog", "//evil.example/x", "https://evil.example", "/a b", "/a?b=1", "/a#b", "/a\\b", "/a\nb"]
        {
            let message = PagePath::parse("page_path", bad, true).unwrap_err().to_string();
            assert!(message.contains("page_path"), "{bad}: {message}");
        }
    }

    #[test]
    fn flags_urls_and_limits() {
        assert!(parse_flag("pretty_urls", None, true).unwrap());
        assert!(!parse_flag("pretty_urls", Some("FALSE"), true).unwrap());
        assert!(parse_flag("pretty_urls", Some("1"), false).unwrap());
        assert!(parse_flag("pretty_urls", Some("maybe"), true).unwrap_err().to_string().contains("maybe"));

        assert_eq!(parse_site_url("site_url", "https://example.org/").unwrap(), "https://example.org");
        assert_eq!(parse_site_url("site_url", "http://localhost:3000").unwrap(), "http://localhost:3000");
        for bad in ["example.org", "ftp://x", "https://", "https:///x", "javascript:alert(1)", "https://a b"]
        {
            assert!(parse_site_url("site_url", bad).is_err(), "{bad}");
        }

        assert_eq!(parse_limit("limit", None, 20, 100).unwrap(), 20);
        assert_eq!(parse_limit("limit", Some("7"), 20, 100).unwrap(), 7);
        assert_eq!(parse_limit("limit", Some("1000"), 20, 100).unwrap(), 100);
        for bad in ["0", "-1", "x", "1.5"] {
            assert!(parse_limit("limit", Some(bad), 20, 100).is_err(), "{bad}");
        }
    }
}
