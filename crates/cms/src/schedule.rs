//! The timer of scheduled items: sleeps until the next instant at which an item goes live
//! or comes down (the facade keeps that instant in each index; nothing is rescanned), then
//! lets the facade move its indexes and announce the changes. The last instant handled is
//! kept in `.cms/schedule.yaml`, so that a server started after an instant announces what
//! happened while none ran, once.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cms_core::Cms;
use cms_fs::STATE_DIR;
use tokio::sync::Notify;

/// The longest sleep without looking again (a clock set forward is noticed by then).
const LONGEST_SLEEP: Duration = Duration::from_secs(60);

#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Mark {
    /// Unix seconds up to which every scheduled change was announced.
    announced_until: i64,
}

fn mark_path(root: &Path) -> PathBuf {
    root.join(STATE_DIR).join("schedule.yaml")
}

/// The instant recorded by the last server, if any (unreadable counts as none, logged).
fn load_mark(root: &Path) -> Option<i64> {
    let text = std::fs::read_to_string(mark_path(root)).ok()?;
    match serde_saphyr::from_str::<Mark>(&text) {
        Ok(mark) => Some(mark.announced_until),
        Err(error) => {
            tracing::warn!(%error, "cannot read .cms/schedule.yaml; not announcing past scheduled changes");
            None
        }
    }
}

fn save_mark(root: &Path, at: i64) {
    let text = format!("announced_until: {at}\n");
    if let Err(error) = cms_fs::atomic::write_private(&mark_path(root), text.as_bytes()) {
        tracing::warn!(%error, "cannot record the scheduled changes announced");
    }
}

/// Announces what happened while no server ran, then keeps the timer on this runtime. The
/// mark is written at every ring (at least once a minute), before the ring's events are
/// published, so that a server killed without stopping announces nothing twice.
pub fn keep_schedule(cms: Arc<Cms>, root: PathBuf) {
    let wake = Arc::new(Notify::new());
    let notify = Arc::clone(&wake);
    cms.on_schedule_change(move || notify.notify_one());
    // Saved before the events of the instant go out (the facade calls it then).
    let mark_root = root.clone();
    cms.on_schedule_mark(move |at| save_mark(&mark_root, at));
    cms.catch_up_schedule(load_mark(&root));
    actix_web::rt::spawn(async move {
        loop {
            let wait = cms.next_scheduled_instant().map_or(LONGEST_SLEEP, until).min(LONGEST_SLEEP);
            tokio::select! {
                () = actix_web::rt::time::sleep(wait) => {}
                () = wake.notified() => continue,
            }
            cms.advance_schedule();
        }
    });
}

/// Records the instant reached when the server stops.
pub fn stop(cms: &Cms) {
    cms.advance_schedule();
}

/// How long until the Unix second `at` begins.
fn until(at: i64) -> Duration {
    let now = time::OffsetDateTime::now_utc().unix_timestamp_nanos();
    let left = i128::from(at) * 1_000_000_000 - now;
    Duration::from_nanos(u64::try_from(left.max(0)).unwrap_or(u64::MAX))
}
