//! `cms backup`, `cms backup verify` and `cms restore`: a site (folder or bucket) into one
//! archive with a checksum manifest, while its server runs and writes go on, and back
//! into an empty folder or bucket prefix.
//!
//! Consistency: files are listed once the backup begins, and every write is a whole file
//! put in place at once (a rename in a folder, a PUT in a bucket), so each file is read
//! whole, as it was at some instant of the backup, and every write acknowledged before the
//! backup began is in it. The web editor's sessions and each node's caches, staging and
//! webhook outbox stay out.

mod archive;

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::{BufReader, BufWriter, Read};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::UNIX_EPOCH;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use cms_s3::{S3Site, S3StorageConfig};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::backend::{self, Backend};
use crate::progress::{IN_FLIGHT, Progress, in_parallel};
use crate::site::Site;
use crate::site_files::{folder_files, is_node_local};
use archive::{ArchiveWriter, Manifest};

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct BackupArgs {
    #[command(subcommand)]
    command: Option<BackupCommand>,
    /// The archive to write (a .tar.gz that `tar xzf` opens too). Written under another
    /// name and renamed when complete, so a failed backup leaves no partial archive.
    #[arg(long, value_name = "FILE", required = true)]
    to: Option<PathBuf>,
    /// Replace FILE if it exists.
    #[arg(long)]
    overwrite: bool,
}

#[derive(Subcommand)]
pub enum BackupCommand {
    /// Check an archive: every file against its checksum and the manifest, and the
    /// compressed stream to its end. Exits non-zero on any damage.
    #[command(after_help = "Examples:\n  cms backup verify /var/backups/cms/site-2026-11-29.tar.gz")]
    Verify {
        /// The archive.
        file: PathBuf,
    },
}

#[derive(Args)]
pub struct RestoreArgs {
    /// The archive `cms backup` wrote.
    file: PathBuf,
    /// A new or empty folder, or s3://BUCKET/PREFIX with no objects under it.
    #[arg(long, value_name = "DIR")]
    to: String,
    /// The S3 endpoint of --to (http://127.0.0.1:8333); else AWS_ENDPOINT_URL; else AWS's own.
    #[arg(long)]
    endpoint: Option<String>,
    /// The region of --to's bucket; else AWS_REGION; else us-east-1.
    #[arg(long)]
    region: Option<String>,
}

impl BackupArgs {
    /// `cms backup verify` needs no site.
    pub fn needs_site(&self) -> bool {
        self.command.is_none()
    }
}

pub fn run(site: Option<&Site>, args: BackupArgs) -> anyhow::Result<()> {
    match (args.command, site, args.to) {
        (Some(BackupCommand::Verify { file }), _, _) => verify(&file),
        (None, Some(site), Some(to)) => backup(site, &to, args.overwrite),
        _ => unreachable!("clap requires --to, and main a site, without a subcommand"),
    }
}

/// The files of the site in the archive: all but the node-local ones and the editor's
/// sessions (signed-in browsers sign in again after a restore).
fn is_kept(key: &str) -> bool {
    !is_node_local(key) && !key.starts_with(".cms/sessions/")
}

/// Where the files come from.
enum Source {
    Folder(PathBuf),
    /// The bucket, and the node's own `cms.yaml` (the one that names the bucket).
    Bucket {
        site: S3Site,
        config_file: PathBuf,
    },
}

fn backup(site: &Site, to: &Path, overwrite: bool) -> anyhow::Result<()> {
    let (config, backend) = backend::load_config(&site.root)?;
    if to.exists() && !overwrite {
        bail!("{} exists; name a new file (say, with the date in it) or pass --overwrite", to.display());
    }
    let source = match backend {
        Backend::Folder => Source::Folder(site.root.clone()),
        Backend::Bucket(settings) => Source::Bucket {
            site: crate::storage::connect(&settings)?,
            config_file: site.root.join(cms_fs::CONFIG_FILE),
        },
    };
    let description = match &source {
        Source::Folder(root) => root.display().to_string(),
        Source::Bucket { site, .. } => site.description().to_owned(),
    };
    // To the second, as the archive's times are.
    let began = OffsetDateTime::now_utc().replace_nanosecond(0)?;

    let folder = to.parent().filter(|parent| !parent.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let staged = tempfile::Builder::new()
        .prefix(".cms-backup-")
        .tempfile_in(folder)
        .with_context(|| format!("cannot write into {}", folder.display()))?;
    // The archive holds accounts and key hashes: only its owner may read it.
    fs::set_permissions(staged.path(), fs::Permissions::from_mode(0o600))?;
    let out = BufWriter::new(staged.as_file().try_clone()?);
    let mut writer = ArchiveWriter::new(out, began.unix_timestamp().max(0) as u64);
    // Listed after `began`: every write acknowledged before it is listed. A file moved
    // while the backup runs (a resource renamed) is gone from its listed place: listing
    // again finds it in its new one.
    let mut seen = HashSet::new();
    let mut gone = 0;
    for round in 0..=RELISTS {
        let todo: Vec<Listed> =
            list(&source, round == 0)?.into_iter().filter(|file| seen.insert(file.key.clone())).collect();
        if todo.is_empty() {
            break;
        }
        if round == 0 {
            hold_for_tests();
        }
        let what = if round == 0 {
            format!("backing up {description}")
        } else {
            "backing up what was added or moved meanwhile".to_owned()
        };
        let progress = Progress::new(what, todo.len());
        gone += copy_into(&source, &todo, &mut writer, &progress)?;
        progress.finish();
    }
    let manifest = Manifest {
        format: archive::FORMAT.to_owned(),
        cms: crate::VERSION.to_owned(),
        began: began.format(&Rfc3339)?,
        site: config.site.name.clone(),
        source: description,
        files: Vec::new(),
    };
    let (manifest, out) = writer.finish(manifest)?;
    let file = out.into_inner().map_err(|error| error.into_error()).context("writing the archive")?;
    file.sync_all().context("writing the archive")?;
    let compressed = file.metadata()?.len();
    let persisted = if overwrite { staged.persist(to) } else { staged.persist_noclobber(to) };
    persisted.map_err(|error| error.error).with_context(|| format!("cannot write {}", to.display()))?;
    if let Ok(parent) = fs::File::open(folder) {
        let _ = parent.sync_all();
    }
    let sha256 = hash_file(to)?;
    let gone = if gone > 0 { format!(" ({gone} moved or deleted while it ran)") } else { String::new() };
    println!(
        "wrote {}: {} files, {} bytes ({compressed} compressed){gone}; sha256 {sha256}",
        to.display(),
        manifest.files.len(),
        manifest.bytes(),
    );
    Ok(())
}

/// A hook for the tests: with `CMS_TEST_HOLD_BACKUP=PATH` (a FIFO), the backup waits
/// after its first listing until that file was read to its end, so that a test can move a
/// file while the backup runs without racing it.
fn hold_for_tests() {
    if let Some(path) = std::env::var_os("CMS_TEST_HOLD_BACKUP") {
        let _ = fs::read(path);
    }
}

/// How many times the site is listed again for files added or moved while the backup ran.
const RELISTS: usize = 3;

/// Bytes of a bucket's objects read at once (a batch is read in parallel, then written in
/// order): bounds the backup's memory whatever the media.
const BATCH_BYTES: u64 = 64 << 20;

/// A file to back up.
struct Listed {
    key: String,
    /// A bucket's object: its size and time from the listing (a folder's file: from the
    /// file opened).
    size: u64,
    mtime: u64,
}

/// The files of the site in the archive now, by key; the first listing warns about what is
/// skipped (symlinks, sockets...).
fn list(source: &Source, warn: bool) -> anyhow::Result<Vec<Listed>> {
    match source {
        Source::Folder(root) => {
            let (files, skipped) = folder_files(root)?;
            if warn {
                for line in &skipped {
                    eprintln!("warning: not in the backup: {line}");
                }
            }
            Ok(files
                .into_keys()
                .filter(|key| is_kept(key))
                .map(|key| Listed { key, size: 0, mtime: 0 })
                .collect())
        }
        Source::Bucket { site, .. } => {
            let mut listed: Vec<Listed> = site
                .list_objects_blocking()?
                .into_iter()
                .filter(|object| is_kept(&object.key) && object.key != cms_fs::CONFIG_FILE)
                .map(|object| Listed {
                    key: object.key,
                    size: object.size,
                    mtime: object.modified.max(0) as u64,
                })
                .collect();
            // The node's own cms.yaml, the one that names the bucket.
            listed.push(Listed { key: cms_fs::CONFIG_FILE.to_owned(), size: 0, mtime: 0 });
            listed.sort_by(|a, b| a.key.cmp(&b.key));
            Ok(listed)
        }
    }
}

/// Writes `files` into the archive in order; how many were gone when their turn came.
fn copy_into<W: std::io::Write>(
    source: &Source,
    files: &[Listed],
    writer: &mut ArchiveWriter<W>,
    progress: &Progress,
) -> anyhow::Result<usize> {
    let mut gone = 0;
    match source {
        // One file at a time, streamed from the file opened.
        Source::Folder(root) => {
            for file in files {
                let path = root.join(&file.key);
                match open_regular(&path).with_context(|| format!("reading {}", path.display()))? {
                    Opened::File(opened, size, mtime) => writer.add_reader(&file.key, size, mtime, opened)?,
                    Opened::Gone => gone += 1,
                    Opened::NotAFile => {
                        eprintln!("warning: not in the backup: {} is no longer a regular file", file.key)
                    }
                }
                progress.advance();
            }
        }
        // Read in parallel batches of at most BATCH_BYTES, written in order.
        Source::Bucket { site, config_file } => {
            let mut start = 0;
            while start < files.len() {
                let mut end = start + 1;
                let mut bytes = files[start].size;
                while end < files.len()
                    && end - start < IN_FLIGHT * 8
                    && bytes + files[end].size <= BATCH_BYTES
                {
                    bytes += files[end].size;
                    end += 1;
                }
                let batch = &files[start..end];
                let contents = in_parallel(batch, progress, |file| {
                    if file.key == cms_fs::CONFIG_FILE {
                        let text = fs::read(config_file)
                            .with_context(|| format!("reading {}", config_file.display()))?;
                        let mtime = fs::metadata(config_file)?
                            .modified()?
                            .duration_since(UNIX_EPOCH)
                            .map_or(0, |d| d.as_secs());
                        return Ok(Some((text, mtime)));
                    }
                    Ok(site.get_object_blocking(&file.key)?.map(|bytes| (bytes, file.mtime)))
                })?;
                for (file, content) in batch.iter().zip(contents) {
                    match content {
                        Some((bytes, mtime)) => writer.add(&file.key, &bytes, mtime)?,
                        None => gone += 1,
                    }
                }
                start = end;
            }
        }
    }
    Ok(gone)
}

/// A folder's file as opened for the backup.
enum Opened {
    /// The file, its size and time of last change (Unix seconds) when opened.
    File(fs::File, u64, u64),
    /// Deleted or moved since it was listed.
    Gone,
    /// Replaced by a symlink, a folder or a FIFO since it was listed: never followed, never
    /// waited on.
    NotAFile,
}

fn open_regular(path: &Path) -> std::io::Result<Opened> {
    use rustix::fs::OFlags;
    let flags = (OFlags::NOFOLLOW | OFlags::NONBLOCK).bits() as i32;
    let file = match fs::OpenOptions::new().read(true).custom_flags(flags).open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Opened::Gone),
        // O_NOFOLLOW on a symlink.
        Err(error) if error.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
            return Ok(Opened::NotAFile);
        }
        Err(error) => return Err(error),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Ok(Opened::NotAFile);
    }
    let mtime = meta.modified()?.duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs());
    Ok(Opened::File(file, meta.len(), mtime))
}

fn verify(file: &Path) -> anyhow::Result<()> {
    let manifest = read_archive(file, "checking", |_, _, _| Ok(()))?;
    println!(
        "{}: {} files, {} bytes, every checksum matches; backup of {:?} from {}, begun {} by cms {}",
        file.display(),
        manifest.files.len(),
        manifest.bytes(),
        manifest.site,
        manifest.source,
        manifest.began,
        manifest.cms
    );
    Ok(())
}

/// Reads the whole archive through [`archive::read`], with progress by its compressed size.
fn read_archive(
    file: &Path,
    what: &str,
    each: impl FnMut(&str, u64, &mut dyn Read) -> anyhow::Result<()>,
) -> anyhow::Result<Manifest> {
    let opened = fs::File::open(file).with_context(|| format!("cannot open {}", file.display()))?;
    let size = opened.metadata()?.len();
    let progress = Progress::counting(format!("{what} {}", file.display()), (size >> 10) as usize, "KiB");
    let counted = Counting { inner: BufReader::new(opened), progress: &progress, bytes: 0 };
    let manifest = archive::read(counted, each).with_context(|| format!("{} is refused", file.display()))?;
    progress.finish();
    Ok(manifest)
}

pub fn restore(args: RestoreArgs) -> anyhow::Result<()> {
    match crate::storage::bucket_url("--to", &args.to, args.endpoint.as_deref(), args.region.as_deref())? {
        Some(bucket) => restore_to_bucket(&args.file, &bucket),
        None => restore_to_folder(&args.file, Path::new(&args.to)),
    }
}

/// Restores into a staging folder beside the target, renamed into place once every file
/// matched the manifest: a damaged archive leaves nothing behind.
fn restore_to_folder(file: &Path, target: &Path) -> anyhow::Result<()> {
    if target.exists() {
        let mut entries =
            fs::read_dir(target).with_context(|| format!("{} is not a folder", target.display()))?;
        if entries.next().is_some() {
            bail!("{} is not empty; restore into a new or empty folder", target.display());
        }
    }
    let parent = target.parent().filter(|parent| !parent.as_os_str().is_empty()).unwrap_or(Path::new("."));
    fs::create_dir_all(parent).with_context(|| format!("cannot make {}", parent.display()))?;
    let staging = tempfile::Builder::new()
        .prefix(".cms-restore-")
        .tempdir_in(parent)
        .with_context(|| format!("cannot write into {}", parent.display()))?;
    let manifest = read_archive(file, "restoring", |key, mtime, content| {
        let path = staging.path().join(key);
        let folder = path.parent().expect("a key names a file");
        fs::DirBuilder::new().recursive(true).mode(0o755).create(folder)?;
        let private = key.starts_with(".cms/");
        let mut out = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(if private { 0o600 } else { 0o644 })
            .open(&path)
            .with_context(|| format!("writing {}", path.display()))?;
        std::io::copy(content, &mut out)?;
        out.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(mtime))?;
        out.sync_all()?;
        Ok(())
    })?;
    let note = serve_from_folder(staging.path())?;
    fs::set_permissions(staging.path(), fs::Permissions::from_mode(0o755))?;
    // rename(2) replaces an empty folder, and fails on one filled meanwhile (the staging
    // folder is then removed with everything in it).
    fs::rename(staging.path(), target).with_context(|| {
        format!("cannot move the restored site into {} (is it still empty?)", target.display())
    })?;
    let _ = staging.keep();
    if let Ok(parent) = fs::File::open(parent) {
        let _ = parent.sync_all();
    }
    println!(
        "restored {} files ({} bytes) of {:?}, begun {}, into {}{note}; serve it with `cms serve --site {}`",
        manifest.files.len(),
        manifest.bytes(),
        manifest.site,
        manifest.began,
        target.display(),
        target.display()
    );
    Ok(())
}

/// A bucket site's `cms.yaml` restored into a folder would still send the server to the
/// bucket: its `storage:` section goes, so the folder serves itself.
fn serve_from_folder(root: &Path) -> anyhow::Result<String> {
    let path = root.join(cms_fs::CONFIG_FILE);
    let Ok(text) = fs::read_to_string(&path) else { return Ok(String::new()) };
    let Ok((_, Backend::Bucket(settings))) = backend::parse_config(&text) else { return Ok(String::new()) };
    let local = without_top_level_key(&text, "storage");
    match backend::parse_config(&local) {
        Ok((_, Backend::Folder)) => {
            fs::write(&path, local)?;
            Ok(format!(
                " (its cms.yaml named the bucket {}; the storage: section was removed so that the folder serves itself)",
                settings.bucket
            ))
        }
        _ => bail!(
            "the archive's cms.yaml names the bucket {}, and its storage: section cannot be removed cleanly; \
             restore into a bucket instead (--to s3://BUCKET/PREFIX)",
            settings.bucket
        ),
    }
}

/// `text` without the top-level `key:` and the lines indented under it; comments at the
/// margin go with what follows them.
fn without_top_level_key(text: &str, key: &str) -> String {
    let mut kept = String::with_capacity(text.len());
    let mut skipping = false;
    let mut comments = String::new();
    for line in text.split_inclusive('\n') {
        if line.starts_with('#') {
            comments.push_str(line);
            continue;
        }
        if !line.starts_with([' ', '\t', '\n', '\r']) {
            skipping = line.strip_prefix(key).is_some_and(|rest| rest.trim_start().starts_with(':'));
        }
        if !skipping {
            kept.push_str(&comments);
            kept.push_str(line);
        }
        comments.clear();
    }
    kept + &comments
}

/// Checks the whole archive first, then puts each file: a damaged archive writes nothing.
fn restore_to_bucket(file: &Path, bucket: &S3StorageConfig) -> anyhow::Result<()> {
    let site = crate::storage::connect(bucket)?;
    if !site.list_objects_blocking()?.is_empty() {
        bail!("{} is not empty; restore into a bucket prefix with no objects", site.description());
    }
    let checked = read_archive(file, "checking", |_, _, _| Ok(()))?;
    // The second read puts only what matches the manifest just checked (the file may
    // have been replaced in between).
    let expected: HashMap<&str, &archive::FileEntry> =
        checked.files.iter().map(|entry| (entry.path.as_str(), entry)).collect();
    let progress = Progress::new(format!("putting into {}", site.description()), checked.files.len());
    let put_count = AtomicUsize::new(0);
    let mut batch: Vec<(String, Mutex<Vec<u8>>)> = Vec::new();
    let mut batch_bytes = 0;
    let put = |batch: &mut Vec<(String, Mutex<Vec<u8>>)>| -> anyhow::Result<()> {
        in_parallel(batch, &progress, |(key, bytes)| {
            let bytes = std::mem::take(&mut *bytes.lock().unwrap_or_else(PoisonError::into_inner));
            site.put_object_blocking(key, bytes).with_context(|| format!("putting {key}"))?;
            put_count.fetch_add(1, Ordering::Relaxed);
            Ok(())
        })?;
        batch.clear();
        Ok(())
    };
    let restored = read_archive(file, "reading", |key, _, content| {
        let mut bytes = Vec::new();
        content.read_to_end(&mut bytes)?;
        let matches = expected
            .get(key)
            .is_some_and(|entry| entry.size == bytes.len() as u64 && entry.sha256 == archive::sha256(&bytes));
        if !matches {
            bail!("{key} is not what the archive held when it was checked: the file changed meanwhile");
        }
        batch_bytes += bytes.len() as u64;
        batch.push((key.to_owned(), Mutex::new(bytes)));
        if batch.len() >= IN_FLIGHT * 8 || batch_bytes >= BATCH_BYTES {
            put(&mut batch)?;
            batch_bytes = 0;
        }
        Ok(())
    })
    .and_then(|manifest| put(&mut batch).map(|()| manifest));
    let manifest = match restored {
        Ok(manifest) => manifest,
        Err(error) => {
            let put = put_count.load(Ordering::Relaxed);
            if put > 0 {
                return Err(error.context(format!(
                    "{put} objects were put into {} before this; remove them before restoring again \
                     (a restore needs an empty prefix)",
                    site.description()
                )));
            }
            return Err(error);
        }
    };
    progress.finish();
    println!(
        "restored {} files ({} bytes) of {:?}, begun {}, into {}; a node serves it with storage: naming this bucket and prefix",
        manifest.files.len(),
        manifest.bytes(),
        manifest.site,
        manifest.began,
        site.description()
    );
    Ok(())
}

/// Counts what is read into a progress by KiB.
struct Counting<'a, R> {
    inner: R,
    progress: &'a Progress,
    bytes: u64,
}

impl<R: Read> Read for Counting<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let read = self.inner.read(buf)?;
        let before = self.bytes >> 10;
        self.bytes += read as u64;
        let kib = (self.bytes >> 10) - before;
        if kib > 0 {
            self.progress.advance_by(kib as usize);
        }
        Ok(read)
    }
}

fn hash_file(path: &Path) -> anyhow::Result<String> {
    let mut file = fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let mut context = ring::digest::Context::new(&ring::digest::SHA256);
    let mut buffer = vec![0; 64 * 1024];
    loop {
        let read = file.read(&mut buffer)?;
        if read == 0 {
            return Ok(hex::encode(context.finish()));
        }
        context.update(&buffer[..read]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_and_caches_stay_out() {
        for key in [".cms/sessions/abc", ".cms/index/posts.snapshot", ".cms/webhook-outbox.log"] {
            assert!(!is_kept(key), "{key}");
        }
        for key in ["cms.yaml", ".cms/users.yaml", ".cms/versions/posts/a/1.md", ".cms/events/1.log"] {
            assert!(is_kept(key), "{key}");
        }
    }

    #[test]
    fn a_top_level_key_goes_with_its_lines() {
        let text = "site:\n  name: S\nstorage:\n  kind: s3\n\n  bucket: b # x\n# about collections\ncollections: []\n";
        assert_eq!(
            without_top_level_key(text, "storage"),
            "site:\n  name: S\n# about collections\ncollections: []\n"
        );
        let flow = "storage: {kind: s3, bucket: b}\nsite:\n  name: S\n";
        assert_eq!(without_top_level_key(flow, "storage"), "site:\n  name: S\n");
        assert_eq!(without_top_level_key("storage_x: 1\n", "storage"), "storage_x: 1\n");
    }
}
