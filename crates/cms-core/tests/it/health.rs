//! Readiness (`Cms::readiness`, `GET /readyz`): a store that does not answer a read makes
//! the server not ready, with the store's words; one probe stands for a second, so that
//! probes from every orchestrator do not each reach the store.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use async_trait::async_trait;
use cms_core::CoreError;
use cms_core::CoreResult;
use cms_core::license::License;
use cms_core::ports::LicenseSource;
use cms_core::service::Ports;
use cms_core::testing::{MemoryWorld, SITE_YAML};

/// A license store whose reads fail while `down`, counting them.
#[derive(Default)]
struct FlakyStore {
    down: AtomicBool,
    reads: AtomicUsize,
}

#[async_trait]
impl LicenseSource for FlakyStore {
    async fn current(&self) -> CoreResult<Option<License>> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        if self.down.load(Ordering::SeqCst) {
            return Err(CoreError::internal(
                "reading .cms/license.yaml",
                std::io::Error::other("connection refused"),
            ));
        }
        Ok(None)
    }

    async fn install(&self, _license_text: &str) -> CoreResult<()> {
        Ok(())
    }
}

#[tokio::test]
async fn a_store_that_does_not_answer_makes_the_server_not_ready_and_probes_stand_a_second() {
    let world = MemoryWorld::new();
    let store = Arc::new(FlakyStore::default());
    let cms = world.cms_with_ports(SITE_YAML, Ports { license: store.clone(), ..world.ports() });
    let reads_before = store.reads.load(Ordering::SeqCst);
    assert!(cms.readiness().await.ready);
    assert!(cms.readiness().await.ready);
    assert_eq!(store.reads.load(Ordering::SeqCst), reads_before + 1, "one probe within the second");

    store.down.store(true, Ordering::SeqCst);
    assert!(cms.readiness().await.ready, "the standing probe answers until its second is over");
    world.clock.advance(2);
    let readiness = cms.readiness().await;
    assert!(!readiness.ready);
    assert_eq!(readiness.checks.store, "unreachable");
    assert!(readiness.reason.contains("connection refused"), "{}", readiness.reason);

    store.down.store(false, Ordering::SeqCst);
    world.clock.advance(2);
    assert!(cms.readiness().await.ready, "back once the store answers");
}
