//! A model as a JSON Schema (2020-12) of the frontmatter, for clients, agents and code
//! generators. An optional field may also be `null` (a hand-written `summary:` with
//! nothing after it); the server's own keys (`status`, `draft`, `publish_date`,
//! `unpublish_date`) are always allowed.

use serde_json::{Map, Value, json};

use super::{Bounds, Counts, ExtraFields, Field, Kind, Model, SERVER_READ_KEYS, TextRules};

/// What `datetime` accepts: a date, then optionally a time (and an offset).
const DATETIME_PATTERN: &str =
    r"^\d{4}-\d{2}-\d{2}([Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?( ?([Zz]|[+-]\d{2}:?\d{2}))?)?$";
const DATE_PATTERN: &str = r"^\d{4}-\d{2}-\d{2}$";

impl Model {
    /// The JSON Schema of a frontmatter of this model; `title` names the collection.
    pub fn json_schema(&self, title: &str) -> Value {
        let mut schema = object_schema(&self.fields, self.extra_fields, true);
        if self.translated && self.extra_fields == ExtraFields::Refuse {
            let described = [
                (crate::item_file::TRANSLATED_FROM, "read by the server (what a translation was made from)"),
                (crate::item_file::OWN_SLUG, "read by the server (the item's own slug in its language)"),
                (crate::item_file::TRANSLATION_KEY, "read by the server (links translations of other names)"),
            ];
            if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
                for (key, description) in described {
                    if !properties.contains_key(key) {
                        properties.insert(key.to_owned(), json!({ "description": description }));
                    }
                }
            }
        }
        let head = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": title,
        });
        if let (Value::Object(schema), Value::Object(head)) = (&mut schema, head) {
            let mut ordered = head;
            ordered.append(schema);
            return Value::Object(ordered);
        }
        schema
    }
}

fn object_schema(fields: &[Field], extra: ExtraFields, top: bool) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for field in fields {
        properties.insert(field.name.clone(), field_schema(field, !field.required));
        if field.required {
            required.push(Value::from(field.name.clone()));
        }
    }
    if top && extra == ExtraFields::Refuse {
        for key in SERVER_READ_KEYS {
            if !properties.contains_key(key) {
                properties.insert(
                    key.to_owned(),
                    json!({ "description": "read by the server (status and schedule)" }),
                );
            }
        }
    }
    let mut schema = json!({ "type": "object", "properties": properties });
    if !required.is_empty() {
        schema["required"] = Value::Array(required);
    }
    if top && extra == ExtraFields::Refuse {
        schema["additionalProperties"] = Value::Bool(false);
    }
    schema
}

/// The schema of one field; `nullable` for an optional one.
fn field_schema(field: &Field, nullable: bool) -> Value {
    let mut schema = kind_schema(&field.kind);
    if let Some(description) = &field.description {
        schema["description"] = Value::from(description.clone());
    }
    if let Some(default) = &field.default {
        schema["default"] = default.clone();
    }
    if field.hidden {
        schema["x-cms-hidden"] = Value::Bool(true);
    }
    if nullable {
        allow_null(&mut schema);
    }
    schema
}

/// `"type": "string"` becomes `["string", "null"]`; an `enum` gains `null`; a schema
/// without a single type (tags) becomes `anyOf` with `null`.
fn allow_null(schema: &mut Value) {
    if let Some(values) = schema.get_mut("enum").and_then(Value::as_array_mut) {
        values.push(Value::Null);
        return;
    }
    match schema.get("type").cloned() {
        Some(Value::String(kind)) => schema["type"] = json!([kind, "null"]),
        _ => {
            if let Some(any) = schema.get_mut("anyOf").and_then(Value::as_array_mut) {
                any.push(json!({ "type": "null" }));
            }
        }
    }
}

fn text_schema(rules: &TextRules) -> Value {
    let mut schema = json!({ "type": "string" });
    if let Some(min) = rules.min_length {
        schema["minLength"] = Value::from(min);
    }
    if let Some(max) = rules.max_length {
        schema["maxLength"] = Value::from(max);
    }
    if let Some(pattern) = &rules.pattern {
        schema["pattern"] = Value::from(format!("^(?:{})$", pattern.source));
    }
    schema
}

fn number_schema(kind: &str, bounds: &Bounds) -> Value {
    let mut schema = json!({ "type": kind });
    if let Some(min) = bounds.min {
        schema["minimum"] = json!(min);
    }
    if let Some(max) = bounds.max {
        schema["maximum"] = json!(max);
    }
    schema
}

fn counted(mut schema: Value, counts: &Counts) -> Value {
    if let Some(min) = counts.min {
        schema["minItems"] = Value::from(min);
    }
    if let Some(max) = counts.max {
        schema["maxItems"] = Value::from(max);
    }
    schema
}

fn kind_schema(kind: &Kind) -> Value {
    match kind {
        Kind::String(rules) => text_schema(rules),
        Kind::Text(rules) => {
            let mut schema = text_schema(rules);
            schema["x-cms-multiline"] = Value::Bool(true);
            schema
        }
        Kind::Number(bounds) => number_schema("number", bounds),
        Kind::Integer(bounds) => number_schema("integer", bounds),
        Kind::Boolean => json!({ "type": "boolean" }),
        Kind::Select(options) => json!({ "enum": options }),
        Kind::Multiselect { options, items } => {
            counted(json!({ "type": "array", "items": { "enum": options } }), items)
        }
        Kind::Tags(items) => json!({
            "anyOf": [
                counted(json!({ "type": "array", "items": { "type": "string", "minLength": 1 } }), items),
                { "type": "string", "description": "tags separated by commas" },
            ]
        }),
        Kind::Datetime => json!({ "type": "string", "pattern": DATETIME_PATTERN }),
        Kind::Date => json!({ "type": "string", "format": "date", "pattern": DATE_PATTERN }),
        Kind::Image => json!({ "type": "string", "pattern": "^/", "x-cms-media": "image" }),
        Kind::File => json!({ "type": "string", "pattern": "^/", "x-cms-media": "file" }),
        Kind::Reference { collection } => json!({
            "type": "string",
            "description": format!("the slug of an item of {collection}"),
            "x-cms-reference": collection,
        }),
        Kind::Url => json!({ "type": "string", "format": "uri", "pattern": "^https?://" }),
        Kind::Email => json!({ "type": "string", "format": "email" }),
        Kind::List { of, items } => {
            counted(json!({ "type": "array", "items": field_schema(of, false) }), items)
        }
        Kind::Object(fields) => object_schema(fields, ExtraFields::Allow, false),
    }
}
