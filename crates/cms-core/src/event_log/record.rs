//! One event of the log: what the store keeps of it, and the frame a live stream sends.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;

use crate::changes::{Change, Known};
use crate::events::{Event, EventData, EventKind, FileEvent};

/// An event with its site-wide id, as streams and webhooks see it.
#[derive(Debug, Clone)]
pub struct LoggedEvent {
    /// The event, its `id` set.
    pub event: Event,
    /// Whether an anonymous reader may see it: the item was or is live (a draft's changes,
    /// a scheduled item before its instant, an expired item's edits are not).
    pub public: bool,
    /// The Server-Sent Events frame: `id:`, `event:`, `data:` (the webhook's body).
    pub frame: Bytes,
}

impl LoggedEvent {
    pub fn id(&self) -> u64 {
        self.event.id.unwrap_or_default()
    }

    pub fn kind(&self) -> EventKind {
        self.event.kind
    }

    /// The file's part of the event (every logged event is an item change).
    pub fn file(&self) -> Option<&FileEvent> {
        match &self.event.data {
            EventData::File(file) => Some(file),
            EventData::User { .. } => None,
        }
    }

    pub(super) fn new(id: u64, mut event: Event, public: bool) -> Arc<Self> {
        event.id = Some(id);
        let mut frame = format!("id: {id}\nevent: {}\ndata: ", event.kind.as_str()).into_bytes();
        frame.extend_from_slice(&event.body());
        frame.extend_from_slice(b"\n\n");
        Arc::new(Self { event, public, frame: Bytes::from(frame) })
    }

    /// Reads back a record written by [`Pending::record`]; `None` for one this version
    /// cannot read.
    pub(super) fn decode(id: u64, record: &str) -> Option<Arc<Self>> {
        let event = Event::from_body(record)?;
        if !matches!(event.data, EventData::File(_)) {
            return None;
        }
        let public = serde_json::from_str::<Value>(record).ok()?["public"].as_bool()?;
        Some(Self::new(id, event, public))
    }
}

/// An event made by this process, waiting for its id.
#[derive(Debug, Clone)]
pub(super) struct Pending {
    pub event: Event,
    pub public: bool,
}

impl Pending {
    /// The event of a change to an item of collection `collection` (its slug, its
    /// configured collection's index and its language).
    pub fn of_change(change: &Change, collection: &super::CollectionName) -> Self {
        let live = |known: &Option<Known>| known.as_ref().is_some_and(Known::live);
        let public = live(&change.before) || live(&change.after);
        // The slug anonymous readers know when only one side is live; else the newest.
        let item = [&change.after, &change.before].into_iter().find_map(|known| known.as_ref()?.item());
        let live_item = [&change.after, &change.before]
            .into_iter()
            .filter(|known| live(known))
            .find_map(|known| known.as_ref()?.item());
        let slug = live_item.or(item).map(|item| item.meta.slug.to_string());
        let event = Event {
            id: None,
            kind: change.kind.event(),
            timestamp: change.at,
            data: EventData::File(FileEvent {
                filename: change.filename.to_string(),
                folder: collection.folder,
                collection: Some(collection.slug.clone()),
                slug,
                lang: collection.lang.clone(),
            }),
        };
        Self { event, public }
    }

    /// What the store keeps: the body without the id (the store numbers it), and whether
    /// it is public.
    pub fn record(&self) -> String {
        let mut value: Value = serde_json::from_slice(&self.event.body()).expect("the body is JSON");
        if let Value::Object(map) = &mut value {
            map.insert("public".into(), self.public.into());
        }
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use time::OffsetDateTime;

    use super::*;

    #[test]
    fn a_record_reads_back_with_its_id_and_frames_as_server_sent_events() {
        let pending = Pending {
            event: Event {
                id: None,
                kind: EventKind::FileUpdated,
                timestamp: OffsetDateTime::from_unix_timestamp(1_767_225_600).unwrap(),
                data: EventData::File(FileEvent {
                    filename: "2026-01-01-hello.md".into(),
                    folder: 1,
                    lang: None,
                    collection: Some("posts".into()),
                    slug: Some("hello".into()),
                }),
            },
            public: true,
        };
        let record = pending.record();
        assert!(!record.contains("\"id\""), "{record}");
        let event = LoggedEvent::decode(7, &record).unwrap();
        assert_eq!(event.id(), 7);
        assert!(event.public);
        assert_eq!(
            std::str::from_utf8(&event.frame).unwrap(),
            "id: 7\nevent: file.updated\ndata: {\"id\":7,\"event\":\"file.updated\",\"timestamp\":\
             \"2026-01-01T00:00:00Z\",\"data\":{\"filename\":\"2026-01-01-hello.md\",\"folder\":1,\
             \"collection\":\"posts\",\"slug\":\"hello\"}}\n\n"
        );
        assert!(LoggedEvent::decode(1, "not json").is_none());
        assert!(LoggedEvent::decode(1, r#"{"event":"user.created"}"#).is_none());
    }
}
