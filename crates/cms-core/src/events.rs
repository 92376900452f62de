//! Outbound events, as the spec's Events section names them.

use time::OffsetDateTime;

use crate::account::Role;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    FileCreated,
    FileUpdated,
    FileDeleted,
    UserCreated,
    UserUpdated,
    UserDeleted,
}

impl EventKind {
    pub const ALL: [Self; 6] = [
        Self::FileCreated,
        Self::FileUpdated,
        Self::FileDeleted,
        Self::UserCreated,
        Self::UserUpdated,
        Self::UserDeleted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::FileCreated => "file.created",
            Self::FileUpdated => "file.updated",
            Self::FileDeleted => "file.deleted",
            Self::UserCreated => "user.created",
            Self::UserUpdated => "user.updated",
            Self::UserDeleted => "user.deleted",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
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
