//! Outbound events, as the spec's Events section names them.

use time::OffsetDateTime;

use crate::account::Role;
use crate::error::{CoreError, CoreResult};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    FileCreated,
    FileUpdated,
    FileDeleted,
    UserCreated,
    UserUpdated,
    UserDeleted,
    /// A scheduled item's window opened (`publish_date` passed): it went live by itself.
    ItemPublished,
    /// A scheduled item's window closed (`unpublish_date` passed): it came down by itself.
    ItemUnpublished,
    /// `cms webhooks test`: sent to one subscription on request, never selected.
    Ping,
}

impl EventKind {
    pub const ALL: [Self; 8] = [
        Self::FileCreated,
        Self::FileUpdated,
        Self::FileDeleted,
        Self::UserCreated,
        Self::UserUpdated,
        Self::UserDeleted,
        Self::ItemPublished,
        Self::ItemUnpublished,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::FileCreated => "file.created",
            Self::FileUpdated => "file.updated",
            Self::FileDeleted => "file.deleted",
            Self::UserCreated => "user.created",
            Self::UserUpdated => "user.updated",
            Self::UserDeleted => "user.deleted",
            Self::ItemPublished => "item.published",
            Self::ItemUnpublished => "item.unpublished",
            Self::Ping => "ping",
        }
    }

    /// Whether it is the event of an item change (`file.*`, `item.*`), which the event log
    /// keeps and streams carry.
    pub fn is_item_change(self) -> bool {
        matches!(
            self,
            Self::FileCreated
                | Self::FileUpdated
                | Self::FileDeleted
                | Self::ItemPublished
                | Self::ItemUnpublished
        )
    }

    /// A selectable event's name (see [`Self::ALL`]).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// Any event's name, `ping` included (as the delivery log names them).
    pub fn parse_logged(name: &str) -> Option<Self> {
        Self::parse(name).or((name == "ping").then_some(Self::Ping))
    }

    /// Parses a comma-separated selection such as `file.created, user.deleted`: surrounding
    /// spaces are ignored, duplicates are kept once, and the result is in [`Self::ALL`]
    /// order. An unknown name or an empty selection is `Invalid`, naming the valid events.
    pub fn parse_list(text: &str) -> CoreResult<Vec<Self>> {
        let mut selected = Vec::new();
        for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match Self::parse(name) {
                Some(kind) => selected.push(kind),
                None => {
                    return Err(CoreError::invalid(format!(
                        "unknown event {name:?}; the events are {}",
                        Self::names()
                    )));
                }
            }
        }
        if selected.is_empty() {
            return Err(CoreError::invalid(format!("select at least one event of {}", Self::names())));
        }
        Ok(Self::ALL.into_iter().filter(|k| selected.contains(k)).collect())
    }

    /// Every event name, comma-separated (for messages).
    pub fn names() -> String {
        Self::ALL.map(Self::as_str).join(", ")
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventData {
    /// A content file.
    File(FileEvent),
    /// A user account; `role` is present on `user.created`.
    User { email: String, role: Option<Role> },
}

/// What a content file's event says about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEvent {
    pub filename: String,
    /// The collection's index (the spec's `folder`).
    pub folder: usize,
    /// The collection's slug (`None` in events recorded before it was sent).
    pub collection: Option<String>,
    /// The item's slug, when the file is (or was) a usable item.
    pub slug: Option<String>,
    /// The item's language, on a site with `languages:` (a code of it).
    pub lang: Option<String>,
}

impl FileEvent {
    /// The spec's two fields alone.
    pub fn new(filename: impl Into<String>, folder: usize) -> Self {
        Self { filename: filename.into(), folder, collection: None, slug: None, lang: None }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The site's event id (`crate::event_log`): the same in the webhook's body and on the
    /// live stream, so that a receiver of both can tell one event from two. `None` for
    /// events that are not item changes (`user.*`, `ping`).
    pub id: Option<u64>,
    pub kind: EventKind,
    pub timestamp: OffsetDateTime,
    pub data: EventData,
}

impl Event {
    /// The JSON body of the event, as webhooks send it and the live stream's `data:`
    /// carries it (one line):
    ///
    /// ```json
    /// {"id": 12, "event": "file.created", "timestamp": "2026-01-01T00:00:00Z",
    ///  "data": {"filename": "2026-01-01-hello.md", "folder": 0, "collection": "posts",
    ///           "slug": "hello"}}
    /// ```
    ///
    /// User events carry `data.email`, and `data.role` on `user.created`. Fields that are
    /// not known (`id`, `collection`, `slug`) are left out.
    pub fn body(&self) -> Vec<u8> {
        use serde_json::{Map, Value};
        let mut data = Map::new();
        match &self.data {
            EventData::File(file) => {
                data.insert("filename".into(), file.filename.clone().into());
                data.insert("folder".into(), file.folder.into());
                if let Some(collection) = &file.collection {
                    data.insert("collection".into(), collection.clone().into());
                }
                if let Some(slug) = &file.slug {
                    data.insert("slug".into(), slug.clone().into());
                }
                if let Some(lang) = &file.lang {
                    data.insert("lang".into(), lang.clone().into());
                }
            }
            EventData::User { email, role } => {
                data.insert("email".into(), email.clone().into());
                if let Some(role) = role {
                    data.insert("role".into(), role.as_str().into());
                }
            }
        }
        let timestamp = self
            .timestamp
            .to_offset(time::UtcOffset::UTC)
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        let mut payload = Map::new();
        if let Some(id) = self.id {
            payload.insert("id".into(), id.into());
        }
        payload.insert("event".into(), self.kind.as_str().into());
        payload.insert("timestamp".into(), timestamp.into());
        payload.insert("data".into(), Value::Object(data));
        serde_json::to_vec(&Value::Object(payload)).expect("a JSON value always serializes")
    }

    /// An event back from its [`Self::body`] (the webhook outbox and the event log keep
    /// them so); `None` for a body this version cannot read.
    pub fn from_body(body: &str) -> Option<Self> {
        use time::format_description::well_known::Rfc3339;
        let value: serde_json::Value = serde_json::from_str(body).ok()?;
        let kind = EventKind::parse_logged(value["event"].as_str()?)?;
        let timestamp = OffsetDateTime::parse(value["timestamp"].as_str()?, &Rfc3339).ok()?;
        let data = &value["data"];
        let text = |field: &str| data[field].as_str().map(str::to_owned);
        let data = match text("filename") {
            Some(filename) => EventData::File(FileEvent {
                filename,
                folder: usize::try_from(data["folder"].as_u64()?).ok()?,
                collection: text("collection"),
                slug: text("slug"),
                lang: text("lang"),
            }),
            None => EventData::User {
                email: text("email")?,
                role: data.get("role").and_then(|r| r.as_str()?.parse().ok()),
            },
        };
        Some(Self { id: value["id"].as_u64(), kind, timestamp, data })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_lists_parse_in_a_fixed_order_and_refuse_unknown_names() {
        assert_eq!(
            EventKind::parse_list(" user.deleted,file.created ,user.deleted").unwrap(),
            [EventKind::FileCreated, EventKind::UserDeleted]
        );
        for name in EventKind::ALL {
            assert_eq!(EventKind::parse(name.as_str()), Some(name));
        }
        let unknown = EventKind::parse_list("file.created,file.renamed").unwrap_err().to_string();
        assert!(unknown.contains("\"file.renamed\"") && unknown.contains("user.updated"), "{unknown}");
        assert!(EventKind::parse_list(" , ").is_err());
        assert!(EventKind::parse_list("File.Created").is_err(), "names are exact");
    }
}
