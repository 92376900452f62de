//! Queries on a model's fields: `filter[FIELD]=VALUE` (equals; values separated by commas
//! mean any of them) and `filter[FIELD][OP]=VALUE`, `OP` one of `ne`, `gt`, `gte`, `lt`,
//! `lte`, `contains`, `exists`; and the values `orderBy=FIELD` sorts by. Values are
//! compared as their field's type: numbers as numbers, date-times as instants, dates and
//! texts as text.

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};

use serde_json::{Map, Value};

use super::kept::{KeptField, KeptFields, KeptValue, Scalar, Shared};
use super::{Field, Kind, Model};
use crate::dates::SiteZone;

/// One condition on a top-level field.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldFilter {
    pub field: String,
    /// The field's place in the model (and in the values the index keeps).
    pub at: usize,
    pub op: FilterOp,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FilterOp {
    /// Equal to any of these.
    Eq(Vec<Comparable>),
    /// Equal to none of these.
    Ne(Vec<Comparable>),
    Gt(Comparable),
    Gte(Comparable),
    Lt(Comparable),
    Lte(Comparable),
    /// A text holding this (case-insensitive), or a list with an element equal to it.
    Contains(String),
    /// Set (not absent, not null, not empty) or not.
    Exists(bool),
}

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

const OPS: &str = "ne, gt, gte, lt, lte, contains, exists";

/// Whether a field's values can be ordered (and so sorted by, and compared with `gt`...).
pub fn is_scalar(field: &Field) -> bool {
    !matches!(field.kind, Kind::Multiselect { .. } | Kind::Tags(_) | Kind::List { .. } | Kind::Object(_))
}

impl Model {
    /// A `filter[...]` parameter: `name` is what follows `filter` (`[price]`,
    /// `[price][gte]`), `value` as sent. The error names the parameter and the fix.
    pub fn parse_filter(&self, name: &str, value: &str) -> Result<FieldFilter, String> {
        let parameter = format!("filter{name}");
        let inner = name
            .strip_prefix('[')
            .and_then(|rest| rest.strip_suffix(']'))
            .ok_or_else(|| format!("{parameter}: write filter[FIELD]=VALUE or filter[FIELD][OP]=VALUE"))?;
        let (field_name, op) = match inner.split_once("][") {
            Some((field, op)) => (field, Some(op)),
            None => (inner, None),
        };
        let at = self.fields.iter().position(|f| f.name == field_name);
        let field = at.map(|at| &self.fields[at]).ok_or_else(|| {
            let names: Vec<&str> = self.fields.iter().map(|f| f.name.as_str()).collect();
            format!(
                "{parameter}: this collection has no field {field_name:?}; its fields are {}",
                names.join(", ")
            )
        })?;
        let one = |value: &str| comparable(field, value).map_err(|why| format!("{parameter}: {why}"));
        let ordered = |value: &str| {
            if is_scalar(field) {
                one(value)
            } else {
                Err(format!(
                    "{parameter}: {field_name} is a {} field, which has no order; use contains",
                    field.kind.field_type()
                ))
            }
        };
        let many = |value: &str| value.split(',').map(|v| one(v.trim())).collect::<Result<Vec<_>, _>>();
        let op = match op {
            None => FilterOp::Eq(many(value)?),
            Some("ne") => FilterOp::Ne(many(value)?),
            Some("gt") => FilterOp::Gt(ordered(value)?),
            Some("gte") => FilterOp::Gte(ordered(value)?),
            Some("lt") => FilterOp::Lt(ordered(value)?),
            Some("lte") => FilterOp::Lte(ordered(value)?),
            Some("contains") => FilterOp::Contains(value.to_owned()),
            Some("exists") => FilterOp::Exists(match value {
                "true" | "" => true,
                "false" => false,
                other => return Err(format!("{parameter}: exists takes true or false, got {other:?}")),
            }),
            Some(other) => {
                return Err(format!("{parameter}: unknown operator {other:?}; the operators are {OPS}"));
            }
        };
        Ok(FieldFilter { field: field.name.clone(), at: at.expect("found"), op })
    }

    /// An `orderBy` value naming a field: its place in the model if it is a scalar field.
    pub fn sort_field(&self, name: &str) -> Result<usize, String> {
        match self.field(name) {
            Some(field) if is_scalar(field) => {
                Ok(self.fields.iter().position(|f| f.name == name).expect("found"))
            }
            Some(field) => {
                Err(format!("orderBy: {name} is a {} field, which has no order", field.kind.field_type()))
            }
            None => {
                let names: Vec<&str> =
                    self.fields.iter().filter(|f| is_scalar(f)).map(|f| f.name.as_str()).collect();
                Err(format!(
                    "orderBy: this collection has no field {name:?}; the fields it can sort by are {}",
                    names.join(", ")
                ))
            }
        }
    }
}

/// What a frontmatter holds for `field`, as compared: `None` when absent, empty or not of
/// the field's type (a hand-edited file).
pub fn value_of(field: &Field, fm: &Map<String, Value>) -> Option<Comparable> {
    scalar_of(field, fm.get(&field.name)?)
}

pub(super) fn scalar_of(field: &Field, value: &Value) -> Option<Comparable> {
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
fn comparable(field: &Field, value: &str) -> Result<Comparable, String> {
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

impl Model {
    /// What the index keeps of `fm`, with the texts `shared` holds referred to.
    pub fn keep(&self, fm: &Map<String, Value>, shared: Shared<'_>) -> KeptFields {
        KeptFields::keep(&self.fields, fm, shared)
    }
}

impl FieldFilter {
    /// Whether `fm` meets the condition (`model` is the one the filter was parsed with).
    pub fn matches(&self, model: &Model, fm: &Map<String, Value>) -> bool {
        self.admits(model.keep(fm, Shared::NONE).get(self.at, Shared::NONE))
    }

    /// Whether an item whose kept field at the filter's place is `kept` meets the
    /// condition.
    pub fn admits(&self, kept: Option<KeptField<'_>>) -> bool {
        let Some(field) = kept else { return false };
        match &self.op {
            FilterOp::Exists(wanted) => field.set == *wanted,
            FilterOp::Contains(needle) => contains(field, needle),
            FilterOp::Eq(values) => equals_any(field.value, values),
            FilterOp::Ne(values) => !equals_any(field.value, values),
            FilterOp::Gt(bound) => ordered(field.value, bound, |o| o == Ordering::Greater),
            FilterOp::Gte(bound) => ordered(field.value, bound, |o| o != Ordering::Less),
            FilterOp::Lt(bound) => ordered(field.value, bound, |o| o == Ordering::Less),
            FilterOp::Lte(bound) => ordered(field.value, bound, |o| o != Ordering::Greater),
        }
    }
}

/// Ascending order of two kept values of one field: values of the field's type in their
/// order, then the ones without such a value.
pub fn compare_kept(a: KeptValue<'_>, b: KeptValue<'_>) -> Ordering {
    match (a, b) {
        (KeptValue::Scalar(a), KeptValue::Scalar(b)) => a.compare(b).unwrap_or(Ordering::Equal),
        (KeptValue::Scalar(_), _) => Ordering::Less,
        (_, KeptValue::Scalar(_)) => Ordering::Greater,
        _ => Ordering::Equal,
    }
}

fn equals_any(value: KeptValue<'_>, values: &[Comparable]) -> bool {
    match value {
        KeptValue::Scalar(v) => values.iter().any(|w| v.compare(w.scalar()) == Some(Ordering::Equal)),
        KeptValue::Elements(have) => {
            values.iter().any(|w| matches!(w, Comparable::Text(w) if have.iter().any(|h| h == w)))
        }
        KeptValue::None => false,
    }
}

fn ordered(value: KeptValue<'_>, bound: &Comparable, holds: impl Fn(Ordering) -> bool) -> bool {
    matches!(value, KeptValue::Scalar(v) if v.compare(bound.scalar()).is_some_and(holds))
}

fn contains(field: KeptField<'_>, needle: &str) -> bool {
    match field.value {
        KeptValue::Elements(have) => have.iter().any(|element| element == needle),
        // Text as written (a date-time's own text, not its instant).
        _ => field.written_text().is_some_and(|text| text.to_lowercase().contains(&needle.to_lowercase())),
    }
}
