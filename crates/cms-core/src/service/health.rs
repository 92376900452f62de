//! Whether this server should be sent requests (`GET /readyz`): not while it builds its
//! first index, not once it was told to stop (draining), and not while its store does not
//! answer a read. Liveness (`GET /livez`) needs nothing: a process that answers lives.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;
use time::OffsetDateTime;

use super::Cms;

/// How long a store probe's answer stands: probes come from every load balancer and
/// orchestrator, at their own pace; the store is asked at most this often.
const PROBE_STANDS: time::Duration = time::Duration::seconds(1);

/// What `GET /readyz` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Readiness {
    pub ready: bool,
    /// `ready`, or the first reason it is not, in plain words.
    pub reason: String,
    /// Each check by name: `index` (`ready`, `indexing`), `draining` (`no`, `yes`),
    /// `store` (`reachable`, `unreachable`).
    pub checks: Checks,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Checks {
    pub index: &'static str,
    pub draining: &'static str,
    pub store: &'static str,
}

/// The draining flag and the last store probe.
#[derive(Default)]
pub(super) struct Health {
    draining: AtomicBool,
    /// When the store was last asked, and whether it answered (the error if not).
    probed: Mutex<Option<(OffsetDateTime, Result<(), String>)>>,
}

impl Cms {
    /// Whether this server was told to stop ([`Upkeep::begin_draining`]): its answers
    /// close their connections, so that clients reconnect elsewhere. One atomic load.
    ///
    /// [`Upkeep::begin_draining`]: crate::service::Upkeep::begin_draining
    pub fn is_draining(&self) -> bool {
        self.health.draining.load(Ordering::Acquire)
    }

    /// See the module doc. The store is probed with a read of the license (a small object
    /// every backend keeps), at most once a second.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn readiness(&self) -> Readiness {
        let indexing = self.indexing();
        let draining = self.health.draining.load(Ordering::Acquire);
        let store = self.probe_store().await;
        let reason = if draining {
            "draining: this server was told to stop and finishes what it has".to_owned()
        } else if let Some(progress) = &indexing {
            format!("indexing: {} of {} item files found so far", progress.indexed, progress.found)
        } else if let Err(error) = &store {
            format!("the store does not answer: {error}")
        } else {
            "ready".to_owned()
        };
        Readiness {
            ready: !draining && indexing.is_none() && store.is_ok(),
            reason,
            checks: Checks {
                index: if indexing.is_some() { "indexing" } else { "ready" },
                draining: if draining { "yes" } else { "no" },
                store: if store.is_ok() { "reachable" } else { "unreachable" },
            },
        }
    }

    async fn probe_store(&self) -> Result<(), String> {
        let now = self.now();
        let standing = self.health.probed.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        if let Some((at, answer)) = standing
            && now - at < PROBE_STANDS
        {
            return answer;
        }
        let answer = self.ports.license.current().await.map(drop).map_err(|error| error.to_string());
        *self.health.probed.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some((now, answer.clone()));
        answer
    }
}

impl Health {
    pub(crate) fn begin_draining(&self) {
        self.draining.store(true, Ordering::Release);
    }
}
