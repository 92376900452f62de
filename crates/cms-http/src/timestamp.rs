//! The `timestamp` of every answer, errors included (a leaf: no other module of the crate).

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The current time as ISO 8601 (RFC 3339, UTC).
pub fn timestamp_now() -> String {
    OffsetDateTime::now_utc().format(&Rfc3339).unwrap_or_default()
}
