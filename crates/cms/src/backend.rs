//! The site's backend, chosen by `storage:` of `cms.yaml`: the one place the binary tells
//! a site folder from a bucket. Each backend's crate reads its own settings and opens its
//! ports as a [`SiteStorage`]; everything after that is the same for every backend.

use std::path::Path;

use anyhow::Context;
use cms_core::config::{ConfigError, SiteConfig, StorageConfig, StorageKind};
use cms_core::ports::SiteStorage;
use cms_s3::S3StorageConfig;

/// Where a site is kept, with the backend's settings read and checked.
#[derive(Debug, Clone)]
pub enum Backend {
    /// The site folder holding `cms.yaml`.
    Folder,
    /// A bucket; the folder keeps only this node's caches.
    Bucket(S3StorageConfig),
}

impl Backend {
    /// The backend `storage:` names, its settings checked (messages name the key).
    pub fn of(storage: &StorageConfig) -> Result<Self, ConfigError> {
        match storage.kind {
            StorageKind::Fs => Ok(Self::Folder),
            StorageKind::S3 => S3StorageConfig::from_storage(storage).map(Self::Bucket),
        }
    }

    /// How often a server reads what the others sharing its store wrote (a bucket's
    /// `storage.poll_ms`); `None` for a folder, which one server has alone.
    pub fn poll_interval(&self) -> Option<std::time::Duration> {
        match self {
            Self::Folder => None,
            Self::Bucket(settings) => Some(std::time::Duration::from_millis(settings.poll_ms)),
        }
    }

    /// Opens the site's storage; `root` is the folder of `cms.yaml` (on a bucket, this
    /// node's caches stay there). A bucket is connected to and checked at once.
    pub fn open(&self, root: &Path) -> anyhow::Result<SiteStorage> {
        let folder = cms_fs::open(root);
        match self {
            Self::Folder => Ok(folder),
            Self::Bucket(settings) => Ok(cms_s3::open(settings, folder).context("storage")?),
        }
    }
}

/// Reads `<root>/cms.yaml` with its backend's settings; errors name the file, the line
/// and the key.
pub fn load_config(root: &Path) -> anyhow::Result<(SiteConfig, Backend)> {
    Ok(cms_fs::load_config_with(root, Backend::of)?)
}

/// Parses the text of a `cms.yaml` with its backend's settings.
pub fn parse_config(text: &str) -> Result<(SiteConfig, Backend), ConfigError> {
    SiteConfig::from_yaml_with(text, Backend::of)
}

/// The JSON Schema of `cms.yaml` with every backend's settings (`cms config schema`).
pub fn config_schema() -> serde_json::Value {
    SiteConfig::json_schema_with([S3StorageConfig::storage_schema()])
}

#[cfg(test)]
mod tests {
    use cms_core::testing::config_schema;

    use super::*;

    fn parse(text: &str) -> Result<(), String> {
        parse_config(text).map(drop).map_err(|e| e.to_string())
    }

    /// The schema as this program writes it names the bucket's settings, and each of
    /// its ranges is the one the checks enforce (the core's and the bucket's alike).
    #[test]
    fn the_schemas_ranges_are_the_checks_ranges() {
        let checked = config_schema::ranges_are_the_checks_ranges(&config_schema(), &parse);
        assert!(checked >= 25, "{checked} ranges");
    }

    #[test]
    fn the_schema_names_every_key_with_its_default() {
        config_schema::names_every_key_with_its_default(
            &config_schema(),
            &[
                "site.per_page",
                "collections[].path",
                "images.presets.<name>.w",
                "storage.bucket",
                "mcp.max_sessions",
            ],
        );
    }

    #[test]
    fn the_reference_page_covers_every_key_with_its_default_and_an_example() {
        config_schema::reference_page_covers_every_key(
            &config_schema(),
            &parse,
            include_str!("../../../docs/configuration.md"),
        );
    }

    /// A folder site takes no settings of a bucket's; a bucket needs its name.
    #[test]
    fn the_backend_is_the_kind_with_its_settings() {
        let minimal = "site:\n  name: S\n  url: https://example.com\n";
        assert!(matches!(parse_config(minimal).unwrap().1, Backend::Folder));
        let bucket = format!("{minimal}storage:\n  kind: s3\n  bucket: b\n");
        assert!(matches!(parse_config(&bucket).unwrap().1, Backend::Bucket(s3) if s3.bucket == "b"));
        let message = parse_config(&format!("{minimal}storage:\n  kind: s3\n")).unwrap_err().to_string();
        assert!(message.contains("bucket"), "{message}");
    }
}
