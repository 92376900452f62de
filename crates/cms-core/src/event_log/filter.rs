//! Which events a stream lets through: what its reader may see, narrowed by what it asked.

use super::LoggedEvent;
use crate::error::{CoreError, CoreResult};
use crate::events::EventKind;

/// The events of the log (item changes).
pub const ITEM_EVENTS: [EventKind; 5] = [
    EventKind::FileCreated,
    EventKind::FileUpdated,
    EventKind::FileDeleted,
    EventKind::ItemPublished,
    EventKind::ItemUnpublished,
];

/// A stream's filters (`?collection=`, `?event=`, `?slug=`) and its reader's sight.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventFilter {
    /// Only this collection's events (its index).
    pub collection: Option<usize>,
    /// Only these events (empty: every one).
    pub kinds: Vec<EventKind>,
    /// Only this item's events (its slug, in any collection unless `collection` is set).
    pub slug: Option<String>,
    /// Only events of items in this language (a code of `languages:`).
    pub lang: Option<String>,
    /// The reader may read drafts (a key whose role may): sees every event; otherwise
    /// only events of items that were or are live.
    pub sees_drafts: bool,
}

impl EventFilter {
    pub fn admits(&self, event: &LoggedEvent) -> bool {
        let Some(file) = event.file() else { return false };
        (self.sees_drafts || event.public)
            && self.collection.is_none_or(|collection| collection == file.folder)
            && (self.kinds.is_empty() || self.kinds.contains(&event.kind()))
            && self.slug.as_ref().is_none_or(|slug| file.slug.as_ref() == Some(slug))
            && self.lang.as_ref().is_none_or(|lang| file.lang.as_ref() == Some(lang))
    }

    /// The events a stream may ask for (`?event=`): a comma-separated list of item
    /// events (`file.*`, `item.*`).
    pub fn parse_kinds(text: &str) -> CoreResult<Vec<EventKind>> {
        let kinds = EventKind::parse_list(text)?;
        match kinds.iter().find(|kind| !kind.is_item_change()) {
            Some(kind) => Err(CoreError::invalid(format!(
                "{} is not an item event; streams carry {}",
                kind.as_str(),
                ITEM_EVENTS.map(EventKind::as_str).join(", ")
            ))),
            None => Ok(kinds),
        }
    }

    /// Whether every event this filter admits, `wider` admits too (a token's filters
    /// may be narrowed by a query, never widened).
    pub fn within(&self, wider: &Self) -> bool {
        (wider.sees_drafts || !self.sees_drafts)
            && (wider.collection.is_none() || wider.collection == self.collection)
            && (wider.kinds.is_empty()
                || (!self.kinds.is_empty() && self.kinds.iter().all(|kind| wider.kinds.contains(kind))))
            && (wider.slug.is_none() || wider.slug == self.slug)
            && (wider.lang.is_none() || wider.lang == self.lang)
    }
}

#[cfg(test)]
mod tests {
    use time::OffsetDateTime;

    use super::*;
    use crate::events::{Event, EventData, FileEvent};

    fn event(kind: EventKind, folder: usize, slug: &str, public: bool) -> std::sync::Arc<LoggedEvent> {
        let data = EventData::File(FileEvent {
            filename: format!("{slug}.md"),
            folder,
            lang: None,
            collection: Some("posts".into()),
            slug: Some(slug.into()),
        });
        LoggedEvent::new(1, Event { id: None, kind, timestamp: OffsetDateTime::UNIX_EPOCH, data }, public)
    }

    #[test]
    fn anonymous_readers_see_only_public_events_and_filters_narrow() {
        let anonymous = EventFilter::default();
        assert!(anonymous.admits(&event(EventKind::FileCreated, 0, "a", true)));
        assert!(!anonymous.admits(&event(EventKind::FileCreated, 0, "a", false)));
        let key = EventFilter { sees_drafts: true, ..EventFilter::default() };
        assert!(key.admits(&event(EventKind::FileDeleted, 0, "a", false)));
        let narrow = EventFilter {
            collection: Some(1),
            kinds: vec![EventKind::FileUpdated],
            slug: Some("b".into()),
            lang: None,
            sees_drafts: true,
        };
        assert!(narrow.admits(&event(EventKind::FileUpdated, 1, "b", false)));
        assert!(!narrow.admits(&event(EventKind::FileUpdated, 0, "b", false)));
        assert!(!narrow.admits(&event(EventKind::FileCreated, 1, "b", false)));
        assert!(!narrow.admits(&event(EventKind::FileUpdated, 1, "c", false)));
    }

    #[test]
    fn a_filter_is_within_another_only_when_it_admits_no_more() {
        let token =
            EventFilter { collection: Some(1), kinds: vec![EventKind::FileCreated], ..Default::default() };
        assert!(token.within(&token));
        let narrower = EventFilter { slug: Some("a".into()), ..token.clone() };
        assert!(narrower.within(&token));
        assert!(!EventFilter { collection: None, ..token.clone() }.within(&token));
        assert!(!EventFilter { kinds: vec![], ..token.clone() }.within(&token));
        assert!(!EventFilter { sees_drafts: true, ..token.clone() }.within(&token));
        assert!(!EventFilter { kinds: vec![EventKind::FileDeleted], ..token.clone() }.within(&token));
    }
}
