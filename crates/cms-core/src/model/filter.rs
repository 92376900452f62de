//! Queries on a model's fields: `filter[FIELD]=VALUE` (equals; values separated by commas
//! mean any of them) and `filter[FIELD][OP]=VALUE`, `OP` one of `ne`, `gt`, `gte`, `lt`,
//! `lte`, `contains`, `exists`; and the values `orderBy=FIELD` sorts by. Values are
//! compared as their field's type: numbers as numbers, date-times as instants, dates and
//! texts as text.

use std::cmp::Ordering;
use std::hash::Hash;

use serde_json::{Map, Value};

use super::Model;
use super::compare::{Comparable, comparable, is_scalar};
use super::kept::{KeptField, KeptFields, KeptValue, Shared};

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

const OPS: &str = "ne, gt, gte, lt, lte, contains, exists";

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
