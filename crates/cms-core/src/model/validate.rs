//! Checking a frontmatter against a model: every failing field at once, each named by
//! its path (`fm.price`, `fm.links[2]`, `fm.seo.title`) with what it must be.

use serde_json::{Map, Value};

use super::{Bounds, Counts, ExtraFields, Field, Kind, Model, SERVER_READ_KEYS, TextRules};
use crate::codec::json_type_name;
use crate::dates::SiteZone;
pub use crate::error::FieldError;
use crate::slug::{Slug, is_calendar_date};

/// Something a frontmatter refers to that must exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The field's path, as in [`FieldError::field`].
    pub field: String,
    pub target: LinkTarget,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkTarget {
    /// An item of a collection, by slug.
    Item { collection: String, slug: String },
    /// A file in a resource folder, by its URL path; `image` when it must be an image.
    Media { path: String, image: bool },
}

impl Model {
    /// Every field of `fm` that breaks the model (none when it is valid).
    pub fn validate(&self, fm: &Map<String, Value>) -> Vec<FieldError> {
        let mut errors = Vec::new();
        check_fields(&self.fields, self.extra_fields, fm, "fm", true, &mut errors);
        if self.translated {
            // The server's own keys on a site with languages, whatever the model says.
            errors.retain(|error| {
                let key = error.field.strip_prefix("fm.").unwrap_or(&error.field);
                !crate::item_file::LANGUAGE_KEYS.contains(&key) || self.field(key).is_some()
            });
        }
        errors
    }

    /// Gives the fields a new item does not set their defaults.
    pub fn apply_defaults(&self, fm: &mut Map<String, Value>) {
        apply_defaults(&self.fields, fm);
    }

    /// The items and media `fm` refers to (through reference, image and file fields),
    /// for the caller to check that each exists.
    pub fn links(&self, fm: &Map<String, Value>) -> Vec<Link> {
        let mut links = Vec::new();
        for field in &self.fields {
            if let Some(value) = fm.get(&field.name) {
                collect_links(field, value, &format!("fm.{}", field.name), &mut links);
            }
        }
        links
    }
}

fn apply_defaults(fields: &[Field], fm: &mut Map<String, Value>) {
    for field in fields {
        match (fm.get_mut(&field.name), &field.default, &field.kind) {
            (None | Some(Value::Null), Some(default), _) => {
                fm.insert(field.name.clone(), default.clone());
            }
            (Some(Value::Object(inner)), None, Kind::Object(fields)) => apply_defaults(fields, inner),
            _ => {}
        }
    }
}

/// A value that counts as not given: absent, null, an empty string or list.
fn is_empty(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.trim().is_empty(),
        Some(Value::Array(items)) => items.is_empty(),
        Some(_) => false,
    }
}

fn check_fields(
    fields: &[Field],
    extra: ExtraFields,
    map: &Map<String, Value>,
    path: &str,
    top: bool,
    errors: &mut Vec<FieldError>,
) {
    for field in fields {
        let value = map.get(&field.name);
        let field_path = format!("{path}.{}", field.name);
        if is_empty(value) {
            // An optional field left empty (`summary:`, `""`, `[]`) is as good as absent.
            if field.required {
                errors.push(FieldError { field: field_path, message: "is required".into() });
            }
            continue;
        }
        if let Some(value) = value {
            check_value(field, value, &field_path, errors);
        }
    }
    if extra == ExtraFields::Refuse {
        for key in map.keys() {
            let known =
                fields.iter().any(|f| f.name == *key) || (top && SERVER_READ_KEYS.contains(&key.as_str()));
            if !known {
                let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
                errors.push(FieldError {
                    field: format!("{path}.{key}"),
                    message: format!("is not a field of this collection (its fields: {})", names.join(", ")),
                });
            }
        }
    }
}

/// Checks one present value of `field`, adding what is wrong to `errors`.
pub(super) fn check_value(field: &Field, value: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let mut fail = |message: String| errors.push(FieldError { field: path.to_owned(), message });
    let got = || json_type_name(value);
    match &field.kind {
        Kind::String(rules) | Kind::Text(rules) => match value {
            Value::String(text) => {
                if matches!(field.kind, Kind::String(_)) && text.contains('\n') {
                    fail("must be one line (use a text field for several)".into());
                } else if let Some(message) = text_problem(rules, text) {
                    fail(message);
                }
            }
            _ => fail(format!("must be a string, got {}", got())),
        },
        Kind::Number(bounds) => match value.as_f64() {
            Some(number) if value.is_number() => {
                if let Some(message) = bounds_problem(bounds, number, "a number") {
                    fail(message);
                }
            }
            _ => fail(format!("{}, got {}", bounds_phrase(bounds, "a number"), got())),
        },
        Kind::Integer(bounds) => match value {
            Value::Number(n) if n.is_i64() || n.is_u64() => {
                if let Some(message) = bounds_problem(bounds, n.as_f64().unwrap_or(0.0), "a whole number") {
                    fail(message);
                }
            }
            Value::Number(n) => fail(format!("{}, got {n}", bounds_phrase(bounds, "a whole number"))),
            _ => fail(format!("{}, got {}", bounds_phrase(bounds, "a whole number"), got())),
        },
        Kind::Boolean => {
            if !value.is_boolean() {
                fail(format!("must be true or false, got {}", got()));
            }
        }
        Kind::Select(options) => match value {
            Value::String(choice) if options.contains(choice) => {}
            Value::String(choice) => fail(format!("must be one of {}; got {choice:?}", options.join(", "))),
            _ => fail(format!("must be one of {}; got {}", options.join(", "), got())),
        },
        Kind::Multiselect { options, items } => match value {
            Value::Array(chosen) => {
                if let Some(message) = counts_problem(items, chosen.len()) {
                    fail(message);
                }
                for (i, choice) in chosen.iter().enumerate() {
                    if !choice.as_str().is_some_and(|c| options.contains(&c.to_owned())) {
                        errors.push(FieldError {
                            field: format!("{path}[{i}]"),
                            message: format!("must be one of {}; got {choice}", options.join(", ")),
                        });
                    }
                }
            }
            _ => fail(format!("must be a list of some of {}, got {}", options.join(", "), got())),
        },
        Kind::Tags(items) => {
            let tags: Option<Vec<&str>> = match value {
                Value::String(text) => {
                    Some(text.split(',').map(str::trim).filter(|t| !t.is_empty()).collect())
                }
                Value::Array(tags) => tags.iter().map(Value::as_str).collect(),
                _ => None,
            };
            match tags {
                Some(tags) => {
                    if let Some(message) = counts_problem(items, tags.len()) {
                        fail(message);
                    } else if tags.iter().any(|t| t.trim().is_empty()) {
                        fail("must not hold an empty tag".into());
                    }
                }
                None => fail(format!("must be a list of tags (strings), got {}", got())),
            }
        }
        Kind::Datetime => match value {
            Value::String(text) if SiteZone::utc().parse_exact(text).is_some() => {}
            _ => fail(format!(
                "must be a date and time like 2026-01-12T09:30:00+01:00 or 2026-01-12 09:30:00 +0100, got {}",
                shown(value)
            )),
        },
        Kind::Date => match value {
            Value::String(text) if is_calendar_date(text) => {}
            _ => fail(format!("must be a date like 2026-01-12, got {}", shown(value))),
        },
        Kind::Image | Kind::File => match value {
            Value::String(path) if media_path_ok(path) => {}
            _ => fail(format!(
                "must be the URL path of a file in a resource folder, like /media/uploads/cover.jpg, got {}",
                shown(value)
            )),
        },
        Kind::Reference { collection } => match value {
            Value::String(slug) if Slug::parse(slug).is_ok() => {}
            _ => fail(format!("must be the slug of an item of {collection}, got {}", shown(value))),
        },
        Kind::Url => match value {
            Value::String(url) if url_ok(url) => {}
            _ => fail(format!("must be an absolute http(s) URL, got {}", shown(value))),
        },
        Kind::Email => match value {
            Value::String(email) if email_ok(email) => {}
            _ => fail(format!("must be an email address, got {}", shown(value))),
        },
        Kind::List { of, items } => match value {
            Value::Array(elements) => {
                if let Some(message) = counts_problem(items, elements.len()) {
                    fail(message);
                }
                for (i, element) in elements.iter().enumerate() {
                    check_value(of, element, &format!("{path}[{i}]"), errors);
                }
            }
            _ => fail(format!("must be a list, got {}", got())),
        },
        Kind::Object(fields) => match value {
            // Keys an object's model does not name are kept: `extra_fields` is the
            // collection's top level only.
            Value::Object(map) => check_fields(fields, ExtraFields::Allow, map, path, false, errors),
            _ => fail(format!("must be a map of {}, got {}", names(fields), got())),
        },
    }
}

fn names(fields: &[Field]) -> String {
    fields.iter().map(|f| f.name.as_str()).collect::<Vec<_>>().join(", ")
}

/// A value in a message: a string quoted (cut at 60 characters), else its type.
fn shown(value: &Value) -> String {
    match value {
        Value::String(text) if text.chars().count() > 60 => {
            format!("{:?}…", text.chars().take(60).collect::<String>())
        }
        Value::String(text) => format!("{text:?}"),
        other => json_type_name(other).to_owned(),
    }
}

fn text_problem(rules: &TextRules, text: &str) -> Option<String> {
    let length = text.chars().count() as u64;
    if let Some(max) = rules.max_length
        && length > max
    {
        return Some(format!("must be at most {max} characters (it has {length})"));
    }
    if let Some(min) = rules.min_length
        && length < min
    {
        return Some(format!("must be at least {min} characters (it has {length})"));
    }
    match &rules.pattern {
        Some(pattern) if !pattern.matches(text) => Some(format!("must match the pattern {}", pattern.source)),
        _ => None,
    }
}

/// "must be a number ≥ 0", "must be a whole number from 1 to 5", "must be a number".
fn bounds_phrase(bounds: &Bounds, noun: &str) -> String {
    match (bounds.min, bounds.max) {
        (Some(min), Some(max)) => format!("must be {noun} from {min} to {max}"),
        (Some(min), None) => format!("must be {noun} ≥ {min}"),
        (None, Some(max)) => format!("must be {noun} ≤ {max}"),
        (None, None) => format!("must be {noun}"),
    }
}

fn bounds_problem(bounds: &Bounds, number: f64, noun: &str) -> Option<String> {
    let below = bounds.min.is_some_and(|min| number < min);
    let above = bounds.max.is_some_and(|max| number > max);
    (below || above).then(|| format!("{}, got {number}", bounds_phrase(bounds, noun)))
}

fn counts_problem(counts: &Counts, count: usize) -> Option<String> {
    let count = count as u64;
    if let Some(max) = counts.max
        && count > max
    {
        return Some(format!("must have at most {max} element{} (it has {count})", plural(max)));
    }
    if let Some(min) = counts.min
        && count < min
    {
        return Some(format!("must have at least {min} element{} (it has {count})", plural(min)));
    }
    None
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// A site path of a file: starts with `/`, no `..`, `.`, empty segment, backslash or
/// control character.
fn media_path_ok(path: &str) -> bool {
    path.strip_prefix('/').is_some_and(|rest| {
        !rest.is_empty()
            && !path.contains(['\\', '?', '#'])
            && !path.chars().any(char::is_control)
            && rest.split('/').all(|segment| !matches!(segment, "" | "." | ".."))
    })
}

fn url_ok(url: &str) -> bool {
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"));
    rest.is_some_and(|rest| {
        let host = rest.split(['/', '?', '#']).next().unwrap_or("");
        !host.is_empty() && !url.chars().any(|c| c.is_whitespace() || c.is_control())
    })
}

fn email_ok(email: &str) -> bool {
    match email.split_once('@') {
        Some((local, domain)) => {
            !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
                && !email.chars().any(|c| c.is_whitespace() || c.is_control())
                && !domain.contains('@')
        }
        None => false,
    }
}

fn collect_links(field: &Field, value: &Value, path: &str, links: &mut Vec<Link>) {
    match (&field.kind, value) {
        (Kind::Reference { collection }, Value::String(slug)) if Slug::parse(slug).is_ok() => {
            links.push(Link {
                field: path.to_owned(),
                target: LinkTarget::Item { collection: collection.clone(), slug: slug.clone() },
            })
        }
        (Kind::Image | Kind::File, Value::String(media)) if media_path_ok(media) => links.push(Link {
            field: path.to_owned(),
            target: LinkTarget::Media { path: media.clone(), image: matches!(field.kind, Kind::Image) },
        }),
        (Kind::List { of, .. }, Value::Array(elements)) => {
            for (i, element) in elements.iter().enumerate() {
                collect_links(of, element, &format!("{path}[{i}]"), links);
            }
        }
        (Kind::Object(fields), Value::Object(map)) => {
            for inner in fields {
                if let Some(value) = map.get(&inner.name) {
                    collect_links(inner, value, &format!("{path}.{}", inner.name), links);
                }
            }
        }
        _ => {}
    }
}
