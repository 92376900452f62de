//! Path-valued query parameters (`collectionPath`, `content_path`, `contentPath`,
//! `resourcesPath`), resolved lexically against the site folder.
//!
//! Nothing here touches the disk: a path is normalised (`.` dropped, `..` applied) and
//! turned into components relative to the site folder, which the caller then compares with
//! the configured folders. A path that does not name one of them is refused, so a client
//! can never make the server read a folder it chose.

use crate::error::{CoreError, CoreResult};

/// A path inside the site folder, as components (`["content", "posts"]`).
pub type SitePath = Vec<String>;

/// Resolves `raw` (relative to the site folder, or absolute under `site_root`) to its
/// components inside the site. `Invalid` when it is empty, malformed, or leads out of the
/// site folder.
pub fn resolve(param: &str, raw: &str, site_root: Option<&str>) -> CoreResult<SitePath> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Err(CoreError::invalid(format!(
            "{param} is required: the path of a collection folder relative to the site folder, e.g. content/posts"
        )));
    }
    if raw.chars().any(|c| c.is_control() || c == '\\') {
        return Err(CoreError::invalid(format!(
            "{param} {raw:?} contains a control character or '\\'; use '/' between folder names"
        )));
    }
    let outside = || {
        CoreError::invalid(format!(
            "{param} {raw:?} is outside the site folder; name a configured folder, e.g. content/posts"
        ))
    };
    if raw.starts_with('/') {
        let Some(root) = site_root else {
            return Err(CoreError::invalid(format!(
                "{param} {raw:?} is absolute, but this server does not know its site folder's absolute path; send a path relative to the site folder"
            )));
        };
        // `..` above `/` stays at `/`, as the file system does.
        let path = normalise(raw).unwrap_or_default();
        let root = normalise(root).unwrap_or_default();
        return path.strip_prefix(root.as_slice()).map(<[String]>::to_vec).ok_or_else(outside);
    }
    normalise(raw).ok_or_else(outside)
}

/// Splits a `/`-separated path into components, dropping empty and `.` ones and applying
/// `..`. `None` when a `..` would climb above the start.
fn normalise(path: &str) -> Option<SitePath> {
    let mut parts: SitePath = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            other => parts.push(other.to_owned()),
        }
    }
    Some(parts)
}

/// A configured folder (`content/posts`, `./content/posts/`) as components.
pub fn configured(path: &str) -> SitePath {
    normalise(path).unwrap_or_default()
}

/// A path for messages: `content/posts`.
pub fn display(path: &[String]) -> String {
    path.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: Option<&str> = Some("/srv/site");

    fn ok(raw: &str) -> String {
        display(&resolve("collectionPath", raw, ROOT).unwrap())
    }

    fn refused(raw: &str, root: Option<&str>) -> String {
        resolve("collectionPath", raw, root).unwrap_err().to_string()
    }

    #[test]
    fn relative_and_absolute_forms() {
        assert_eq!(ok("content/posts"), "content/posts");
        assert_eq!(ok("./content//posts/"), "content/posts");
        assert_eq!(ok("content/pages/../posts"), "content/posts");
        assert_eq!(ok("/srv/site/content/posts"), "content/posts");
        assert_eq!(ok("/srv/site/./content/x/../posts/"), "content/posts");
        assert_eq!(ok("/srv/other/../site/content/posts"), "content/posts");
        assert_eq!(ok("/srv/site"), "");
    }

    #[test]
    fn refuses_what_leads_out_of_the_site() {
        for raw in [
            "..",
            "../x",
            "content/../../etc",
            "/etc",
            "/etc/passwd",
            "/srv/site/../other",
            "/srv/sitex/content",
            "/",
        ] {
            assert!(refused(raw, ROOT).contains("outside the site folder"), "{raw}");
        }
        assert!(refused("", ROOT).contains("is required"));
        assert!(refused("  ", ROOT).contains("is required"));
        assert!(refused("content\\posts", ROOT).contains("'\\'"));
        assert!(refused("content/posts\0", ROOT).contains("control character"));
        assert!(refused("/srv/site/content/posts", None).contains("relative to the site folder"));
    }

    #[test]
    fn a_root_site_folder_contains_every_absolute_path() {
        assert_eq!(display(&resolve("p", "/content/posts", Some("/")).unwrap()), "content/posts");
    }
}
