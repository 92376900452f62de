//! The web editor at `/admin/`: server-rendered pages over the [`cms_core::Cms`] facade.
//!
//! Every action makes the same facade calls as the REST API (same validation, version
//! snapshots and webhooks); this crate adds only what a browser needs:
//!
//! - [`auth`]: sign-in with a password (argon2id, checked on a blocking thread), the
//!   session cookie (`HttpOnly`, `SameSite=Lax`, `Secure` over HTTPS), the [`auth::SignedIn`]
//!   extractor that every page takes, and [`auth::PostedForm`], the one way a
//!   state-changing form is read: it checks the session's CSRF token and the request's
//!   origin before a handler sees a field.
//!   Sessions live in the site's store (`cms_core::session`), so they outlive a restart
//!   and every server of a bucket site knows them.
//! - [`resubmit`]: a form that could not be acted on (its session ended, its token is another
//!   session's) is shown again whole and sent again, with an inline sign-in.
//! - [`error`], [`error_pages`]: every error page in the editor's frame, in plain
//!   sentences with a way on.
//! - [`throttle`]: failed sign-ins slow down further tries, per account and per address.
//! - [`security`]: the headers of every page (a strict `Content-Security-Policy` with no
//!   inline script or style, no framing, no caching).
//! - [`pages`]: one module per area (items, history, media, keys, webhooks, theme,
//!   users), each handler thin: extract, check the role, call the facade, render.
//! - Templates are askama's (`templates/`): compiled and type-checked with the crate, and
//!   HTML-escaped by default, so a template error is a build error rather than a broken
//!   page, and nothing renders at run time from text a user could change.
//! - `assets/`: the stylesheet and one small script (live preview, uploads with progress,
//!   copy buttons, the media picker, Ctrl/⌘+S and the leave warning, live changes over
//!   `/admin/events`), embedded in the binary: no build step beyond cargo.

pub mod assets;
pub mod auth;
pub mod cookies;
pub mod diff;
pub mod error;
pub mod error_pages;
pub mod escape;
pub mod forms;
pub mod item_form;
pub mod media_library;
pub mod model_form;
pub mod model_view;
pub mod pager;
pub mod pages;
pub mod preview;
pub mod readable;
pub mod resubmit;
pub mod security;
pub mod throttle;
pub mod view;

use std::sync::Arc;

use actix_web::middleware::from_fn;
use actix_web::{HttpResponse, web};
use cms_core::Cms;
use cms_core::config::SigninConfig;
use cms_core::ports::SessionStore;
use cms_core::session::{SessionPolicy, Sessions};

pub use error::AdminError;

/// What the editor's handlers share.
pub struct AdminState {
    pub cms: Arc<Cms>,
    pub sessions: Sessions,
    pub throttle: throttle::Throttle,
    /// Largest upload, in bytes (`limits.upload_bytes`).
    pub upload_limit: u64,
    /// Largest form body, in bytes (`limits.json_bytes`: an item's text comes in a form).
    pub form_limit: usize,
    /// What the parts the binary composed say of an item, shown on its edit page (a git
    /// pull's conflict); `None`: nothing.
    pub notices: Option<ItemNotices>,
    /// Forgets an item's notice when a user marks it done (a git conflict resolved).
    pub dismiss_notice: Option<DismissNotice>,
    /// What the parts the binary composed say of the whole site, shown on the home page
    /// (the site kept in git: commits waiting, failing pushes); `None`: nothing.
    pub site_notices: Option<SiteNotices>,
}

/// Asked for each view of the home page: notices about the site, `detailed` for the users
/// who run it (an admin or owner: remote addresses and git's own messages). Cheap.
pub type SiteNotices = Arc<dyn Fn(bool) -> Vec<SiteNotice> + Send + Sync>;

/// A notice about the site from a part of the server the editor knows nothing of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteNotice {
    pub heading: String,
    pub text: String,
    /// Something needs a person (shown as a problem, not as news).
    pub problem: bool,
}

/// Asked for each item's edit page with its collection and filename: a notice to show
/// there, if any. Cheap: called on every edit page.
pub type ItemNotices =
    Arc<dyn Fn(&cms_core::collection::Collection, &str) -> Option<ItemNotice> + Send + Sync>;

/// Called with an item's collection and filename when a user dismisses its notice (see
/// [`ItemNotice::dismiss`]); whether there was one to forget, or why it could not be.
pub type DismissNotice =
    Arc<dyn Fn(&cms_core::collection::Collection, &str) -> Result<bool, String> + Send + Sync>;

/// A notice about one item from a part of the server the editor knows nothing of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemNotice {
    pub heading: String,
    pub text: String,
    /// Whether the item's newest version in its history is worth comparing with the
    /// current one (the page links its side-by-side view).
    pub compare_newest: bool,
    /// The label of a button that dismisses the notice (through [`DismissNotice`]), for
    /// whoever may change the item; `None`: no button.
    pub dismiss: Option<String>,
}

impl AdminState {
    /// The editor of `cms`'s site, its sessions kept in `sessions` (the site's store, so
    /// that they outlive a restart and every server knows them); `signin` bounds its
    /// sign-in attempts.
    pub fn new(
        cms: Arc<Cms>,
        sessions: Arc<dyn SessionStore>,
        signin: &SigninConfig,
        upload_limit: u64,
        form_limit: usize,
    ) -> Self {
        Self {
            cms,
            sessions: Sessions::new(SessionPolicy::default(), sessions),
            throttle: throttle::Throttle::new(throttle::ThrottlePolicy::from(signin)),
            upload_limit,
            form_limit,
            notices: None,
            dismiss_notice: None,
            site_notices: None,
        }
    }

    /// An item notice's button calls `dismiss`.
    pub fn with_notice_dismissal(mut self, dismiss: DismissNotice) -> Self {
        self.dismiss_notice = Some(dismiss);
        self
    }

    /// The home page shows what `notices` says of the site.
    pub fn with_site_notices(mut self, notices: SiteNotices) -> Self {
        self.site_notices = Some(notices);
        self
    }

    /// Each item's edit page shows what `notices` says of it.
    pub fn with_notices(mut self, notices: ItemNotices) -> Self {
        self.notices = Some(notices);
        self
    }
}

/// Mounts the editor under `/admin/` (with `/admin` redirecting there).
pub fn mount(cfg: &mut web::ServiceConfig, state: web::Data<AdminState>) {
    cfg.service(
        web::resource("/admin").to(|| async {
            HttpResponse::PermanentRedirect().insert_header(("Location", "/admin/")).finish()
        }),
    )
    .service(
        web::scope("/admin")
            .app_data(state)
            .wrap(from_fn(error_pages::pages))
            .wrap(from_fn(security::headers))
            .configure(pages::routes)
            .default_service(web::to(pages::not_found)),
    );
}

/// For `/metrics`: the sign-in throttle's readings.
impl cms_core::readings::Observed for AdminState {
    fn readings(&self) -> Vec<cms_core::readings::Reading> {
        self.throttle.readings(std::time::Instant::now())
    }
}
