//! `GET /metrics`: on the main address with a bearer token (`metrics.token_env`), or on
//! an address of its own without one (`metrics.listen`, [`metrics_app`]). The metrics
//! themselves are `crate::metrics`.

use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};

use crate::error::{ApiError, Shape};
use crate::metrics::MainAddress;
use crate::state::AppState;

/// `GET /metrics` on the main address: `404` unless `metrics.token_env` is set, `401`
/// without its token.
pub async fn scrape_with_token(
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let shape = Shape::Envelope;
    let MainAddress::Token(token) = &state.metrics_access else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            shape,
            "metrics are off on this address: set metrics.token_env (a bearer token here) or metrics.listen \
             (an address of their own) in cms.yaml",
        ));
    };
    let sent = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    let matches = sent
        .and_then(|value| value.strip_prefix("Bearer "))
        .is_some_and(|sent| cms_core::session::same_secret(sent.trim(), token));
    if !matches {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            shape,
            "metrics need Authorization: Bearer with the token in the environment variable metrics.token_env names",
        ));
    }
    Ok(text_answer(scrape(&state).await))
}

/// The metrics now, with this state's kept answers counted.
async fn scrape(state: &AppState) -> String {
    let mut readings = crate::metrics::cache_readings("lists", state.bodies.stats());
    readings.extend(crate::metrics::cache_readings("documents", state.documents.stats()));
    state.metrics.scrape(&state.cms, readings).await
}

fn text_answer(text: String) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, prometheus_client::encoding::prometheus_text::CONTENT_TYPE))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .body(text)
}

/// The application of `metrics.listen`: `GET /metrics` without a key, nothing else.
pub fn metrics_app(
    state: web::Data<AppState>,
) -> actix_web::App<
    impl actix_web::dev::ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl actix_web::body::MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    actix_web::App::new().app_data(state).route(
        "/metrics",
        web::get().to(|state: web::Data<AppState>| async move { text_answer(scrape(&state).await) }),
    )
}
