//! Which files make up a site, in a folder or a bucket, by site-relative key
//! (`content/posts/a.md`, `/`-separated): what `cms storage copy` moves and `cms backup`
//! keeps, less each node's own caches; and where a key may land in a target folder.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use cms_s3::S3Site;

/// Whether a site-relative path is a node's own cache or staging, never copied: index
/// snapshots, image variants, upload staging, the webhook outbox, the bucket's change
/// journal, the serving server's lock file, and the `.cms-tmp-*` files atomic writes stage.
pub fn is_node_local(key: &str) -> bool {
    const CACHE_FOLDERS: [&str; 4] = [".cms/index/", ".cms/variants/", ".cms/uploads/", ".cms/changes/"];
    key == ".cms/webhook-outbox.log"
        || key == ".cms/serve.lock"
        || CACHE_FOLDERS.iter().any(|folder| key.starts_with(folder))
        || key.rsplit('/').next().is_some_and(|name| name.starts_with(".cms-tmp-"))
}

/// The regular files of a folder by site-relative key (`/`-separated), less the node-local
/// ones; what is skipped (symlinks, never followed; sockets...) is returned too.
pub fn folder_files(root: &Path) -> anyhow::Result<(BTreeMap<String, PathBuf>, Vec<String>)> {
    let (mut files, mut skipped) = (BTreeMap::new(), Vec::new());
    let mut folders = vec![(root.to_path_buf(), String::new())];
    while let Some((folder, key_prefix)) = folders.pop() {
        let entries = fs::read_dir(&folder).with_context(|| format!("reading {}", folder.display()))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("reading {}", folder.display()))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                bail!("{}: the file name is not UTF-8, which a bucket key must be", entry.path().display());
            };
            let key = format!("{key_prefix}{name}");
            let kind = entry.file_type().with_context(|| format!("reading {}", entry.path().display()))?;
            if kind.is_dir() {
                if !is_node_local(&format!("{key}/")) {
                    folders.push((entry.path(), format!("{key}/")));
                }
            } else if is_node_local(&key) {
            } else if kind.is_file() {
                files.insert(key, entry.path());
            } else {
                let what =
                    if kind.is_symlink() { "a symlink (never followed)" } else { "not a regular file" };
                skipped.push(format!("{key}: {what}"));
            }
        }
    }
    Ok((files, skipped))
}

/// The site's keys in the bucket (as file names), less the node-local ones.
pub fn bucket_keys(site: &S3Site) -> anyhow::Result<Vec<String>> {
    let mut keys = Vec::new();
    for object in site.list_objects_blocking()? {
        if !is_node_local(&object.key) {
            keys.push(object.key);
        }
    }
    Ok(keys)
}

/// Refuses a key that would land outside the target folder.
pub fn check_key(key: &str) -> anyhow::Result<()> {
    if key.starts_with('/') || key.split('/').any(|part| matches!(part, "" | "." | "..")) {
        bail!(
            "bucket key {key:?} would land outside the target folder (absolute, `..`, `.` or an empty part); nothing was copied"
        );
    }
    Ok(())
}

/// Where a checked key goes; a symlinked folder on the way (in a folder copied into with
/// --overwrite) would lead outside, so it is refused.
pub fn target_path(folder: &Path, key: &str) -> anyhow::Result<PathBuf> {
    let mut path = folder.to_path_buf();
    let parts: Vec<&str> = key.split('/').collect();
    for part in &parts[..parts.len() - 1] {
        path.push(part);
        if fs::symlink_metadata(&path).is_ok_and(|meta| meta.file_type().is_symlink()) {
            bail!("{} is a symlink; refusing to write {key} through it", path.display());
        }
    }
    Ok(path.join(parts[parts.len() - 1]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_local_files_are_not_copied() {
        for key in [
            ".cms/index/a.bin",
            ".cms/variants/x/1.webp",
            ".cms/uploads/u",
            ".cms/changes/1",
            ".cms/webhook-outbox.log",
            ".cms/serve.lock",
            "content/posts/.cms-tmp-abc",
        ] {
            assert!(is_node_local(key), "{key}");
        }
        for key in ["cms.yaml", ".cms/users.yaml", ".cms/versions/posts/a", "content/index/a.md"] {
            assert!(!is_node_local(key), "{key}");
        }
    }

    #[test]
    fn keys_that_would_leave_the_target_are_refused() {
        for key in ["../escaped.md", "posts/../../x", "/etc/passwd", "a//b", "./a", "a/."] {
            assert!(check_key(key).is_err(), "{key}");
        }
        for key in ["cms.yaml", "media/a..b.png", "content/posts/%2E%2E.md", ".cms/users.yaml"] {
            assert!(check_key(key).is_ok(), "{key}");
        }
    }
}
