//! Image variants of resource files: rendered on request from the URL's parameters or
//! made from the presets after an upload, kept in the variant store by the source's
//! content hash and the parameters, and moved or dropped with their source.

use std::collections::HashMap;
use std::sync::Mutex;

use super::Cms;
use crate::error::{CoreError, CoreResult};
use crate::images::{self, FormatChoice, RenderSpec, Transform, VariantKey};
use crate::ports::{ResourceReader, VariantSource};
use crate::resource::{self, FileName, FilePath, ResourceFolder, ResourceRef, Subpath};

/// How much of a file is read to find its size in pixels when the first 1 KiB is not enough.
const PROBE_BYTES: usize = 256 * 1024;

/// How many source hashes are remembered before the memory starts over.
const KNOWN_SOURCES: usize = 65_536;

/// The content hash of each source file, by its stamp, so that a cache hit does not read
/// the source again.
#[derive(Default)]
pub(super) struct SourceHashes {
    known: Mutex<HashMap<SourcePath, KnownHash>>,
}

/// A source file: its folder index and its path inside the folder.
type SourcePath = (usize, String);
/// Size and modification time when hashed, and the hash.
type KnownHash = (u64, i64, String);

impl SourceHashes {
    fn get(&self, key: &(usize, String), size: u64, modified: i64) -> Option<String> {
        let known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        known.get(key).filter(|(s, m, _)| *s == size && *m == modified).map(|(_, _, hash)| hash.clone())
    }

    fn put(&self, key: (usize, String), size: u64, modified: i64, hash: String) {
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        if known.len() >= KNOWN_SOURCES {
            known.clear();
        }
        known.insert(key, (size, modified, hash));
    }

    fn forget(&self, key: &(usize, String)) {
        self.known.lock().unwrap_or_else(|e| e.into_inner()).remove(key);
    }
}

/// One preset's variant of a file, as listings show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariantInfo {
    /// The preset's name.
    pub name: String,
    /// The file's URL with `?preset=<name>&v=<content version>`: the URL names the
    /// source's content, so it may be cached for good (a new upload under the same name
    /// gets another URL).
    pub url: String,
    /// The variant's size in pixels, when the source's header could be read.
    pub width: Option<u32>,
    pub height: Option<u32>,
    /// Bytes, once it has been made (presets are made in the background after an upload).
    pub size: Option<u64>,
}

/// A variant's bytes: kept from before, or just rendered.
pub enum VariantBody {
    Stored(Box<dyn ResourceReader>),
    Fresh(Vec<u8>),
}

/// A variant ready to be served.
pub struct ServedVariant {
    pub body: VariantBody,
    pub size: u64,
    pub content_type: &'static str,
    /// Quoted: the variant key names the source content and every parameter.
    pub etag: String,
    /// The format was chosen from `Accept` (`format=auto`), so the answer varies by it.
    pub vary_accept: bool,
    /// The source's modification time (Unix seconds).
    pub modified: i64,
    /// Whether the URL's `v=` names the source's current content: `None` without a `v=`
    /// (then the URL may answer other bytes tomorrow), `Some(false)` for an outdated one.
    pub names_current: Option<bool>,
}

fn source_of<'a>(folder: &'a ResourceFolder, dir: &'a Subpath, name: &'a FileName) -> VariantSource<'a> {
    VariantSource { folder, dir, name }
}

fn memo_key(folder: &ResourceFolder, dir: &Subpath, name: &FileName) -> (usize, String) {
    (folder.index, dir.join(name).as_str().to_owned())
}

impl Cms {
    /// The `images:` settings.
    pub fn images(&self) -> &images::ImagesConfig {
        &self.images
    }

    /// The transform a public media URL's query asks for (`None`: the original file).
    pub fn image_transform(&self, query: &[(String, String)]) -> CoreResult<Option<Transform>> {
        self.images.parse_transform(query)
    }

    /// A variant of the file a public URL names (`path` after the folder's prefix):
    /// from the store when it was made before, else rendered and stored.
    /// `version` is the URL's `v=`, if any (see [`VariantInfo::url`]).
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn open_variant(
        &self,
        folder_index: usize,
        path: &FilePath,
        transform: &Transform,
        accept: Option<&str>,
        version: Option<&str>,
    ) -> CoreResult<ServedVariant> {
        let folder = self.served_folder(folder_index, path)?;
        let (dir, name) = (&path.dir, &path.name);
        let stat = self
            .ports
            .resources
            .stat(folder, dir, name)
            .await?
            .filter(|s| !s.is_dir)
            .ok_or_else(|| super::resources::no_file_at(path))?;
        let content_type = resource::content_type(name);
        if !images::is_transformable(content_type) {
            return Err(CoreError::Unprocessable(format!(
                "{name} is {content_type}; only JPEG, PNG, WebP and GIF images take w, h, fit, format, q or preset"
            )));
        }
        let spec = self.images.render_spec(transform, content_type, accept);
        let source = source_of(folder, dir, name);
        let (hash, mut bytes) = self.source_hash(source, stat.size, stat.modified).await?;
        let key = VariantKey::new(&hash, &spec);
        let names_current = version.map(|v| v == key.version());
        let etag = format!("\"{key}\"");
        let (content_type, vary_accept) =
            (spec.format.content_type(), transform.format == FormatChoice::Auto);
        let modified = stat.modified;
        if let Some((reader, size)) = self.ports.variants.open(source, &key).await? {
            let body = VariantBody::Stored(reader);
            return Ok(ServedVariant {
                body,
                size,
                content_type,
                etag,
                vary_accept,
                modified,
                names_current,
            });
        }
        let bytes = match bytes.take() {
            Some(bytes) => bytes,
            None => self.read_source(source).await?,
        };
        let rendered = self.render_and_keep(source, &key, bytes, spec).await?;
        Ok(ServedVariant {
            size: rendered.len() as u64,
            body: VariantBody::Fresh(rendered),
            content_type,
            etag,
            vary_accept,
            modified,
            names_current,
        })
    }

    /// Remembers a file's content hash, known without reading it (from its upload).
    pub(super) fn remember_source_hash(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        stat: &crate::ports::ResourceStat,
        hash: String,
    ) {
        self.source_hashes.put(memo_key(folder, dir, &stat.name), stat.size, stat.modified, hash);
    }

    /// A source's content hash: remembered by its size and modification time, else read
    /// and hashed (the bytes read come back too, so a render does not read them again).
    async fn source_hash(
        &self,
        source: VariantSource<'_>,
        size: u64,
        modified: i64,
    ) -> CoreResult<(String, Option<Vec<u8>>)> {
        let memo = memo_key(source.folder, source.dir, source.name);
        if let Some(hash) = self.source_hashes.get(&memo, size, modified) {
            return Ok((hash, None));
        }
        let bytes = self.read_source(source).await?;
        let hash = images::content_hash(&bytes);
        self.source_hashes.put(memo, size, modified, hash.clone());
        Ok((hash, Some(bytes)))
    }

    /// Makes the presets' variants of a file that was just uploaded (the caller runs this
    /// after answering). A file that is not a transformable image is left alone.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn make_presets(&self, at: &ResourceRef) -> CoreResult<()> {
        if self.images.presets.is_empty() {
            return Ok(());
        }
        let ResourceRef { folder, dir, name } = at;
        let folder = self.resource_folder_at(*folder)?.clone();
        let content_type = resource::content_type(name);
        if !images::is_transformable(content_type) {
            return Ok(());
        }
        let source = source_of(&folder, dir, name);
        let stat = self.ports.resources.stat(&folder, dir, name).await?;
        let bytes = self.read_source(source).await?;
        let hash = images::content_hash(&bytes);
        if let Some(stat) = stat {
            self.remember_source_hash(&folder, dir, &stat, hash.clone());
        }
        let stored = self.ports.variants.list(source).await?;
        for preset in self.images.presets.keys() {
            let spec = self.images.render_spec(&self.images.preset(preset)?, content_type, None);
            let key = VariantKey::new(&hash, &spec);
            if stored.iter().any(|(k, _)| *k == key) {
                continue;
            }
            self.render_and_keep(source, &key, bytes.clone(), spec).await?;
        }
        Ok(())
    }

    /// The presets' variants of a file, as listings show them (empty for files that are
    /// not transformable images); `size` and `modified` are the file's, to find its
    /// content hash for the URLs' `v=` without reading it again.
    pub(super) async fn preset_variants(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
        (size, modified): (u64, i64),
        head: &[u8],
    ) -> Vec<VariantInfo> {
        let content_type = resource::content_type(name);
        if self.images.presets.is_empty() || !images::is_transformable(content_type) {
            return Vec::new();
        }
        let mut dimensions = self.ports.images.probe(head);
        if dimensions.is_none() && head.len() >= resource::SNIFF_BYTES {
            // A camera JPEG's EXIF (with its thumbnail) comes before the frame header.
            let longer = self.ports.resources.read_head(folder, dir, name, PROBE_BYTES).await;
            dimensions = longer.ok().and_then(|head| self.ports.images.probe(&head));
        }
        let source = source_of(folder, dir, name);
        let stored = self.ports.variants.list(source).await.unwrap_or_default();
        // The content hash as known (from the upload, a render or a preset), never read
        // here: a listing of a thousand photos must not read them all.
        let known = self.source_hashes.get(&memo_key(folder, dir, name), size, modified);
        let url = folder.file_url(dir, name);
        let mut variants = Vec::new();
        for (preset, transform) in
            self.images.presets.keys().filter_map(|p| Some((p, self.images.preset(p).ok()?)))
        {
            let spec = self.images.render_spec(&transform, content_type, None);
            let geometry = dimensions.map(|(w, h)| spec.geometry(w, h));
            let suffix = spec.key_suffix();
            // The variant as it would be made now, else as it was made (a `v=` that names
            // older content only revalidates); without either, a URL without `v=`.
            let key = known
                .as_deref()
                .map(|hash| VariantKey::new(hash, &spec))
                .or_else(|| stored.iter().map(|(k, _)| k).find(|k| k.suffix() == suffix).cloned());
            let version = key.map_or_else(String::new, |key| format!("&v={}", key.version()));
            variants.push(VariantInfo {
                name: preset.clone(),
                url: format!("{url}?preset={preset}{version}"),
                width: geometry.map(|g| g.width),
                height: geometry.map(|g| g.height),
                size: stored.iter().find(|(k, _)| k.suffix() == suffix).map(|(_, size)| *size),
            });
        }
        variants
    }

    /// Moves a source's variants after it was renamed or moved (a failure is logged: the
    /// variants are a cache, and the rename has happened).
    pub(super) async fn variants_follow(
        &self,
        folder: &ResourceFolder,
        from: (&Subpath, &FileName),
        to: (&Subpath, &FileName),
    ) {
        self.source_hashes.forget(&memo_key(folder, from.0, from.1));
        let moved = self
            .ports
            .variants
            .rename(source_of(folder, from.0, from.1), source_of(folder, to.0, to.1))
            .await;
        if let Err(error) = moved {
            tracing::warn!(%error, file = %from.1, "could not move the variants of a renamed file");
        }
    }

    /// Drops a deleted source's variants.
    pub(super) async fn variants_drop(&self, folder: &ResourceFolder, dir: &Subpath, name: &FileName) {
        self.source_hashes.forget(&memo_key(folder, dir, name));
        if let Err(error) = self.ports.variants.remove_all(source_of(folder, dir, name)).await {
            tracing::warn!(%error, file = %name, "could not remove the variants of a deleted file");
        }
    }

    async fn read_source(&self, source: VariantSource<'_>) -> CoreResult<Vec<u8>> {
        let max = self.upload_limit;
        let read = self.ports.resources.read_all(source.folder, source.dir, source.name, max).await;
        match read {
            Ok(Some(bytes)) => Ok(bytes),
            Ok(None) => Err(CoreError::not_found(format!("no file {}", source.name))),
            Err(CoreError::TooLarge(_)) => Err(CoreError::Unprocessable(format!(
                "{} is over {max} bytes (limits.upload_bytes), too large to transform; request it without parameters",
                source.name
            ))),
            Err(other) => Err(other),
        }
    }

    /// Renders a variant and stores it; a store that fails is logged and the variant
    /// still served.
    async fn render_and_keep(
        &self,
        source: VariantSource<'_>,
        key: &VariantKey,
        bytes: Vec<u8>,
        spec: RenderSpec,
    ) -> CoreResult<Vec<u8>> {
        let rendered = self.ports.images.render(bytes, spec).await?;
        if let Err(error) = self.ports.variants.put(source, key, &rendered).await {
            tracing::warn!(%error, file = %source.name, "could not keep an image variant");
        }
        Ok(rendered)
    }
}
