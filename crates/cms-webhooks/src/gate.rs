//! Whether deliveries may be made: webhooks are a plan feature. Asked by the workers when
//! an event's deliveries are due, not when the sink starts or the event is published: the
//! license file is watched and may change while the process runs.

use cms_core::CoreResult;
use cms_core::license::{Feature, License, LicenseState};
use cms_fs::FsLicense;
use std::path::Path;
use time::OffsetDateTime;

/// Asked before an event's deliveries. `Err(why)`: none is attempted; each is logged as
/// `not sent: <why>`.
pub trait DeliveryGate: Send + Sync {
    fn check(&self) -> Result<(), String>;
}

impl<F: Fn() -> Result<(), String> + Send + Sync> DeliveryGate for F {
    fn check(&self) -> Result<(), String> {
        self()
    }
}

/// The site's license must be active and carry `webhooks`; when `cms.yaml` sets
/// `license.public_key`, only a license whose signature verifies counts (the same rule as
/// the API's license gate).
pub struct LicenseGate {
    license: Box<dyn Fn() -> CoreResult<Option<License>> + Send + Sync>,
    public_key: Option<String>,
}

impl LicenseGate {
    /// The license of a site folder; `state_dir` is its `.cms` folder.
    pub fn new(state_dir: &Path, public_key: Option<String>) -> Self {
        let license = FsLicense::new(state_dir);
        Self::with_reader(move || license.read_now(), public_key)
    }

    /// The license as `read` gives it (from the calling thread, which may block), for a
    /// site stored elsewhere.
    pub fn with_reader(
        read: impl Fn() -> CoreResult<Option<License>> + Send + Sync + 'static,
        public_key: Option<String>,
    ) -> Self {
        Self { license: Box::new(read), public_key }
    }
}

impl DeliveryGate for LicenseGate {
    fn check(&self) -> Result<(), String> {
        let license = (self.license)().map_err(|e| format!("the license could not be read ({e})"))?;
        let state = LicenseState::evaluate(license, self.public_key.as_deref(), OffsetDateTime::now_utc());
        match (state.lacks(Feature::Webhooks), &state) {
            (None, _) => Ok(()),
            (Some(why), LicenseState::Active(_)) => Err(why),
            (Some(why), _) => {
                Err(format!("{why}; webhooks need an active license with the webhooks feature"))
            }
        }
    }
}
