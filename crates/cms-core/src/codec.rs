//! The one place YAML is read and written. Everything YAML in the workspace goes through
//! here, so the parser's budgets (size, nesting, aliases) are set once.
//!
//! serde-saphyr is used rather than serde_yaml: the latter is archived and lets a quadratic
//! alias pattern through (one anchor of N values referenced M times).

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::{CoreError, CoreResult};

/// Bounds on frontmatter and state files. Alias replay is capped low enough that the
/// quadratic pattern (N = M = 8000) fails fast instead of expanding 64 M nodes.
#[derive(Debug, Clone, Copy)]
pub struct YamlLimits {
    pub max_bytes: usize,
    pub max_depth: usize,
    pub max_aliases: usize,
    pub max_replayed_events: usize,
    pub max_nodes: usize,
}

impl YamlLimits {
    /// Limits for item frontmatter.
    pub const FRONTMATTER: Self = Self {
        max_bytes: 256 * 1024,
        max_depth: 32,
        max_aliases: 64,
        max_replayed_events: 10_000,
        max_nodes: 50_000,
    };

    /// Limits for the server's own state and configuration files.
    pub const STATE: Self = Self {
        max_bytes: 8 * 1024 * 1024,
        max_depth: 32,
        max_aliases: 64,
        max_replayed_events: 10_000,
        max_nodes: 1_000_000,
    };
}

/// Why a YAML document was refused.
#[derive(Debug, thiserror::Error)]
pub enum YamlError {
    #[error("YAML is {size} bytes, over the limit of {limit} bytes")]
    TooLarge { size: usize, limit: usize },
    #[error("{0}")]
    Syntax(String),
}

fn options(limits: YamlLimits) -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_depth = limits.max_depth;
    budget.max_aliases = limits.max_aliases;
    budget.max_nodes = limits.max_nodes;
    budget.max_documents = 1;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options.alias_limits.max_total_replayed_events = limits.max_replayed_events;
    options.duplicate_keys = serde_saphyr::options::DuplicateKeyPolicy::Error;
    options
}

/// Parses one YAML document into `T` within `limits`.
pub fn from_yaml<T: DeserializeOwned>(text: &str, limits: YamlLimits) -> Result<T, YamlError> {
    if text.len() > limits.max_bytes {
        return Err(YamlError::TooLarge { size: text.len(), limit: limits.max_bytes });
    }
    serde_saphyr::from_str_with_options(text, options(limits)).map_err(|e| YamlError::Syntax(first_line(&e)))
}

/// serde-saphyr's messages add a source snippet on later lines; the first line already
/// names the line, column and problem, and one line reads well in JSON errors and logs.
fn first_line(error: &impl std::fmt::Display) -> String {
    let text = error.to_string();
    let line = text.lines().next().unwrap_or_default();
    line.strip_prefix("error: ").unwrap_or(line).to_owned()
}

/// Parses a YAML mapping (frontmatter). An empty document is an empty map.
pub fn mapping_from_yaml(text: &str, limits: YamlLimits) -> Result<Map<String, Value>, YamlError> {
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match from_yaml::<Value>(text, limits)? {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        other => Err(YamlError::Syntax(format!(
            "frontmatter must be a mapping of keys to values, found {}",
            json_type_name(&other)
        ))),
    }
}

/// Writes `value` as YAML. Key order is kept as given.
pub fn to_yaml<T: Serialize>(value: &T) -> CoreResult<String> {
    serde_saphyr::to_string(value).map_err(|e| CoreError::internal("cannot write YAML", e))
}

/// A short name of a JSON type, for error messages.
pub fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Nesting depth of a JSON value (a scalar is 0).
pub fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_key_order_and_round_trips_tricky_strings() {
        let yaml = "zeta: 1\nalpha: \"yes\"\nmid: \"null\"\nnum: \"0123\"\ndate: 2024-01-15\n";
        let map = mapping_from_yaml(yaml, YamlLimits::FRONTMATTER).unwrap();
        let keys: Vec<_> = map.keys().cloned().collect();
        assert_eq!(keys, ["zeta", "alpha", "mid", "num", "date"]);
        assert_eq!(map["alpha"], Value::from("yes"));
        assert_eq!(map["date"], Value::from("2024-01-15"));
        let written = to_yaml(&map).unwrap();
        let again = mapping_from_yaml(&written, YamlLimits::FRONTMATTER).unwrap();
        assert_eq!(again, map);
    }

    #[test]
    fn refuses_classic_alias_bomb() {
        let bomb = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n\
                    c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n\
                    e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n\
                    g: [*f, *f, *f, *f, *f, *f, *f, *f, *f]\n";
        assert!(mapping_from_yaml(bomb, YamlLimits::FRONTMATTER).is_err());
    }

    #[test]
    fn refuses_quadratic_alias_pattern_quickly() {
        let yaml = quadratic_alias_yaml(8000, 8000);
        assert!(matches!(
            mapping_from_yaml(&yaml, YamlLimits::FRONTMATTER),
            Err(YamlError::TooLarge { .. } | YamlError::Syntax(_))
        ));
        // Under the byte limit the alias budget is what stops it.
        let small = quadratic_alias_yaml(2000, 2000);
        assert!(small.len() < YamlLimits::STATE.max_bytes);
        assert!(mapping_from_yaml(&small, YamlLimits::STATE).is_err());
    }

    /// One anchor holding `n` values, referenced `m` times.
    pub(crate) fn quadratic_alias_yaml(n: usize, m: usize) -> String {
        let values = vec!["1"; n].join(",");
        let refs = vec!["*a"; m].join(",");
        format!("anchor: &a [{values}]\nrefs: [{refs}]\n")
    }

    #[test]
    fn errors_are_one_line() {
        let message =
            mapping_from_yaml("title: [unclosed\n", YamlLimits::FRONTMATTER).unwrap_err().to_string();
        assert_eq!(message.lines().count(), 1, "{message}");
        assert!(message.starts_with("line 1 column 8"), "{message}");
    }

    #[test]
    fn refuses_deep_nesting_and_non_mappings() {
        let deep = format!("a: {}1{}\n", "[".repeat(100), "]".repeat(100));
        assert!(mapping_from_yaml(&deep, YamlLimits::FRONTMATTER).is_err());
        assert!(mapping_from_yaml("- a\n- b\n", YamlLimits::FRONTMATTER).is_err());
        assert!(mapping_from_yaml("a: [\n", YamlLimits::FRONTMATTER).is_err());
    }

    #[test]
    fn empty_document_is_empty_map() {
        assert!(mapping_from_yaml("", YamlLimits::FRONTMATTER).unwrap().is_empty());
        assert!(mapping_from_yaml("\n# only a comment\n", YamlLimits::FRONTMATTER).unwrap().is_empty());
    }
}
