//! A model as a TypeScript type of the frontmatter (`cms schema export --format
//! typescript`), for front ends that read the API. Optional fields are `?:` and may be
//! `null`, as in the JSON Schema.

use std::fmt::Write;

use super::{ExtraFields, Field, Kind, Model};

impl Model {
    /// `export interface {name} { ... }` for this model's frontmatter.
    pub fn typescript(&self, name: &str) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "export interface {name} {{");
        write_fields(&mut out, &self.fields, 1);
        if self.extra_fields == ExtraFields::Allow {
            let _ = writeln!(out, "  [key: string]: unknown;");
        } else {
            let translated = crate::item_file::LANGUAGE_KEYS.into_iter().filter(|_| self.translated);
            for key in super::SERVER_READ_KEYS.into_iter().chain(translated) {
                if self.field(key).is_none() {
                    let _ = writeln!(out, "  {key}?: unknown;");
                }
            }
        }
        out.push_str("}\n");
        out
    }
}

/// A TypeScript type name from a collection's slug: `blog-posts` → `BlogPosts`.
pub fn type_name(slug: &str) -> String {
    let mut name: String = slug
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map(|first| first.to_ascii_uppercase().to_string() + chars.as_str())
                .unwrap_or_default()
        })
        .collect();
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert_str(0, "Collection");
    }
    name
}

fn write_fields(out: &mut String, fields: &[Field], depth: usize) {
    let indent = "  ".repeat(depth);
    for field in fields {
        if let Some(description) = &field.description {
            let _ = writeln!(out, "{indent}/** {} */", description.replace("*/", "* /"));
        }
        let key = property_key(&field.name);
        let optional = if field.required { "" } else { "?" };
        let null = if field.required { "" } else { " | null" };
        let _ = writeln!(out, "{indent}{key}{optional}: {}{null};", kind_type(&field.kind, depth));
    }
}

fn property_key(name: &str) -> String {
    let plain = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if plain { name.to_owned() } else { serde_json::to_string(name).unwrap_or_default() }
}

fn literal_union(options: &[String]) -> String {
    options.iter().map(|o| serde_json::to_string(o).unwrap_or_default()).collect::<Vec<_>>().join(" | ")
}

fn kind_type(kind: &Kind, depth: usize) -> String {
    match kind {
        Kind::Number(_) | Kind::Integer(_) => "number".into(),
        Kind::Boolean => "boolean".into(),
        Kind::Select(options) => literal_union(options),
        Kind::Multiselect { options, .. } => format!("Array<{}>", literal_union(options)),
        Kind::Tags(_) => "string[] | string".into(),
        Kind::List { of, .. } => format!("Array<{}>", kind_type(&of.kind, depth)),
        Kind::Object(fields) => {
            let mut out = String::from("{\n");
            write_fields(&mut out, fields, depth + 1);
            out.push_str(&"  ".repeat(depth + 1));
            out.push_str("[key: string]: unknown;\n");
            out.push_str(&"  ".repeat(depth));
            out.push('}');
            out
        }
        Kind::String(_)
        | Kind::Text(_)
        | Kind::Datetime
        | Kind::Date
        | Kind::Image
        | Kind::File
        | Kind::Reference { .. }
        | Kind::Url
        | Kind::Email => "string".into(),
    }
}
