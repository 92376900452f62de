use std::fs;
use std::path::Path;

use cms_core::config::{ConfigError, SiteConfig, StorageConfig};

use crate::error::FsError;

pub const CONFIG_FILE: &str = "cms.yaml";
/// Private state, never served.
pub const STATE_DIR: &str = ".cms";

/// Reads and validates `<site>/cms.yaml`; errors name the file (and the line and key).
/// The backend's settings in `storage:` are not checked (see [`load_config_with`]).
pub fn load_config(site: &Path) -> Result<SiteConfig, FsError> {
    load_config_with(site, |_| Ok(())).map(|(config, ())| config)
}

/// [`load_config`], and `storage` reads the backend's settings (see
/// [`SiteConfig::from_yaml_with`]).
pub fn load_config_with<T>(
    site: &Path,
    storage: impl FnOnce(&StorageConfig) -> Result<T, ConfigError>,
) -> Result<(SiteConfig, T), FsError> {
    let path = site.join(CONFIG_FILE);
    let text = fs::read_to_string(&path).map_err(|e| FsError::io(&path, e))?;
    SiteConfig::from_yaml_with(&text, storage).map_err(|e| FsError::Config { path, message: e.to_string() })
}
