//! Image variants in memory.

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;

use crate::error::CoreResult;
use crate::images::VariantKey;
use crate::ports::{ResourceReader, VariantSource, VariantStore};
use crate::testing::memory_resources::MemoryReader;

/// Source (folder path, subpath, name) → its variants.
type Sources = BTreeMap<(String, String, String), BTreeMap<VariantKey, Vec<u8>>>;

fn source_key(source: VariantSource<'_>) -> (String, String, String) {
    (source.folder.path.clone(), source.dir.as_str().to_owned(), source.name.as_str().to_owned())
}

/// Variants in memory.
#[derive(Default)]
pub struct MemoryVariants {
    sources: Mutex<Sources>,
}

impl MemoryVariants {
    /// How many variants are kept, over all sources.
    pub fn count(&self) -> usize {
        self.sources.lock().unwrap().values().map(BTreeMap::len).sum()
    }
}

#[async_trait]
impl VariantStore for MemoryVariants {
    async fn open(
        &self,
        source: VariantSource<'_>,
        key: &VariantKey,
    ) -> CoreResult<Option<(Box<dyn ResourceReader>, u64)>> {
        let sources = self.sources.lock().unwrap();
        Ok(sources
            .get(&source_key(source))
            .and_then(|v| v.get(key))
            .map(|bytes| (MemoryReader::boxed(bytes), bytes.len() as u64)))
    }

    async fn put(&self, source: VariantSource<'_>, key: &VariantKey, bytes: &[u8]) -> CoreResult<()> {
        let mut sources = self.sources.lock().unwrap();
        let variants = sources.entry(source_key(source)).or_default();
        variants.retain(|k, _| k.source_hash() == key.source_hash());
        variants.insert(key.clone(), bytes.to_vec());
        Ok(())
    }

    async fn list(&self, source: VariantSource<'_>) -> CoreResult<Vec<(VariantKey, u64)>> {
        let sources = self.sources.lock().unwrap();
        Ok(sources
            .get(&source_key(source))
            .map(|v| v.iter().map(|(k, b)| (k.clone(), b.len() as u64)).collect())
            .unwrap_or_default())
    }

    async fn remove_all(&self, source: VariantSource<'_>) -> CoreResult<()> {
        self.sources.lock().unwrap().remove(&source_key(source));
        Ok(())
    }

    async fn rename(&self, from: VariantSource<'_>, to: VariantSource<'_>) -> CoreResult<()> {
        let mut sources = self.sources.lock().unwrap();
        if let Some(variants) = sources.remove(&source_key(from)) {
            sources.insert(source_key(to), variants);
        }
        Ok(())
    }
}
