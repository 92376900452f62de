//! `cms check`: a doctor for a site. One line per finding (`ok:`, `warning:`, `error:`),
//! then a summary; the exit status is non-zero on any error (and, with `--strict`, on any
//! warning), so that CI can run it.

use std::fs;
use std::path::Path;

use anyhow::bail;
use clap::Args;
use cms_core::Cms;
use cms_core::account::Role;
use cms_core::config::SiteConfig;
use cms_s3::S3StorageConfig;

use crate::backend::Backend;
use cms_core::license::{Feature, LicenseState};
use cms_core::policy::Caller;
use time::OffsetDateTime;

use crate::admin::plural;
use crate::site::{Purpose, Site};

#[derive(Args)]
pub struct CheckArgs {
    /// Fail on warnings too (a file that cannot be listed, a stale cms.schema.json...).
    #[arg(long)]
    strict: bool,
}

/// What was found, printed as it is found.
#[derive(Default)]
struct Report {
    errors: usize,
    warnings: usize,
}

impl Report {
    fn ok(&mut self, what: impl std::fmt::Display) {
        println!("ok: {what}");
    }

    fn warn(&mut self, what: impl std::fmt::Display) {
        self.warnings += 1;
        println!("warning: {what}");
    }

    /// An error; a message of several lines is indented under its first.
    fn error(&mut self, what: impl std::fmt::Display) {
        self.errors += 1;
        println!("error: {}", what.to_string().replace('\n', "\n       "));
    }
}

pub fn run(site: &Site, args: &CheckArgs) -> anyhow::Result<()> {
    println!("checking the site in {}", site.root.display());
    let mut report = Report::default();
    check_site(site, &mut report);
    let (errors, warnings) = (report.errors, report.warnings);
    if errors == 0 && warnings == 0 {
        println!("no problems found");
        return Ok(());
    }
    println!("found {} and {}", plural(errors, "error", "errors"), plural(warnings, "warning", "warnings"));
    if errors > 0 || args.strict {
        bail!(
            "cms check found {}{}",
            plural(errors, "error", "errors"),
            if args.strict {
                format!(" and {}", plural(warnings, "warning", "warnings"))
            } else {
                String::new()
            }
        );
    }
    Ok(())
}

fn check_site(site: &Site, report: &mut Report) {
    let (config, backend) = match crate::backend::load_config(&site.root) {
        Ok(loaded) => loaded,
        Err(error) => {
            report.error(error);
            return;
        }
    };
    report.ok(format!(
        "cms.yaml: {} and {}",
        plural(config.collections.len(), "collection", "collections"),
        plural(config.resources.len(), "resource folder", "resource folders")
    ));
    check_schema_file(&site.root, report);
    check_state_folder(&site.root, report);
    check_server(&site.root, report);
    match &backend {
        Backend::Folder => {
            check_folders(&site.root, &config, report);
            if let Some(git) = &config.git {
                check_git(&site.root, git, report);
            }
        }
        Backend::Bucket(s3) => {
            if !check_bucket(s3, report) {
                return;
            }
        }
    }
    let open = match site.open(Purpose::Command { emits_events: false }) {
        Ok(open) => open,
        Err(error) => {
            report.error(format!("cannot open the site: {error:#}"));
            return;
        }
    };
    let checked = crate::admin::block_on(async {
        check_items(&open.cms, report).await;
        check_license(&site.root, &open.cms, report).await;
        check_users(&open.cms, report).await;
        Ok(())
    });
    if let Err(error) = checked {
        report.error(format!("{error:#}"));
    }
    open.finish_deliveries();
}

/// A site kept in git: its repository, commits waiting, and the conflicts pulls met (each
/// a warning, until the item's two versions are looked at and the conflict forgotten).
fn check_git(root: &Path, git: &cms_core::config::GitConfig, report: &mut Report) {
    let state = root.join(cms_fs::STATE_DIR);
    match cms_git::report(root, &state, git) {
        Ok(git_report) => {
            report.ok(format!(
                "git: branch {} at {}",
                git_report.branch,
                git_report.head.as_deref().map_or("no commit yet", |head| head.get(..8).unwrap_or(head))
            ));
            if let Some(server) =
                git_report.server.filter(|s| s.push_error.is_some() || s.pull_error.is_some())
            {
                report.warn(format!("git: {}", server.summary()));
            }
            for conflict in &git_report.conflicts {
                report.warn(format!(
                    "git: a pull at {} met a conflict in {}: the remote's version is current, this site's is on \
                     the branch {} (compare them in the editor, or with `git diff {} {}`; then `cms git resolve \
                     FILE`)",
                    conflict.at,
                    conflict.paths.join(", "),
                    conflict.branch,
                    conflict.branch,
                    git_report.branch
                ));
            }
        }
        Err(error) => report.error(format!("git: {error}")),
    }
}

/// `cms.schema.json`, when the site has one: it should be this program's schema.
fn check_schema_file(root: &Path, report: &mut Report) {
    let path = root.join(crate::init::SCHEMA_FILE);
    let Ok(text) = fs::read_to_string(&path) else { return };
    let saved: Option<serde_json::Value> = serde_json::from_str(&text).ok();
    if saved.as_ref() != Some(&crate::backend::config_schema()) {
        report.warn(format!(
            "{} is not this version's schema of cms.yaml, so editors check the file against another; update it with `cms config schema > {}`",
            crate::init::SCHEMA_FILE,
            path.display()
        ));
    }
}

/// `.cms/`: users, key hashes, history and the outbox are written there.
fn check_state_folder(root: &Path, report: &mut Report) {
    let state = root.join(cms_fs::STATE_DIR);
    if !state.exists() {
        if let Err(why) = writable(root) {
            report.error(format!(
                "the site folder cannot be written ({why}); the server keeps its state in {}",
                state.display()
            ));
        }
        return;
    }
    match writable(&state) {
        Ok(()) => report.ok(format!("{} can be written", state.display())),
        Err(why) => report.error(format!(
            "{} cannot be written ({why}): users, keys, history and webhook deliveries are kept there; give it to the user that runs cms",
            state.display()
        )),
    }
}

/// Whether a server serves the folder now (its lock, `cms_fs::ServeLock`), and which: a
/// second one would be refused.
fn check_server(root: &Path, report: &mut Report) {
    match cms_fs::ServeLock::holder(&root.join(cms_fs::STATE_DIR)) {
        Ok(Some(holder)) => report.ok(format!("a server serves this folder now ({holder})")),
        Ok(None) => report.ok("no server serves this folder now"),
        Err(error) => report.warn(format!("cannot tell whether a server serves this folder: {error}")),
    }
}

/// Each collection and resource folder: there, a folder, readable and writable.
fn check_folders(root: &Path, config: &SiteConfig, report: &mut Report) {
    let folders = config
        .collections
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("collections[{i}].path"), &c.path, "items cannot be created or edited"))
        .chain(config.resources.iter().enumerate().map(|(i, r)| {
            (format!("resources[{i}].path"), &r.path, "files cannot be uploaded, renamed or deleted")
        }));
    for (key, relative, without_writes) in folders {
        let path = root.join(relative);
        match fs::metadata(&path) {
            Err(_) => report.error(format!(
                "{key}: the folder {relative} does not exist; make it (mkdir -p {}) or correct cms.yaml",
                path.display()
            )),
            Ok(meta) if !meta.is_dir() => report.error(format!("{key}: {relative} is not a folder")),
            Ok(_) => match (fs::read_dir(&path), writable(&path)) {
                (Err(why), _) => report.error(format!("{key}: {relative} cannot be read ({why})")),
                (Ok(_), Err(why)) => {
                    report.warn(format!("{key}: {relative} cannot be written ({why}), so {without_writes}"))
                }
                (Ok(_), Ok(())) => report.ok(format!("{key}: {relative}")),
            },
        }
    }
}

/// Whether a file can be made in `folder` (made and removed at once).
fn writable(folder: &Path) -> std::io::Result<()> {
    tempfile::Builder::new().prefix(".cms-check-").tempfile_in(folder).map(drop)
}

/// A bucket site: credentials in the environment, the bucket answering, and conditional
/// writes enforced. `false` when the bucket cannot be reached (the rest needs it).
fn check_bucket(s3: &S3StorageConfig, report: &mut Report) -> bool {
    let has = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    let (id, secret) = (has("AWS_ACCESS_KEY_ID"), has("AWS_SECRET_ACCESS_KEY"));
    let other_source = [
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    ]
    .into_iter()
    .any(has);
    match (id, secret) {
        (true, true) => report.ok("credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are set"),
        (true, false) => report.error("credentials: AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not"),
        (false, true) => report.error("credentials: AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not"),
        (false, false) if other_source => report.ok("credentials: from the web identity or container credentials"),
        (false, false) if s3.endpoint.is_some() => report.error(
            "credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set; the bucket's server needs them",
        ),
        (false, false) => report.warn(
            "credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set; only an EC2 instance role can stand in for them",
        ),
    }
    let bucket = match cms_s3::S3Site::connect(s3, None) {
        Ok(bucket) => bucket,
        Err(error) => {
            report.error(format!("storage: {error}"));
            return false;
        }
    };
    report.ok(format!("storage: the bucket {} answers", bucket.description()));
    let probe =
        format!("check-probe-{}", hex::encode(&crate::site::random_key_bytes().unwrap_or_default()[..8]));
    match bucket.enforces_conditional_writes(&probe) {
        Ok(true) => report.ok("storage: the store enforces conditional writes (If-None-Match)"),
        Ok(false) => report.warn(
            "storage: the store ignores If-None-Match: two servers writing one item can overwrite each other's change (docs/deploying.md lists stores that enforce it)",
        ),
        Err(error) => report.error(format!("storage: cannot write a probe object to .cms/ ({error})")),
    }
    true
}

/// Every collection indexed; each file that cannot be listed named with the reason.
async fn check_items(cms: &Cms, report: &mut Report) {
    for collection in cms.all_collections() {
        // `blog-posts`, or `blog-posts (fr)` for a translation's collection.
        let name = match &collection.language {
            Some(language) if language.at > 0 => format!("{} ({})", collection.slug, language.code),
            _ => collection.slug.clone(),
        };
        match cms.indexed_items(collection).await {
            Ok(items) => report.ok(format!("collection {}: {}", name, plural(items.len(), "item", "items"))),
            Err(error) => report.error(format!("collection {}: cannot be read: {error}", name)),
        }
        // Shared fields (`translate: false`) that a hand edit made differ between languages.
        match cms.shared_field_drift(collection).await {
            Ok(drift) => {
                for (filename, field) in drift {
                    report.warn(format!(
                        "collection {name}: {filename}: {field} is shared by every language (translate: false) \
                         but differs from the default language's item; save that item to write it here again"
                    ));
                }
            }
            Err(error) => {
                report.error(format!("collection {name}: cannot compare its shared fields: {error}"))
            }
        }
        // Items that break the model are still served; they are reported here.
        match cms.items_breaking_model(collection).await {
            Ok(broken) => {
                for (filename, fields) in broken {
                    let problems: Vec<String> =
                        fields.iter().map(|f| format!("{} {}", f.field, f.message)).collect();
                    report.warn(format!(
                        "collection {}: {filename} breaks the content model: {}",
                        name,
                        problems.join("; ")
                    ));
                }
            }
            Err(error) => report.error(format!("collection {}: cannot check its model: {error}", name)),
        }
    }
    for skipped in cms.skipped_files().await {
        report.warn(format!(
            "collection {}: {} is not listed: {}",
            skipped.collection, skipped.filename, skipped.reason
        ));
    }
}

async fn check_license(root: &Path, cms: &Cms, report: &mut Report) {
    let state = match cms.license_state().await {
        Ok(state) => state,
        Err(error) => {
            report.error(format!("license: cannot be read: {error}"));
            return;
        }
    };
    let problems = crate::site::license_problems(root, &state);
    for problem in &problems {
        report.error(format!("license: {problem}"));
    }
    if !problems.is_empty() {
        return;
    }
    if let LicenseState::Active(license) = &state {
        let expiry = license.expiry().ok().flatten();
        report.ok(format!(
            "license: active for {}, with {}{}",
            license.licensee,
            license.features.join(", "),
            expiry.map(|e| format!(", until {}", e.date())).unwrap_or_default()
        ));
        if let Some(expiry) = expiry
            && expiry - OffsetDateTime::now_utc() < time::Duration::days(30)
        {
            report.warn(format!("license: expires on {}; install a new one before", expiry.date()));
        }
        let missing: Vec<&str> =
            Feature::ALL.into_iter().filter(|f| !state.has(*f)).map(Feature::as_str).collect();
        if !missing.is_empty() {
            println!("note: the license does not turn on {}", missing.join(", "));
        }
    }
}

async fn check_users(cms: &Cms, report: &mut Report) {
    let users = match cms.users(Caller::Operator).await {
        Ok(users) => users,
        Err(error) => {
            report.error(format!("users: cannot be read: {error}"));
            return;
        }
    };
    let owners = users.iter().filter(|u| u.role == Role::Owner).count();
    if owners == 0 {
        report.warn("users: there is no owner; add one with `cms users add --email EMAIL --role owner`");
    } else {
        report.ok(format!(
            "users: {}, of whom {}",
            plural(users.len(), "user", "users"),
            plural(owners, "owner", "owners")
        ));
    }
}
