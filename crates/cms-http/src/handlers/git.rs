//! `POST /cms/git/pull`: a forge's push webhook asks a site kept in git to pull now
//! (docs/git.md). The route knows nothing of git: the binary gives [`AppState`] a trigger
//! and its secret ([`AppState::with_pull_trigger`]); without one the route answers 404.

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::json;

use crate::error::{ApiError, Shape};
use crate::state::AppState;

pub async fn pull(req: HttpRequest, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let shape = Shape::Envelope;
    let Some(trigger) = &state.pull_trigger else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            shape,
            "this site takes no pull requests: it is not kept in git with a remote, or git.pull_token_env is not \
             set in cms.yaml (docs/git.md)",
        ));
    };
    let sent = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    let matches = sent
        .and_then(|value| value.strip_prefix("Bearer "))
        .is_some_and(|sent| cms_core::session::same_secret(sent.trim(), &trigger.secret));
    if !matches {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            shape,
            "a pull needs Authorization: Bearer with the secret in the environment variable git.pull_token_env names",
        ));
    }
    (trigger.ask)();
    Ok(HttpResponse::Accepted().insert_header((header::CACHE_CONTROL, "no-store")).json(
        json!({"success": true, "message": "pull asked: the site pulls as soon as its committer is free"}),
    ))
}
