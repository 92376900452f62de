//! Settings routes (editor shape): the theme, and read-only listings of users and of
//! webhooks (managed with the `cms users` and `cms webhooks` commands).

use actix_web::{HttpRequest, HttpResponse, web};
use cms_core::policy::Operation;
use serde_json::json;

use crate::auth::{EditorShape, KeyUser};
use crate::body::json_object;
use crate::dto::WebhookDto;
use crate::error::{ApiError, Shape};
use crate::state::AppState;

const SHAPE: Shape = Shape::Editor;

/// `GET /cms/settings/theme` (owner, `theme_customization`).
pub async fn theme(state: web::Data<AppState>, user: KeyUser<EditorShape>) -> Result<HttpResponse, ApiError> {
    let theme = state.run(SHAPE, state.cms.theme(&user.principal)).await?;
    Ok(HttpResponse::Ok().json(json!({ "theme": theme })))
}

/// `PUT /cms/settings/theme`: any subset of the fields; the rest stay as they are.
pub async fn update_theme(
    state: web::Data<AppState>,
    user: KeyUser<EditorShape>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    // Role and plan are checked before the body is read, so a caller without them learns
    // nothing from validation messages.
    state.run(SHAPE, state.cms.authorize(&user.principal, Operation::EditTheme)).await?;
    let patch = json_object(&req, payload, state.json_limit, SHAPE).await?;
    let theme = state.run(SHAPE, state.cms.update_theme(&user.principal, patch)).await?;
    Ok(HttpResponse::Ok().json(json!({ "ok": true, "message": "Theme saved.", "theme": theme })))
}

/// `GET /cms/settings/users` (admin or owner).
pub async fn users(state: web::Data<AppState>, user: KeyUser<EditorShape>) -> Result<HttpResponse, ApiError> {
    let users = state.run(SHAPE, state.cms.users_by_role(&user.principal)).await?;
    let users: Vec<_> = users.iter().map(|u| json!({ "email": u.email, "role": u.role.as_str() })).collect();
    Ok(HttpResponse::Ok().json(json!({
        "message": "User management is not exposed on the REST API yet; users are managed with the cms command line (cms users).",
        "users": users,
    })))
}

pub const WEBHOOKS_MESSAGE: &str =
    "Webhook create, update and delete are not exposed on the REST API yet; manage them with the cms CLI.";

/// `GET /cms/settings/webhooks`: owner role and the `webhooks` license feature (`403`
/// otherwise); never the signing secrets.
pub async fn webhooks(
    state: web::Data<AppState>,
    user: KeyUser<EditorShape>,
) -> Result<HttpResponse, ApiError> {
    let hooks = state.run(Shape::Editor, state.cms.webhook_settings(&user.principal)).await?;
    let hooks: Vec<WebhookDto> = hooks.into_iter().map(WebhookDto::from).collect();
    Ok(HttpResponse::Ok().json(json!({ "message": WEBHOOKS_MESSAGE, "webhooks": hooks })))
}
