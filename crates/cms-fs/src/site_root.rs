//! The site folder, and the check that a configured folder inside it does not resolve
//! (through a symlink) to somewhere outside it.

use std::path::{Path, PathBuf};
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
    pub(crate) fn contained(&self, relative: &str) -> CoreResult<Option<PathBuf>> {
        let site = self.canonical()?;
        let folder = self.path.join(relative);
        let existing = folder.ancestors().find_map(|p| p.canonicalize().ok());
        Ok(existing.is_some_and(|real| real.starts_with(site)).then_some(folder))
    }
}
