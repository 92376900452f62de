//! The routes in-process (`actix_web::test`) over in-memory ports.

mod answers;
mod bad_input;
mod discovery;
mod items;
mod resources;
mod service;
mod settings;
mod validators;
mod versions;
mod webhook_settings;

use cms_core::policy::Caller;
use std::sync::Arc;

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::test::{self, TestRequest};
use actix_web::web;
use cms_core::Cms;
use cms_core::account::Role;
use cms_core::license::License;
use cms_core::testing::MemoryWorld;
use cms_http::AppState;
use serde_json::Value;

/// A world with an owner and an editor key, and a small JSON limit for the 413 tests.
pub struct Harness {
    pub world: MemoryWorld,
    pub state: web::Data<AppState>,
    pub owner_key: String,
    pub editor_key: String,
}

pub const JSON_LIMIT: usize = 64 * 1024;
pub const UPLOAD_LIMIT: u64 = 100 * 1024;
/// Where the harness's site folder "is", for absolute path parameters.
pub const SITE_ROOT: &str = "/srv/site";

impl Harness {
    pub async fn setup() -> Self {
        Self::setup_with(None).await
    }

    /// The same, keeping single items' answers in `answers` (as a server keeps them on
    /// disk) rather than with the list pages in memory.
    pub async fn setup_with_answers() -> Self {
        Self::setup_with(Some(Arc::new(cms_core::render_cache::MemoryRenderCache::new(1 << 20)))).await
    }

    pub async fn setup_with(answers: Option<Arc<dyn cms_core::ports::RenderCache>>) -> Self {
        Self::setup_site(cms_core::testing::SITE_YAML, answers).await
    }

    /// The same over another site configuration.
    pub async fn setup_site(site_yaml: &str, answers: Option<Arc<dyn cms_core::ports::RenderCache>>) -> Self {
        let world = MemoryWorld::new();
        let config = cms_core::config::SiteConfig::from_yaml(site_yaml).expect("test site config");
        let cms = cms_core::Cms::builder(&config, world.ports()).site_root(SITE_ROOT).build();
        cms.upkeep().subscribe().expect("the memory store subscribes");
        let cms = Arc::new(cms);
        cms.add_user(Caller::Operator, "owner@example.com", Role::Owner).await.unwrap();
        cms.add_user(Caller::Operator, "ed@example.com", Role::Editor).await.unwrap();
        let owner_key =
            cms.create_key(Caller::Operator, "owner@example.com", "t", [1; 32]).await.unwrap().plaintext;
        let editor_key =
            cms.create_key(Caller::Operator, "ed@example.com", "t", [2; 32]).await.unwrap().plaintext;
        let mut state = AppState::new(cms, vec!["https://app.example.com".into()], JSON_LIMIT, UPLOAD_LIMIT);
        if let Some(answers) = answers {
            state = state.with_answers(answers);
        }
        let state = web::Data::new(state);
        Self { world, state, owner_key, editor_key }
    }

    /// The facade behind the app.
    pub fn cms(&self) -> &Cms {
        &self.state.cms
    }

    /// Hands the content changes made behind the facade's back (`put_raw`, `remove_raw`)
    /// to its index, as the store's change feed would.
    pub async fn settle(&self) {
        self.world.settle(self.cms()).await;
    }

    /// Swaps the installed license and lets the facade reload it (it answers license
    /// checks from memory), as the store's change report would.
    pub async fn set_license(&self, license: Option<License>) {
        self.world.license.set(license);
        self.cms().reload_license().await.expect("the license reloads");
    }

    pub fn bearer(&self) -> (&'static str, String) {
        ("Authorization", format!("Bearer {}", self.editor_key))
    }

    /// Sends one request to a fresh service over this harness's state.
    pub async fn send(&self, req: TestRequest) -> Reply {
        let app = test::init_service(cms_http::app(self.state.clone())).await;
        let response = app.call(req.to_request()).await.unwrap();
        Reply::read(response).await
    }
}

/// A response with its body read.
pub struct Reply {
    pub status: StatusCode,
    pub headers: actix_web::http::header::HeaderMap,
    pub body: Vec<u8>,
}

impl Reply {
    async fn read<B: MessageBody>(response: ServiceResponse<B>) -> Self {
        let status = response.status();
        let headers = response.headers().clone();
        let endless =
            headers.get("content-type").is_some_and(|t| t.as_bytes().starts_with(b"text/event-stream"));
        if endless {
            // An event stream ends only when the server stops: its body is left unread.
            return Self { status, headers, body: Vec::new() };
        }
        let body = test::read_body(response).await.to_vec();
        Self { status, headers, body }
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Every value of a header that may be sent several times (`Vary`), in order.
    pub fn header_values(&self, name: &str) -> Vec<&str> {
        self.headers.get_all(name).filter_map(|v| v.to_str().ok()).collect()
    }

    /// Asserts an envelope failure with `status` and an error mentioning `needle`.
    pub fn assert_envelope_error(&self, status: u16, needle: &str) {
        let body = self.json();
        assert_eq!(self.status.as_u16(), status, "{body}");
        assert_eq!(body["success"], false, "{body}");
        assert_eq!(body["code"], status, "{body}");
        assert!(body["timestamp"].is_string(), "{body}");
        let error = body["error"].as_str().unwrap();
        assert!(error.contains(needle), "{error:?} should mention {needle:?}");
    }

    /// Asserts an editor-shaped failure: `{"error"}` and no `success` or `code`.
    pub fn assert_editor_error(&self, status: u16, needle: &str) {
        let body = self.json();
        assert_eq!(self.status.as_u16(), status, "{body}");
        assert!(body.get("success").is_none() && body.get("code").is_none(), "{body}");
        let error = body["error"].as_str().unwrap();
        assert!(error.contains(needle), "{error:?} should mention {needle:?}");
    }
}
