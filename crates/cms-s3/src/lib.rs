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
//!                               shared state          SharedState (the binary wires them)
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
mod content;
mod error;
mod license;
mod objects;
mod previews;
mod probe;
mod resources;
mod settings;
mod state;
mod versions;

#[cfg(feature = "testing")]
pub mod testing;

use std::sync::Arc;
use std::time::Duration;

use cms_core::config::S3StorageConfig;
use cms_core::service::Ports;
use object_store::aws::AmazonS3Builder;

pub use accounts::S3Accounts;
pub use bucket::Bucket;
pub use changes::{FollowSettings, S3ChangeSource};
pub use content::S3ContentStore;
pub use error::S3Error;
pub use license::S3License;
pub use objects::{ObjectInfo, SharedState};
pub use previews::S3PreviewKeys;
pub use resources::S3ResourceStore;
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

/// A site in a bucket: one client, one change journal, shared by every port it makes.
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
    /// environment (`AWS_ACCESS_KEY_ID`...), waiting on the calling thread,
    /// and checks that it answers (a listing of the prefix): a wrong endpoint, bucket or
    /// credential is an error at start, naming the setting.
    pub fn connect(config: &S3StorageConfig, credentials: Option<S3Credentials>) -> Result<Self, S3Error> {
        // HTTPS through rustls on ring; a second install (another site, a test) is a no-op.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder =
            AmazonS3Builder::from_env().with_bucket_name(&config.bucket).with_region(&config.region);
        if let Some(credentials) = credentials {
            builder = builder
                .with_access_key_id(credentials.access_key_id)
                .with_secret_access_key(credentials.secret_access_key);
            if let Some(token) = credentials.session_token {
                builder = builder.with_token(token);
            }
        }
        if let Some(endpoint) = &config.endpoint {
            builder = builder.with_endpoint(endpoint).with_allow_http(endpoint.starts_with("http://"));
        }
        let store = builder.build().map_err(|e| S3Error::Setting {
            setting: "bucket",
            message: format!("cannot make an S3 client: {e}"),
        })?;
        let description = format!(
            "s3://{}/{} ({})",
            config.bucket,
            config.prefix.trim_matches('/'),
            config.endpoint.as_deref().unwrap_or("AWS")
        );
        let site = Self::with_store(Arc::new(store), config, description)?;
        site.bucket.check_blocking().map_err(|e| S3Error::Setting {
            setting: "endpoint",
            message: format!(
                "bucket {:?} at {} does not answer a listing ({e}); check storage.endpoint, storage.bucket and the AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY environment variables",
                config.bucket,
                config.endpoint.as_deref().unwrap_or("AWS")
            ),
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

    /// Puts the bucket's ports in place of a site folder's: content, history, media,
    /// accounts, license, theme and the change feed. The rest (events, clock, webhooks,
    /// image codec, index snapshots and variants, which are a node's own caches) stay.
    pub fn install(&self, ports: &mut Ports) {
        let accounts = Arc::new(S3Accounts::new(&self.bucket, self.state_max_age));
        ports.content = Arc::new(S3ContentStore::new(self.bucket.clone(), self.journal.clone()));
        ports.users = accounts.clone();
        ports.keys = accounts;
        ports.license = self.license.clone();
        ports.versions = Arc::new(S3VersionStore::new(&self.bucket));
        ports.resources = Arc::new(S3ResourceStore::new(&self.bucket));
        ports.settings = Arc::new(S3Settings::new(&self.bucket, self.state_max_age));
        ports.changes = Arc::new(self.change_source());
    }

    /// The site's license (for the webhook workers' gate).
    pub fn license(&self) -> Arc<S3License> {
        self.license.clone()
    }

    /// The preview-link key, shared by every node.
    pub fn preview_keys(&self) -> S3PreviewKeys {
        S3PreviewKeys::new(&self.bucket, self.state_max_age)
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

    pub fn resource_store(&self) -> S3ResourceStore {
        S3ResourceStore::new(&self.bucket)
    }
}
