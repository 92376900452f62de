//! The CMS ports on a site folder (the embedded default adapter):
//!
//! ```text
//! site/
//!   cms.yaml           configuration, read by [`load_config`]
//!   content/<name>/    item files, [`FsContentStore`]
//!   .cms/              users, key hashes, license, theme: [`FsAccounts`], [`FsLicense`], [`FsSettings`]
//!   .cms/versions/     item history: [`FsVersionStore`]
//!   .cms/index/        each collection's index between runs: [`FsSnapshots`]
//!   .cms/variants/     rendered image variants of resource files: [`FsVariantStore`]
//!   .cms/sessions/     the web editor's sessions: [`FsSessionStore`]
//!   .cms/ (unnamed)    rendered single items of a running server: [`FsRenderCache`]
//!   .cms/serve.lock    held by the one server of the folder: [`ServeLock`]
//!   media/<name>/      resource folders: [`FsResourceStore`] (uploads staged in .cms/uploads/)
//! ```
//!
//! Every write goes through [`atomic`]: a temporary file in the same folder, fsync, rename.
//! Symlinks inside collection folders are never followed. The ports are async: each call
//! runs its blocking file I/O on tokio's blocking pool (`blocking.rs`), never on an async
//! worker.

mod accounts;
pub mod atomic;
mod beneath;
mod blocking;
mod changes;
mod config;
mod content;
mod error;
mod events;
mod history_memo;
mod license;
mod previews;
mod reader;
mod render_cache;
mod resources;
mod serve_lock;
mod sessions;
mod settings;
mod site;
mod site_root;
mod snapshots;
mod stamp;
mod state_documents;
pub mod state_file;
pub mod sweep;
mod system;
mod variants;
mod versions;
mod watch;

pub use accounts::FsAccounts;
pub use changes::FsChangeSource;
pub use config::{CONFIG_FILE, STATE_DIR, load_config, load_config_with};
pub use content::FsContentStore;
pub use error::FsError;
pub use events::FsEventStore;
pub use license::{FsLicense, LICENSE_FILE};
pub use previews::FsPreviewKeys;
pub use render_cache::{FsRenderCache, HeldInMemory, MAX_BUDGET as MAX_ANSWERS_BUDGET};
pub use resources::FsResourceStore;
pub use serve_lock::{SERVE_LOCK_FILE, ServeLock};
pub use sessions::{FsSessionStore, SESSIONS_DIR};
pub use settings::FsSettings;
pub use site::{open, site_ports};
pub use snapshots::FsSnapshots;
pub use state_documents::FsStateDocuments;
pub use sweep::{StagingSweep, sweep_staging};
pub use system::SystemClock;
pub use variants::FsVariantStore;
pub use versions::FsVersionStore;
pub use watch::{FolderWatcher, WatchEvent};
