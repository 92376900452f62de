//! `.cms/license.yaml` in the bucket, kept in memory and re-validated at most every
//! `state_max_age`; an install is also announced in the change journal, so that the
//! other nodes' cached license checks are refreshed at their next poll.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use cms_core::license::License;
use cms_core::ports::LicenseSource;
use cms_core::{CoreError, CoreResult};

use crate::bucket::Bucket;
use crate::changes::Journal;
use crate::state::StateObject;

pub const LICENSE_KEY: &str = ".cms/license.yaml";

pub struct S3License {
    object: Arc<StateObject<Option<License>>>,
    bucket: Bucket,
    journal: Arc<Journal>,
}

impl S3License {
    pub(crate) fn new(bucket: &Bucket, journal: Arc<Journal>, max_age: Duration) -> Self {
        Self {
            object: Arc::new(StateObject::new(bucket.clone(), LICENSE_KEY.to_owned(), max_age, decode)),
            bucket: bucket.clone(),
            journal,
        }
    }
}

impl S3License {
    /// Forgets the license kept, so that the next read asks the store.
    pub(crate) fn forget(&self) {
        self.object.expire();
    }

    /// The license, from a thread that may block (the webhook workers ask before each
    /// event's deliveries).
    pub fn read_blocking(&self) -> CoreResult<Option<License>> {
        let object = self.object.clone();
        self.bucket.run_blocking(async move { Ok(object.get().await?.as_ref().clone()) })
    }
}

/// An unreadable license counts as none; the reason goes to the operator's log.
fn decode(key: &str, bytes: Option<&[u8]>) -> CoreResult<Option<License>> {
    let Some(bytes) = bytes else { return Ok(None) };
    match std::str::from_utf8(bytes)
        .map_err(|e| CoreError::invalid(e.to_string()))
        .and_then(License::from_yaml)
    {
        Ok(license) => Ok(Some(license)),
        Err(e) => {
            tracing::error!(key, error = %e, "ignoring the license object");
            Ok(None)
        }
    }
}

#[async_trait]
impl LicenseSource for S3License {
    async fn current(&self) -> CoreResult<Option<License>> {
        Ok(self.object.get().await?.as_ref().clone())
    }

    async fn install(&self, license_text: &str) -> CoreResult<()> {
        License::from_yaml(license_text).map_err(|e| CoreError::invalid(e.to_string()))?;
        self.bucket.put(LICENSE_KEY, license_text.as_bytes().to_vec()).await?;
        self.object.expire();
        self.journal.license_changed().await;
        Ok(())
    }
}
