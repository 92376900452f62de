//! The upkeep handle ([`Cms::upkeep`]): what the composition root (and a test standing in
//! for it) calls to keep the facade's engine in step with the store: the first indexing,
//! the change feed, the index snapshots, the schedule's timer. Apart from the operations
//! that adapters call, so that neither audience reaches for the other's methods; each
//! method's doc is on the facade's own (`index.rs`, `schedule.rs`), which this calls.

use std::future::Future;

use super::Cms;
use crate::collection::Collection;
use crate::error::CoreResult;
use crate::ports::{ChangeFeed, StorageChange};

/// The facade's upkeep (see the module doc). Copy: each call takes it by value and the
/// futures borrow the facade, not the handle.
#[derive(Clone, Copy)]
pub struct Upkeep<'a>(&'a Cms);

impl Cms {
    /// The upkeep handle of this facade.
    pub fn upkeep(&self) -> Upkeep<'_> {
        Upkeep(self)
    }
}

impl<'a> Upkeep<'a> {
    /// This server was told to stop: `/readyz` says so from now on, so that load
    /// balancers send their requests elsewhere while it finishes what it has.
    pub fn begin_draining(&self) {
        self.0.health.begin_draining();
    }

    /// Loads the license and builds every collection's index; [`Cms::indexing`] reports
    /// the progress from the call on, before the future is first polled.
    pub fn start(self) -> impl Future<Output = CoreResult<()>> + 'a {
        self.0.start()
    }

    /// Saves the snapshot of every index that changed since its last one; how many.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn save_snapshots(self) -> CoreResult<usize> {
        self.0.save_snapshots().await
    }

    /// Subscribes to the store's change reports; `None` when it has no feed (then call
    /// [`Self::rescan_all`] now and then).
    pub fn subscribe(self) -> CoreResult<Option<Box<dyn ChangeFeed>>> {
        self.0.subscribe()
    }

    /// Follows a change feed until it ends, applying each batch.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn follow_changes(self, feed: Box<dyn ChangeFeed>) {
        self.0.follow_changes(feed).await
    }

    /// Applies one batch of changes reported by the store.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn apply_changes(self, batch: Vec<StorageChange>) -> CoreResult<()> {
        let applied = self.0.apply_changes(batch).await;
        self.0.event_log.publish_pending().await;
        applied
    }

    /// Compares a collection with a fresh scan and re-reads what differs.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn rescan(self, collection: &Collection) -> CoreResult<()> {
        let rescanned = self.0.rescan(collection).await;
        self.0.event_log.publish_pending().await;
        rescanned.map(drop)
    }

    /// Compares every index that the start made from its snapshot alone with a listing of
    /// its folder, and re-reads what differs (edits made in place while the server was
    /// stopped). Call it once the server answers. How many files had changed.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn check_snapshot_starts(self) -> CoreResult<usize> {
        let checked = self.0.check_snapshot_starts().await;
        self.0.event_log.publish_pending().await;
        checked
    }

    /// Rescans every collection and reloads the license.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn rescan_all(self) -> CoreResult<()> {
        let rescanned = self.0.rescan_all().await;
        self.0.event_log.publish_pending().await;
        rescanned
    }

    /// What to call when a write moves the next scheduled instant earlier.
    pub fn on_schedule_change(self, wake: impl Fn() + Send + Sync + 'static) {
        self.0.on_schedule_change(wake)
    }

    /// How to record the instant up to which scheduled changes are announced.
    pub fn on_schedule_mark(self, record: impl Fn(i64) + Send + Sync + 'static) {
        self.0.on_schedule_mark(record)
    }

    /// The same, for servers sharing one store (see `schedule.rs`).
    pub fn on_schedule_claim(self, claim: impl Fn(i64) -> Option<i64> + Send + Sync + 'static) {
        self.0.on_schedule_claim(claim)
    }

    /// Where the schedule's timer should ring next (Unix seconds).
    pub fn next_scheduled_instant(self) -> Option<i64> {
        self.0.next_scheduled_instant()
    }

    /// Moves every index to the clock's now; the instant reached.
    pub fn advance_schedule(self) -> i64 {
        self.0.advance_schedule()
    }

    /// For a server that starts: the transitions since the last server's mark, then now.
    pub fn catch_up_schedule(self, since: Option<i64>) -> i64 {
        self.0.catch_up_schedule(since)
    }

    /// Gives the events of changes made without a write (the schedule's, above) their
    /// ids and sends them (see `crate::event_log`); writes do this themselves.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn publish_events(self) {
        self.0.event_log.publish_pending().await
    }

    /// Whether other servers serve the same store (then their events are read with
    /// [`Self::catch_up_events`] every poll).
    pub fn shares_store(self) -> bool {
        self.0.ports.sharing == crate::ports::Sharing::Servers
    }

    /// Reads the events other servers of the site appended (a bucket site's servers call
    /// it every poll).
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn catch_up_events(self) -> CoreResult<()> {
        self.0.event_log.catch_up().await
    }

    /// Forgets events older than `events.keep_hours`.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn forget_old_events(self) -> CoreResult<()> {
        self.0.event_log.forget_old().await
    }
}
