//! The bucket adapters against a real S3-compatible server (SeaweedFS on loopback, see
//! `cms_s3::testing`): the contract every adapter passes, and what only several nodes on
//! one bucket can show.

mod contract;
mod nodes;
mod stores;

use cms_s3::S3Site;

/// A site in a fresh bucket; `None` (the test skips) without a server outside CI.
fn site() -> Option<S3Site> {
    let config = cms_s3::testing::fresh_bucket()?;
    Some(node(&config))
}

/// A second node on the same bucket as `config`.
fn node(config: &cms_s3::S3StorageConfig) -> S3Site {
    S3Site::connect(config, Some(cms_s3::testing::credentials())).expect("connect")
}
