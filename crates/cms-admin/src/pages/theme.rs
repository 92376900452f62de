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
        "accent_color" => ("Accent color", "#rgb or #rrggbb."),
        "font_heading" => ("Heading font", "A font family name."),
        "font_body" => ("Body font", "A font family name."),
        "custom_palette" => {
            ("Custom palette", "Empty, or a JSON object of names to colors: {\"brand\": \"#123456\"}.")
        }
        "surface_color" => ("Surface color", "Empty, or #rgb or #rrggbb."),
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
            ThemeField { name, label, hint, value: values(name), multiline: name == "custom_palette" }
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
            let Some(text) = posted.fields.get(name).map(str::trim) else { continue };
            if current.get(name).map(shown).unwrap_or_default() == text {
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
                fields: fields(|name| posted.fields.text(name).to_owned()),
                error: Some(message_of(&error)),
            };
            view::page(actix_web::http::StatusCode::UNPROCESSABLE_ENTITY, &page)
        }
    }
}
