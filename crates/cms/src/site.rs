//! Finding the site folder and composing the core over its file adapters.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use cms_core::account::{KEY_RANDOM_BYTES, Role};
use cms_core::config::SiteConfig;
use cms_core::license::{Feature, LicenseState};
use cms_core::policy::Caller;
use cms_core::ports::Clock;
use cms_core::{Cms, Ports};
use cms_fs::{STATE_DIR, SystemClock};
use cms_webhooks::{LicenseGate, SinkConfig, WebhookSink, WebhookStore};
use ring::rand::{SecureRandom, SystemRandom};

use crate::events::SiteEvents;
use crate::schedule::ScheduleMark;

// The bundled demo site (`fixtures/demo-site`), embedded by `build.rs`: `DEMO_FILES`.
include!(concat!(env!("OUT_DIR"), "/demo_site.rs"));
pub const DEMO_OWNER: &str = "owner@example.com";

/// What a site is opened for: the server and the commands differ in how they treat broken
/// webhook settings, and only what can emit events needs delivery workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    Serve,
    /// A CLI command; `emits_events` when it can publish events (`users add|remove`).
    Command {
        emits_events: bool,
    },
}

pub struct Site {
    pub root: PathBuf,
    /// Whether this is the working copy of the bundled demo.
    pub is_demo: bool,
}

/// A site folder with its configuration and a facade over its adapters.
pub struct OpenSite {
    pub root: PathBuf,
    pub config: SiteConfig,
    pub cms: Arc<Cms>,
    /// Webhook delivery (its worker threads), only when events can be emitted;
    /// [`OpenSite::finish_deliveries`] before the process exits.
    pub webhooks: Option<Arc<WebhookSink>>,
    /// The subscriptions and the delivery log, for the `webhooks` commands (in the
    /// bucket on a bucket site, shared by every server).
    pub webhook_store: WebhookStore,
    /// Up to when scheduled changes were announced (likewise shared on a bucket site).
    pub schedule_mark: ScheduleMark,
    /// The web editor's sessions (in the store: shared by every server, kept over restarts).
    pub sessions: Arc<dyn cms_core::ports::SessionStore>,
    /// Where the content lives, for the operator (`site folder: ...` or `bucket: s3://...`).
    pub storage: String,
    /// How often this server reads what the others sharing its store wrote (`None`: it
    /// has the store alone).
    pub poll_interval: Option<Duration>,
    /// The adapters' own measurements (the bucket's requests, the image pool, webhook
    /// deliveries), for `/metrics`.
    pub readings: Vec<Arc<dyn cms_core::readings::Observed>>,
    /// A served folder's lock, held while this is open: one server per folder.
    pub serve_lock: Option<cms_fs::ServeLock>,
}

impl OpenSite {
    /// Finishes pending webhook deliveries, waiting up to one delivery time-out (plus a
    /// second); what is still unfinished then is logged as not sent.
    pub fn finish_deliveries(&self) {
        let Some(webhooks) = &self.webhooks else { return };
        let deadline = Duration::from_secs(self.config.webhooks.timeout_secs) + Duration::from_secs(1);
        let report = webhooks.shutdown(deadline);
        if !report.finished {
            tracing::warn!(
                abandoned = report.abandoned,
                "webhook deliveries still pending after {deadline:?} were logged as not sent"
            );
        }
    }
}

impl Site {
    /// The site a command acts on: `--site DIR` (or `CMS_SITE`), else the current folder
    /// when it holds a `cms.yaml`. Never the demo: a command that forgot `--site` must not
    /// change a site nobody meant.
    pub fn for_command(site: Option<PathBuf>) -> anyhow::Result<Self> {
        match named_or_current(site)? {
            Some(site) => Ok(site),
            None => bail!(
                "no site given: name one with --site DIR (or CMS_SITE=DIR), or run the command in a site folder (one holding {config}); `cms init DIR` makes a new site{demo}",
                config = cms_fs::CONFIG_FILE,
                demo = demo_copy_folder()
                    .map(|d| format!(", and the demo's working copy is {}", d.display()))
                    .unwrap_or_default(),
            ),
        }
    }

    /// The site the server serves: as for a command, else the working copy of the bundled
    /// demo (made on first use in the user's data folder, or wherever `CMS_DEMO_COPY` says).
    pub fn for_serving(site: Option<PathBuf>) -> anyhow::Result<Self> {
        if let Some(site) = named_or_current(site)? {
            return Ok(site);
        }
        let copy = demo_copy_folder().context(
            "no site given and no folder for the demo's copy (HOME is not set); pass --site DIR or set CMS_DEMO_COPY",
        )?;
        if !copy.join(cms_fs::CONFIG_FILE).is_file() {
            make_demo_copy(&copy)?;
        }
        let root = copy.canonicalize().unwrap_or(copy);
        Ok(Self { root, is_demo: true })
    }

    /// For the demo: on a start with no users yet, makes the owner and returns a key and
    /// a web editor password for them, to be printed once.
    pub async fn first_start_key(&self, open: &OpenSite) -> anyhow::Result<Option<(String, String)>> {
        if !self.is_demo || !open.cms.users(Caller::Operator).await?.is_empty() {
            return Ok(None);
        }
        open.cms.add_user(Caller::Operator, DEMO_OWNER, Role::Owner).await?;
        let key =
            open.cms.create_key(Caller::Operator, DEMO_OWNER, "demo", random_key_bytes()?).await?.plaintext;
        let password = hex::encode(&random_key_bytes()?[..12]);
        let hash = cms_core::account::hash_password(&password, crate::password::random_salt()?)?;
        open.cms.set_password(Caller::Operator, DEMO_OWNER, &hash).await?;
        Ok(Some((key, password)))
    }

    /// Loads `cms.yaml` and composes the facade, for serving or for one command.
    pub fn open(&self, purpose: Purpose) -> anyhow::Result<OpenSite> {
        let (config, backend) = crate::backend::load_config(&self.root)?;
        // Before anything starts (the webhook outbox's worker, the index).
        let serve_lock = match purpose {
            Purpose::Serve => lock_for_serving(&self.root, &backend)?,
            Purpose::Command { .. } => None,
        };
        let mut storage = backend.open(&self.root)?;
        if let (Some(git), crate::backend::Backend::Folder) = (&config.git, &backend) {
            // With the site in git, an item's versions are the commits of its file.
            storage.versions = Arc::new(cms_git::GitVersions::new(
                &self.root,
                &self.root.join(cms_fs::STATE_DIR),
                &git.branch,
                storage.versions.clone(),
            ));
        }
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        // The CLI's `webhooks add` and the editor's form both add through this store.
        let webhook_store = WebhookStore::new(storage.state.clone(), clock.clone())
            .allowing_private_addresses(config.webhooks.allow_private_addresses);
        let schedule_mark = ScheduleMark::new(storage.state.clone(), storage.sharing);
        let webhooks = match purpose {
            Purpose::Command { emits_events: false } => None,
            Purpose::Serve | Purpose::Command { emits_events: true } => {
                let gate = LicenseGate::new(
                    storage.license.clone(),
                    clock.clone(),
                    config.license.public_key.clone(),
                );
                Some(Arc::new(start_webhooks(&self.root, &config, purpose, gate, &webhook_store)?))
            }
        };
        let mut ports = Ports::of_storage(
            &storage,
            Arc::new(SiteEvents { webhooks: webhooks.clone() }),
            clock,
            Arc::new(webhook_store.clone()),
        );
        let mut readings = storage.readings.clone();
        if let Some(webhooks) = &webhooks {
            readings.push(webhooks.clone());
        }
        if matches!(purpose, Purpose::Serve) {
            // Image variants render on their own threads (half the cores), never the API's.
            let images = Arc::new(cms_images::ImagePool::for_this_machine());
            readings.push(images.clone());
            ports.images = images;
        }
        let mut cms = Cms::builder(&config, ports);
        // Lets path-valued query parameters (`collectionPath`...) be absolute; the core
        // compares them with this path lexically and never asks the disk.
        let real_root = self.root.canonicalize().unwrap_or_else(|_| self.root.clone());
        if let Some(root) = real_root.to_str() {
            cms = cms.site_root(root);
        }
        let cms = Arc::new(cms.build());
        Ok(OpenSite {
            root: self.root.clone(),
            config,
            cms,
            webhooks,
            webhook_store,
            schedule_mark,
            sessions: storage.sessions,
            storage: storage.description,
            poll_interval: backend.poll_interval(),
            readings,
            serve_lock,
        })
    }
}

/// The site folder's lock for this server (`cms_fs::ServeLock`): one server per folder,
/// whatever the backend (a bucket's nodes each have a folder of their own). Refused while
/// another server holds it; a folder where the lock file cannot be made (read-only) is
/// served without, with a warning.
fn lock_for_serving(
    root: &Path,
    backend: &crate::backend::Backend,
) -> anyhow::Result<Option<cms_fs::ServeLock>> {
    match cms_fs::ServeLock::take(&root.join(STATE_DIR)) {
        Ok(lock) => Ok(Some(lock)),
        Err(served @ cms_fs::FsError::Served { .. }) => {
            let advice = match backend {
                crate::backend::Backend::Folder => {
                    "Stop it first: two servers on one folder would each keep their own index, item locks and \
                     version numbers, and could lose each other's writes. To run several servers on one site, \
                     keep the site in a bucket (docs/deploying.md)"
                }
                crate::backend::Backend::Bucket(_) => {
                    "Stop it first, or give this node a folder of its own (with a copy of its cms.yaml): each node \
                     of a bucket site keeps its caches and webhook outbox in its folder (docs/deploying.md)"
                }
            };
            bail!("{served}. {advice}")
        }
        Err(error) => {
            tracing::warn!(
                %error,
                "cannot lock the site folder for this server: a second server started on it would not be refused"
            );
            Ok(None)
        }
    }
}

/// Says loudly, on standard error, when the site's license will make every route answer
/// 402 (no license, an invalid or expired one, or one without `json_api`) and what fixes
/// it; and names features the license lists that this program does not know.
pub async fn warn_about_license(root: &Path, cms: &Cms) {
    let state = match cms.license_state().await {
        Ok(state) => state,
        Err(error) => {
            eprintln!("warning: cannot read the license: {error}");
            return;
        }
    };
    for problem in license_problems(root, &state) {
        for line in problem.lines() {
            eprintln!("warning: {line}");
        }
    }
}

/// What is wrong with the site's license, one problem per entry (an entry may have
/// several lines): it does not open the API, and what fixes that; it lists features this
/// program does not know.
pub fn license_problems(root: &Path, state: &LicenseState) -> Vec<String> {
    let mut problems = Vec::new();
    if let Some(why) = state.lacks(Feature::JsonApi) {
        problems.push(format!(
            "every route will answer 402 Payment Required: {why}.\n{}\n  cms license install FILE --site {}",
            state.remedy(Feature::JsonApi),
            root.display()
        ));
    }
    if let LicenseState::Active(license) | LicenseState::Expired(license) = state
        && let Err(unknown) = license.check_features()
    {
        problems.push(unknown.to_string());
    }
    problems
}

/// The delivery workers. Deliveries need the license's `webhooks` feature, asked when
/// each is due.
fn start_webhooks(
    root: &Path,
    config: &SiteConfig,
    purpose: Purpose,
    gate: LicenseGate,
    store: &WebhookStore,
) -> anyhow::Result<WebhookSink> {
    let state = root.join(STATE_DIR);
    let mut sink_config = SinkConfig::for_site(root, &state, &config.webhooks, store.clone());
    // Only the server keeps the outbox (one process owns it); a command waits for its
    // own deliveries before it exits.
    sink_config.outbox = purpose == Purpose::Serve;
    let gate = Arc::new(gate);
    Ok(match purpose {
        // The server refuses to start with broken delivery settings.
        Purpose::Serve => WebhookSink::start(sink_config, gate)?,
        // A command (say, removing a user) must still work; its events are logged as not
        // sent.
        Purpose::Command { .. } => {
            let (sink, problem) = WebhookSink::start_or_log(sink_config, gate);
            if let Some(problem) = problem {
                tracing::warn!(%problem, "webhook deliveries are off for this command");
            }
            sink
        }
    })
}

pub fn random_key_bytes() -> anyhow::Result<[u8; KEY_RANDOM_BYTES]> {
    let mut bytes = [0; KEY_RANDOM_BYTES];
    SystemRandom::new().fill(&mut bytes).map_err(|_| anyhow::anyhow!("the system random source failed"))?;
    Ok(bytes)
}

/// `--site DIR` (checked to be a site folder), else the current folder if it holds a
/// `cms.yaml`, else `None`.
fn named_or_current(site: Option<PathBuf>) -> anyhow::Result<Option<Site>> {
    if let Some(root) = site {
        if !root.join(cms_fs::CONFIG_FILE).is_file() {
            bail!(
                "{} has no {}; is it a site folder? (`cms init {}` makes a new site)",
                root.display(),
                cms_fs::CONFIG_FILE,
                root.display()
            );
        }
        return Ok(Some(Site { root: absolute(root), is_demo: false }));
    }
    let here = std::env::current_dir().context("reading the current folder")?;
    Ok(here.join(cms_fs::CONFIG_FILE).is_file().then(|| Site { root: absolute(here), is_demo: false }))
}

/// The path as the operator will recognise it in messages: absolute, links resolved.
fn absolute(path: PathBuf) -> PathBuf {
    path.canonicalize().unwrap_or(path)
}

/// Where the demo's working copy lives: `CMS_DEMO_COPY`, else `cms/demo-site` in the
/// user's data folder (`$XDG_DATA_HOME`, else `~/.local/share`), never inside a checkout.
pub fn demo_copy_folder() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CMS_DEMO_COPY") {
        return Some(PathBuf::from(dir));
    }
    let data = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".local/share")))?;
    Some(data.join("cms/demo-site"))
}

/// Writes the bundled demo into `copy`: first into a temporary sibling, then renamed into
/// place, so an interrupted copy never leaves a half site behind.
fn make_demo_copy(copy: &Path) -> anyhow::Result<()> {
    let parent = copy.parent().context("the demo copy needs a parent folder")?;
    fs::create_dir_all(parent).with_context(|| format!("making {}", parent.display()))?;
    let staging = tempfile::Builder::new().prefix(".demo-site-").tempdir_in(parent)?;
    write_demo(staging.path()).context("writing the demo site")?;
    fs::rename(staging.keep(), copy).with_context(|| format!("moving the demo copy to {}", copy.display()))
}

/// Writes the embedded demo site's files under `to`.
fn write_demo(to: &Path) -> anyhow::Result<()> {
    for (relative, bytes) in DEMO_FILES {
        let target = to.join(relative);
        if let Some(folder) = target.parent() {
            fs::create_dir_all(folder)?;
        }
        fs::write(&target, bytes).with_context(|| format!("writing {}", target.display()))?;
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A copy of the bundled demo site in `dir`.
    pub(crate) fn demo_copy(dir: &Path) -> Site {
        let root = dir.join("site");
        write_demo(&root).unwrap();
        Site { root, is_demo: false }
    }

    /// The embedded demo is the fixture as checked in, hidden files included.
    #[test]
    fn the_embedded_demo_is_the_fixture() {
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/demo-site");
        for (relative, bytes) in DEMO_FILES {
            assert_eq!(&fs::read(fixture.join(relative)).unwrap(), bytes, "{relative}");
        }
        assert!(DEMO_FILES.iter().any(|(p, _)| *p == "cms.yaml"));
        assert!(DEMO_FILES.iter().any(|(p, _)| *p == ".cms/license.yaml"));
    }
}
