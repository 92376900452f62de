//! The schema of `cms.yaml`, parsed from text (reading the file is the caller's job).
//! Unknown keys are refused, with the line and the key named.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::codec::{self, YamlError, YamlLimits};
use crate::slug::slugify;

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SiteConfig {
    /// The site's name, public URL and list defaults.
    pub site: SiteSection,
    /// The languages of a multilingual site, BCP 47 codes; the first is the default
    /// language (see `docs/translations.md`). Without it, the site has one language and no
    /// translations.
    #[serde(default)]
    pub languages: Vec<crate::language::LanguageConfig>,
    /// Where translations live: `filename` (`hello.fr.md` beside `hello.md`, the default)
    /// or `folder` (a collection `path` holding `{lang}`, e.g. `content/{lang}/posts`).
    #[serde(default)]
    pub translations: crate::language::TranslationLayout,
    /// Folders of Markdown items, each served as a collection.
    #[serde(default)]
    pub collections: Vec<CollectionConfig>,
    /// Folders of media files (uploads), each served at a public URL.
    #[serde(default)]
    pub resources: Vec<ResourceConfig>,
    /// Which other web origins may call the API from a browser.
    #[serde(default)]
    pub cors: CorsConfig,
    /// Size limits of request bodies.
    #[serde(default)]
    pub limits: LimitsConfig,
    /// The history kept of every item.
    #[serde(default)]
    pub versions: VersionsConfig,
    /// How webhook deliveries are sent.
    #[serde(default)]
    pub webhooks: WebhooksConfig,
    /// Which licenses are accepted.
    #[serde(default)]
    pub license: LicenseConfig,
    /// Signed preview links of drafts.
    #[serde(default)]
    pub previews: PreviewsConfig,
    /// Responsive images: the sizes, qualities and presets media URLs may ask for.
    #[serde(default)]
    pub images: crate::images::ImagesConfig,
    /// Where content, media and shared state live: the site folder (the default) or a
    /// bucket.
    #[serde(default)]
    pub storage: StorageConfig,
    /// Which host names are this server, which proxies are believed, and how long a
    /// client may take (see `docs/security.md`).
    #[serde(default)]
    pub server: ServerConfig,
    /// Bounds on the web editor's sign-in attempts.
    #[serde(default)]
    pub signin: SigninConfig,
    /// Bounds on the AI-agent endpoint's sessions.
    #[serde(default)]
    pub mcp: McpConfig,
    /// The event log behind the live event stream (`GET /cms/events`): how long events
    /// are kept, and bounds on the streams.
    #[serde(default)]
    pub events: EventsConfig,
    /// Who may read the Prometheus metrics (`GET /metrics`): nobody by default.
    #[serde(default)]
    pub metrics: MetricsConfig,
    /// The site folder is a git working tree: every change is a commit by its author,
    /// pushed to a remote (see `docs/git.md`). Folder sites only.
    #[serde(default)]
    pub git: Option<GitConfig>,
}

/// `git:` in `cms.yaml`, read by `cms-git` (the core knows its names, not git).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GitConfig {
    /// The remote commits are pushed to (a name `git remote` knows, such as `origin`);
    /// without it, commits stay local.
    #[serde(default)]
    pub remote: Option<String>,
    /// The branch the site folder has checked out, and the remote's branch it pushes to.
    #[serde(default = "default_git_branch")]
    pub branch: String,
    /// 0: push after each burst of commits (once none came for 0.1 s, at least every
    /// second while they keep coming); N: at most every N seconds.
    #[serde(default)]
    #[schemars(range(max = 86_400))]
    pub push_every_secs: u64,
    /// Seconds between pulls of the remote's branch (0: only on `POST /cms/git/pull`).
    #[serde(default = "default_pull_every_secs")]
    #[schemars(range(max = 86_400))]
    pub pull_every_secs: u64,
    /// The environment variable holding the secret `POST /cms/git/pull` must send as
    /// `Authorization: Bearer <secret>` (a forge's push webhook); unset: the route is off.
    #[serde(default)]
    pub pull_token_env: Option<String>,
    /// Writes of one author within this many milliseconds may share a commit (0: a commit
    /// as soon as the committer is free; an author's writes that came while it was busy
    /// share the next).
    #[serde(default)]
    #[schemars(range(max = 60_000))]
    pub group_window_ms: u64,
}

impl Default for GitConfig {
    fn default() -> Self {
        Self {
            remote: None,
            branch: default_git_branch(),
            push_every_secs: 0,
            pull_every_secs: default_pull_every_secs(),
            pull_token_env: None,
            group_window_ms: 0,
        }
    }
}

fn default_pull_every_secs() -> u64 {
    60
}

fn default_git_branch() -> String {
    "main".to_owned()
}

impl GitConfig {
    fn validate(&self, storage: StorageKind) -> Result<(), ConfigError> {
        if storage != StorageKind::Fs {
            return Err(ConfigError::Invalid(
                "git: is for sites kept in their folder; a bucket site (storage: s3) cannot be a git working \
                 tree: remove git:, or keep the site in a folder"
                    .into(),
            ));
        }
        // What `git check-ref-format` refuses in a name, for a message at load; the
        // server asks git itself when it starts.
        let bad_name = |name: &str| {
            name.is_empty()
                || name.starts_with(['-', '/', '.'])
                || name.ends_with(['/', '.'])
                || name.ends_with(".lock")
                || name.contains("..")
                || name.contains("@{")
                || name.contains("//")
                || name.chars().any(|c| c.is_control() || " ~^:?*[\\".contains(c))
        };
        if bad_name(&self.branch) {
            return Err(ConfigError::Invalid(format!(
                "git.branch must be a git branch name such as main, got {:?}",
                self.branch
            )));
        }
        if let Some(remote) = &self.remote
            && (bad_name(remote) || remote.contains('/'))
        {
            return Err(ConfigError::Invalid(format!(
                "git.remote must name a remote of the site's repository (such as origin; `git remote -v` lists them), got {remote:?}"
            )));
        }
        check_range("git.push_every_secs", self.push_every_secs, 0..=86_400)?;
        check_range("git.pull_every_secs", self.pull_every_secs, 0..=86_400)?;
        if self.pull_token_env.is_some() && self.remote.is_none() {
            return Err(ConfigError::Invalid(
                "git.pull_token_env opens POST /cms/git/pull, which pulls from git.remote: name the remote too, \
                 or remove git.pull_token_env"
                    .into(),
            ));
        }
        if let Some(name) = &self.pull_token_env
            && (name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
        {
            return Err(ConfigError::Invalid(format!(
                "git.pull_token_env must name an environment variable (letters, digits, _), got {name:?}"
            )));
        }
        check_range("git.group_window_ms", self.group_window_ms, 0..=60_000)
    }
}

/// `server:` in `cms.yaml`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// Host names (optionally `host:port`) that count as this server, beside the listen
    /// address, the loopback names and the host of `site.url`. A request's own `Host`
    /// header never decides it (DNS rebinding).
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Addresses (or CIDR ranges) of reverse proxies whose `Forwarded` and
    /// `X-Forwarded-*` headers are believed; from anyone else they are ignored.
    #[serde(default)]
    pub trusted_proxies: Vec<String>,
    /// Seconds a client has to send a request's headers.
    #[serde(default = "default_header_timeout_secs")]
    #[schemars(range(min = 1, max = 600))]
    pub header_timeout_secs: u64,
    /// Seconds a client has to send a request's whole body.
    #[serde(default = "default_body_timeout_secs")]
    #[schemars(range(min = 1, max = 3600))]
    pub body_timeout_secs: u64,
    /// Connections served at once by each worker; more wait in the listen queue.
    #[serde(default = "default_max_connections")]
    #[schemars(range(min = 1, max = 100_000))]
    pub max_connections: usize,
    /// How long a cache may keep a public answer (no key) without asking again: 0 (the
    /// default) sends `Cache-Control: public, no-cache` (always revalidate, cheap with the
    /// ETag); more sends `public, max-age=N, must-revalidate`.
    #[serde(default)]
    #[schemars(range(max = 86_400))]
    pub public_max_age_secs: u32,
    /// Seconds an idle kept-alive connection waits for its next request before it is
    /// closed. Behind a reverse proxy that keeps connections to the server open, set it
    /// longer than the proxy's idle time-out.
    #[serde(default = "default_keep_alive_secs")]
    #[schemars(range(min = 1, max = 3600))]
    pub keep_alive_secs: u64,
    /// Seconds a server told to stop (SIGTERM, Ctrl-C) keeps serving before it stops
    /// taking connections: `/readyz` answers 503 and every answer closes its connection,
    /// so that load balancers move the clients elsewhere first. 0 (the default) stops at
    /// once; behind a load balancer, its health check interval times the failures it
    /// needs.
    #[serde(default)]
    #[schemars(range(max = 300))]
    pub drain_secs: u64,
    /// Seconds the requests in flight (and uploads) then have to finish before their
    /// connections are closed.
    #[serde(default = "default_stop_timeout_secs")]
    #[schemars(range(min = 1, max = 3600))]
    pub stop_timeout_secs: u64,
    /// Whether each request gets a line in the log (target `cms::access`); `false` turns
    /// the lines off (as `RUST_LOG=info,cms::access=off` does).
    #[serde(default = "default_access_log")]
    pub access_log: bool,
    /// The share of answers below 400 that get their line (0 to 1; 0.01: one in a
    /// hundred, spread evenly); every error (400 and up) gets one.
    #[serde(default = "default_access_log_sample")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub access_log_sample: f64,
    /// The server's resident memory (MB) below which it keeps rendered single items in
    /// memory too (up to half of this), so that a read shares them rather than reading
    /// its file under `.cms/`. The default holds a site of about 10,000 items' answers;
    /// on larger sites the index takes that memory, and the answers are read from the
    /// file (through the page cache). 0 keeps none in memory.
    #[serde(default = "default_answers_memory_mb")]
    #[schemars(range(max = 1_048_576))]
    pub answers_memory_mb: u64,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            allowed_hosts: Vec::new(),
            trusted_proxies: Vec::new(),
            header_timeout_secs: default_header_timeout_secs(),
            body_timeout_secs: default_body_timeout_secs(),
            max_connections: default_max_connections(),
            public_max_age_secs: 0,
            keep_alive_secs: default_keep_alive_secs(),
            drain_secs: 0,
            stop_timeout_secs: default_stop_timeout_secs(),
            access_log: default_access_log(),
            access_log_sample: default_access_log_sample(),
            answers_memory_mb: default_answers_memory_mb(),
        }
    }
}

fn default_access_log() -> bool {
    true
}
fn default_access_log_sample() -> f64 {
    1.0
}
fn default_answers_memory_mb() -> u64 {
    128
}
fn default_header_timeout_secs() -> u64 {
    10
}
fn default_body_timeout_secs() -> u64 {
    30
}
fn default_max_connections() -> usize {
    1024
}
fn default_keep_alive_secs() -> u64 {
    5
}
fn default_stop_timeout_secs() -> u64 {
    30
}

/// `signin:` in `cms.yaml`: how many wrong passwords an account or an address may send.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SigninConfig {
    /// Failed sign-ins an account may have before it is locked.
    #[serde(default = "default_failures_per_account")]
    #[schemars(range(min = 1, max = 1000))]
    pub failures_per_account: u32,
    /// Failed sign-ins an address may have before it is locked (higher: an office shares
    /// one address).
    #[serde(default = "default_failures_per_address")]
    #[schemars(range(min = 1, max = 100_000))]
    pub failures_per_address: u32,
    /// The first lock (seconds); each further failure doubles it up to `max_lock_secs`.
    #[serde(default = "default_lock_secs")]
    #[schemars(range(min = 1, max = 86_400))]
    pub lock_secs: u64,
    /// The longest lock (seconds); at least `lock_secs`.
    #[serde(default = "default_max_lock_secs")]
    #[schemars(range(min = 1, max = 86_400))]
    pub max_lock_secs: u64,
}

impl Default for SigninConfig {
    fn default() -> Self {
        Self {
            failures_per_account: default_failures_per_account(),
            failures_per_address: default_failures_per_address(),
            lock_secs: default_lock_secs(),
            max_lock_secs: default_max_lock_secs(),
        }
    }
}

fn default_failures_per_account() -> u32 {
    5
}
fn default_failures_per_address() -> u32 {
    20
}
fn default_lock_secs() -> u64 {
    30
}
fn default_max_lock_secs() -> u64 {
    15 * 60
}

/// `mcp:` in `cms.yaml`: the AI-agent endpoint's sessions.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    /// Sessions open at once, all keys together.
    #[serde(default = "default_max_sessions")]
    #[schemars(range(min = 1, max = 1_000_000))]
    pub max_sessions: usize,
    /// Sessions one key may hold open at once (at most `max_sessions`).
    #[serde(default = "default_max_sessions_per_key")]
    #[schemars(range(min = 1))]
    pub max_sessions_per_key: usize,
    /// Seconds after which a session with no request ends.
    #[serde(default = "default_session_idle_secs")]
    #[schemars(range(min = 10, max = 86_400))]
    pub session_idle_secs: u64,
}

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            max_sessions: default_max_sessions(),
            max_sessions_per_key: default_max_sessions_per_key(),
            session_idle_secs: default_session_idle_secs(),
        }
    }
}

fn default_max_sessions() -> usize {
    1000
}
fn default_max_sessions_per_key() -> usize {
    8
}
fn default_session_idle_secs() -> u64 {
    120
}

/// `events:` in `cms.yaml`: the event log and its live streams (see `docs/events.md`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventsConfig {
    /// Hours an event is kept for streams that resume (`Last-Event-ID`); a stream that
    /// resumes from an older event is told to start again (`reset`).
    #[serde(default = "default_keep_hours")]
    #[schemars(range(min = 1, max = 8760))]
    pub keep_hours: u32,
    /// Live streams open at once on this server, all readers together.
    #[serde(default = "default_max_streams")]
    #[schemars(range(min = 1, max = 1_000_000))]
    pub max_streams: usize,
    /// Streams one key (or one editor's session) may hold open at once.
    #[serde(default = "default_max_streams_per_key")]
    #[schemars(range(min = 1))]
    pub max_streams_per_key: usize,
    /// Streams one client address may hold open at once.
    #[serde(default = "default_max_streams_per_address")]
    #[schemars(range(min = 1))]
    pub max_streams_per_address: usize,
    /// Seconds a stream token (`POST /cms/events/tokens`) may be used to open a stream.
    #[serde(default = "default_token_ttl_secs")]
    #[schemars(range(min = 10, max = 86_400))]
    pub token_ttl_secs: u64,
    /// Seconds between the comment lines that keep an idle stream open.
    #[serde(default = "default_stream_keep_alive_secs")]
    #[schemars(range(min = 1, max = 30))]
    pub keep_alive_secs: u64,
}

impl Default for EventsConfig {
    fn default() -> Self {
        Self {
            keep_hours: default_keep_hours(),
            max_streams: default_max_streams(),
            max_streams_per_key: default_max_streams_per_key(),
            max_streams_per_address: default_max_streams_per_address(),
            token_ttl_secs: default_token_ttl_secs(),
            keep_alive_secs: default_stream_keep_alive_secs(),
        }
    }
}

fn default_keep_hours() -> u32 {
    24
}
fn default_max_streams() -> usize {
    10_000
}
fn default_max_streams_per_key() -> usize {
    32
}
fn default_max_streams_per_address() -> usize {
    64
}
fn default_token_ttl_secs() -> u64 {
    900
}
fn default_stream_keep_alive_secs() -> u64 {
    15
}

impl EventsConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        check_range("events.keep_hours", self.keep_hours, 1..=8760)?;
        check_range("events.max_streams", self.max_streams, 1..=1_000_000)?;
        check_range("events.max_streams_per_key", self.max_streams_per_key, 1..=self.max_streams)?;
        check_range("events.max_streams_per_address", self.max_streams_per_address, 1..=self.max_streams)?;
        check_range("events.token_ttl_secs", self.token_ttl_secs, 10..=86_400)?;
        check_range("events.keep_alive_secs", self.keep_alive_secs, 1..=30)
    }
}

/// `metrics:` in `cms.yaml`: where `GET /metrics` is served, if anywhere (see
/// `docs/deploying.md`). Off unless one of the two is set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MetricsConfig {
    /// An address of its own (`127.0.0.1:9464`), where `/metrics` needs no key: keep it
    /// off the public network.
    #[serde(default)]
    pub listen: Option<String>,
    /// Or, on the main address: the environment variable holding the bearer token a
    /// scraper must send (`Authorization: Bearer <its value>`).
    #[serde(default)]
    pub token_env: Option<String>,
}

impl MetricsConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        if let Some(listen) = &self.listen
            && listen.parse::<core::net::SocketAddr>().is_err()
        {
            return Err(ConfigError::Invalid(format!(
                "metrics.listen must be an address and port such as 127.0.0.1:9464, got {listen:?}"
            )));
        }
        if let Some(name) = &self.token_env
            && (name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
        {
            return Err(ConfigError::Invalid(format!(
                "metrics.token_env must name an environment variable (letters, digits, _), got {name:?}"
            )));
        }
        Ok(())
    }
}

/// `storage:` in `cms.yaml`: which backend keeps the site, and that backend's settings as
/// written. The backend's own crate reads and checks them (`cms-s3`'s bucket settings)
/// and describes them in the JSON Schema ([`SiteConfig::json_schema_with`]): the core
/// knows no backend's technology.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct StorageConfig {
    pub kind: StorageKind,
    /// Every other key of the section, for the backend to read.
    #[serde(flatten)]
    pub settings: serde_json::Map<String, serde_json::Value>,
}

/// The backends a site can be kept in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StorageKind {
    /// The site folder holding `cms.yaml`.
    #[default]
    Fs,
    /// An S3-compatible bucket (`cms-s3`).
    S3,
}

impl JsonSchema for StorageConfig {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "StorageConfig".into()
    }

    /// The folder's variant; each other backend's is added by [`SiteConfig::json_schema_with`].
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "oneOf": [{
                "type": "object",
                "properties": {"kind": {"type": "string", "const": "fs"}},
                "required": ["kind"],
                "description": "The site folder holding `cms.yaml`."
            }],
            "description": "`storage:` in `cms.yaml`."
        })
    }
}

/// `previews:` in `cms.yaml`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PreviewsConfig {
    /// Default lifetime of a preview link (seconds, at most 7 days).
    #[serde(default = "default_preview_ttl")]
    #[schemars(range(min = 1, max = 604_800))]
    pub ttl_secs: u64,
}

impl Default for PreviewsConfig {
    fn default() -> Self {
        Self { ttl_secs: default_preview_ttl() }
    }
}

fn default_preview_ttl() -> u64 {
    3600
}

/// The longest a preview link may live: 7 days.
pub const MAX_PREVIEW_TTL_SECS: u64 = 7 * 24 * 3600;

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SiteSection {
    /// The site's name (feeds, the web editor).
    pub name: String,
    /// The site's public address, `https://...`: canonical and feed URLs start with it.
    pub url: String,
    /// Items per page of a list when the client does not say (at least 1, at most
    /// `max_per_page`).
    #[serde(default = "default_per_page")]
    #[schemars(range(min = 1))]
    pub per_page: u32,
    /// The most items a client may ask for in one page.
    #[serde(default = "default_max_per_page")]
    #[schemars(range(min = 1))]
    pub max_per_page: u32,
    /// Where dates written without an offset happened (an IANA name; default UTC).
    #[serde(default)]
    pub timezone: crate::dates::SiteZone,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CollectionConfig {
    /// The collection's name; its slug (`Blog Posts` → `blog-posts`) addresses it in URLs.
    pub label: String,
    /// The folder of its item files, relative to the site folder (`content/posts`).
    pub path: String,
    /// Where the public site shows its items (`/blog`), for item URLs in feeds and
    /// sitemaps; starts with `/`.
    #[serde(default)]
    pub page_path: Option<String>,
    /// New items' file names start with their date (`2026-01-12-hello-world.md`).
    #[serde(default)]
    pub date_prefix: bool,
    /// The collection's content model: its fields by name, in the editor's order (see
    /// docs/content-model.md). Without it, any frontmatter is taken.
    #[serde(default)]
    pub fields: Option<crate::model::FieldsConfig>,
    /// Keys the model does not name: `allow` (kept, the default) or `refuse`.
    #[serde(default)]
    pub extra_fields: crate::model::ExtraFields,
}

impl CollectionConfig {
    /// The collection's model, checked (`key` is where it is written, `collections` the
    /// slugs a reference may name); `None` without `fields`.
    pub fn model(&self, key: &str, collections: &[String]) -> Result<Option<crate::model::Model>, String> {
        match &self.fields {
            Some(fields) => {
                crate::model::Model::build(&format!("{key}.fields"), fields, self.extra_fields, collections)
                    .map(Some)
            }
            None if self.extra_fields == crate::model::ExtraFields::Refuse => {
                Err(format!("{key}.extra_fields: refuse needs fields (the keys a collection takes)"))
            }
            None => Ok(None),
        }
    }
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResourceConfig {
    /// The folder's name in the web editor.
    pub label: String,
    /// The folder, relative to the site folder (`media/uploads`).
    pub path: String,
    /// The public URL path its files are served at (`/media/uploads`).
    pub url: String,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CorsConfig {
    /// Origins (`https://www.example.com`) whose browser pages may call the API.
    #[serde(default)]
    pub allowed_origins: Vec<String>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    /// The largest JSON request body, in bytes.
    #[serde(default = "default_json_bytes")]
    #[schemars(range(min = 1))]
    pub json_bytes: usize,
    /// The largest upload, in bytes.
    #[serde(default = "default_upload_bytes")]
    #[schemars(range(min = 1))]
    pub upload_bytes: u64,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VersionsConfig {
    /// Snapshots kept per item; older ones are removed.
    #[serde(default = "default_keep")]
    #[schemars(range(min = 1))]
    pub keep: usize,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhooksConfig {
    /// Seconds one delivery may take.
    #[serde(default = "default_timeout_secs")]
    #[schemars(range(min = 1, max = 300))]
    pub timeout_secs: u64,
    /// A PEM file of extra certificate authorities receivers' certificates may chain to
    /// (relative to the site folder), beside the usual public ones.
    #[serde(default)]
    pub ca_file: Option<String>,
    /// Delays before each retry of a failed delivery (default none: the spec's single
    /// attempt), e.g. `[10, 60, 600, 3600]`.
    #[serde(default)]
    #[schemars(length(max = 20), inner(range(min = 1, max = 86_400)))]
    pub retry_delays_secs: Vec<u64>,
    /// Consecutive failed deliveries after which a subscription is disabled (default
    /// off).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub disable_after: Option<u32>,
    /// Deliver to loopback, private, link-local, multicast and unspecified addresses too
    /// (off by default: an owner could otherwise probe the server's own network).
    #[serde(default)]
    pub allow_private_addresses: bool,
    /// Announce changes made to the content by other programs (a file edited by hand, a
    /// `git pull`, a sync tool) as `file.*` events, like the API's writes (default true;
    /// false: only changes made through this site's servers are announced). A site in a
    /// bucket announces none of them: every server that may serve it would find them.
    #[serde(default = "default_outside_edits")]
    pub outside_edits: bool,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LicenseConfig {
    /// A hex Ed25519 public key: when set, only a license signed with its private key
    /// counts. Absent: the license file is taken as it is (a self-hosted site).
    #[serde(default)]
    pub public_key: Option<String>,
}

fn default_per_page() -> u32 {
    10
}
fn default_max_per_page() -> u32 {
    100
}
fn default_json_bytes() -> usize {
    1024 * 1024
}
fn default_upload_bytes() -> u64 {
    32 * 1024 * 1024
}
fn default_keep() -> usize {
    50
}
fn default_timeout_secs() -> u64 {
    10
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self { json_bytes: default_json_bytes(), upload_bytes: default_upload_bytes() }
    }
}
impl Default for VersionsConfig {
    fn default() -> Self {
        Self { keep: default_keep() }
    }
}
fn default_outside_edits() -> bool {
    true
}

impl Default for WebhooksConfig {
    fn default() -> Self {
        Self {
            timeout_secs: default_timeout_secs(),
            ca_file: None,
            retry_delays_secs: Vec::new(),
            disable_after: None,
            allow_private_addresses: false,
            outside_edits: true,
        }
    }
}

/// Why a configuration was refused. Messages name the key or the line.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{0}")]
    Yaml(#[from] YamlError),
    #[error("{0}")]
    Invalid(String),
}

impl ConfigError {
    /// A refused value's message with the line of the key it names first (`site.per_page
    /// must be ...` becomes `line 4 column 3: site.per_page must be ...`), when the key is
    /// written in `text`.
    fn located(self, text: &str) -> Self {
        let Self::Invalid(message) = self else { return self };
        let path = message.split([' ', ':']).next().unwrap_or_default();
        match codec::locate(text, path) {
            Some((line, column)) => Self::Invalid(format!("line {line} column {column}: {message}")),
            None => Self::Invalid(message),
        }
    }
}

impl SiteConfig {
    /// The JSON Schema of `cms.yaml` (draft 2020-12), made from these types: every key
    /// with its type, its default and the description written above it here. Editors check
    /// the file with it as it is typed (`cms config schema`); the checks that span keys
    /// (ranges, overlapping folders) are [`SiteConfig::from_yaml`]'s.
    pub fn json_schema() -> serde_json::Value {
        Self::json_schema_with([])
    }

    /// [`SiteConfig::json_schema`] with more variants of `storage:`, one per backend
    /// besides the folder, each as its crate describes it (its `kind` and settings).
    pub fn json_schema_with(storage: impl IntoIterator<Item = serde_json::Value>) -> serde_json::Value {
        let mut schema = schemars::schema_for!(SiteConfig);
        schema.insert("title".into(), "cms.yaml".into());
        schema.insert(
            "description".into(),
            "The configuration of a cms site folder (docs/configuration.md).".into(),
        );
        let mut schema = schema.to_value();
        if let Some(variants) =
            schema.pointer_mut("/$defs/StorageConfig/oneOf").and_then(|v| v.as_array_mut())
        {
            variants.extend(storage);
        }
        schema
    }

    /// Parses and validates the text of `cms.yaml`. The backend's settings in `storage:`
    /// are not checked here (see [`SiteConfig::from_yaml_with`]).
    pub fn from_yaml(text: &str) -> Result<Self, ConfigError> {
        Self::from_yaml_with(text, |_| Ok(())).map(|(config, ())| config)
    }

    /// [`SiteConfig::from_yaml`], and `storage` reads the backend's settings (its
    /// [`ConfigError::Invalid`] messages start with the key, `storage.bucket must ...`, so
    /// that the line is named as for every other key).
    pub fn from_yaml_with<T>(
        text: &str,
        storage: impl FnOnce(&StorageConfig) -> Result<T, ConfigError>,
    ) -> Result<(Self, T), ConfigError> {
        let config: Self = codec::from_yaml(text, YamlLimits::STATE)?;
        let backend = storage(&config.storage).map_err(|error| error.located(text))?;
        config.validate().map_err(|error| error.located(text))?;
        Ok((config, backend))
    }

    /// The site's languages, checked (`None` without `languages:`).
    pub fn languages(&self) -> Result<Option<crate::language::Languages>, String> {
        crate::language::Languages::from_config(&self.languages, self.translations)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |m: String| Err(ConfigError::Invalid(m));
        if !(self.site.url.starts_with("https://") || self.site.url.starts_with("http://")) {
            return invalid(format!("site.url must be an absolute http(s) URL, got {:?}", self.site.url));
        }
        if self.site.per_page == 0 || self.site.max_per_page < self.site.per_page {
            return invalid(format!(
                "site.per_page must be at least 1 and at most site.max_per_page ({}), got {}",
                self.site.max_per_page, self.site.per_page
            ));
        }
        let languages = self.languages().map_err(ConfigError::Invalid)?;
        let mut slugs = Vec::new();
        for (i, c) in self.collections.iter().enumerate() {
            check_relative_path(&format!("collections[{i}].path"), &c.path)?;
            check_language_path(&format!("collections[{i}].path"), &c.path, languages.as_ref())?;
            if let Some(page_path) = &c.page_path
                && !page_path.starts_with('/')
            {
                return invalid(format!("collections[{i}].page_path must start with '/', got {page_path:?}"));
            }
            let slug = slugify(&c.label);
            if slug.is_empty() || slug.chars().all(|c| c.is_ascii_digit()) {
                return invalid(format!(
                    "collections[{i}].label {:?} must contain a letter, so that it has a slug",
                    c.label
                ));
            }
            if slugs.contains(&slug) {
                return invalid(format!(
                    "collections[{i}].label {:?}: another collection has the slug {slug:?}",
                    c.label
                ));
            }
            slugs.push(slug);
        }
        for (i, c) in self.collections.iter().enumerate() {
            c.model(&format!("collections[{i}]"), &slugs).map_err(ConfigError::Invalid)?;
        }
        // Every collection and resource folder needs a folder of its own: two collections
        // over one folder would not share a write lock (lost updates), and a resource
        // folder over a collection would let the resource routes rename or delete items
        // without history and serve drafts at public URLs.
        let folders: Vec<(String, String)> = self
            .collections
            .iter()
            .enumerate()
            .flat_map(|(i, c)| {
                crate::language::language_folders(&c.path, languages.as_ref()).into_iter().map(move |path| {
                    (
                        format!("collections[{i}].path"),
                        crate::sitepath::display(&crate::sitepath::configured(&path)),
                    )
                })
            })
            .chain(self.resources.iter().enumerate().map(|(i, r)| {
                (
                    format!("resources[{i}].path"),
                    crate::sitepath::display(&crate::sitepath::configured(&r.path)),
                )
            }))
            .collect();
        for (i, (key_a, a)) in folders.iter().enumerate() {
            for (key_b, b) in folders.iter().skip(i + 1) {
                if overlaps(a, b) {
                    return invalid(format!(
                        "{key_a} {a:?} and {key_b} {b:?} overlap; each collection and resource folder needs its own folder"
                    ));
                }
            }
        }
        // One URL prefix inside another would send the inner folder's files to the outer.
        let urls: Vec<String> =
            self.resources.iter().map(|r| r.url.trim_end_matches('/').to_owned()).collect();
        for (i, a) in urls.iter().enumerate() {
            for (j, b) in urls.iter().enumerate().skip(i + 1) {
                if overlaps(a.trim_start_matches('/'), b.trim_start_matches('/')) {
                    return invalid(format!("resources[{i}].url {a:?} and resources[{j}].url {b:?} overlap"));
                }
            }
        }
        for (i, r) in self.resources.iter().enumerate() {
            check_relative_path(&format!("resources[{i}].path"), &r.path)?;
            let url = r.url.trim_end_matches('/');
            if !url.starts_with('/') || url.is_empty() || url.contains(['{', '}', '?', '#']) {
                return invalid(format!(
                    "resources[{i}].url must be a path like /media/uploads, got {:?}",
                    r.url
                ));
            }
            // The server serves these URLs itself; they must not shadow API routes.
            if url == "/status" || url == "/cms" || url.starts_with("/cms/") {
                return invalid(format!(
                    "resources[{i}].url {:?} would shadow the API; pick another path",
                    r.url
                ));
            }
        }
        if !(1..=300).contains(&self.webhooks.timeout_secs) {
            return invalid(format!(
                "webhooks.timeout_secs must be between 1 and 300, got {}",
                self.webhooks.timeout_secs
            ));
        }
        let delays = &self.webhooks.retry_delays_secs;
        if delays.len() > 20 || delays.iter().any(|d| !(1..=86_400).contains(d)) {
            return invalid(format!(
                "webhooks.retry_delays_secs must list at most 20 delays of 1 to 86400 seconds, got {delays:?}"
            ));
        }
        if !(1..=MAX_PREVIEW_TTL_SECS).contains(&self.previews.ttl_secs) {
            return invalid(format!(
                "previews.ttl_secs must be between 1 and {MAX_PREVIEW_TTL_SECS} (7 days), got {}",
                self.previews.ttl_secs
            ));
        }
        if self.webhooks.disable_after == Some(0) {
            return invalid(
                "webhooks.disable_after must be at least 1 (leave it out to never disable)".into(),
            );
        }
        for (key, value) in [
            ("limits.json_bytes", self.limits.json_bytes as u64),
            ("limits.upload_bytes", self.limits.upload_bytes),
            ("versions.keep", self.versions.keep as u64),
        ] {
            if value == 0 {
                return invalid(format!("{key} must be greater than 0"));
            }
        }
        self.images.validate().map_err(ConfigError::Invalid)?;
        self.server.validate()?;
        self.signin.validate()?;
        self.mcp.validate()?;
        self.events.validate()?;
        self.metrics.validate()?;
        if let Some(git) = &self.git {
            git.validate(self.storage.kind)?;
        }
        Ok(())
    }
}

/// `Err` naming `key` unless `value` lies in `range`.
fn check_range<T>(key: &str, value: T, range: std::ops::RangeInclusive<T>) -> Result<(), ConfigError>
where
    T: PartialOrd + std::fmt::Display,
{
    if range.contains(&value) {
        return Ok(());
    }
    Err(ConfigError::Invalid(format!(
        "{key} must be between {} and {}, got {value}",
        range.start(),
        range.end()
    )))
}

impl ServerConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        check_range("server.header_timeout_secs", self.header_timeout_secs, 1..=600)?;
        check_range("server.body_timeout_secs", self.body_timeout_secs, 1..=3600)?;
        check_range("server.max_connections", self.max_connections, 1..=100_000)?;
        check_range("server.public_max_age_secs", self.public_max_age_secs, 0..=86_400)?;
        check_range("server.keep_alive_secs", self.keep_alive_secs, 1..=3600)?;
        check_range("server.drain_secs", self.drain_secs, 0..=300)?;
        check_range("server.stop_timeout_secs", self.stop_timeout_secs, 1..=3600)?;
        check_range("server.access_log_sample", self.access_log_sample, 0.0..=1.0)?;
        check_range("server.answers_memory_mb", self.answers_memory_mb, 0..=1_048_576)?;
        for (i, host) in self.allowed_hosts.iter().enumerate() {
            if !crate::host_policy::is_authority(host) {
                return Err(ConfigError::Invalid(format!(
                    "server.allowed_hosts[{i}] must be a host name like cms.example.com or cms.example.com:8080, got {host:?}"
                )));
            }
        }
        for (i, proxy) in self.trusted_proxies.iter().enumerate() {
            crate::host_policy::IpRange::parse(proxy)
                .map_err(|e| ConfigError::Invalid(format!("server.trusted_proxies[{i}]: {e}")))?;
        }
        Ok(())
    }
}

impl SigninConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        check_range("signin.failures_per_account", self.failures_per_account, 1..=1000)?;
        check_range("signin.failures_per_address", self.failures_per_address, 1..=100_000)?;
        check_range("signin.lock_secs", self.lock_secs, 1..=86_400)?;
        check_range("signin.max_lock_secs", self.max_lock_secs, self.lock_secs..=86_400)
    }
}

impl McpConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        check_range("mcp.max_sessions", self.max_sessions, 1..=1_000_000)?;
        check_range("mcp.max_sessions_per_key", self.max_sessions_per_key, 1..=self.max_sessions)?;
        check_range("mcp.session_idle_secs", self.session_idle_secs, 10..=86_400)
    }
}

/// Whether one `/`-separated path is the other or lies inside it.
fn overlaps(a: &str, b: &str) -> bool {
    a == b || a.starts_with(&format!("{b}/")) || b.starts_with(&format!("{a}/"))
}

/// `{lang}` in a collection path: required by the `folder` layout, refused otherwise.
fn check_language_path(
    key: &str,
    path: &str,
    languages: Option<&crate::language::Languages>,
) -> Result<(), ConfigError> {
    use crate::language::{LANG_PLACEHOLDER, TranslationLayout};
    let holds = path.contains(LANG_PLACEHOLDER);
    let message = match languages.map(|l| l.layout()) {
        Some(TranslationLayout::Folder) if !holds => format!(
            "{key} {path:?} must hold {LANG_PLACEHOLDER} where each language's folder name goes (translations: folder), e.g. content/{LANG_PLACEHOLDER}/posts"
        ),
        Some(TranslationLayout::Filename) if holds => {
            format!("{key} {path:?} holds {LANG_PLACEHOLDER}, which only translations: folder fills in")
        }
        None if holds => format!("{key} {path:?} holds {LANG_PLACEHOLDER}, but the site has no languages:"),
        _ => return Ok(()),
    };
    Err(ConfigError::Invalid(message))
}

/// A path inside the site folder: relative, no `..`, not empty, not under `.cms`.
fn check_relative_path(key: &str, path: &str) -> Result<(), ConfigError> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    let bad = path.starts_with('/')
        || path.contains('\\')
        || path.contains('\0')
        || parts.is_empty()
        || parts.contains(&"..")
        || parts[0] == ".cms";
    if bad {
        return Err(ConfigError::Invalid(format!(
            "{key} must be a relative folder inside the site (no '..', not .cms), got {path:?}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod schema_tests;
