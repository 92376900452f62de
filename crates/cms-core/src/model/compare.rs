//! Values as the content model compares them: a query's ([`Comparable`]) and a kept
//! one's ([`Scalar`]), and how a frontmatter value or a query's text is read as its
//! field's type. A leaf: the filters (`filter.rs`) and the engine's kept fields
//! (`engine/kept.rs`) both build on it.

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};

use serde_json::{Map, Value};

use super::{Field, Kind};
use crate::dates::SiteZone;

/// A value of a query, as it is compared with kept values.
#[derive(Debug, Clone, PartialEq)]
pub enum Comparable {
    Number(f64),
    Bool(bool),
    /// Nanoseconds since the Unix epoch.
    Instant(i128),
    Text(String),
}

// Numbers are finite (a query's are checked, a file's come from YAML), so comparing bits
// is an equivalence; queries are hashed to name a list page's version.
impl Eq for Comparable {}

impl Hash for Comparable {
    fn hash<H: Hasher>(&self, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Self::Number(n) => n.to_bits().hash(state),
            Self::Bool(b) => b.hash(state),
            Self::Instant(at) => at.hash(state),
            Self::Text(text) => text.hash(state),
        }
    }
}

impl Comparable {
    /// The value as kept values are (borrowed), to compare with them.
    pub fn scalar(&self) -> Scalar<'_> {
        match self {
            Self::Number(n) => Scalar::Number(*n),
            Self::Bool(b) => Scalar::Bool(*b),
            Self::Instant(at) => Scalar::Instant(*at),
            Self::Text(text) => Scalar::Text(text),
        }
    }
}

impl Scalar<'_> {
    /// Same kinds compare; `None` across kinds.
    pub fn compare(self, other: Scalar<'_>) -> Option<Ordering> {
        match (self, other) {
            (Self::Number(a), Scalar::Number(b)) => a.partial_cmp(&b),
            (Self::Bool(a), Scalar::Bool(b)) => Some(a.cmp(&b)),
            (Self::Instant(a), Scalar::Instant(b)) => Some(a.cmp(&b)),
            (Self::Text(a), Scalar::Text(b)) => Some(a.cmp(b)),
            _ => None,
        }
    }
}

/// A field's scalar value, borrowed from where it is kept.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar<'a> {
    Number(f64),
    Bool(bool),
    /// Nanoseconds since the Unix epoch.
    Instant(i128),
    Text(&'a str),
}

/// Whether a field's values can be ordered (and so sorted by, and compared with `gt`...).
pub fn is_scalar(field: &Field) -> bool {
    !matches!(field.kind, Kind::Multiselect { .. } | Kind::Tags(_) | Kind::List { .. } | Kind::Object(_))
}

/// What a frontmatter holds for `field`, as compared: `None` when absent, empty or not of
/// the field's type (a hand-edited file).
pub fn value_of(field: &Field, fm: &Map<String, Value>) -> Option<Comparable> {
    scalar_of(field, fm.get(&field.name)?)
}

pub(crate) fn scalar_of(field: &Field, value: &Value) -> Option<Comparable> {
    match value {
        Value::Null => None,
        Value::Bool(b) => matches!(field.kind, Kind::Boolean).then_some(Comparable::Bool(*b)),
        Value::Number(n) => matches!(field.kind, Kind::Number(_) | Kind::Integer(_))
            .then(|| n.as_f64().map(Comparable::Number))
            .flatten(),
        Value::String(text) if text.is_empty() => None,
        Value::String(text) => comparable(field, text).ok(),
        _ => None,
    }
}

/// A value as sent in a query, read as `field`'s type.
pub(super) fn comparable(field: &Field, value: &str) -> Result<Comparable, String> {
    match &field.kind {
        Kind::Number(_) | Kind::Integer(_) => value
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite())
            .map(Comparable::Number)
            .ok_or_else(|| format!("{value:?} is not a number")),
        Kind::Boolean => match value {
            "true" => Ok(Comparable::Bool(true)),
            "false" => Ok(Comparable::Bool(false)),
            other => Err(format!("{other:?} is not true or false")),
        },
        Kind::Datetime => SiteZone::utc()
            .parse_exact(value)
            .map(|at| Comparable::Instant(at.unix_timestamp_nanos()))
            .ok_or_else(|| format!("{value:?} is not a date and time (2026-01-12T09:30:00+01:00)")),
        _ => Ok(Comparable::Text(value.to_owned())),
    }
}
