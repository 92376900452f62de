//! The site theme: defaults, and validation of each field a client may set.

use serde_json::{Map, Value};

use crate::codec::json_type_name;
use crate::error::{CoreError, CoreResult};

/// The theme fields, in the order clients see them.
pub const FIELDS: [&str; 9] = [
    "preset",
    "accent_color",
    "font_heading",
    "font_body",
    "custom_palette",
    "surface_color",
    "site_name",
    "logo",
    "logo_dark",
];

/// Lengths are in characters, as JSON Schema's `maxLength` counts them.
const MAX_TEXT: usize = 200;
const MAX_PATH: usize = 512;
const MAX_PALETTE: usize = 32;

/// The theme of a new site: a sensible value for every field.
pub fn defaults(site_name: &str) -> Map<String, Value> {
    let mut theme = Map::new();
    theme.insert("preset".into(), "default".into());
    theme.insert("accent_color".into(), "#2563eb".into());
    theme.insert("font_heading".into(), "system-ui".into());
    theme.insert("font_body".into(), "system-ui".into());
    theme.insert("custom_palette".into(), Value::Null);
    theme.insert("surface_color".into(), Value::Null);
    theme.insert("site_name".into(), site_name.into());
    theme.insert("logo".into(), "/logo.svg".into());
    theme.insert("logo_dark".into(), "/logo-dark.svg".into());
    theme
}

/// A theme as stored, laid over the defaults: every field present, in [`FIELDS`] order,
/// stray keys dropped.
pub fn complete(stored: Option<Map<String, Value>>, site_name: &str) -> Map<String, Value> {
    let mut theme = defaults(site_name);
    if let Some(stored) = stored {
        for (key, value) in stored {
            if let Some(slot) = theme.get_mut(&key) {
                *slot = value;
            }
        }
    }
    theme
}

/// Checks every field of a `PUT` body: unknown fields and invalid values are refused
/// with a message naming the field.
pub fn validate(patch: &Map<String, Value>) -> CoreResult<()> {
    for (field, value) in patch {
        let wrong =
            |wanted: &str| CoreError::invalid(format!("{field} must be {wanted}, got {}", describe(value)));
        match field.as_str() {
            "accent_color" => {
                if !value.as_str().is_some_and(is_color) {
                    return Err(wrong("a color like #rgb or #rrggbb"));
                }
            }
            "surface_color" => {
                if !(value.is_null() || value.as_str().is_some_and(is_color)) {
                    return Err(wrong("null or a color like #rgb or #rrggbb"));
                }
            }
            "custom_palette" => validate_palette(value)?,
            "preset" | "font_heading" | "font_body" | "site_name" => {
                let ok = value.as_str().is_some_and(|s| {
                    !s.trim().is_empty() && s.chars().count() <= MAX_TEXT && !s.contains(char::is_control)
                });
                if !ok {
                    return Err(wrong(&format!("a non-empty string of at most {MAX_TEXT} characters")));
                }
            }
            "logo" | "logo_dark" => {
                if !value.as_str().is_some_and(is_url_path) {
                    return Err(wrong("a URL path such as /media/uploads/logo.svg"));
                }
            }
            _ => {
                return Err(CoreError::invalid(format!(
                    "unknown theme field {field:?}; the fields are {}",
                    FIELDS.join(", ")
                )));
            }
        }
    }
    Ok(())
}

fn validate_palette(value: &Value) -> CoreResult<()> {
    let map = match value {
        Value::Null => return Ok(()),
        Value::Object(map) => map,
        other => {
            return Err(CoreError::invalid(format!(
                "custom_palette must be null or an object of color names to colors, got {}",
                describe(other)
            )));
        }
    };
    if map.len() > MAX_PALETTE {
        return Err(CoreError::invalid(format!("custom_palette has more than {MAX_PALETTE} colors")));
    }
    for (name, color) in map {
        if name.is_empty() || name.chars().count() > 64 || !color.as_str().is_some_and(is_color) {
            return Err(CoreError::invalid(format!(
                "custom_palette.{name} must be a color like #rgb or #rrggbb, got {}",
                describe(color)
            )));
        }
    }
    Ok(())
}

fn describe(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        other => json_type_name(other).to_owned(),
    }
}

/// `#rgb` or `#rrggbb`.
pub fn is_color(text: &str) -> bool {
    text.strip_prefix('#')
        .is_some_and(|hex| matches!(hex.len(), 3 | 6) && hex.chars().all(|c| c.is_ascii_hexdigit()))
}

/// A site-relative URL path: starts with one `/`, no `..`, no backslash, whitespace or
/// control characters, no scheme.
fn is_url_path(text: &str) -> bool {
    text.starts_with('/')
        && !text.starts_with("//")
        && text.chars().count() <= MAX_PATH
        && !text.split('/').any(|s| s == "..")
        && !text.contains(|c: char| c == '\\' || c.is_whitespace() || c.is_control())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(value: Value) -> CoreResult<()> {
        validate(value.as_object().unwrap())
    }

    #[test]
    fn colors() {
        for good in ["#fff", "#A1b2C3"] {
            assert!(is_color(good), "{good}");
        }
        for bad in ["fff", "#ffff", "#ggg", "red", "#1234567", ""] {
            assert!(!is_color(bad), "{bad}");
        }
    }

    #[test]
    fn each_field_is_validated_and_named() {
        let cases = [
            (json!({"accent_color": "blue"}), "accent_color must be"),
            (json!({"accent_color": null}), "accent_color must be"),
            (json!({"surface_color": "#12"}), "surface_color must be"),
            (json!({"custom_palette": ["#fff"]}), "custom_palette must be"),
            (json!({"custom_palette": {"brand": "pink"}}), "custom_palette.brand"),
            (json!({"preset": ""}), "preset must be"),
            (json!({"font_body": "x".repeat(201)}), "font_body must be"),
            (json!({"site_name": 5}), "site_name must be"),
            (json!({"logo": "https://evil.example/x.png"}), "logo must be"),
            (json!({"logo_dark": "//evil.example/x.png"}), "logo_dark must be"),
            (json!({"logo": "/media/../../etc"}), "logo must be"),
            (json!({"colour": "#fff"}), "unknown theme field \"colour\""),
        ];
        for (value, needle) in cases {
            let message = check(value.clone()).unwrap_err().to_string();
            assert!(message.contains(needle), "{value}: {message}");
        }
        let fine = json!({"accent_color": "#abc", "surface_color": null, "custom_palette": {"brand": "#123456"}, "logo": "/media/uploads/logo.svg"});
        assert!(check(fine).is_ok());
    }

    /// Lengths are counted in characters, as JSON Schema's `maxLength` counts them, so the
    /// OpenAPI document states the limits exactly.
    #[test]
    fn lengths_count_characters_not_bytes() {
        let fine = json!({
            "font_body": "é".repeat(200),
            "custom_palette": { "é".repeat(64): "#fff" },
            "logo": format!("/{}", "é".repeat(511)),
        });
        assert!(check(fine).is_ok());
        for (value, needle) in [
            (json!({"font_body": "é".repeat(201)}), "font_body must be"),
            (json!({"custom_palette": { "é".repeat(65): "#fff" }}), "custom_palette."),
            (json!({"logo": format!("/{}", "é".repeat(512))}), "logo must be"),
        ] {
            let message = check(value.clone()).unwrap_err().to_string();
            assert!(message.contains(needle), "{message}");
        }
    }

    #[test]
    fn stored_themes_are_completed_in_order() {
        let stored = json!({"logo": "/x.svg", "stray": 1}).as_object().unwrap().clone();
        let theme = complete(Some(stored), "Site");
        assert_eq!(theme.keys().cloned().collect::<Vec<_>>(), FIELDS);
        assert_eq!((theme["logo"].as_str(), theme["site_name"].as_str()), (Some("/x.svg"), Some("Site")));
    }
}
