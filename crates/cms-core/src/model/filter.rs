//! Queries on a model's fields: `filter[FIELD]=VALUE` (equals; values separated by commas
//! mean any of them) and `filter[FIELD][OP]=VALUE`, `OP` one of `ne`, `gt`, `gte`, `lt`,
//! `lte`, `contains`, `exists`; and the values `orderBy=FIELD` sorts by. Values are
//! compared as their field's type: numbers as numbers, date-times as instants, dates and
//! texts as text.

use std::cmp::Ordering;

use serde_json::{Map, Value};

use super::{Field, Kind, Model};
use crate::dates::SiteZone;

/// One condition on a top-level field.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldFilter {
    pub field: String,
    pub op: FilterOp,
}

#[derive(Debug, Clone, PartialEq)]
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

/// A field's value as it is compared and sorted.
#[derive(Debug, Clone, PartialEq)]
pub enum Comparable {
    Number(f64),
    Bool(bool),
    /// Nanoseconds since the Unix epoch.
    Instant(i128),
    Text(String),
}

impl Comparable {
    /// Same kinds compare; `None` across kinds.
    pub fn compare(&self, other: &Self) -> Option<Ordering> {
        match (self, other) {
            (Self::Number(a), Self::Number(b)) => a.partial_cmp(b),
            (Self::Bool(a), Self::Bool(b)) => Some(a.cmp(b)),
            (Self::Instant(a), Self::Instant(b)) => Some(a.cmp(b)),
            (Self::Text(a), Self::Text(b)) => Some(a.cmp(b)),
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
        let field = self.field(field_name).ok_or_else(|| {
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
        Ok(FieldFilter { field: field.name.clone(), op })
    }

    /// An `orderBy` value naming a field: its name if it is a scalar field of the model.
    pub fn sort_field(&self, name: &str) -> Result<&Field, String> {
        match self.field(name) {
            Some(field) if is_scalar(field) => Ok(field),
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
    match fm.get(&field.name)? {
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

impl FieldFilter {
    /// Whether `fm` meets the condition (`model` is the one the filter was parsed with).
    pub fn matches(&self, model: &Model, fm: &Map<String, Value>) -> bool {
        let Some(field) = model.field(&self.field) else { return false };
        match &self.op {
            FilterOp::Exists(wanted) => {
                let set = match fm.get(&field.name) {
                    None | Some(Value::Null) => false,
                    Some(Value::String(s)) => !s.is_empty(),
                    Some(Value::Array(a)) => !a.is_empty(),
                    Some(_) => true,
                };
                set == *wanted
            }
            FilterOp::Contains(needle) => contains(field, fm.get(&field.name), needle),
            FilterOp::Eq(values) => equals_any(field, fm, values),
            FilterOp::Ne(values) => !equals_any(field, fm, values),
            FilterOp::Gt(bound) => ordered(field, fm, bound, |o| o == Ordering::Greater),
            FilterOp::Gte(bound) => ordered(field, fm, bound, |o| o != Ordering::Less),
            FilterOp::Lt(bound) => ordered(field, fm, bound, |o| o == Ordering::Less),
            FilterOp::Lte(bound) => ordered(field, fm, bound, |o| o != Ordering::Greater),
        }
    }
}

/// The elements of a list-like field (tags also as a comma-separated string).
fn elements(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|v| match v {
                Value::String(s) => Some(s.clone()),
                Value::Number(_) | Value::Bool(_) => Some(v.to_string()),
                _ => None,
            })
            .collect(),
        Some(Value::String(s)) => {
            s.split(',').map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()).collect()
        }
        _ => Vec::new(),
    }
}

fn equals_any(field: &Field, fm: &Map<String, Value>, values: &[Comparable]) -> bool {
    if is_scalar(field) {
        return value_of(field, fm)
            .is_some_and(|v| values.iter().any(|w| v.compare(w) == Some(Ordering::Equal)));
    }
    let have = elements(fm.get(&field.name));
    values.iter().any(|w| matches!(w, Comparable::Text(w) if have.contains(w)))
}

fn ordered(
    field: &Field,
    fm: &Map<String, Value>,
    bound: &Comparable,
    holds: impl Fn(Ordering) -> bool,
) -> bool {
    value_of(field, fm).and_then(|v| v.compare(bound)).is_some_and(holds)
}

fn contains(field: &Field, value: Option<&Value>, needle: &str) -> bool {
    if is_scalar(field) {
        return matches!(value, Some(Value::String(text)) if text.to_lowercase().contains(&needle.to_lowercase()));
    }
    elements(value).iter().any(|element| element == needle)
}
