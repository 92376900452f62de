//! The AI-agent endpoint: the site as a Model Context Protocol server (the official Rust
//! SDK, `rmcp`), over the Streamable HTTP transport on the actix-web server of the REST
//! API (`rmcp-actix-web`). Tools and resources call the same [`cms_core::Cms`] facade as
//! the REST handlers, as the user of the `mcp_` key that `cms-http`'s gate checked.
//!
//! Mounting and the gate (license, origin, key) are `cms-http`'s (`agent.rs`); this crate
//! knows MCP and its transport: the sessions (`sessions.rs`: bound to a key, bounded, ended
//! when idle), their resource subscriptions fed by the core's event log
//! (`subscriptions.rs`) and the door in front of rmcp's transport (`transport.rs`).

pub mod arguments;
pub mod resources;
pub mod server;
pub mod sessions;
pub mod shapes;
pub mod subscriptions;
mod transport;

use std::sync::Arc;

use actix_web::HttpMessage;
use actix_web::body::BoxBody;
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::middleware::{Next, from_fn};
use cms_core::Cms;
use cms_core::config::McpConfig;
use cms_core::ports::Clock;
use cms_core::service::Principal;
use rmcp_actix_web::transport::StreamableHttpService;

pub use server::CmsServer;
pub use sessions::{SessionError, Sessions};

/// The endpoint's transport, to be made once and cloned into every worker (the sessions
/// are shared); mount it with `cms_http::agent::mount(endpoint.clone().scope())`.
#[derive(Clone)]
pub struct Endpoint {
    transport: StreamableHttpService<CmsServer, Sessions>,
    door: Arc<transport::Door>,
    census: Arc<subscriptions::Census>,
}

/// Builds the endpoint of `cms` with the `mcp:` settings.
///
/// `json_limit` bounds a request body (`413` above it), as for the REST API. The transport's
/// own `Host` allow-list is turned off: the gate checks `Origin` and every request needs a
/// key, and the server answers under whatever name it is deployed. rmcp's own priming
/// events are off too: [`Sessions`] primes the streams of the clients that expect it.
pub fn endpoint(cms: Arc<Cms>, json_limit: usize, settings: &McpConfig) -> Endpoint {
    let clock: Arc<dyn Clock> = Arc::new(FacadeClock(Arc::clone(&cms)));
    let sessions = Arc::new(Sessions::new(settings.clone(), clock));
    let census = Arc::new(subscriptions::Census::default());
    let counted = Arc::clone(&census);
    let transport = StreamableHttpService::builder()
        .service_factory(Arc::new(move || Ok(CmsServer::counted(Arc::clone(&cms), Arc::clone(&counted)))))
        .session_manager(Arc::clone(&sessions))
        .stateful_mode(true)
        .max_request_body_bytes(json_limit)
        .allowed_hosts(Vec::new())
        .disable_sse_retry()
        .on_request_fn(|request, extensions| {
            if let Some(principal) = request.extensions().get::<Principal>() {
                extensions.insert(principal.clone());
            }
        })
        .build();
    Endpoint { transport, door: Arc::new(transport::Door { sessions, json_limit }), census }
}

impl Endpoint {
    /// The endpoint's sessions.
    pub fn sessions(&self) -> &Arc<Sessions> {
        &self.door.sessions
    }

    /// How many sessions follow the event log for their subscriptions now (for tests and
    /// logs).
    pub fn following_count(&self) -> usize {
        self.census.count()
    }

    /// The endpoint's service, for the path `""` of its scope, behind its door.
    pub fn scope(
        self,
    ) -> actix_web::Scope<
        impl ServiceFactory<
            ServiceRequest,
            Config = (),
            Response = ServiceResponse<BoxBody>,
            Error = actix_web::Error,
            InitError = (),
        >,
    > {
        let door = self.door;
        self.transport.scope().wrap(from_fn(move |req: ServiceRequest, next: Next<BoxBody>| {
            transport::door(Arc::clone(&door), req, next)
        }))
    }
}

/// The facade's clock (the server's `Clock` port), for the sessions' idle times.
struct FacadeClock(Arc<Cms>);

impl Clock for FacadeClock {
    fn now(&self) -> time::OffsetDateTime {
        self.0.now()
    }
}
