//! The JSON Schema of `cms.yaml` against the checks and the reference page
//! (`docs/configuration.md`): the core runs these on its own schema, the binary on the
//! schema with every backend's settings (`storage.bucket`...) and its parser.

use serde_json::{Map, Value, json};

use crate::codec;

/// A parser of `cms.yaml`: `Err` with the message a refused file gets.
pub type Parse<'a> = &'a dyn Fn(&str) -> Result<(), String>;

/// One key of the schema: its path (`collections[].label`, `images.presets.<name>.w`),
/// its schema.
fn keys(schema: &Value) -> Vec<(String, Value)> {
    let defs = schema["$defs"].as_object().cloned().unwrap_or_default();
    let mut out = Vec::new();
    walk(schema, &defs, "", &mut out);
    out
}

fn resolve<'a>(node: &'a Value, defs: &'a Map<String, Value>) -> &'a Value {
    match node.get("$ref").and_then(Value::as_str) {
        Some(reference) => &defs[reference.trim_start_matches("#/$defs/")],
        None => node,
    }
}

fn walk(node: &Value, defs: &Map<String, Value>, prefix: &str, out: &mut Vec<(String, Value)>) {
    let node = resolve(node, defs);
    for variant in node.get("oneOf").and_then(Value::as_array).into_iter().flatten() {
        walk(variant, defs, prefix, out);
    }
    let Some(properties) = node.get("properties").and_then(Value::as_object) else { return };
    for (name, property) in properties {
        let path = if prefix.is_empty() { name.clone() } else { format!("{prefix}.{name}") };
        if out.iter().any(|(p, _)| *p == path) {
            continue;
        }
        out.push((path.clone(), property.clone()));
        let target = resolve(property, defs);
        if let Some(items) = target.get("items") {
            walk(items, defs, &format!("{path}[]"), out);
        }
        if let Some(values) = target.get("additionalProperties").filter(|v| v.is_object()) {
            walk(values, defs, &format!("{path}.<name>"), out);
        }
        walk(target, defs, &path, out);
    }
}

/// A `cms.yaml` with `path` set to `value` (a minimal site, a bucket for `storage.*`).
fn config_with(path: &str, value: Value) -> String {
    let mut root = json!({"site": {"name": "S", "url": "https://example.com"}});
    if path.starts_with("storage.") {
        root["storage"] = json!({"kind": "s3", "bucket": "b"});
    }
    let mut node = &mut root;
    let parts: Vec<&str> = path.split('.').collect();
    for part in &parts[..parts.len() - 1] {
        node = node.as_object_mut().unwrap().entry(*part).or_insert_with(|| json!({}));
    }
    node[parts[parts.len() - 1]] = value;
    codec::to_yaml(&root).unwrap()
}

/// Every range the schema states is the one the checks enforce: its ends are accepted
/// and the values just outside refused, naming the key. So an editor never flags a
/// value the server takes, nor misses one it refuses. Answers how many ranges it checked.
pub fn ranges_are_the_checks_ranges(schema: &Value, parse: Parse<'_>) -> usize {
    // Bounded by another key as well; the schema states their absolute bounds.
    let relative = [
        "site.per_page",
        "site.max_per_page",
        "signin.max_lock_secs",
        "mcp.max_sessions_per_key",
        "images.quality",
        "signin.lock_secs",
        "mcp.max_sessions",
        "events.max_streams",
        "events.max_streams_per_key",
        "events.max_streams_per_address",
    ];
    let mut checked = 0;
    for (path, schema) in keys(schema) {
        let (min, max) = (schema["minimum"].as_i64(), schema["maximum"].as_i64());
        if path.contains(['[', '<']) || (min.unwrap_or(0) == 0 && max.is_none()) {
            continue;
        }
        for end in [min, max].into_iter().flatten() {
            if !relative.contains(&path.as_str()) {
                let text = config_with(&path, json!(end));
                assert!(parse(&text).is_ok(), "{path}: {end} is in range\n{text}");
            }
        }
        let outside = [min.filter(|m| *m > 0).map(|m| m - 1), max.map(|m| m + 1)];
        for value in outside.into_iter().flatten() {
            let message = parse(&config_with(&path, json!(value))).unwrap_err();
            assert!(message.contains(&path), "{path} = {value}: {message}");
        }
        checked += 1;
    }
    checked
}

/// The schema is what the parser takes: the `expected` keys are there, with defaults,
/// and no other key is allowed at the top.
pub fn names_every_key_with_its_default(schema: &Value, expected: &[&str]) {
    let keys = keys(schema);
    for expected in expected {
        assert!(
            keys.iter().any(|(p, _)| p == expected),
            "{expected}: {:?}",
            keys.iter().map(|k| &k.0).collect::<Vec<_>>()
        );
    }
    let per_page = &keys.iter().find(|(p, _)| p == "site.per_page").unwrap().1;
    assert_eq!(per_page["default"], 10);
    assert_eq!(schema["additionalProperties"], false);
}

/// How the reference writes a default: `10`, `us-east-1`, `[]`, `false`.
fn written_default(value: &Value) -> String {
    match value {
        Value::String(s) if s.is_empty() => "\"\"".to_owned(),
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            format!("[{}]", items.iter().map(written_default).collect::<Vec<_>>().join(", "))
        }
        other => other.to_string(),
    }
}

/// `doc` (`docs/configuration.md`) has a row for every key of the schema, with the
/// schema's default; every key is in one of its examples; and every example is a
/// `cms.yaml` that parses.
pub fn reference_page_covers_every_key(schema: &Value, parse: Parse<'_>, doc: &str) {
    let examples: Vec<&str> =
        doc.split("```yaml\n").skip(1).map(|b| b.split("```").next().unwrap()).collect();
    assert!(examples.len() >= 2, "the page has its examples");
    for example in &examples {
        if let Err(error) = parse(example) {
            panic!("an example of docs/configuration.md is refused: {error}\n{example}");
        }
    }
    let mut missing = Vec::new();
    for (path, schema) in keys(schema) {
        let row = doc.lines().find(|l| l.starts_with(&format!("| `{path}` |")));
        let Some(row) = row else {
            missing.push(format!("no row for `{path}`"));
            continue;
        };
        let cells: Vec<&str> = row.split(" | ").collect();
        if let Some(default) = schema.get("default").filter(|d| !d.is_null()) {
            let written = format!("`{}`", written_default(default));
            if cells.get(1).map(|c| c.trim()) != Some(written.as_str()) {
                missing.push(format!("`{path}`: default should read {written}: {row}"));
            }
        }
        // Lists and maps are located at their first entry in the examples.
        let located = path.replace("[]", "[0]");
        let located = located.split(".<name>").next().unwrap();
        if !examples.iter().any(|e| codec::locate(e, located).is_some()) {
            missing.push(format!("`{path}` is in no example"));
        }
    }
    assert!(missing.is_empty(), "docs/configuration.md:\n{}", missing.join("\n"));
}
