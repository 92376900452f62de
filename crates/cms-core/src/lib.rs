//! The pure domain of the CMS: no I/O, no web framework, no runtime.
//!
//! The web layer and the CLI call [`Cms`]; storage, events, license and time come in
//! through the traits of [`ports`].

pub mod account;
pub mod answers;
pub mod changes;
pub mod codec;
pub mod collection;
pub mod config;
pub mod dates;
pub mod document;
mod engine;
pub mod error;
pub mod event_log;
pub mod events;
pub mod feed;
pub mod host_policy;
pub mod images;
pub mod item;
pub mod item_file;
pub mod language;
pub mod license;
pub mod model;
pub mod policy;
pub mod ports;
pub mod query;
pub mod readings;
pub mod related;
pub mod render;
pub mod render_cache;
pub mod resource;
pub mod service;
pub mod session;
pub mod sitepath;
pub mod slug;
pub mod state_rows;
pub mod theme;
pub mod upload;
pub mod urls;
pub mod version_authors;

#[cfg(feature = "testing")]
pub mod testing;

pub use error::{CoreError, CoreResult};
pub use service::{Cms, Ports};
