//! A tool call's arguments checked against the tool's input schema before they are
//! deserialized, so that a mistake is told in plain words that name the argument and what
//! it must be (`argument `per_page` must be a whole number of 1 or more, got "two"`), not
//! in serde's (`invalid type: string "two", expected u64`).
//!
//! It reads the few schema keywords the tools' argument types produce (`properties`,
//! `required`, `additionalProperties`, `type`, `minimum`); anything it does not know it
//! lets through to the deserializer, which still refuses what is wrong.

use rmcp::model::{JsonObject, Tool};
use serde_json::Value;

/// `Err` with the message when `arguments` do not fit `tool`'s input schema.
pub fn check(tool: &Tool, arguments: Option<&JsonObject>) -> Result<(), String> {
    let schema = &tool.input_schema;
    let empty = JsonObject::new();
    let properties = schema.get("properties").and_then(Value::as_object).unwrap_or(&empty);
    let arguments = arguments.unwrap_or(&empty);
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));

    for (name, value) in arguments {
        match properties.get(name) {
            Some(property) => {
                let expected = Expected::of(property);
                if !expected.admits(value) {
                    return Err(format!(
                        "argument `{name}` must be {}, got {}",
                        expected.words(),
                        shown(value)
                    ));
                }
            }
            None if closed => {
                let takes: Vec<&str> = properties.keys().map(String::as_str).collect();
                let takes = if takes.is_empty() { "no arguments".to_owned() } else { takes.join(", ") };
                return Err(format!("unknown argument `{name}`; {} takes {takes}", tool.name));
            }
            None => {}
        }
    }
    let required = schema.get("required").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    for name in required.iter().filter_map(Value::as_str) {
        if arguments.get(name).is_none_or(Value::is_null) {
            let words =
                properties.get(name).map(|p| Expected::of(p).words()).unwrap_or_else(|| "a value".into());
            return Err(format!("missing argument `{name}` ({words})"));
        }
    }
    Ok(())
}

/// What one argument's schema admits.
struct Expected {
    /// JSON Schema type names other than `null`; empty: anything.
    types: Vec<String>,
    nullable: bool,
    minimum: Option<f64>,
}

impl Expected {
    fn of(property: &Value) -> Self {
        let types: Vec<String> = match property.get("type") {
            Some(Value::String(one)) => vec![one.clone()],
            Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
            _ => Vec::new(),
        };
        let nullable = types.iter().any(|t| t == "null");
        let types = types.into_iter().filter(|t| t != "null").collect();
        Self { types, nullable, minimum: property.get("minimum").and_then(Value::as_f64) }
    }

    fn admits(&self, value: &Value) -> bool {
        if value.is_null() {
            return self.nullable || self.types.is_empty();
        }
        self.types.is_empty() || self.types.iter().any(|t| self.admits_as(t, value))
    }

    fn admits_as(&self, kind: &str, value: &Value) -> bool {
        let at_least = |n: f64| self.minimum.is_none_or(|min| n >= min);
        match kind {
            // Whole numbers as JSON writes them (2, not 2.0), within 64 bits.
            "integer" => match value {
                Value::Number(n) if n.is_u64() || n.is_i64() => n.as_f64().is_some_and(at_least),
                _ => false,
            },
            "number" => value.as_f64().is_some_and(at_least),
            "string" => value.is_string(),
            "boolean" => value.is_boolean(),
            "object" => value.is_object(),
            "array" => value.is_array(),
            _ => true,
        }
    }

    fn words(&self) -> String {
        let mut words: Vec<String> = self.types.iter().map(|t| self.word(t)).collect();
        if words.is_empty() {
            words.push("a value".into());
        }
        words.join(" or ")
    }

    fn word(&self, kind: &str) -> String {
        let from = |what: &str| match self.minimum {
            Some(min) => format!("{what} of {min} or more"),
            None => what.to_owned(),
        };
        match kind {
            "integer" => from("a whole number"),
            "number" => from("a number"),
            "string" => "a string".into(),
            "boolean" => "true or false".into(),
            "object" => "an object".into(),
            "array" => "a list".into(),
            other => format!("a {other}"),
        }
    }
}

/// A value as the message quotes it: its JSON, cut short.
fn shown(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(60) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    fn tool(schema: Value) -> Tool {
        let Value::Object(schema) = schema else { unreachable!() };
        Tool::new("list_items", "lists", Arc::new(schema))
    }

    fn args(value: Value) -> JsonObject {
        let Value::Object(map) = value else { unreachable!() };
        map
    }

    fn list_items() -> Tool {
        tool(json!({
            "type": "object",
            "properties": {
                "collection": {"type": "string"},
                "page": {"type": ["integer", "null"], "format": "uint64", "minimum": 1},
                "offset": {"type": ["integer", "null"], "format": "uint64", "minimum": 0},
                "version": {"type": "integer", "format": "int64"},
                "fm": {"type": ["object", "null"]},
                "date_prefix": {"type": ["boolean", "null"]}
            },
            "required": ["collection"],
            "additionalProperties": false
        }))
    }

    #[test]
    fn fitting_arguments_pass() {
        let fit = args(json!({"collection": "0", "page": 2, "offset": 0, "version": -5, "fm": {"a": 1},
                              "date_prefix": true}));
        assert_eq!(check(&list_items(), Some(&fit)), Ok(()));
        assert_eq!(check(&list_items(), Some(&args(json!({"collection": "0", "page": null})))), Ok(()));
    }

    #[test]
    fn a_wrong_value_names_the_argument_and_what_it_must_be() {
        let cases = [
            (
                json!({"collection": "0", "page": "two"}),
                r#"argument `page` must be a whole number of 1 or more, got "two""#,
            ),
            (
                json!({"collection": "0", "page": 0}),
                "argument `page` must be a whole number of 1 or more, got 0",
            ),
            (
                json!({"collection": "0", "page": 1.5}),
                "argument `page` must be a whole number of 1 or more, got 1.5",
            ),
            (
                json!({"collection": "0", "offset": -1}),
                "argument `offset` must be a whole number of 0 or more, got -1",
            ),
            (
                json!({"collection": "0", "version": "x"}),
                r#"argument `version` must be a whole number, got "x""#,
            ),
            (json!({"collection": 7}), "argument `collection` must be a string, got 7"),
            (json!({"collection": null}), "argument `collection` must be a string, got null"),
            (json!({"collection": "0", "fm": [1]}), "argument `fm` must be an object, got [1]"),
            (
                json!({"collection": "0", "date_prefix": "yes"}),
                r#"argument `date_prefix` must be true or false, got "yes""#,
            ),
        ];
        for (given, message) in cases {
            assert_eq!(check(&list_items(), Some(&args(given.clone()))), Err(message.to_owned()), "{given}");
        }
    }

    #[test]
    fn missing_and_unknown_arguments_are_named() {
        assert_eq!(check(&list_items(), None), Err("missing argument `collection` (a string)".to_owned()));
        let unknown =
            check(&list_items(), Some(&args(json!({"collection": "0", "colour": "red"})))).unwrap_err();
        assert_eq!(
            unknown,
            "unknown argument `colour`; list_items takes collection, page, offset, version, fm, date_prefix"
        );
        let long = check(&list_items(), Some(&args(json!({"collection": "0", "page": "x".repeat(100)}))))
            .unwrap_err();
        assert!(long.ends_with("...") && long.len() < 140, "{long}");
    }
}
