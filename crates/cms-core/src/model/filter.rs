//! Queries on a model's fields: `filter[FIELD]=VALUE` (equals; values separated by commas
//! mean any of them) and `filter[FIELD][OP]=VALUE`, `OP` one of `ne`, `gt`, `gte`, `lt`,
//! `lte`, `contains`, `exists`; and the values `orderBy=FIELD` sorts by. Values are
//! compared as their field's type: numbers as numbers, date-times as instants, dates and
//! texts as text.

use std::hash::Hash;

use super::Model;
use super::compare::{Comparable, comparable, is_scalar};

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
