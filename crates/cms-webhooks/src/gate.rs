//! Whether deliveries may be made: webhooks are a plan feature. Asked by the workers when
//! an event's deliveries are due, not when the sink starts or the event is published: the
//! license file is watched and may change while the process runs.

use std::sync::Arc;

use cms_core::license::{Feature, LicenseState};
use cms_core::ports::{Clock, LicenseSource};

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
/// the API's license gate). Asked on a worker thread, which waits for the license port's
/// answer (a file's `stat`, or the bucket's copy kept for `state_max_age_ms`).
pub struct LicenseGate {
    license: Arc<dyn LicenseSource>,
    clock: Arc<dyn Clock>,
    public_key: Option<String>,
}

impl LicenseGate {
    pub fn new(license: Arc<dyn LicenseSource>, clock: Arc<dyn Clock>, public_key: Option<String>) -> Self {
        Self { license, clock, public_key }
    }
}

impl DeliveryGate for LicenseGate {
    fn check(&self) -> Result<(), String> {
        let license = futures_executor::block_on(self.license.current())
            .map_err(|e| format!("the license could not be read ({e})"))?;
        let state = LicenseState::evaluate(license, self.public_key.as_deref(), self.clock.now());
        match (state.lacks(Feature::Webhooks), &state) {
            (None, _) => Ok(()),
            (Some(why), LicenseState::Active(_)) => Err(why),
            (Some(why), _) => {
                Err(format!("{why}; webhooks need an active license with the webhooks feature"))
            }
        }
    }
}
