//! The site folder, and the check that a configured folder inside it does not resolve
//! (through a symlink) to somewhere outside it.

use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, OnceLock};

use cms_core::CoreResult;

use crate::error::io_error;

/// The site folder as given, with its canonical path resolved once, on first use (the
/// check runs on every read, so it must not cost a `realpath` of the site each time).
/// Clones share the resolved path.
#[derive(Debug, Clone)]
pub(crate) struct SiteRoot {
    path: PathBuf,
    canonical: Arc<OnceLock<PathBuf>>,
}

impl SiteRoot {
    pub(crate) fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into(), canonical: Arc::default() }
    }

    /// The canonical site folder. A failure (the folder does not exist yet) is not kept:
    /// the next call tries again.
    fn canonical(&self) -> CoreResult<&Path> {
        if let Some(canonical) = self.canonical.get() {
            return Ok(canonical);
        }
        let canonical = self.path.canonicalize().map_err(io_error(&self.path))?;
        Ok(self.canonical.get_or_init(|| canonical))
    }

    /// `relative` (a configured folder) under the site folder, or `None` if it (or, while
    /// it does not exist yet, its nearest existing ancestor) resolves outside the site: a
    /// symlinked folder pointing elsewhere is never read or written through.
    ///
    /// Every port call asks this, so the usual case costs one `lstat` per component of
    /// `relative` (none a symlink: it resolves beneath the site as written), not a
    /// `realpath` of the whole path (a `readlink` per component from `/`).
    pub(crate) fn contained(&self, relative: &str) -> CoreResult<Option<PathBuf>> {
        let site = self.canonical()?;
        let folder = self.path.join(relative);
        if plainly_beneath(&self.path, Path::new(relative)) {
            return Ok(Some(folder));
        }
        let existing = folder.ancestors().find_map(|p| p.canonicalize().ok());
        Ok(existing.is_some_and(|real| real.starts_with(site)).then_some(folder))
    }
}

/// Whether `relative` stays beneath `root` without a symlink: made of plain names only,
/// each existing one a real folder, up to the first that does not exist (a folder not made
/// yet is beneath the site). Anything else (a symlink, `..` anywhere, an absolute path) is
/// left to the full check.
fn plainly_beneath(root: &Path, relative: &Path) -> bool {
    let mut path = root.to_path_buf();
    let mut missing = false;
    for component in relative.components() {
        match component {
            Component::Normal(name) => path.push(name),
            Component::CurDir => continue,
            _ => return false,
        }
        if missing {
            continue;
        }
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => missing = true,
            _ => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::symlink;

    use super::*;

    #[test]
    fn folders_beneath_the_site_are_contained_and_links_out_are_not() {
        let site = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::create_dir_all(site.path().join("content/posts")).unwrap();
        fs::create_dir_all(site.path().join("real/pages")).unwrap();
        symlink(site.path().join("real"), site.path().join("inside")).unwrap();
        symlink(outside.path(), site.path().join("content/out")).unwrap();
        fs::write(site.path().join("file"), "x").unwrap();
        let root = SiteRoot::new(site.path());
        let contained = |relative: &str| root.contained(relative).unwrap().is_some();

        assert!(contained("content/posts"), "plain folders");
        assert!(contained("./content/posts"));
        assert!(contained("content/drafts/later"), "not made yet");
        assert!(contained("inside/pages"), "a symlink that stays inside the site");
        assert!(!contained("content/out"), "a symlink out of the site");
        assert!(!contained("content/out/deeper"), "below a symlink out, existing or not");
        assert!(!contained("content/../../escape"), "`..` out of the site");
        assert!(contained("content/../content/posts"), "`..` that stays inside");

        assert!(plainly_beneath(site.path(), Path::new("content/posts")));
        assert!(!plainly_beneath(site.path(), Path::new("inside/pages")), "symlinks take the full check");
        assert!(!plainly_beneath(site.path(), Path::new("/etc")));
        assert!(
            !plainly_beneath(site.path(), Path::new("content/missing/../../../etc")),
            "`..` after a folder not made yet"
        );
        assert!(plainly_beneath(site.path(), Path::new("content/missing/deeper")));
    }
}
