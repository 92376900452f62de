//! Theme settings (owner, with the license's `theme_customization` feature).

use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use cms_core::CoreError;
use cms_core::theme;
use serde_json::{Map, Value};

use super::query_param;
use crate::AdminState;
use crate::auth::{PostedForm, SignedIn};
use crate::error::{AdminResult, message_of};
use crate::view::{self, Layout, Section};

/// One theme field as a form input.
struct ThemeField {
    name: &'static str,
    label: &'static str,
    hint: &'static str,
    value: String,
    /// A multi-line box (the palette, as JSON).
    multiline: bool,
    /// A colour: a colour input, whose value is always `#rrggbb`.
    color: Option<ColorInput>,
}

/// A colour field as a colour input; an optional one (`surface_color`) has a box to leave
/// it unset, since a colour input always sends a colour.
struct ColorInput {
    value: String,
    optional: bool,
    unset: bool,
}

/// The colour fields, and whether each may be left unset.
const COLORS: [(&str, bool); 2] = [("accent_color", false), ("surface_color", true)];

/// `#abc` as a colour input needs it, `#aabbcc` (lowercase); `None` for anything else.
fn full_hex(text: &str) -> Option<String> {
    let digits = text.strip_prefix('#').filter(|d| d.chars().all(|c| c.is_ascii_hexdigit()))?;
    match digits.len() {
        6 => Some(format!("#{}", digits.to_ascii_lowercase())),
        3 => Some(digits.chars().flat_map(|c| [c, c]).fold("#".to_owned(), |mut s, c| {
            s.push(c.to_ascii_lowercase());
            s
        })),
        _ => None,
    }
}

/// What the form sent for `name`: an optional colour with its "unset" box checked is empty.
fn posted_value<'a>(fields: &'a crate::forms::Fields, name: &str) -> Option<&'a str> {
    if fields.get(&format!("{name}_unset")).is_some() {
        return Some("");
    }
    fields.get(name).map(str::trim)
}

#[derive(Template)]
#[template(path = "theme.html")]
struct ThemePage {
    l: Layout,
    fields: Vec<ThemeField>,
    error: Option<String>,
}

fn describe(name: &str) -> (&'static str, &'static str) {
    match name {
        "preset" => ("Preset", "The theme's base look, e.g. default."),
        "accent_color" => ("Accent color", "Links and buttons."),
        "font_heading" => ("Heading font", "A font family name."),
        "font_body" => ("Body font", "A font family name."),
        "custom_palette" => {
            ("Custom palette", "Empty, or a JSON object of names to colors: {\"brand\": \"#123456\"}.")
        }
        "surface_color" => ("Surface color", "The background of cards and panels; the preset's when unset."),
        "site_name" => ("Site name", "Shown by the theme."),
        "logo" => ("Logo", "A path on this site, e.g. /media/uploads/logo.svg."),
        "logo_dark" => ("Logo on dark backgrounds", "A path on this site."),
        _ => ("", ""),
    }
}

/// A stored value as the form shows it.
fn shown(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

fn fields(values: impl Fn(&str) -> String) -> Vec<ThemeField> {
    theme::FIELDS
        .iter()
        .map(|&name| {
            let (label, hint) = describe(name);
            let value = values(name);
            // A value a colour input cannot show (a save refused for it) stays a text box.
            let color = COLORS.iter().find(|(color, _)| *color == name).and_then(|&(_, optional)| {
                let unset = optional && value.is_empty();
                let hex = if unset { Some("#ffffff".to_owned()) } else { full_hex(&value) };
                hex.map(|value| ColorInput { value, optional, unset })
            });
            ThemeField { name, label, hint, value, multiline: name == "custom_palette", color }
        })
        .collect()
}

/// `GET /admin/theme`
pub async fn form(
    user: SignedIn,
    req: HttpRequest,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    let current = state.cms.theme(&user.principal).await?;
    let l = Layout::new(&state, &user, Section::Theme).with_notice(query_param(&req, "ok").as_deref());
    view::ok(&ThemePage {
        l,
        fields: fields(|name| current.get(name).map(shown).unwrap_or_default()),
        error: None,
    })
}

/// `POST /admin/theme`: the fields that changed go to the facade, which validates them all.
pub async fn save(posted: PostedForm, state: web::Data<AdminState>) -> AdminResult<HttpResponse> {
    let current = state.cms.theme(&posted.user.principal).await?;
    let saved = async {
        let mut patch = Map::new();
        for name in theme::FIELDS {
            // A field the form did not send is left as it is.
            let Some(text) = posted_value(&posted.fields, name) else { continue };
            let stored = current.get(name).map(shown).unwrap_or_default();
            // `#abc` comes back from a colour input as `#aabbcc`: the same colour, unchanged.
            if stored == text || full_hex(&stored).is_some_and(|hex| Some(hex) == full_hex(text)) {
                continue;
            }
            let value = match (name, text) {
                ("custom_palette" | "surface_color", "") => Value::Null,
                ("custom_palette", json) => serde_json::from_str(json).map_err(|e| {
                    CoreError::invalid(format!("custom_palette must be empty or a JSON object: {e}"))
                })?,
                (_, text) => text.into(),
            };
            patch.insert(name.to_owned(), value);
        }
        state.cms.update_theme(&posted.user.principal, patch).await
    }
    .await;
    match saved {
        Ok(_) => Ok(view::see_other("/admin/theme?ok=theme-saved")),
        Err(error) => {
            let l = Layout::new(&state, &posted.user, Section::Theme);
            let page = ThemePage {
                l,
                fields: fields(|name| posted_value(&posted.fields, name).unwrap_or_default().to_owned()),
                error: Some(message_of(&error)),
            };
            view::page(actix_web::http::StatusCode::UNPROCESSABLE_ENTITY, &page)
        }
    }
}
