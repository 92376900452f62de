//! Resource subscriptions (`resources/subscribe`, `resources/unsubscribe`) and the
//! notifications the core's event log feeds them.
//!
//! - **What can be subscribed.** An item, `cms://{collection}/{slug}` (or its filename), and
//!   a collection, `cms://{collection}` (whose reading lists its items). A schema
//!   (`cms://{collection}/schema`) changes only with the site's configuration: refused.
//! - **Bounded.** A session holds at most [`MAX_PER_SESSION`] subscriptions.
//! - **Followed.** A session that subscribes or lists the resources gets one cursor on the
//!   event log, started at the newest event then ([`EventLog::last_id`]), filtered by what
//!   its key may read (without draft rights, only events of items that were or are live),
//!   and run in a task of its own. For each batch of events it sends
//!   `notifications/resources/updated` for each subscribed URI the events touch (an item:
//!   created, updated, deleted, published, unpublished; a collection: an item created or
//!   deleted), then `notifications/resources/list_changed` once if an item was created or
//!   deleted. Events the log no longer keeps ([`Next::Reset`]) are told as
//!   `list_changed` and `updated` for every subscription: the client reads again.
//! - **Ended.** The task ends with the session (its handler, which holds the [`Watch`], is
//!   dropped when the session ends: `DELETE`, idle, ended to make room), when the log
//!   closes (the server is stopping), when the session can no longer take a message, and
//!   when the session's last subscription goes and it never listed the resources.
//!
//! The notifications go out on the session's server-to-client channel: rmcp's transport
//! sends a message that answers no request on the session's standalone stream (`GET /mcp`
//! with `Mcp-Session-Id`), keeping the last few for a stream opened later.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use cms_core::Cms;
use cms_core::collection::Collection;
use cms_core::event_log::{EventCursor, EventFilter, EventLog, LoggedEvent, Next};
use cms_core::events::{EventKind, FileEvent};
use cms_core::policy::{Operation, may};
use cms_core::service::Principal;
use cms_core::slug::{ItemFilename, ItemRef};
use rmcp::RoleServer;
use rmcp::model::{
    ResourceListChangedNotification, ResourceUpdatedNotification, ResourceUpdatedNotificationParam,
    ServerNotification,
};
use rmcp::service::Peer;
use tokio::task::AbortHandle;

/// The most subscriptions one session holds.
pub const MAX_PER_SESSION: usize = 100;

/// Why a subscription is refused (the URI itself is checked by the caller).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SubscribeError {
    #[error(
        "this session already holds {limit} resource subscriptions, the most a session may: \
         unsubscribe from one (resources/unsubscribe) before subscribing to {uri}"
    )]
    TooMany { limit: usize, uri: String },
    #[error(
        "this session is not subscribed to {uri}; its subscriptions are: {held} (an \
         unsubscription names the URI exactly as it was subscribed)"
    )]
    NotSubscribed { uri: String, held: String },
}

/// Where a session's notifications go: its peer, or a channel in the tests.
pub(crate) trait Outbox: Send + Sync + 'static {
    /// Sends one notification; `false` once the session cannot take it (it ended).
    fn send(&self, notification: ServerNotification) -> impl Future<Output = bool> + Send;
}

impl Outbox for Peer<RoleServer> {
    async fn send(&self, notification: ServerNotification) -> bool {
        self.send_notification(notification).await.is_ok()
    }
}

/// How many sessions follow the event log now, all of an endpoint's together (for tests
/// and logs).
#[derive(Debug, Default)]
pub struct Census(AtomicUsize);

impl Census {
    pub fn count(&self) -> usize {
        self.0.load(Ordering::Acquire)
    }
}

/// Counts a follower while it lives (dropped with its task, also when aborted).
struct Counted(Arc<Census>);

impl Counted {
    fn new(census: &Arc<Census>) -> Self {
        census.0.fetch_add(1, Ordering::AcqRel);
        Self(Arc::clone(census))
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What a subscription watches: an item of a collection, or the collection's list.
#[derive(Debug, Clone)]
pub(crate) enum Watched {
    Collection {
        collection: usize,
    },
    Item {
        collection: usize,
        /// As the URI names it (a slug or a filename).
        named: ItemRef,
        /// The item's file when it was subscribed.
        filename: String,
    },
}

impl Watched {
    pub(crate) fn collection(collection: &Collection) -> Self {
        Self::Collection { collection: collection.index }
    }

    pub(crate) fn item(collection: &Collection, named: ItemRef, filename: &str) -> Self {
        Self::Item { collection: collection.index, named, filename: filename.to_owned() }
    }

    /// Whether an event of `kind` on `file` changes what this watches.
    fn touched_by(&self, kind: EventKind, file: &FileEvent) -> bool {
        let listing = matches!(kind, EventKind::FileCreated | EventKind::FileDeleted);
        match self {
            Self::Collection { collection } => listing && *collection == file.folder,
            Self::Item { collection, named, filename } => {
                let item_event = listing
                    || matches!(
                        kind,
                        EventKind::FileUpdated | EventKind::ItemPublished | EventKind::ItemUnpublished
                    );
                item_event
                    && *collection == file.folder
                    && (file.filename == *filename
                        || ItemFilename::parse(&file.filename).is_some_and(|name| named.matches(&name))
                        || matches!(named, ItemRef::Slug(slug) if file.slug.as_deref() == Some(slug.as_str())))
            }
        }
    }
}

/// A session's subscriptions, in the order they were made.
#[derive(Debug, Default)]
struct Subscriptions {
    held: Vec<(String, Watched)>,
    /// The session listed the resources: it follows for `list_changed` even without
    /// subscriptions.
    listed: bool,
}

impl Subscriptions {
    /// The notifications a batch of events makes: each touched URI once, in the order of
    /// the events, then `list_changed` once if an item was created or deleted.
    fn notices(&self, events: &[Arc<LoggedEvent>]) -> Vec<ServerNotification> {
        let mut updated: Vec<&str> = Vec::new();
        let mut list_changed = false;
        for event in events {
            let Some(file) = event.file() else { continue };
            let kind = event.kind();
            list_changed |= matches!(kind, EventKind::FileCreated | EventKind::FileDeleted);
            for (uri, watched) in &self.held {
                if watched.touched_by(kind, file) && !updated.contains(&uri.as_str()) {
                    updated.push(uri);
                }
            }
        }
        let mut notices: Vec<ServerNotification> = updated.into_iter().map(resource_updated).collect();
        if list_changed {
            notices.push(list_changed_notice());
        }
        notices
    }

    /// After events were lost: everything may have changed.
    fn everything(&self) -> Vec<ServerNotification> {
        let mut notices: Vec<ServerNotification> =
            self.held.iter().map(|(uri, _)| resource_updated(uri)).collect();
        notices.push(list_changed_notice());
        notices
    }
}

fn resource_updated(uri: &str) -> ServerNotification {
    ServerNotification::ResourceUpdatedNotification(ResourceUpdatedNotification::new(
        ResourceUpdatedNotificationParam::new(uri),
    ))
}

fn list_changed_notice() -> ServerNotification {
    ServerNotification::ResourceListChangedNotification(ResourceListChangedNotification::default())
}

/// One session's subscriptions and its follower of the event log (see the module's
/// documentation). Dropping it (with the session's handler) ends the follower.
pub(crate) struct Watch {
    census: Arc<Census>,
    subscriptions: Arc<Mutex<Subscriptions>>,
    follower: Mutex<Option<AbortHandle>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves a list that is still a list.
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Watch {
    pub(crate) fn new(census: Arc<Census>) -> Self {
        Self { census, subscriptions: Arc::default(), follower: Mutex::new(None) }
    }

    /// Adds a subscription (again: nothing changes), within [`MAX_PER_SESSION`].
    pub(crate) fn subscribe(&self, uri: &str, watched: Watched) -> Result<(), SubscribeError> {
        let mut subscriptions = lock(&self.subscriptions);
        if let Some(held) = subscriptions.held.iter_mut().find(|(held, _)| held == uri) {
            held.1 = watched;
            return Ok(());
        }
        if subscriptions.held.len() >= MAX_PER_SESSION {
            return Err(SubscribeError::TooMany { limit: MAX_PER_SESSION, uri: uri.to_owned() });
        }
        subscriptions.held.push((uri.to_owned(), watched));
        Ok(())
    }

    /// Removes the subscription to `uri` (as it was subscribed); the follower stops when
    /// nothing is left to follow.
    pub(crate) fn unsubscribe(&self, uri: &str) -> Result<(), SubscribeError> {
        let idle = {
            let mut subscriptions = lock(&self.subscriptions);
            let Some(at) = subscriptions.held.iter().position(|(held, _)| held == uri) else {
                let held: Vec<&str> = subscriptions.held.iter().map(|(held, _)| held.as_str()).collect();
                let held = if held.is_empty() { "none".to_owned() } else { held.join(", ") };
                return Err(SubscribeError::NotSubscribed { uri: uri.to_owned(), held });
            };
            subscriptions.held.remove(at);
            subscriptions.held.is_empty() && !subscriptions.listed
        };
        if idle && let Some(follower) = lock(&self.follower).take() {
            follower.abort();
        }
        Ok(())
    }

    /// The session listed the resources: it follows even without subscriptions.
    pub(crate) fn listed(&self) {
        lock(&self.subscriptions).listed = true;
    }

    /// Starts following the event log for this session, unless it already does: from the
    /// newest event now, seeing what `principal` may read.
    pub(crate) async fn follow(&self, cms: &Cms, principal: &Principal, outbox: impl Outbox) {
        if lock(&self.follower).is_some() {
            return;
        }
        let log = cms.event_log();
        let filter =
            EventFilter { sees_drafts: may(principal, Operation::ReadDrafts), ..EventFilter::default() };
        let cursor = newest_cursor(log, filter).await;
        let mut follower = lock(&self.follower);
        if follower.is_some() {
            return; // another request of the session started it meanwhile
        }
        let counted = Counted::new(&self.census);
        let subscriptions = Arc::clone(&self.subscriptions);
        let task = tokio::spawn(async move {
            let _counted = counted;
            follow(cursor, &subscriptions, &outbox).await;
        });
        *follower = Some(task.abort_handle());
    }

    /// Whether a follower runs for this session (for tests).
    #[cfg(test)]
    fn is_following(&self) -> bool {
        lock(&self.follower).as_ref().is_some_and(|task| !task.is_finished())
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(follower) = lock(&self.follower).take() {
            follower.abort();
        }
    }
}

/// A cursor from the newest event (which the log reads from its store on first use).
async fn newest_cursor(log: &Arc<EventLog>, filter: EventFilter) -> EventCursor {
    let newest = log.head().await.unwrap_or_else(|error| {
        tracing::warn!(%error, "cannot read the event log's newest id; following from what this server knows");
        log.last_id()
    });
    log.cursor(newest, filter)
}

/// The follower: the session's notifications for each batch of events, until the log
/// closes or the session cannot take them.
async fn follow(mut cursor: EventCursor, subscriptions: &Mutex<Subscriptions>, outbox: &impl Outbox) {
    loop {
        let notices = match cursor.next().await {
            Next::Events(events) => lock(subscriptions).notices(&events),
            Next::Reset => lock(subscriptions).everything(),
            Next::Closed => return,
        };
        for notice in notices {
            if !outbox.send(notice).await {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use cms_core::account::Role;
    use cms_core::document::Frontmatter;
    use cms_core::policy::Caller;
    use cms_core::service::{ItemUpdate, NewItem, UpdateMode};
    use cms_core::testing::MemoryWorld;
    use serde_json::json;
    use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

    use super::*;

    impl Outbox for UnboundedSender<ServerNotification> {
        async fn send(&self, notification: ServerNotification) -> bool {
            UnboundedSender::send(self, notification).is_ok()
        }
    }

    fn principal(role: Role) -> Principal {
        let user = cms_core::account::User { email: "ed@example.com".into(), role, created: 0 };
        Principal { user, key_id: "mcpkey_test".into(), key_name: None }
    }

    fn fm(value: serde_json::Value) -> Frontmatter {
        value.as_object().unwrap().clone()
    }

    /// What the session was sent: `updated:{uri}` or `list_changed`.
    fn name(notice: &ServerNotification) -> String {
        match notice {
            ServerNotification::ResourceUpdatedNotification(n) => format!("updated:{}", n.params.uri),
            ServerNotification::ResourceListChangedNotification(_) => "list_changed".into(),
            other => panic!("unexpected notification {other:?}"),
        }
    }

    async fn next(rx: &mut UnboundedReceiver<ServerNotification>) -> String {
        let notice = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await;
        name(&notice.expect("a notification within 5 s").expect("the follower is running"))
    }

    async fn write(cms: &Cms, collection: usize, slug: &str, title: &str) {
        let posts = &cms.collections()[collection];
        let update = ItemUpdate { mode: UpdateMode::Patch, fm: fm(json!({"title": title})), body: None };
        cms.update_item(Caller::Operator, posts, &ItemRef::parse(slug).unwrap(), update, None).await.unwrap();
    }

    async fn create(cms: &Cms, collection: usize, slug: &str, status: &str) -> String {
        let collection = &cms.collections()[collection];
        let new = NewItem {
            slug: Some(slug.into()),
            date_prefix: Some(false),
            fm: fm(json!({"title": slug, "status": status})),
            body: "Body.".into(),
        };
        cms.create_item(Caller::Operator, collection, new).await.unwrap().filename
    }

    #[tokio::test]
    async fn a_session_without_draft_rights_hears_of_live_items_only() {
        let world = MemoryWorld::new();
        let cms = world.cms();
        let pages = cms.collections()[1].clone();
        create(&cms, 1, "draft", "draft").await;
        let live = create(&cms, 1, "live", "published").await;

        let watch = Watch::new(Arc::default());
        for slug in ["draft", "live"] {
            let named = ItemRef::parse(slug).unwrap();
            let filename = format!("{slug}.md");
            watch.subscribe(&format!("cms://pages/{slug}"), Watched::item(&pages, named, &filename)).unwrap();
        }
        assert_eq!(live, "live.md");
        let (tx, mut rx) = unbounded_channel();
        // No role of today's table lacks draft rights: a follower as one would have.
        assert!(may(&principal(Role::Editor), Operation::ReadDrafts));
        let filter = EventFilter { sees_drafts: false, ..EventFilter::default() };
        let cursor = newest_cursor(cms.event_log(), filter).await;
        let subscriptions = Arc::clone(&watch.subscriptions);
        let task = tokio::spawn(async move { follow(cursor, &subscriptions, &tx).await });

        write(&cms, 1, "draft", "Still a draft").await;
        write(&cms, 1, "live", "Live, changed").await;
        assert_eq!(next(&mut rx).await, "updated:cms://pages/live", "the draft's change is not told");

        // A session with draft rights hears of drafts too.
        let (tx, mut rx) = unbounded_channel();
        let census = Arc::new(Census::default());
        let watch = Watch::new(Arc::clone(&census));
        watch
            .subscribe("cms://1/draft", Watched::item(&pages, ItemRef::parse("draft").unwrap(), "draft.md"))
            .unwrap();
        watch.follow(&cms, &principal(Role::Editor), tx).await;
        assert_eq!(census.count(), 1);
        write(&cms, 1, "draft", "Draft, changed").await;
        assert_eq!(next(&mut rx).await, "updated:cms://1/draft");
        drop(watch);
        tokio::time::timeout(Duration::from_secs(5), async {
            while census.count() > 0 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the follower ends with its session's watch");
        task.abort();
    }

    #[tokio::test]
    async fn events_become_updates_of_the_uris_they_touch_then_one_list_change() {
        let world = MemoryWorld::new();
        let cms = world.cms();
        let posts = cms.collections()[0].clone();
        let hello = create(&cms, 0, "hello", "published").await;
        let watch = Watch::new(Arc::default());
        watch
            .subscribe("cms://posts/hello", Watched::item(&posts, ItemRef::parse("hello").unwrap(), &hello))
            .unwrap();
        watch.subscribe("cms://posts", Watched::collection(&posts)).unwrap();
        let (tx, mut rx) = unbounded_channel();
        watch.follow(&cms, &principal(Role::Editor), tx).await;
        assert!(watch.is_following());

        write(&cms, 0, "hello", "Hello again").await;
        assert_eq!(next(&mut rx).await, "updated:cms://posts/hello");
        create(&cms, 0, "second", "draft").await;
        assert_eq!(next(&mut rx).await, "updated:cms://posts", "the collection's list changed");
        assert_eq!(next(&mut rx).await, "list_changed");
        create(&cms, 1, "about", "draft").await;
        assert_eq!(next(&mut rx).await, "list_changed", "another collection: only the list");

        let posts_item = ItemRef::parse("hello").unwrap();
        cms.delete_item(Caller::Operator, &posts, &posts_item, None).await.unwrap();
        assert_eq!(next(&mut rx).await, "updated:cms://posts/hello");
        assert_eq!(next(&mut rx).await, "updated:cms://posts");
        assert_eq!(next(&mut rx).await, "list_changed");

        let lost: Vec<String> = lock(&watch.subscriptions).everything().iter().map(name).collect();
        assert_eq!(
            lost,
            ["updated:cms://posts/hello", "updated:cms://posts", "list_changed"],
            "after lost events"
        );

        watch.unsubscribe("cms://posts").unwrap();
        watch.unsubscribe("cms://posts/hello").unwrap();
        assert!(!watch.is_following(), "nothing left to follow: the follower stops");
        assert!(lock(&watch.subscriptions).held.is_empty());
    }

    #[tokio::test]
    async fn a_new_process_follows_from_the_stored_newest_event_and_stops_when_the_log_closes() {
        let world = MemoryWorld::new();
        let before = world.cms();
        create(&before, 0, "old", "published").await;
        create(&before, 0, "older", "published").await;
        drop(before);

        // Another process over the same stores: its log has not read the store yet.
        let cms = world.cms();
        let posts = cms.collections()[0].clone();
        let census = Arc::new(Census::default());
        let watch = Watch::new(Arc::clone(&census));
        watch
            .subscribe("cms://posts/old", Watched::item(&posts, ItemRef::parse("old").unwrap(), "old.md"))
            .unwrap();
        let (tx, mut rx) = unbounded_channel();
        watch.follow(&cms, &principal(Role::Editor), tx).await;
        write(&cms, 0, "old", "Old, changed").await;
        assert_eq!(next(&mut rx).await, "updated:cms://posts/old", "the stored history is not news");
        assert!(rx.try_recv().is_err(), "and nothing else was sent");

        cms.event_log().close();
        tokio::time::timeout(Duration::from_secs(5), async {
            while census.count() > 0 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the follower ends when the log closes");
    }

    #[test]
    fn subscriptions_are_bounded_and_unsubscribing_names_what_is_held() {
        let world = MemoryWorld::new();
        let cms = world.cms();
        let posts = &cms.collections()[0];
        let watch = Watch::new(Arc::default());
        for n in 0..MAX_PER_SESSION {
            watch.subscribe(&format!("cms://posts/item-{n}"), Watched::collection(posts)).unwrap();
        }
        watch.subscribe("cms://posts/item-0", Watched::collection(posts)).unwrap();
        let refused = watch.subscribe("cms://posts/one-more", Watched::collection(posts)).unwrap_err();
        assert!(matches!(refused, SubscribeError::TooMany { limit: 100, .. }), "{refused}");
        assert!(
            refused.to_string().contains("already holds 100") && refused.to_string().contains("one-more")
        );

        let watch = Watch::new(Arc::default());
        watch.subscribe("cms://posts", Watched::collection(posts)).unwrap();
        let refused = watch.unsubscribe("cms://0").unwrap_err();
        assert_eq!(
            refused.to_string(),
            "this session is not subscribed to cms://0; its subscriptions are: cms://posts (an \
             unsubscription names the URI exactly as it was subscribed)"
        );
    }
}
