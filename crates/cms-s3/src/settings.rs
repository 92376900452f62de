//! The theme in `.cms/theme.yaml`, as on a site folder.

use std::time::Duration;

use async_trait::async_trait;
use cms_core::CoreResult;
use cms_core::codec::{self, YamlLimits};
use cms_core::ports::SettingsStore;
use serde_json::{Map, Value};

use crate::bucket::Bucket;
use crate::error::S3Error;
use crate::state::StateObject;

type Theme = Option<Map<String, Value>>;

pub struct S3Settings {
    theme: StateObject<Theme>,
    bucket: Bucket,
}

impl S3Settings {
    pub(crate) fn new(bucket: &Bucket, max_age: Duration) -> Self {
        Self {
            theme: StateObject::new(bucket.clone(), ".cms/theme.yaml".into(), max_age, decode),
            bucket: bucket.clone(),
        }
    }
}

fn decode(key: &str, bytes: Option<&[u8]>) -> CoreResult<Theme> {
    let Some(bytes) = bytes else { return Ok(None) };
    let damaged = |message: String| S3Error::State { key: key.to_owned(), message };
    let text = std::str::from_utf8(bytes).map_err(|e| damaged(e.to_string()))?;
    Ok(Some(codec::mapping_from_yaml(text, YamlLimits::STATE).map_err(|e| damaged(e.to_string()))?))
}

#[async_trait]
impl SettingsStore for S3Settings {
    async fn load_theme(&self) -> CoreResult<Option<Map<String, Value>>> {
        Ok(self.theme.get().await?.as_ref().clone())
    }

    async fn save_theme(&self, theme: &Map<String, Value>) -> CoreResult<()> {
        self.bucket.put(self.theme.key(), codec::to_yaml(theme)?.into_bytes()).await?;
        self.theme.expire();
        Ok(())
    }
}
