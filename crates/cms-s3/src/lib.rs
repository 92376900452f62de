//! The CMS ports on an S3-compatible bucket, for a site served by several stateless
//! nodes. Keys mirror the site folder under an optional prefix:
//!
//! ```text
//! <prefix>/content/<name>/...   item files            S3ContentStore
//! <prefix>/media/<name>/...     resource folders      S3ResourceStore
//! <prefix>/.cms/users.yaml      users and key hashes  S3Accounts
//! <prefix>/.cms/keys.yaml
//! <prefix>/.cms/license.yaml    S3License, .cms/theme.yaml S3Settings, .cms/preview-key S3PreviewKeys
//! <prefix>/.cms/versions/...    item history          S3VersionStore
//! <prefix>/.cms/changes/...     the change journal    S3ChangeSource (see `changes.rs`)
//! <prefix>/.cms/webhooks.yaml, webhook-log.yaml, schedule.yaml
//!                               shared state          S3StateDocuments
//! ```
//!
//! so `aws s3 sync site/ s3://bucket/prefix/` makes a valid site. What is only a node's
//! own cache (index snapshots, image variants, the webhook outbox) stays in the local
//! folder that holds `cms.yaml`.
//!
//! Consistency: an item replace is a conditional PUT (`If-Match` with the ETag of the
//! version read), a create `If-None-Match: *`, so two nodes writing one item never lose an
//! update silently (the core retries on `Stale`). That needs a store that enforces
//! conditional writes (AWS S3, MinIO, Cloudflare R2, SeaweedFS); Garage ignores them, and
//! on it the last of two simultaneous writes wins.

mod accounts;
mod bucket;
mod changes;
mod config;
mod content;
mod counted;
mod error;
mod events;
mod license;
mod objects;
mod previews;
mod probe;
mod resources;
mod sessions;
mod settings;
mod state;
mod versions;

#[cfg(feature = "testing")]
pub mod testing;

use std::sync::Arc;
use std::time::Duration;

use cms_core::CoreResult;
use cms_core::ports::{Sharing, SiteStorage, StateDocuments, TextChange};
use object_store::aws::AmazonS3Builder;

pub use accounts::S3Accounts;
pub use bucket::Bucket;
pub use changes::{FollowSettings, S3ChangeSource};
pub use config::S3StorageConfig;
pub use content::S3ContentStore;
pub use counted::BucketStats;
pub use error::S3Error;
pub use events::S3EventStore;
pub use license::S3License;
pub use objects::{ObjectInfo, SharedState};
pub use previews::S3PreviewKeys;
pub use resources::S3ResourceStore;
pub use sessions::S3SessionStore;
pub use settings::S3Settings;
pub use versions::S3VersionStore;

use crate::bucket::IoRuntime;
use crate::changes::Journal;

/// Credentials given in code (tests, tools); the server takes them from the environment.
#[derive(Clone)]
pub struct S3Credentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
}

/// The region when neither `storage.region` nor `AWS_REGION` names one.
const DEFAULT_REGION: &str = "us-east-1";

/// How long the check at connection may retry.
const CHECK_TIMEOUT: Duration = Duration::from_secs(10);

/// An environment variable, `None` when unset or empty.
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.trim().is_empty())
}

/// The store's URL and where it came from.
struct Endpoint {
    /// `None`: AWS's own.
    url: Option<String>,
    setting: &'static str,
}

impl Endpoint {
    fn of(config: &S3StorageConfig) -> Self {
        match (&config.endpoint, env("AWS_ENDPOINT_URL_S3"), env("AWS_ENDPOINT_URL")) {
            (Some(url), _, _) => Self { url: Some(url.clone()), setting: "storage.endpoint" },
            (None, Some(url), _) => Self { url: Some(url), setting: "AWS_ENDPOINT_URL_S3" },
            (None, None, Some(url)) => Self { url: Some(url), setting: "AWS_ENDPOINT_URL" },
            (None, None, None) => Self { url: None, setting: "AWS's own endpoint" },
        }
    }
}

/// Refuses to go on without credentials in the environment: half a pair, or none at all
/// for a store of one's own (`custom_endpoint`); on AWS without them, the instance's role
/// (metadata service, container or web identity) is tried, as AWS's tools do.
fn credentials_in_environment(custom_endpoint: bool) -> Result<(), S3Error> {
    const ID: &str = "AWS_ACCESS_KEY_ID";
    const SECRET: &str = "AWS_SECRET_ACCESS_KEY";
    match (env(ID), env(SECRET)) {
        (Some(_), Some(_)) => Ok(()),
        (Some(_), None) => {
            Err(S3Error::MissingCredentials(format!("{SECRET} is not set ({ID} is); set both")))
        }
        (None, Some(_)) => {
            Err(S3Error::MissingCredentials(format!("{ID} is not set ({SECRET} is); set both")))
        }
        (None, None) => {
            let role = [
                "AWS_WEB_IDENTITY_TOKEN_FILE",
                "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                "AWS_CONTAINER_CREDENTIALS_FULL_URI",
            ]
            .iter()
            .any(|name| env(name).is_some());
            if custom_endpoint && !role {
                Err(S3Error::MissingCredentials(format!(
                    "{ID} and {SECRET} are not set; set them to an access key of the store"
                )))
            } else {
                Ok(())
            }
        }
    }
}

/// A site in a bucket: one client, one change journal, shared by every port it makes.
#[derive(Clone)]
pub struct S3Site {
    bucket: Bucket,
    journal: Arc<Journal>,
    license: Arc<S3License>,
    follow: FollowSettings,
    state_max_age: Duration,
    /// `s3://bucket/prefix (endpoint)`, for the operator's log.
    description: String,
}

impl S3Site {
    /// Connects to the bucket `storage:` names, with `credentials` or else those of the
    /// environment (`AWS_ACCESS_KEY_ID`...), waiting on the calling thread, and checks that
    /// it answers (a listing of the prefix). Where `cms.yaml` is silent, the usual
    /// environment applies: `AWS_ENDPOINT_URL` for the endpoint, `AWS_REGION` for the
    /// region. A failure says what is wrong (credentials missing or refused, no such
    /// bucket, access denied, nothing answering, the clock) and what to set.
    pub fn connect(config: &S3StorageConfig, credentials: Option<S3Credentials>) -> Result<Self, S3Error> {
        // HTTPS through rustls on ring; a second install (another site, a test) is a no-op.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let endpoint = Endpoint::of(config);
        if credentials.is_none() {
            credentials_in_environment(endpoint.url.is_some())?;
        }
        let mut builder = AmazonS3Builder::from_env().with_bucket_name(&config.bucket);
        let (region, region_setting) = match (&config.region, env("AWS_REGION")) {
            (Some(region), _) => (region.clone(), "storage.region"),
            (None, Some(region)) => (region, "AWS_REGION"),
            (None, None) => (DEFAULT_REGION.to_owned(), "the default"),
        };
        builder = builder.with_region(&region);
        if let Some(credentials) = credentials {
            builder = builder
                .with_access_key_id(credentials.access_key_id)
                .with_secret_access_key(credentials.secret_access_key);
            if let Some(token) = credentials.session_token {
                builder = builder.with_token(token);
            }
        }
        if let Some(url) = &endpoint.url {
            builder = builder.with_endpoint(url).with_allow_http(url.starts_with("http://"));
        }
        let build = |builder: AmazonS3Builder| {
            builder.build().map_err(|e| S3Error::Setting {
                setting: "bucket",
                message: format!("cannot make an S3 client: {}", error::summary(&e)),
            })
        };
        let shown = endpoint.url.as_deref().unwrap_or("AWS");
        let description = format!("s3://{}/{} ({shown})", config.bucket, config.prefix.trim_matches('/'));
        // The first listing with few retries: a wrong endpoint or credential is said in
        // seconds, not after the minutes of retries a running server allows itself.
        let checker = build(builder.clone().with_retry(object_store::RetryConfig {
            max_retries: 2,
            retry_timeout: CHECK_TIMEOUT,
            ..Default::default()
        }))?;
        let site = Self::with_store(Arc::new(build(builder)?), config, description)?;
        let target = error::Target {
            bucket: &config.bucket,
            endpoint: shown,
            endpoint_setting: endpoint.setting,
            region: &region,
            region_setting,
        };
        site.bucket.check_with_blocking(Arc::new(checker)).map_err(|e| match e {
            Ok(failed) => error::explain(&failed, &target),
            Err(stopped) => stopped,
        })?;
        Ok(site)
    }

    /// A site on any `object_store` store (object_store's `InMemory` in tests, another
    /// cloud's store), with the prefix and timings of `config` (its bucket, endpoint and
    /// region are the store's business). Conditional writes are only as good as the
    /// store's: one that ignores `If-Match` lets the last of two concurrent writes win.
    pub fn with_store(
        store: Arc<dyn object_store::ObjectStore>,
        config: &S3StorageConfig,
        description: String,
    ) -> Result<Self, S3Error> {
        let io = Arc::new(
            IoRuntime::start().map_err(|e| S3Error::Setting { setting: "kind", message: e.to_string() })?,
        );
        let bucket = Bucket::new(store, &config.prefix, io);
        let journal = Arc::new(
            Journal::new(bucket.clone())
                .map_err(|e| S3Error::Setting { setting: "kind", message: e.to_string() })?,
        );
        let state_max_age = Duration::from_millis(config.state_max_age_ms);
        Ok(Self {
            license: Arc::new(S3License::new(&bucket, journal.clone(), state_max_age)),
            bucket,
            journal,
            follow: FollowSettings {
                poll: Duration::from_millis(config.poll_ms),
                rescan_every: Duration::from_secs(config.rescan_secs),
            },
            state_max_age,
            description,
        })
    }

    pub fn description(&self) -> &str {
        &self.description
    }

    pub fn bucket(&self) -> &Bucket {
        &self.bucket
    }

    /// The site's license (for the webhook workers' gate).
    pub fn license(&self) -> Arc<S3License> {
        self.license.clone()
    }

    /// The preview-link key, shared by every node.
    pub fn preview_keys(&self) -> S3PreviewKeys {
        S3PreviewKeys::new(&self.bucket, self.state_max_age)
    }

    /// The web editor's sessions, shared by every node.
    pub fn session_store(&self) -> S3SessionStore {
        S3SessionStore::new(&self.bucket)
    }

    /// The stores one by one, for the contract tests.
    pub fn content_store(&self) -> S3ContentStore {
        S3ContentStore::new(self.bucket.clone(), self.journal.clone())
    }

    pub fn accounts(&self) -> S3Accounts {
        S3Accounts::new(&self.bucket, self.state_max_age)
    }

    pub fn version_store(&self) -> S3VersionStore {
        S3VersionStore::new(&self.bucket)
    }

    pub fn change_source(&self) -> S3ChangeSource {
        let license = self.license.clone();
        S3ChangeSource::new(
            self.bucket.clone(),
            &self.journal,
            self.follow,
            Arc::new(move || license.forget()),
        )
    }

    pub fn settings_store(&self) -> S3Settings {
        S3Settings::new(&self.bucket, self.state_max_age)
    }

    pub fn resource_store(&self) -> S3ResourceStore {
        S3ResourceStore::new(&self.bucket)
    }
}

/// Opens the site in the bucket `config` names (see [`S3Site::connect`]) as a backend: its
/// ports in place of the folder's, except a node's own caches (index snapshots, image
/// variants), which stay those of `local`, the storage of the folder holding `cms.yaml`.
pub fn open(config: &S3StorageConfig, local: SiteStorage) -> Result<SiteStorage, S3Error> {
    Ok(S3Site::connect(config, None)?.storage(local))
}

impl S3Site {
    /// The bucket's ports over `local`'s caches (see [`open`]).
    pub fn storage(&self, local: SiteStorage) -> SiteStorage {
        let accounts = Arc::new(self.accounts());
        SiteStorage {
            content: Arc::new(self.content_store()),
            versions: Arc::new(self.version_store()),
            resources: Arc::new(self.resource_store()),
            users: accounts.clone(),
            keys: accounts,
            license: self.license.clone(),
            settings: Arc::new(self.settings_store()),
            changes: Arc::new(self.change_source()),
            previews: Arc::new(self.preview_keys()),
            sessions: Arc::new(self.session_store()),
            state: Arc::new(S3StateDocuments::new(self)),
            sharing: Sharing::Servers,
            events: Arc::new(S3EventStore::new(self.bucket.clone())),
            description: format!("bucket: {}", self.description),
            readings: vec![self.bucket.stats().clone()],
            ..local
        }
    }
}

/// The state documents as objects of the bucket (`.cms/webhooks.yaml`, the same text as in
/// a folder), shared by every server: read within `storage.state_max_age_ms`, changed by
/// conditional writes that every server's change survives.
pub struct S3StateDocuments {
    site: S3Site,
    opened: std::sync::Mutex<std::collections::HashMap<String, SharedState>>,
}

impl S3StateDocuments {
    pub fn new(site: &S3Site) -> Self {
        Self { site: site.clone(), opened: std::sync::Mutex::default() }
    }

    /// One [`SharedState`] per document, so that its cache and its writers' turns are shared.
    fn document(&self, name: &str) -> SharedState {
        let mut opened = self.opened.lock().unwrap_or_else(|p| p.into_inner());
        opened.entry(name.to_owned()).or_insert_with(|| self.site.shared_state(name)).clone()
    }
}

impl StateDocuments for S3StateDocuments {
    fn read(&self, name: &str) -> CoreResult<Option<String>> {
        self.document(name).read_blocking()
    }

    fn update(&self, name: &str, mut change: TextChange) -> CoreResult<()> {
        self.document(name).update_blocking(move |text| Ok((change(text)?, ())))
    }

    fn describe(&self, name: &str) -> String {
        format!(".cms/{name} in {}", self.site.description)
    }
}
