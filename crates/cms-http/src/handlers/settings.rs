//! Settings routes (editor shape). Webhooks are read-only here: they are managed with the
//! `cms webhooks` CLI.

use actix_web::{HttpResponse, web};
use serde_json::json;

use crate::auth::{Editor, KeyUser};
use crate::dto::WebhookDto;
use crate::error::{ApiError, Shape};
use crate::state::AppState;

pub const WEBHOOKS_MESSAGE: &str =
    "Webhook create, update and delete are not exposed on the REST API yet; manage them with the cms CLI.";

/// `GET /cms/settings/webhooks`: owner role and the `webhooks` license feature (`403`
/// otherwise); never the signing secrets.
pub async fn webhooks(state: web::Data<AppState>, user: KeyUser<Editor>) -> Result<HttpResponse, ApiError> {
    let principal = user.principal;
    let hooks = state.run(Shape::Editor, move |cms| cms.webhook_settings(&principal)).await?;
    let hooks: Vec<WebhookDto> = hooks.into_iter().map(WebhookDto::from).collect();
    Ok(HttpResponse::Ok().json(json!({ "message": WEBHOOKS_MESSAGE, "webhooks": hooks })))
}
