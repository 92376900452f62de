//! The timer of scheduled items: sleeps until the next instant at which an item goes live
//! or comes down (the facade keeps that instant in each index; nothing is rescanned), then
//! lets the facade move its indexes and announce the changes. The last instant handled is
//! kept in `.cms/schedule.yaml`, so that a server started after an instant announces what
//! happened while none ran, once.
//!
//! On a site in a bucket, the servers share that file (in the bucket): at each ring a
//! server moves it to now with a conditional write, and announces only the transitions
//! after the instant it found there, so that each is announced once per site, not once
//! per server (see [`cms_core::service::Upkeep::on_schedule_claim`]).

use std::sync::Arc;
use std::time::Duration;

use cms_core::Cms;
use cms_core::ports::{Sharing, StateDocuments};
use tokio::sync::Notify;

/// The longest sleep without looking again (a clock set forward is noticed by then).
const LONGEST_SLEEP: Duration = Duration::from_secs(60);

/// The name of the mark, a state document (`.cms/` of the folder or of the bucket).
pub const MARK_FILE: &str = "schedule.yaml";

#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Mark {
    /// Unix seconds up to which every scheduled change was announced.
    announced_until: i64,
}

/// The mark, in the site's state documents.
#[derive(Clone)]
pub struct ScheduleMark {
    state: Arc<dyn StateDocuments>,
    /// One server owns a folder's mark; a bucket's is claimed by every server.
    sharing: Sharing,
}

impl ScheduleMark {
    pub fn new(state: Arc<dyn StateDocuments>, sharing: Sharing) -> Self {
        Self { state, sharing }
    }

    /// The instant recorded last, if any (unreadable counts as none, logged).
    pub fn load(&self) -> Option<i64> {
        match self.state.read(MARK_FILE) {
            Ok(text) => parse_mark(&text?),
            Err(error) => {
                tracing::warn!(%error, "cannot read {}; not announcing past scheduled changes", self.state.describe(MARK_FILE));
                None
            }
        }
    }

    /// Records that scheduled changes are announced up to `now`; answers up to which
    /// instant another server already announced them (always `None` in a folder, which
    /// one server owns). When the shared mark cannot be moved (the bucket does not
    /// answer), the transitions are still announced: a duplicate rather than a loss.
    pub fn claim(&self, now: i64) -> Option<i64> {
        let claimed = Arc::new(std::sync::Mutex::new(None));
        let answer = Arc::clone(&claimed);
        let sharing = self.sharing;
        let moved = self.state.update(
            MARK_FILE,
            Box::new(move |text| {
                let (write, announced) = match sharing {
                    Sharing::OneServer => (Some(mark_text(now)), None),
                    Sharing::Servers => shared_claim(text.and_then(parse_mark), now),
                };
                *answer.lock().unwrap_or_else(|p| p.into_inner()) = announced;
                Ok(write)
            }),
        );
        if let Err(error) = moved {
            tracing::warn!(%error, "cannot record the scheduled changes announced in {}", self.state.describe(MARK_FILE));
            return None;
        }
        claimed.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// What a server claiming `now` writes, and up to when another server announced, given
/// the shared mark it `found`.
fn shared_claim(found: Option<i64>, now: i64) -> (Option<String>, Option<i64>) {
    match found {
        // A mark far ahead of this clock was written by a server whose
        // clock runs fast: believing it would skip every change until then.
        Some(until) if until > now + FUTURE_MARK_SECS => {
            tracing::warn!(
                until,
                now,
                "the shared schedule mark is ahead of this server's clock; check the servers' clocks (NTP)"
            );
            (Some(mark_text(now)), None)
        }
        // Another server rang at or after this instant: it announced it.
        Some(until) if until >= now => (None, Some(until)),
        _ => (Some(mark_text(now)), found),
    }
}

/// How far ahead of this server's clock a shared mark may be before it is taken for
/// another server's wrong clock (node clocks are assumed to agree within seconds).
const FUTURE_MARK_SECS: i64 = 60;

fn mark_text(at: i64) -> String {
    format!("announced_until: {at}\n")
}

fn parse_mark(text: &str) -> Option<i64> {
    match serde_saphyr::from_str::<Mark>(text) {
        Ok(mark) => Some(mark.announced_until),
        Err(error) => {
            tracing::warn!(%error, "cannot read .cms/schedule.yaml; not announcing past scheduled changes");
            None
        }
    }
}

/// Announces what happened while no server ran, then keeps the timer on this runtime. The
/// mark is written at every ring (at least once a minute), before the ring's events are
/// published, so that a server killed without stopping announces nothing twice. Each ring
/// runs on the blocking pool: the shared mark is a network round trip away.
pub fn keep_schedule(cms: Arc<Cms>, mark: ScheduleMark) {
    let wake = Arc::new(Notify::new());
    let notify = Arc::clone(&wake);
    cms.upkeep().on_schedule_change(move || notify.notify_one());
    // Claimed before the events of the instant go out (the facade calls it then).
    let claim = mark.clone();
    cms.upkeep().on_schedule_claim(move |at| claim.claim(at));
    // Once, as the server starts (before it serves anything).
    cms.upkeep().catch_up_schedule(mark.load());
    actix_web::rt::spawn(async move {
        cms.upkeep().publish_events().await;
        loop {
            let wait = cms.upkeep().next_scheduled_instant().map_or(LONGEST_SLEEP, until).min(LONGEST_SLEEP);
            tokio::select! {
                () = actix_web::rt::time::sleep(wait) => {}
                () = wake.notified() => continue,
            }
            let ringing = Arc::clone(&cms);
            let ring = move || {
                let _one_at_a_time = RINGS.lock().unwrap_or_else(|p| p.into_inner());
                ringing.upkeep().advance_schedule()
            };
            if let Err(error) = actix_web::rt::task::spawn_blocking(ring).await {
                tracing::error!(%error, "the scheduled-change timer failed");
            }
            // The ring's events get their ids and go out (streams, webhooks).
            cms.upkeep().publish_events().await;
        }
    });
}

/// Records the instant reached when the server stops.
pub fn stop(cms: &Cms) {
    let _one_at_a_time = RINGS.lock().unwrap_or_else(|p| p.into_inner());
    cms.upkeep().advance_schedule();
}

/// One ring at a time: a ring still running on the blocking pool when the server stops
/// would otherwise claim the same second as the stop's, and the one told "announced
/// already" would drop its collections' transitions.
static RINGS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// How long until the Unix second `at` begins.
fn until(at: i64) -> Duration {
    let now = time::OffsetDateTime::now_utc().unix_timestamp_nanos();
    let left = i128::from(at) * 1_000_000_000 - now;
    Duration::from_nanos(u64::try_from(left.max(0)).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two servers on one bucket: whoever moves the shared mark first announces; the
    /// other learns up to when, and a later ring moves it on.
    #[test]
    fn the_shared_mark_is_claimed_once_per_instant() {
        let Some(storage) = cms_s3::testing::fresh_bucket() else { return };
        let connect = || cms_s3::S3Site::connect(&storage, Some(cms_s3::testing::credentials())).unwrap();
        let (a, b) = (connect(), connect());
        let mark = |site: &cms_s3::S3Site| {
            ScheduleMark::new(Arc::new(cms_s3::S3StateDocuments::new(site)), Sharing::Servers)
        };
        let (a, b) = ((mark(&a), a), (mark(&b), b));
        assert_eq!(a.0.load(), None);
        assert_eq!(a.0.claim(100), None, "nothing was announced before");
        assert_eq!(b.0.claim(100), Some(100), "the other server announced up to 100");
        assert_eq!(b.0.claim(160), Some(100), "160 is this server's to announce, after 100");
        assert_eq!(a.0.claim(150), Some(160), "a server behind announces nothing");
        assert_eq!(
            b.1.get_object_blocking(".cms/schedule.yaml").unwrap().unwrap(),
            b"announced_until: 160\n"
        );
        assert_eq!(a.0.load(), Some(160));
    }
}
