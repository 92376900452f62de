//! `cms storage copy`: a site folder into a bucket or a bucket into a folder, then a check
//! that both sides hold the same files (paths, sizes and SHA-256). Needs no site folder.

use std::collections::BTreeMap;
use std::fs;
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use cms_fs::atomic;
use cms_s3::{S3Site, S3StorageConfig};

use crate::backend::Backend;
use indicatif::{ProgressBar, ProgressStyle};
use ring::digest;

#[derive(Subcommand)]
pub enum StorageCommand {
    /// Copy a site between a folder and an S3 bucket, either way, then check that both
    /// sides hold the same files. Credentials come from the environment
    /// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN). Shows a progress bar
    /// on a terminal, and a line at every tenth of the files otherwise.
    #[command(
        after_help = "Examples:\n  cms storage copy --from /srv/my-site --to s3://my-bucket/sites/blog\n  \
                            cms storage copy --from s3://my-bucket/sites/blog --to /srv/restored --endpoint http://127.0.0.1:8333"
    )]
    Copy(CopyArgs),
}

#[derive(Args)]
pub struct CopyArgs {
    /// A site folder, or s3://BUCKET/PREFIX.
    #[arg(long)]
    from: String,
    /// A folder (made if missing), or s3://BUCKET/PREFIX.
    #[arg(long)]
    to: String,
    /// The S3 endpoint (http://127.0.0.1:8333); else AWS_ENDPOINT_URL; else AWS's own.
    #[arg(long)]
    endpoint: Option<String>,
    /// The bucket's region; else AWS_REGION; else us-east-1.
    #[arg(long)]
    region: Option<String>,
    /// Copy into a folder or prefix that is not empty: files of the same name are replaced,
    /// the others stay (and the check then lists them).
    #[arg(long)]
    overwrite: bool,
}

pub fn run(StorageCommand::Copy(args): StorageCommand) -> anyhow::Result<()> {
    let from = Side::parse("--from", &args.from, &args)?;
    let to = Side::parse("--to", &args.to, &args)?;
    let (folder, site, copied) = match (from, to) {
        (Side::Folder(folder), Side::Bucket(config)) => {
            if !folder.is_dir() {
                bail!("{} is not a folder", folder.display());
            }
            let site = connect(&config)?;
            let copied = upload(&folder, &site, args.overwrite)?;
            (folder, site, copied)
        }
        (Side::Bucket(config), Side::Folder(folder)) => {
            refuse_non_empty(&folder, args.overwrite)?;
            let site = connect(&config)?;
            let copied = download(&site, &folder)?;
            (folder, site, copied)
        }
        (Side::Folder(_), Side::Folder(_)) => {
            bail!(
                "--from and --to are both folders; one side must be s3://BUCKET/PREFIX (copy folders with cp -r)"
            )
        }
        (Side::Bucket(_), Side::Bucket(_)) => {
            bail!(
                "--from and --to are both buckets; one side must be a folder (aws s3 sync copies between buckets)"
            )
        }
    };
    check_same(&folder, &site, copied)
}

enum Side {
    Folder(PathBuf),
    Bucket(S3StorageConfig),
}

impl Side {
    /// `s3://BUCKET/PREFIX` (with `--endpoint` and `--region`), else a folder path.
    fn parse(flag: &str, value: &str, args: &CopyArgs) -> anyhow::Result<Self> {
        let Some(rest) = value.strip_prefix("s3://") else { return Ok(Self::Folder(value.into())) };
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            bail!("{flag} {value:?} names no bucket; write s3://BUCKET or s3://BUCKET/PREFIX");
        }
        let config = s3_config(bucket, prefix, args).with_context(|| format!("{flag} {value}"))?;
        Ok(Self::Bucket(config))
    }
}

/// The settings as `storage:` in cms.yaml would give them, through the same checks (they
/// belong to the cms.yaml schema, so the settings go through a minimal one).
fn s3_config(bucket: &str, prefix: &str, args: &CopyArgs) -> anyhow::Result<S3StorageConfig> {
    let mut storage = serde_json::json!({ "kind": "s3", "bucket": bucket, "prefix": prefix });
    if let Some(endpoint) = &args.endpoint {
        storage["endpoint"] = endpoint.as_str().into();
    }
    if let Some(region) = &args.region {
        storage["region"] = region.as_str().into();
    }
    // JSON is YAML.
    let text = serde_json::json!({
        "site": { "name": "storage copy", "url": "https://example.com" },
        "storage": storage,
    });
    match crate::backend::parse_config(&text.to_string())?.1 {
        Backend::Bucket(config) => Ok(config),
        Backend::Folder => unreachable!("the text says kind: s3"),
    }
}

fn connect(config: &S3StorageConfig) -> anyhow::Result<S3Site> {
    Ok(S3Site::connect(config, None)?)
}

/// Whether a site-relative path is a node's own cache or staging, never copied: index
/// snapshots, image variants, upload staging, the webhook outbox, the bucket's change
/// journal, and the `.cms-tmp-*` files atomic writes stage.
fn is_node_local(key: &str) -> bool {
    const CACHE_FOLDERS: [&str; 4] = [".cms/index/", ".cms/variants/", ".cms/uploads/", ".cms/changes/"];
    key == ".cms/webhook-outbox.log"
        || CACHE_FOLDERS.iter().any(|folder| key.starts_with(folder))
        || key.rsplit('/').next().is_some_and(|name| name.starts_with(".cms-tmp-"))
}

/// The regular files of a folder by site-relative key (`/`-separated), less the node-local
/// ones; what is skipped (symlinks, never followed; sockets...) is returned too.
fn folder_files(root: &Path) -> anyhow::Result<(BTreeMap<String, PathBuf>, Vec<String>)> {
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

fn upload(folder: &Path, site: &S3Site, overwrite: bool) -> anyhow::Result<Copied> {
    let (files, skipped) = folder_files(folder)?;
    for line in &skipped {
        eprintln!("warning: skipped {line}");
    }
    if !overwrite && !site.list_objects_blocking()?.is_empty() {
        bail!(
            "{} is not empty; pass --overwrite to copy into it (objects of the same name are replaced)",
            site.description()
        );
    }
    let progress = Progress::new(format!("copying to {}", site.description()), files.len());
    let files: Vec<(&String, &PathBuf)> = files.iter().collect();
    let bytes = in_parallel(&files, &progress, |(key, path)| {
        site.put_file_blocking(key, path).with_context(|| format!("copying {key}"))
    })?;
    progress.finish();
    Ok(Copied { files: files.len(), bytes: bytes.iter().sum(), skipped: skipped.len() })
}

/// A target folder must be new or empty, unless `--overwrite`.
fn refuse_non_empty(folder: &Path, overwrite: bool) -> anyhow::Result<()> {
    if folder.exists() {
        let mut entries =
            fs::read_dir(folder).with_context(|| format!("{} is not a folder", folder.display()))?;
        if !overwrite && entries.next().is_some() {
            bail!(
                "{} is not empty; pass --overwrite to copy into it (files of the same name are replaced)",
                folder.display()
            );
        }
    }
    Ok(())
}

fn download(site: &S3Site, folder: &Path) -> anyhow::Result<Copied> {
    // Every key checked before anything is written.
    let keys = bucket_keys(site)?;
    if keys.is_empty() {
        bail!("{} holds no site files; check the bucket and the prefix", site.description());
    }
    for key in &keys {
        check_key(key)?;
    }
    fs::create_dir_all(folder).with_context(|| format!("making {}", folder.display()))?;
    let progress = Progress::new(format!("copying into {}", folder.display()), keys.len());
    let sizes = in_parallel(&keys, &progress, |key| {
        let bytes =
            site.get_object_blocking(key)?.with_context(|| format!("{key} vanished from the bucket"))?;
        let path = target_path(folder, key)?;
        // Accounts, keys and history are private, as the site folder keeps them.
        let written = if key.starts_with(".cms/") {
            atomic::write_private(&path, &bytes)
        } else {
            atomic::write(&path, &bytes, atomic::Existing::Replace)
        };
        written.with_context(|| format!("writing {}", path.display()))?;
        Ok(bytes.len() as u64)
    })?;
    progress.finish();
    Ok(Copied { files: keys.len(), bytes: sizes.iter().sum(), skipped: 0 })
}

#[derive(Default)]
struct Copied {
    files: usize,
    bytes: u64,
    /// Entries of the folder not copied (symlinks, never followed; sockets...).
    skipped: usize,
}

/// The site's keys in the bucket (as file names), less the node-local ones.
fn bucket_keys(site: &S3Site) -> anyhow::Result<Vec<String>> {
    let mut keys = Vec::new();
    for object in site.list_objects_blocking()? {
        if !is_node_local(&object.key) {
            keys.push(object.key);
        }
    }
    Ok(keys)
}

/// Refuses a key that would land outside the target folder.
fn check_key(key: &str) -> anyhow::Result<()> {
    if key.starts_with('/') || key.split('/').any(|part| matches!(part, "" | "." | "..")) {
        bail!(
            "bucket key {key:?} would land outside the target folder (absolute, `..`, `.` or an empty part); nothing was copied"
        );
    }
    Ok(())
}

/// Where a checked key goes; a symlinked folder on the way (in a folder copied into with
/// --overwrite) would lead outside, so it is refused.
fn target_path(folder: &Path, key: &str) -> anyhow::Result<PathBuf> {
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

/// Size and SHA-256 of each file, by key.
type Summary = BTreeMap<String, (u64, Vec<u8>)>;

fn check_same(folder: &Path, site: &S3Site, copied: Copied) -> anyhow::Result<()> {
    let mut in_folder = Summary::new();
    for (key, path) in folder_files(folder)?.0 {
        in_folder.insert(key, hash_file(&path)?);
    }
    let keys = bucket_keys(site)?;
    let progress = Progress::new("checking the copy".to_owned(), keys.len());
    let hashes = in_parallel(&keys, &progress, |key| {
        let bytes =
            site.get_object_blocking(key)?.with_context(|| format!("{key} vanished from the bucket"))?;
        Ok((bytes.len() as u64, digest::digest(&digest::SHA256, &bytes).as_ref().to_vec()))
    })?;
    progress.finish();
    let in_bucket: Summary = keys.into_iter().zip(hashes).collect();
    let mut differences = 0;
    for (key, summary) in &in_folder {
        match in_bucket.get(key) {
            None => eprintln!("only in the folder: {key}"),
            Some(other) if other.0 != summary.0 => {
                eprintln!("differs: {key} ({} bytes in the folder, {} in the bucket)", summary.0, other.0)
            }
            Some(other) if other.1 != summary.1 => eprintln!("differs: {key} (same size, other bytes)"),
            Some(_) => continue,
        }
        differences += 1;
    }
    for key in in_bucket.keys().filter(|key| !in_folder.contains_key(*key)) {
        eprintln!("only in the bucket: {key}");
        differences += 1;
    }
    let copied_skipped = copied.skipped;
    let copied = format!("copied {} files ({} bytes)", copied.files, copied.bytes);
    if differences > 0 {
        bail!("{copied}, but the two sides differ: {differences} difference(s), listed above");
    }
    if copied_skipped > 0 {
        bail!(
            "{copied}; both sides hold the same {} files, but {copied_skipped} entries of the folder were not copied \
             (listed above: symlinks are never followed; put the files they point to in their place)",
            in_folder.len()
        );
    }
    println!("{copied}; both sides hold the same {} files", in_folder.len());
    Ok(())
}

/// Requests to the bucket in flight at once: a copy of many small files waits on round
/// trips, not on bandwidth.
const IN_FLIGHT: usize = 8;

/// `each` of `items` on [`IN_FLIGHT`] threads, counted by `progress`; the results in the
/// order of `items`, or the first error (the others stop taking new items).
fn in_parallel<T: Sync, R: Send>(
    items: &[T],
    progress: &Progress,
    each: impl Fn(&T) -> anyhow::Result<R> + Sync,
) -> anyhow::Result<Vec<R>> {
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let results: Vec<Mutex<Option<anyhow::Result<R>>>> = items.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..IN_FLIGHT.min(items.len()) {
            scope.spawn(|| {
                while !failed.load(Ordering::Relaxed) {
                    let at = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(at) else { return };
                    let result = each(item);
                    failed.fetch_or(result.is_err(), Ordering::Relaxed);
                    *results[at].lock().unwrap_or_else(PoisonError::into_inner) = Some(result);
                    progress.advance();
                }
            });
        }
    });
    let mut all = Vec::with_capacity(items.len());
    // Items are taken in order, so the first not taken comes after every one taken,
    // the failed one included.
    for result in results {
        let Some(result) = result.into_inner().unwrap_or_else(PoisonError::into_inner) else { break };
        all.push(result?);
    }
    anyhow::ensure!(all.len() == items.len(), "stopped after an error");
    Ok(all)
}

/// How a long copy shows it is moving: a bar on a terminal (standard error), else a line
/// each time another tenth of the files is done (so a log shows it without flooding).
struct Progress {
    what: String,
    total: usize,
    done: AtomicUsize,
    bar: Option<ProgressBar>,
    started: Instant,
}

impl Progress {
    fn new(what: String, total: usize) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total as u64);
            bar.set_style(
                ProgressStyle::with_template(
                    "{msg}: {bar:30} {pos}/{len} files, {elapsed} (about {eta} left)",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar.set_message(what.clone());
            bar
        });
        Self { what, total, done: AtomicUsize::new(0), bar, started: Instant::now() }
    }

    fn advance(&self) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        match &self.bar {
            Some(bar) => bar.inc(1),
            None => {
                // Crossing a tenth of the total (every file of a small copy).
                let tenth = self.total.div_ceil(10).max(1);
                if done.is_multiple_of(tenth) && done < self.total {
                    eprintln!(
                        "{}: {done} of {} files, {} s",
                        self.what,
                        self.total,
                        self.started.elapsed().as_secs()
                    );
                }
            }
        }
    }

    fn finish(&self) {
        match &self.bar {
            Some(bar) => bar.finish(),
            None => eprintln!(
                "{}: {} of {} files, {} s",
                self.what,
                self.done.load(Ordering::Relaxed),
                self.total,
                self.started.elapsed().as_secs()
            ),
        }
    }
}

fn hash_file(path: &Path) -> anyhow::Result<(u64, Vec<u8>)> {
    let unreadable = || format!("reading {}", path.display());
    let mut file = fs::File::open(path).with_context(unreadable)?;
    let (mut context, mut size) = (digest::Context::new(&digest::SHA256), 0);
    let mut buffer = vec![0; 64 * 1024];
    loop {
        let read = file.read(&mut buffer).with_context(unreadable)?;
        if read == 0 {
            return Ok((size, context.finish().as_ref().to_vec()));
        }
        context.update(&buffer[..read]);
        size += read as u64;
    }
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
