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
    /// A content file; `folder` is the collection index.
    File { filename: String, folder: usize },
    /// A user account; `role` is present on `user.created`.
    User { email: String, role: Option<Role> },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub kind: EventKind,
    pub timestamp: OffsetDateTime,
    pub data: EventData,
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
