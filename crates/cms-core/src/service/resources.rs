//! Resource folders: listing, uploads, rename, move, delete, subfolders, and serving.

use super::Cms;
use crate::changes::ResourceChange;
use crate::error::{CoreError, CoreResult};
use crate::policy::{Caller, Operation};
use crate::ports::{ResourceReader, ResourceStat, UploadSink};
use crate::resource::{self, FileName, FilePath, ResourceFolder, ResourceRef, Subpath};

/// A file entry as clients see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceFile {
    pub name: String,
    pub size: u64,
    pub url: String,
    pub modified: i64,
    pub is_image: bool,
    /// The presets' variants (images only).
    pub variants: Vec<super::VariantInfo>,
}

/// One folder's listing.
#[derive(Debug, Clone)]
pub struct ResourceListing {
    pub folder: ResourceFolder,
    pub subpath: String,
    pub dirs: Vec<String>,
    pub files: Vec<ResourceFile>,
}

/// An upload in progress: where it goes, how much may come, and the sink it streams to.
pub struct Upload {
    pub limit: u64,
    /// Who uploads, for the resource change.
    author: String,
    email: Option<String>,
    received: u64,
    sink: Box<dyn UploadSink>,
    /// The content hash of what was received, for its variants' URLs (no read back).
    digest: ring::digest::Context,
}

impl Upload {
    /// Appends a chunk; `TooLarge` (and nothing kept) once the limit is passed.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn write(&mut self, chunk: &[u8]) -> CoreResult<()> {
        self.received += chunk.len() as u64;
        if self.received > self.limit {
            return Err(CoreError::TooLarge(format!("the upload is over the limit of {} bytes", self.limit)));
        }
        self.digest.update(chunk);
        self.sink.write(chunk).await
    }
}

/// A file ready to be served.
pub struct ServedFile {
    pub reader: Box<dyn ResourceReader>,
    pub stat: ResourceStat,
    pub content_type: &'static str,
    pub name: FileName,
    /// Shown, shown sandboxed (SVG) or downloaded (HTML, XML).
    pub disposition: resource::Disposition,
}

/// A resource folder's index as a client sent it in text (absent or blank: 0), for the
/// facade calls that take it typed ([`Cms::list_resources`], the uploads and changes).
pub fn parse_folder_index(raw: Option<&str>) -> CoreResult<usize> {
    match raw.map(str::trim).filter(|r| !r.is_empty()) {
        None => Ok(0),
        Some(raw) => raw.parse().map_err(|_| {
            CoreError::invalid(format!("folder must be a resource folder index (0, 1, ...), got {raw:?}"))
        }),
    }
}

/// A public URL that names no file.
pub(super) fn no_file_at(path: &FilePath) -> CoreError {
    CoreError::not_found(format!("no file at {:?}", path.to_string()))
}

/// Why folder `index` does not exist, saying which do.
fn no_such_folder(index: usize, count: usize) -> String {
    match count {
        0 => format!("no resource folder {index}; this site has none (resources: in cms.yaml)"),
        1 => format!("no resource folder {index}; there is one, folder 0"),
        n => format!("no resource folder {index}; there are {n} (0 to {})", n - 1),
    }
}

impl Cms {
    pub fn resource_folders(&self) -> &[ResourceFolder] {
        &self.resource_folders
    }

    /// A resource folder by its index.
    pub fn resource_folder_at(&self, index: usize) -> CoreResult<&ResourceFolder> {
        self.resource_folders
            .get(index)
            .ok_or_else(|| CoreError::not_found(no_such_folder(index, self.resource_folders.len())))
    }

    /// What resource folder `folder` holds at `subpath`.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn list_resources(
        &self,
        caller: impl Into<Caller<'_>>,
        folder: usize,
        dir: &Subpath,
    ) -> CoreResult<ResourceListing> {
        self.authorize(caller, Operation::UploadResource).await?;
        let folder = self.resource_folder_at(folder)?.clone();
        let mut entries = self.ports.resources.list(&folder, dir).await?;
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        let mut dirs = Vec::new();
        let mut files = Vec::new();
        for entry in entries {
            if entry.is_dir {
                dirs.push(entry.name.as_str().to_owned());
            } else {
                files.push(self.resource_file(&folder, dir, entry).await);
            }
        }
        Ok(ResourceListing { subpath: dir.as_str().to_owned(), folder, dirs, files })
    }

    /// A file entry. A file that cannot be read (gone since the listing, no permission)
    /// still lists, as not an image: one bad file must not fail a folder's listing.
    async fn resource_file(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        stat: ResourceStat,
    ) -> ResourceFile {
        let head = self
            .ports
            .resources
            .read_head(folder, dir, &stat.name, resource::SNIFF_BYTES)
            .await
            .unwrap_or_default();
        let variants = self.preset_variants(folder, dir, &stat.name, (stat.size, stat.modified), &head).await;
        ResourceFile {
            variants,
            url: folder.file_url(dir, &stat.name),
            name: stat.name.as_str().to_owned(),
            size: stat.size,
            modified: stat.modified,
            is_image: resource::is_image(&head),
        }
    }

    /// Starts receiving an upload (before its destination is known: multipart fields
    /// may come in any order).
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn begin_upload(&self, caller: impl Into<Caller<'_>>, upload_limit: u64) -> CoreResult<Upload> {
        let caller = caller.into();
        self.authorize(caller, Operation::UploadResource).await?;
        let sink = self.ports.resources.begin_upload().await?;
        let digest = ring::digest::Context::new(&ring::digest::SHA256);
        let (author, email) = (caller.author().to_owned(), caller.email().map(str::to_owned));
        Ok(Upload { limit: upload_limit, author, email, received: 0, sink, digest })
    }

    /// Stores a received upload as `name` (the sanitized name the client sent,
    /// [`resource::sanitize_upload_name`]; numbered on a clash).
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn finish_upload(&self, upload: Upload, at: &ResourceRef) -> CoreResult<ResourceFile> {
        let ResourceRef { folder, dir, name } = at;
        let folder = self.resource_folder_at(*folder)?.clone();
        let hash = hex::encode(upload.digest.finish());
        let stat = upload.sink.commit(&folder, dir, name).await?;
        self.record_resources(&folder, vec![(dir.join(&stat.name), true)], upload.author, upload.email);
        self.remember_source_hash(&folder, dir, &stat, hash);
        Ok(self.resource_file(&folder, dir, stat).await)
    }

    /// Renames a file within its folder; returns the new name.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn rename_resource(
        &self,
        caller: impl Into<Caller<'_>>,
        at: &ResourceRef,
        new_name: &FileName,
    ) -> CoreResult<String> {
        let caller = caller.into();
        self.authorize(caller, Operation::ChangeResources).await?;
        let ResourceRef { folder, dir, name: from } = at;
        let folder = self.resource_folder_at(*folder)?.clone();
        let to = from.renamed(new_name)?;
        self.ports.resources.rename(&folder, (dir, from), (dir, &to)).await?;
        self.record_resources_by(&folder, vec![(dir.join(from), false), (dir.join(&to), true)], caller);
        self.variants_follow(&folder, (dir, from), (dir, &to)).await;
        Ok(to.as_str().to_owned())
    }

    /// Moves a file to another subfolder, optionally under a new name; returns the name.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn move_resource(
        &self,
        caller: impl Into<Caller<'_>>,
        at: &ResourceRef,
        dest: &Subpath,
        new_name: Option<&FileName>,
    ) -> CoreResult<String> {
        let caller = caller.into();
        self.authorize(caller, Operation::ChangeResources).await?;
        let ResourceRef { folder, dir, name: from } = at;
        let folder = self.resource_folder_at(*folder)?.clone();
        let to = match new_name {
            Some(new) => from.renamed(new)?,
            None => from.clone(),
        };
        self.ports.resources.rename(&folder, (dir, from), (dest, &to)).await?;
        self.record_resources_by(&folder, vec![(dir.join(from), false), (dest.join(&to), true)], caller);
        self.variants_follow(&folder, (dir, from), (dest, &to)).await;
        Ok(to.as_str().to_owned())
    }

    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn delete_resource(&self, caller: impl Into<Caller<'_>>, at: &ResourceRef) -> CoreResult<()> {
        let caller = caller.into();
        self.authorize(caller, Operation::ChangeResources).await?;
        let ResourceRef { folder, dir, name } = at;
        let folder = self.resource_folder_at(*folder)?.clone();
        self.ports.resources.delete(&folder, dir, name).await?;
        self.record_resources_by(&folder, vec![(dir.join(name), false)], caller);
        self.variants_drop(&folder, dir, name).await;
        Ok(())
    }

    /// Creates the subfolder `at` names; returns its name.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn create_resource_folder(
        &self,
        caller: impl Into<Caller<'_>>,
        at: &ResourceRef,
    ) -> CoreResult<String> {
        self.authorize(caller, Operation::ChangeResources).await?;
        let ResourceRef { folder, dir, name } = at;
        let folder = self.resource_folder_at(*folder)?.clone();
        self.ports.resources.create_dir(&folder, dir, name).await?;
        Ok(name.as_str().to_owned())
    }

    /// Hands a change of resource files to their subscribers (`crate::changes`).
    fn record_resources(
        &self,
        folder: &ResourceFolder,
        files: Vec<(Subpath, bool)>,
        author: String,
        email: Option<String>,
    ) {
        let files = files.into_iter().map(|(path, there)| (path.as_str().to_owned(), there)).collect();
        let change = ResourceChange { folder: folder.index, files, author, email, at: self.now() };
        self.change_log.record_resources(&change);
    }

    fn record_resources_by(&self, folder: &ResourceFolder, files: Vec<(Subpath, bool)>, caller: Caller<'_>) {
        self.record_resources(folder, files, caller.author().to_owned(), caller.email().map(str::to_owned));
    }

    /// Opens the file a public URL names: `path` is the part after the folder's prefix
    /// ([`FilePath::from_url_tail`]).
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn open_resource(&self, folder_index: usize, path: &FilePath) -> CoreResult<ServedFile> {
        let folder = self.served_folder(folder_index, path)?;
        let (reader, stat) = self
            .ports
            .resources
            .open(folder, &path.dir, &path.name)
            .await?
            .ok_or_else(|| no_file_at(path))?;
        Ok(ServedFile {
            reader,
            content_type: resource::content_type(&path.name),
            disposition: resource::disposition(&path.name),
            name: path.name.clone(),
            stat,
        })
    }

    /// The folder whose public URLs a file is served at (`NotFound`, as a missing file,
    /// when there is no such folder).
    pub(super) fn served_folder(&self, folder_index: usize, path: &FilePath) -> CoreResult<&ResourceFolder> {
        self.resource_folders.get(folder_index).ok_or_else(|| no_file_at(path))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_missing_folder_says_which_exist_in_good_english() {
        assert_eq!(
            super::no_such_folder(0, 0),
            "no resource folder 0; this site has none (resources: in cms.yaml)"
        );
        assert_eq!(super::no_such_folder(3, 1), "no resource folder 3; there is one, folder 0");
        assert_eq!(super::no_such_folder(9, 2), "no resource folder 9; there are 2 (0 to 1)");
    }

    #[test]
    fn a_folder_index_sent_as_text_is_read_before_the_typed_call() {
        use super::parse_folder_index;
        assert_eq!((parse_folder_index(None).unwrap(), parse_folder_index(Some(" ")).unwrap()), (0, 0));
        assert_eq!(parse_folder_index(Some(" 2 ")).unwrap(), 2);
        assert_eq!(
            parse_folder_index(Some("x")).unwrap_err().to_string(),
            r#"folder must be a resource folder index (0, 1, ...), got "x""#
        );
    }
}
