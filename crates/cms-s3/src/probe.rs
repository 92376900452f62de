//! Whether the store enforces conditional writes, asked by `cms check`: the adapter's
//! guarantee that two servers never overwrite each other's changes rests on it.

use cms_core::CoreResult;

use crate::S3Site;

impl S3Site {
    /// Writes the object `.cms/<name>` twice with `If-None-Match: *`, then removes it:
    /// `Ok(true)` when the second write is refused, as it must be; `Ok(false)` on a store
    /// that ignores the header (Garage does), where the last of two concurrent writes
    /// wins. `name` should be unique (a random suffix), so that no real object is touched.
    pub fn enforces_conditional_writes(&self, name: &str) -> CoreResult<bool> {
        let bucket = self.bucket.clone();
        let key = format!(".cms/{name}");
        self.bucket.run_blocking(async move {
            let outcome = match bucket.put_new(&key, b"cms check probe 1\n".to_vec()).await {
                Ok(Ok(_)) => {
                    bucket.put_new(&key, b"cms check probe 2\n".to_vec()).await.map(|second| second.is_err())
                }
                // Taken already: not ours to judge, nor to remove.
                Ok(Err(_)) => return Ok(true),
                Err(error) => Err(error),
            };
            let removed = bucket.delete(&key).await;
            let enforced = outcome?;
            removed?;
            Ok(enforced)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::S3StorageConfig;

    use super::*;

    #[test]
    fn a_store_that_refuses_a_second_create_enforces_conditional_writes() {
        let config: S3StorageConfig = serde_json::from_value(serde_json::json!({"bucket": "b"})).unwrap();
        let store = Arc::new(object_store::memory::InMemory::new());
        let site = S3Site::with_store(store.clone(), &config, "memory".into()).unwrap();
        assert!(site.enforces_conditional_writes("check-probe-1").unwrap());
        let left = site.bucket.run_blocking(async move {
            use futures_util::StreamExt;
            use object_store::ObjectStore;
            Ok(store.list(None).collect::<Vec<_>>().await.len())
        });
        assert_eq!(left.unwrap(), 0, "the probe is removed");
    }
}
