//! The one place YAML is read and written. Everything YAML in the workspace goes through
//! here, so the parser's budgets (size, nesting, aliases) are set once.
//!
//! serde-saphyr is used rather than serde_yaml: the latter is archived and lets a quadratic
//! alias pattern through (one anchor of N values referenced M times).

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::{CoreError, CoreResult};

mod flat_mapping;

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

/// Parses one YAML document into `T` within `limits`. An error names the line and column,
/// the key path (`site.per_page`, `collections[0].path`) and what was expected, in plain
/// words.
pub fn from_yaml<T: DeserializeOwned>(text: &str, limits: YamlLimits) -> Result<T, YamlError> {
    if text.len() > limits.max_bytes {
        return Err(YamlError::TooLarge { size: text.len(), limit: limits.max_bytes });
    }
    serde_saphyr::from_str_with_options(text, options(limits))
        .map_err(|error| YamlError::Syntax(explain::<T>(text, limits, &error)))
}

/// The message of a refused document. The document is read again with its key path
/// tracked: errors are rare, so the common parse pays nothing for the path.
fn explain<T: DeserializeOwned>(text: &str, limits: YamlLimits, first: &serde_saphyr::Error) -> String {
    let mut path = None;
    let again = serde_saphyr::with_deserializer_from_str_with_options(text, options(limits), |de| {
        serde_path_to_error::deserialize::<_, T>(de).map(drop).map_err(|e| {
            path = Some(e.path().to_string());
            e.into_inner()
        })
    });
    let error = again.as_ref().err().unwrap_or(first);
    // The tracker names a key it has not matched yet `?`.
    let path = path
        .map(|p| p.strip_prefix("?.").unwrap_or(&p).replace(".?.", "."))
        .filter(|p| p != "." && p != "?" && !p.is_empty());
    explain_error(text, error.without_snippet(), path.as_deref())
}

/// `line L column C: key.path: what was wrong`, one line.
fn explain_error(text: &str, error: &serde_saphyr::Error, path: Option<&str>) -> String {
    use serde_saphyr::Error as E;
    let location = error.location().map(|l| (l.line(), l.column())).filter(|&(line, _)| line > 0);
    let found = || location.and_then(|(line, column)| scalar_at(text, line, column));
    let found_words = || found().map(|f| format!(", found {f:?}")).unwrap_or_default();
    let mut at = location;
    let mut path = path.map(str::to_owned);
    let what = match error {
        E::InvalidScalar { ty, .. } => format!("expected {}{}", plain_scalar_type(ty), found_words()),
        E::InvalidBooleanStrict { .. } => format!("expected true or false{}", found_words()),
        E::NullIntoString { .. } => "expected a text value, found nothing".to_owned(),
        E::SerdeInvalidType { unexpected, expected, .. }
        | E::SerdeInvalidValue { unexpected, expected, .. } => {
            format!("expected {}, found {unexpected}", plain_expected(expected))
        }
        E::Unexpected { expected, .. } => {
            let found = found().map_or_else(String::new, |f| format!(", found {f:?}"));
            format!("expected {}{found}", plain_expected(expected))
        }
        E::SerdeUnknownVariant { variant, expected, .. } => {
            format!("{variant:?} is not one of: {}", expected.join(", "))
        }
        E::SerdeUnknownField { field, expected, .. } => {
            // The path ends at the unknown key itself; name where it was found.
            path = path
                .filter(|p| p != field)
                .map(|p| p.strip_suffix(&format!(".{field}")).unwrap_or(&p).to_owned());
            if expected.is_empty() {
                format!("unknown key `{field}`: this mapping takes no keys")
            } else {
                format!("unknown key `{field}`; the keys here are: {}", expected.join(", "))
            }
        }
        // A type's own check (`Error::custom`): its message, without the place said twice.
        E::Message { msg, .. } => {
            let msg = path.as_deref().and_then(|p| msg.strip_prefix(&format!("{p}: "))).unwrap_or(msg);
            let msg = msg.rsplit_once(" at line ").map_or(msg, |(m, _)| m);
            msg.to_owned()
        }
        E::SerdeMissingField { field, .. } => format!("the key `{field}` is missing (it is required)"),
        E::DuplicateMappingKey { key, .. } => {
            let key = key.clone().unwrap_or_else(|| "a key".to_owned());
            // The path tracker names the key it has not matched yet `?`.
            let full = match path.take().map(|p| p.strip_suffix(".?").unwrap_or(&p).to_owned()) {
                Some(p) if !p.ends_with(&key) => format!("{p}.{key}"),
                Some(p) => p,
                None => key,
            };
            format!("{full} is given twice; each key may appear once in a mapping, so remove one")
        }
        _ => {
            let plain = first_line(error);
            let plain = match location {
                Some((line, column)) => {
                    plain.strip_prefix(&format!("line {line} column {column}: ")).unwrap_or(&plain).to_owned()
                }
                None => plain,
            };
            // A parser gives up where the text stops making sense, often a line after
            // the bracket that was never closed.
            match location.and_then(|(line, _)| unclosed_bracket(text, line)) {
                Some((line, column, bracket)) => {
                    at = Some((line, column));
                    let (what, end) = if bracket == '[' { ("list", ']') } else { ("mapping", '}') };
                    format!(
                        "the `{bracket}` opened here is never closed (a {what} written in brackets ends with `{end}`)"
                    )
                }
                None => plain,
            }
        }
    };
    let path = path.map(|p| format!("{p}: ")).unwrap_or_default();
    match at {
        Some((line, column)) => format!("line {line} column {column}: {path}{what}"),
        None => format!("{path}{what}"),
    }
}

/// Where the value at `path` (`site.per_page`, `collections[0].path`, as the messages of
/// a configuration's checks name it) is written in `text`: 1-based line and column of its
/// key, for a value that parsed but was refused. `None` when the path is not in the text
/// (a default) or the text does not parse.
pub fn locate(text: &str, path: &str) -> Option<(u64, u64)> {
    let root: Located = serde_saphyr::from_str_with_options(text, options(YamlLimits::STATE)).ok()?;
    let mut node = &root;
    let mut at = None;
    for segment in path_segments(path)? {
        match (segment, &node.shape) {
            (Segment::Key(name), Shape::Map(entries)) => {
                let (key_at, value) =
                    entries.iter().find(|(key, _, _)| key == name).map(|(_, at, v)| (at, v))?;
                at = Some(*key_at);
                node = value;
            }
            (Segment::Index(index), Shape::Seq(items)) => {
                node = items.get(index)?;
                at = Some(node.at);
            }
            _ => return None,
        }
    }
    at
}

enum Segment<'a> {
    Key(&'a str),
    Index(usize),
}

/// `a.b[2].c` as keys and indexes; `None` when it is not such a path.
fn path_segments(path: &str) -> Option<Vec<Segment<'_>>> {
    let mut segments = Vec::new();
    for part in path.split('.') {
        let (key, mut rest) = part.split_once('[').map_or((part, ""), |(k, r)| (k, r));
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return None;
        }
        segments.push(Segment::Key(key));
        while !rest.is_empty() {
            let (index, after) = rest.split_once(']')?;
            segments.push(Segment::Index(index.parse().ok()?));
            rest = after.strip_prefix('[').unwrap_or(after);
            if !after.is_empty() && !after.starts_with('[') {
                return None;
            }
        }
    }
    Some(segments)
}

/// A YAML node with where it starts, for [`locate`].
struct Located {
    at: (u64, u64),
    shape: Shape,
}

enum Shape {
    /// Keys (scalars as text) with where each key is written.
    Map(Vec<(String, (u64, u64), Located)>),
    Seq(Vec<Located>),
    Scalar,
}

impl<'de> serde::Deserialize<'de> for Located {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let spanned = serde_saphyr::Spanned::<Shape>::deserialize(deserializer)?;
        let at = (spanned.referenced.line(), spanned.referenced.column());
        Ok(Self { at, shape: spanned.value })
    }
}

impl<'de> serde::Deserialize<'de> for Shape {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ShapeVisitor)
    }
}

struct ShapeVisitor;

impl<'de> serde::de::Visitor<'de> for ShapeVisitor {
    type Value = Shape;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any YAML node")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Shape, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<serde_saphyr::Spanned<Value>>()? {
            let name = match key.value {
                Value::String(s) => s,
                other => other.to_string(),
            };
            let value: Located = map.next_value()?;
            entries.push((name, (key.referenced.line(), key.referenced.column()), value));
        }
        Ok(Shape::Map(entries))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Shape, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Located>()? {
            items.push(item);
        }
        Ok(Shape::Seq(items))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Shape, E> {
        Ok(Shape::Scalar)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Shape, E> {
        Ok(Shape::Scalar)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Shape, E> {
        Ok(Shape::Scalar)
    }
    fn visit_i128<E>(self, _: i128) -> Result<Shape, E> {
        Ok(Shape::Scalar)
    }
    fn visit_u128<E>(self, _: u128) -> Result<Shape, E> {
        Ok(Shape::Scalar)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Shape, E> {
        Ok(Shape::Scalar)
    }
    fn visit_str<E>(self, _: &str) -> Result<Shape, E> {
        Ok(Shape::Scalar)
    }
    fn visit_unit<E>(self) -> Result<Shape, E> {
        Ok(Shape::Scalar)
    }
    fn visit_none<E>(self) -> Result<Shape, E> {
        Ok(Shape::Scalar)
    }
}

/// A parser's name of a scalar type, for people.
fn plain_scalar_type(ty: &str) -> String {
    match ty {
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => {
            let max = match ty {
                "u8" => u64::from(u8::MAX),
                "u16" => u64::from(u16::MAX),
                "u32" => u64::from(u32::MAX),
                _ => u64::MAX,
            };
            format!("a whole number from 0 to {max}")
        }
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "a whole number".to_owned(),
        "f32" | "f64" => "a number".to_owned(),
        "bool" | "boolean" => "true or false".to_owned(),
        "char" => "a single character".to_owned(),
        other => format!("a value of type {other}"),
    }
}

/// serde's and the parser's "expected ..." phrases, in the words of a YAML file.
fn plain_expected(expected: &str) -> String {
    match expected {
        "mapping start" | "a map" | "map" => "a mapping of keys to values".to_owned(),
        "sequence start" | "a sequence" | "sequence" => "a list".to_owned(),
        "a string" | "string scalar" => "a text value".to_owned(),
        "a boolean" => "true or false".to_owned(),
        other if other.starts_with("struct ") => "a mapping of keys to values".to_owned(),
        other
            if other.starts_with("u8")
                || other.starts_with("u16")
                || other.starts_with("u32")
                || other.starts_with("u64")
                || other.starts_with("usize") =>
        {
            plain_scalar_type(other.split_whitespace().next().unwrap_or(other))
        }
        other => other.to_owned(),
    }
}

/// The scalar written at `line`/`column` (1-based), as the file has it: up to the end of
/// the line, a comment, or the end of a bracketed item.
fn scalar_at(text: &str, line: u64, column: u64) -> Option<String> {
    let row = text.lines().nth(usize::try_from(line).ok()?.checked_sub(1)?)?;
    let start = row.char_indices().nth(usize::try_from(column).ok()?.checked_sub(1)?).map(|(i, _)| i)?;
    let rest = &row[start..];
    let rest = rest.split(" #").next().unwrap_or(rest);
    let end = rest.find([',', ']', '}']).unwrap_or(rest.len());
    let value = rest[..end].trim();
    if value.is_empty() || value.starts_with(['[', '{']) {
        return None;
    }
    Some(value.chars().take(60).collect())
}

/// The innermost `[` or `{` of a bracketed (flow) collection that is still open at the
/// end of `upto_line`, when it was opened on an earlier line: (line, column, bracket),
/// 1-based. Quoted text and comments are skipped; in block context a bracket counts only
/// where a value starts (`key: [`, `- [`), since a plain value may contain one.
fn unclosed_bracket(text: &str, upto_line: u64) -> Option<(u64, u64, char)> {
    let mut open: Vec<(u64, u64, char)> = Vec::new();
    for (number, row) in (1u64..).zip(text.lines()) {
        if number > upto_line {
            break;
        }
        let chars: Vec<char> = row.chars().collect();
        let mut i = 0;
        if open.is_empty() {
            match block_value_start(&chars) {
                Some(start) => i = start,
                None => continue,
            }
        }
        let mut quote: Option<char> = None;
        while i < chars.len() {
            let c = chars[i];
            match quote {
                Some('"') if c == '\\' => i += 1,
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None => match c {
                    '"' | '\'' => quote = Some(c),
                    '#' if i == 0 || chars[i - 1].is_whitespace() => break,
                    '[' | '{' => open.push((number, i as u64 + 1, c)),
                    ']' | '}' => {
                        open.pop();
                        if open.is_empty() {
                            break;
                        }
                    }
                    _ => {}
                },
            }
            i += 1;
        }
    }
    open.last().copied().filter(|&(line, _, _)| line < upto_line)
}

/// Where a bracketed value starts on a block-context line (`key: [`, `- {`), if one does.
fn block_value_start(chars: &[char]) -> Option<usize> {
    let mut i = chars.iter().position(|c| !c.is_whitespace())?;
    while chars.get(i) == Some(&'-') && chars.get(i + 1).is_some_and(|c| c.is_whitespace()) {
        i += 1;
        while chars.get(i).is_some_and(|c| c.is_whitespace()) {
            i += 1;
        }
    }
    if matches!(chars.get(i), Some('[' | '{')) {
        return Some(i);
    }
    // After the first `: ` outside quotes.
    let mut quote = None;
    while i < chars.len() {
        let c = chars[i];
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            // A comment (a `#` that starts the line, or follows a space).
            None if c == '#' && (i == 0 || chars[i - 1].is_whitespace()) => return None,
            None if c == ':' && chars.get(i + 1).is_none_or(|n| n.is_whitespace()) => {
                let mut j = i + 1;
                while chars.get(j).is_some_and(|c| c.is_whitespace()) {
                    j += 1;
                }
                return matches!(chars.get(j), Some('[' | '{')).then_some(j);
            }
            None => {}
        }
        i += 1;
    }
    None
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
    if text.len() <= limits.max_bytes
        && let Some(map) = flat_mapping::parse(text)
    {
        return Ok(map);
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
    fn an_error_after_a_comment_in_the_first_column_is_explained() {
        // The explanation looks for an unclosed bracket line by line: a line that starts
        // with `#` once made it index before the line's start and panic.
        let text = "a: 1\n# a comment\nb: [1, 2\nc: x: y\n";
        let message = mapping_from_yaml(text, YamlLimits::FRONTMATTER).unwrap_err().to_string();
        assert_eq!(message.lines().count(), 1, "{message}");
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
