//! Rendered image variants under `.cms/variants/` (private state: never served as files,
//! never in a resource folder's listing):
//!
//! ```text
//! .cms/variants/<folder index>/<subpath>/.<file name>/<variant key>
//! ```
//!
//! The file's own folder is its name with a dot before it (shortened with a hash when that
//! would be over 255 bytes): no subfolder of a resource
//! folder can start with a dot, so a file's variants never mix with a subfolder's. Keys are
//! [`VariantKey`]s (`[a-z0-9_.-]`), and every path segment comes from a `Subpath` or
//! `FileName`, so nothing here can leave `.cms/variants/`.

use std::fs;
use std::io;
use std::path::PathBuf;

use async_trait::async_trait;
use cms_core::images::VariantKey;
use cms_core::ports::{ResourceReader, VariantSource, VariantStore};
use cms_core::{CoreError, CoreResult};

use crate::atomic;
use crate::blocking;
use crate::error::io_error;
use crate::reader::FsReader;

/// The variant store of a site folder.
#[derive(Debug, Clone)]
pub struct FsVariantStore {
    root: PathBuf,
}

impl FsVariantStore {
    pub fn new(state_dir: &std::path::Path) -> Self {
        Self { root: state_dir.join("variants") }
    }

    /// The folder that holds one source file's variants.
    fn source_dir(&self, source: VariantSource<'_>) -> PathBuf {
        let mut path = self.root.join(source.folder.index.to_string());
        for segment in source.dir.segments() {
            path.push(segment);
        }
        path.push(folder_name(source.name.as_str()));
        path
    }

    fn list_blocking(dir: &std::path::Path) -> CoreResult<Vec<(VariantKey, u64)>> {
        let entries = match fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_error(dir)(e)),
        };
        let mut found = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io_error(dir))?;
            let Some(key) = entry.file_name().to_str().and_then(VariantKey::parse) else { continue };
            if let Ok(meta) = entry.metadata()
                && meta.is_file()
            {
                found.push((key, meta.len()));
            }
        }
        Ok(found)
    }
}

/// The folder name of a file's variants: the name after a dot. A name too long for that
/// (255 bytes with the dot) keeps its first 180 bytes and adds a hash of the whole.
fn folder_name(name: &str) -> String {
    const KEEP: usize = 180;
    if name.len() < 255 {
        return format!(".{name}");
    }
    let mut cut = KEEP;
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    // FNV-1a: stable across builds, unlike std's hasher.
    let hash =
        name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    format!(".{}~{hash:016x}", &name[..cut])
}

fn not_found_is_ok(result: io::Result<()>, path: &std::path::Path) -> CoreResult<()> {
    match result {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other.map_err(io_error(path)),
    }
}

#[async_trait]
impl VariantStore for FsVariantStore {
    async fn open(
        &self,
        source: VariantSource<'_>,
        key: &VariantKey,
    ) -> CoreResult<Option<(Box<dyn ResourceReader>, u64)>> {
        let path = self.source_dir(source).join(key.as_str());
        blocking::run(move || match fs::File::open(&path) {
            Ok(file) => {
                let size = file.metadata().map_err(io_error(&path))?.len();
                Ok(Some((FsReader::boxed(file, path), size)))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error(&path)(e)),
        })
        .await
    }

    async fn put(&self, source: VariantSource<'_>, key: &VariantKey, bytes: &[u8]) -> CoreResult<()> {
        let (dir, key, bytes) = (self.source_dir(source), key.clone(), bytes.to_vec());
        blocking::run(move || {
            fs::create_dir_all(&dir).map_err(io_error(&dir))?;
            let path = dir.join(key.as_str());
            atomic::write_private(&path, &bytes).map_err(io_error(&path))?;
            // Variants of an older version of the source are of no use any more.
            for (old, _) in Self::list_blocking(&dir)? {
                if old.source_hash() != key.source_hash() {
                    let stale = dir.join(old.as_str());
                    not_found_is_ok(fs::remove_file(&stale), &stale)?;
                }
            }
            Ok(())
        })
        .await
    }

    async fn list(&self, source: VariantSource<'_>) -> CoreResult<Vec<(VariantKey, u64)>> {
        let dir = self.source_dir(source);
        blocking::run(move || Self::list_blocking(&dir)).await
    }

    async fn remove_all(&self, source: VariantSource<'_>) -> CoreResult<()> {
        let dir = self.source_dir(source);
        blocking::run(move || not_found_is_ok(fs::remove_dir_all(&dir), &dir)).await
    }

    async fn rename(&self, from: VariantSource<'_>, to: VariantSource<'_>) -> CoreResult<()> {
        let (from, to) = (self.source_dir(from), self.source_dir(to));
        blocking::run(move || {
            if !from.exists() {
                return Ok(());
            }
            // The target name was free in the resource folder, so anything here is stale.
            not_found_is_ok(fs::remove_dir_all(&to), &to)?;
            if let Some(parent) = to.parent() {
                fs::create_dir_all(parent).map_err(io_error(parent))?;
            }
            fs::rename(&from, &to).map_err(io_error(&from))?;
            if let Some(parent) = to.parent() {
                atomic::sync_dir(parent).map_err(io_error(parent))?;
            }
            Ok::<(), CoreError>(())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::folder_name;

    #[test]
    fn folder_names_fit_in_255_bytes() {
        assert_eq!(folder_name("hero.jpg"), ".hero.jpg");
        let long = "é".repeat(127) + "a";
        let short = folder_name(&long);
        assert!(short.len() <= 255 && short.starts_with('.'), "{short}");
        assert_ne!(short, folder_name(&("é".repeat(127) + "b")));
    }
}
