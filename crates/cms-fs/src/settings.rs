use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use cms_core::CoreResult;
use cms_core::codec::{self, YamlLimits};
use cms_core::ports::SettingsStore;
use serde_json::{Map, Value};

use crate::atomic;
use crate::blocking;
use crate::error::{FsError, io_error};

/// The theme in `.cms/theme.yaml`.
#[derive(Debug, Clone)]
pub struct FsSettings {
    theme_file: PathBuf,
}

impl FsSettings {
    pub fn new(state_dir: &Path) -> Self {
        Self { theme_file: state_dir.join("theme.yaml") }
    }

    fn load_theme_blocking(&self) -> CoreResult<Option<Map<String, Value>>> {
        let text = match fs::read_to_string(&self.theme_file) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error(&self.theme_file)(e)),
        };
        codec::mapping_from_yaml(&text, YamlLimits::STATE)
            .map(Some)
            .map_err(|e| FsError::State { path: self.theme_file.clone(), message: e.to_string() }.into())
    }

    fn save_theme_blocking(&self, text: &str) -> CoreResult<()> {
        atomic::write_private(&self.theme_file, text.as_bytes()).map_err(io_error(&self.theme_file))
    }
}

#[async_trait]
impl SettingsStore for FsSettings {
    async fn load_theme(&self) -> CoreResult<Option<Map<String, Value>>> {
        let store = self.clone();
        blocking::run(move || store.load_theme_blocking()).await
    }

    async fn save_theme(&self, theme: &Map<String, Value>) -> CoreResult<()> {
        // Serialized here (pure work); only the write goes to the blocking pool.
        let (store, text) = (self.clone(), codec::to_yaml(theme)?);
        blocking::run(move || store.save_theme_blocking(&text)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn round_trips_and_refuses_damage() {
        let dir = tempfile::tempdir().unwrap();
        let store = FsSettings::new(dir.path());
        assert!(store.load_theme().await.unwrap().is_none());
        let theme = json!({"accent_color": "#fff", "custom_palette": null}).as_object().unwrap().clone();
        store.save_theme(&theme).await.unwrap();
        assert_eq!(store.load_theme().await.unwrap().unwrap(), theme);
        fs::write(dir.path().join("theme.yaml"), "accent_color: [\n").unwrap();
        assert!(store.load_theme().await.is_err());
    }
}
