//! The JSON REST API on actix-web. Handlers are thin: extract, one call into
//! [`cms_core::Cms`], map the result. Authentication, license and CORS are written once
//! (extractors in [`auth`], middleware in [`middleware`]); errors map to the two response
//! shapes in [`error`].

pub mod access_log;
pub mod agent;
pub mod ahead;
pub mod ahead_progress;
pub mod auth;
pub mod body;
pub mod body_cache;
pub mod deadlines;
pub mod documents;
pub mod dto;
pub mod encoding;
pub mod error;
pub mod handlers;
pub mod languages;
pub mod metrics;
pub mod middleware;
pub mod openapi;
pub mod query;
pub mod reply;
pub mod request_id;
pub mod router;
pub mod routes;
pub mod state;
pub mod timestamp;
pub mod traces;
pub mod warmup;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::middleware::from_fn;
use actix_web::{App, web};

pub use error::{ApiError, Shape};
pub use state::AppState;

/// The whole application: routes, fallbacks and middleware (outermost first: request ids,
/// metrics, CORS, the license gate and the access log in one layer, then `503` while the
/// first indexing runs).
pub fn app(
    state: web::Data<AppState>,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    app_with(state, |_| {})
}

/// The application with more services registered before the fallbacks, under the same
/// middleware: the composition root mounts the AI-agent endpoint this way
/// ([`agent::mount`]).
pub fn app_with(
    state: web::Data<AppState>,
    extra: impl FnOnce(&mut web::ServiceConfig),
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    let folders: Vec<(usize, String)> =
        state.cms.resource_folders().iter().map(|f| (f.index, f.url.clone())).collect();
    let until_indexed = warmup::UntilIndexed::new(state.cms.clone());
    App::new()
        .app_data(state)
        .configure(router::configure)
        .configure(|cfg| router::configure_files(cfg, &folders))
        .configure(extra)
        .default_service(web::to(handlers::service::not_found))
        .wrap(until_indexed)
        .wrap(from_fn(middleware::cors_and_license))
}
