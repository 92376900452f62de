use std::fs;
use std::path::Path;

use cms_core::config::SiteConfig;

use crate::error::FsError;

pub const CONFIG_FILE: &str = "cms.yaml";
/// Private state, never served.
pub const STATE_DIR: &str = ".cms";

/// Reads and validates `<site>/cms.yaml`; errors name the file (and the line and key).
pub fn load_config(site: &Path) -> Result<SiteConfig, FsError> {
    let path = site.join(CONFIG_FILE);
    let text = fs::read_to_string(&path).map_err(|e| FsError::io(&path, e))?;
    SiteConfig::from_yaml(&text).map_err(|e| FsError::Config { path, message: e.to_string() })
}
