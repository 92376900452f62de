//! The AI-agent endpoint: the site as a Model Context Protocol server (the official Rust
//! SDK, `rmcp`), over the Streamable HTTP transport on the actix-web server of the REST
//! API (`rmcp-actix-web`). Tools and resources call the same [`cms_core::Cms`] facade as
//! the REST handlers, as the user of the `mcp_` key that `cms-http`'s gate checked.
//!
//! Mounting and the gate (license, origin, key) are `cms-http`'s (`agent.rs`); this crate
//! knows MCP, not HTTP status codes.

pub mod resources;
pub mod server;
pub mod shapes;

use std::sync::Arc;

use actix_web::HttpMessage;
use cms_core::Cms;
use cms_core::service::Principal;
use rmcp_actix_web::transport::{LocalSessionManager, StreamableHttpService};

pub use server::CmsServer;

/// The endpoint's transport, to be made once and cloned into every worker (the sessions
/// are shared); mount it with `cms_http::agent::mount(endpoint.clone().scope())`.
///
/// `json_limit` bounds a request body (`413` above it), as for the REST API. The transport's
/// own `Host` allow-list is turned off: the gate checks `Origin` and every request needs a
/// key, and the server answers under whatever name it is deployed.
pub fn endpoint(cms: Arc<Cms>, json_limit: usize) -> StreamableHttpService<CmsServer> {
    StreamableHttpService::builder()
        .service_factory(Arc::new(move || Ok(CmsServer::new(Arc::clone(&cms)))))
        .session_manager(Arc::new(LocalSessionManager::default()))
        .stateful_mode(true)
        .max_request_body_bytes(json_limit)
        .allowed_hosts(Vec::new())
        .on_request_fn(|request, extensions| {
            if let Some(principal) = request.extensions().get::<Principal>() {
                extensions.insert(principal.clone());
            }
        })
        .build()
}
