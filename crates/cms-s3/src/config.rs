//! `storage:` of `cms.yaml` for a site in a bucket (`kind: s3`): the settings, their
//! checks (messages name the key, `storage.bucket must ...`, so that the core names its
//! line) and their part of the JSON Schema of `cms.yaml`.

use cms_core::config::{ConfigError, StorageConfig};
use schemars::JsonSchema;
use serde::Deserialize;

/// The bucket's settings. Credentials come from the environment (`AWS_ACCESS_KEY_ID`,
/// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`), never from the file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct S3StorageConfig {
    /// The bucket's name.
    pub bucket: String,
    /// The store's URL (`http://127.0.0.1:8333`); AWS's own endpoint when absent.
    #[serde(default)]
    pub endpoint: Option<String>,
    /// Keys start with this (`sites/blog`); the bucket's root when empty.
    #[serde(default)]
    pub prefix: String,
    /// The bucket's region; `AWS_REGION` (else us-east-1) when absent.
    #[serde(default)]
    pub region: Option<String>,
    /// How often each node reads the others' change journal (milliseconds).
    #[serde(default = "default_poll_ms")]
    #[schemars(range(min = 50, max = 60_000))]
    pub poll_ms: u64,
    /// How often each node compares every collection whole, for writes made without a
    /// node (`aws s3 sync`); seconds.
    #[serde(default = "default_rescan_secs")]
    #[schemars(range(min = 1, max = 86_400))]
    pub rescan_secs: u64,
    /// How old the users, keys, license and theme kept in memory may get before they are
    /// checked again (milliseconds): the bound on a key revocation reaching every node.
    #[serde(default = "default_state_max_age_ms")]
    #[schemars(range(max = 60_000))]
    pub state_max_age_ms: u64,
}

fn default_poll_ms() -> u64 {
    500
}

fn default_rescan_secs() -> u64 {
    60
}

fn default_state_max_age_ms() -> u64 {
    1000
}

impl S3StorageConfig {
    /// Reads and checks the settings of a `storage:` section of kind `s3`.
    pub fn from_storage(storage: &StorageConfig) -> Result<Self, ConfigError> {
        let settings = serde_json::Value::Object(storage.settings.clone());
        let config: Self = serde_path_to_error::deserialize(settings).map_err(|error| {
            let key = match error.path().to_string().as_str() {
                "." => "storage".to_owned(),
                path => format!("storage.{path}"),
            };
            ConfigError::Invalid(format!("{key}: {}", error.inner()))
        })?;
        config.validate()?;
        Ok(config)
    }

    /// The `kind: s3` variant of `storage:` in the JSON Schema of `cms.yaml` (see
    /// `SiteConfig::json_schema_with`).
    pub fn storage_schema() -> serde_json::Value {
        let settings = schemars::schema_for!(S3StorageConfig).to_value();
        let mut variant = serde_json::Map::new();
        variant.insert("type".into(), "object".into());
        variant.insert("additionalProperties".into(), false.into());
        let mut properties = serde_json::Map::new();
        properties.insert("kind".into(), serde_json::json!({"type": "string", "const": "s3"}));
        if let Some(own) = settings["properties"].as_object() {
            properties.extend(own.clone());
        }
        variant.insert("properties".into(), properties.into());
        let mut required = vec![serde_json::Value::from("kind")];
        required.extend(settings["required"].as_array().cloned().unwrap_or_default());
        variant.insert("required".into(), required.into());
        variant.insert(
            "description".into(),
            "An S3-compatible bucket; the folder holding `cms.yaml` keeps only this node's\n\
             caches. Credentials come from the environment (`AWS_ACCESS_KEY_ID`,\n\
             `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`), never from the file."
                .into(),
        );
        variant.into()
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |m: String| Err(ConfigError::Invalid(m));
        if self.bucket.is_empty() || self.bucket.contains(['/', ' ']) {
            return invalid(format!("storage.bucket must be a bucket name, got {:?}", self.bucket));
        }
        if let Some(endpoint) = &self.endpoint
            && !(endpoint.starts_with("https://") || endpoint.starts_with("http://"))
        {
            return invalid(format!("storage.endpoint must be an http(s) URL, got {endpoint:?}"));
        }
        let prefix = self.prefix.trim_matches('/');
        if prefix
            .split('/')
            .any(|segment| segment == ".." || segment == "." || (segment.is_empty() && !prefix.is_empty()))
        {
            return invalid(format!(
                "storage.prefix must be a plain key prefix like sites/blog, got {:?}",
                self.prefix
            ));
        }
        if !(50..=60_000).contains(&self.poll_ms) {
            return invalid(format!("storage.poll_ms must be between 50 and 60000, got {}", self.poll_ms));
        }
        if !(1..=86_400).contains(&self.rescan_secs) {
            return invalid(format!(
                "storage.rescan_secs must be between 1 and 86400, got {}",
                self.rescan_secs
            ));
        }
        if self.state_max_age_ms > 60_000 {
            return invalid(format!(
                "storage.state_max_age_ms must be at most 60000, got {}",
                self.state_max_age_ms
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use cms_core::config::{SiteConfig, StorageKind};

    use super::*;

    const MINIMAL: &str = "site:\n  name: S\n  url: https://example.com\n";

    fn parse(text: &str) -> Result<S3StorageConfig, ConfigError> {
        SiteConfig::from_yaml_with(text, S3StorageConfig::from_storage).map(|(_, s3)| s3)
    }

    #[test]
    fn a_bucket_is_named_without_credentials() {
        let text =
            format!("{MINIMAL}storage:\n  kind: s3\n  bucket: site\n  endpoint: http://127.0.0.1:9000\n");
        let s3 = parse(&text).unwrap();
        assert_eq!((s3.bucket.as_str(), s3.region.as_deref(), s3.poll_ms), ("site", None, 500));
        let refused = [
            ("storage:\n  kind: s3\n", "bucket"),
            ("storage:\n  kind: s3\n  bucket: b\n  secret_access_key: x\n", "secret_access_key"),
            ("storage:\n  kind: s3\n  bucket: b\n  endpoint: 127.0.0.1:9000\n", "storage.endpoint"),
            ("storage:\n  kind: s3\n  bucket: b\n  prefix: a/../b\n", "storage.prefix"),
            ("storage:\n  kind: s3\n  bucket: b\n  poll_ms: 0\n", "storage.poll_ms"),
            ("storage:\n  kind: s3\n  bucket: b\n  poll_ms: often\n", "storage.poll_ms"),
        ];
        for (case, named) in refused {
            let message = parse(&format!("{MINIMAL}{case}")).unwrap_err().to_string();
            assert!(message.contains(named), "{case}: {message}");
            assert!(message.starts_with("line "), "{case}: {message}");
        }
        assert_eq!(SiteConfig::from_yaml(&text).unwrap().storage.kind, StorageKind::S3);
    }
}
