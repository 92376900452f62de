//! `cms storage copy`: a site folder into a bucket or a bucket into a folder, then a check
//! that both sides hold the same files (paths, sizes and SHA-256). Needs no site folder.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use cms_fs::atomic;
use cms_s3::{S3Site, S3StorageConfig};
use ring::digest;

use crate::backend::Backend;
use crate::progress::{Progress, in_parallel};
use crate::site_files::{bucket_keys, check_key, folder_files, target_path};

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
        match bucket_url(flag, value, args.endpoint.as_deref(), args.region.as_deref())? {
            Some(config) => Ok(Self::Bucket(config)),
            None => Ok(Self::Folder(value.into())),
        }
    }
}

/// The bucket `value` names as `s3://BUCKET/PREFIX` (with the `--endpoint` and `--region`
/// given), or `None` for a folder path; `flag` names the argument in errors.
pub fn bucket_url(
    flag: &str,
    value: &str,
    endpoint: Option<&str>,
    region: Option<&str>,
) -> anyhow::Result<Option<S3StorageConfig>> {
    let Some(rest) = value.strip_prefix("s3://") else { return Ok(None) };
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        bail!("{flag} {value:?} names no bucket; write s3://BUCKET or s3://BUCKET/PREFIX");
    }
    let config = s3_config(bucket, prefix, endpoint, region).with_context(|| format!("{flag} {value}"))?;
    Ok(Some(config))
}

/// The settings as `storage:` in cms.yaml would give them, through the same checks (they
/// belong to the cms.yaml schema, so the settings go through a minimal one).
fn s3_config(
    bucket: &str,
    prefix: &str,
    endpoint: Option<&str>,
    region: Option<&str>,
) -> anyhow::Result<S3StorageConfig> {
    let mut storage = serde_json::json!({ "kind": "s3", "bucket": bucket, "prefix": prefix });
    if let Some(endpoint) = endpoint {
        storage["endpoint"] = endpoint.into();
    }
    if let Some(region) = region {
        storage["region"] = region.into();
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

pub fn connect(config: &S3StorageConfig) -> anyhow::Result<S3Site> {
    Ok(S3Site::connect(config, None)?)
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
