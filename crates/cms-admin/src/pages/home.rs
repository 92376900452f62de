//! The start page: the collections with their counts, and the way to media.

use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;

use super::query_param;
use crate::AdminState;
use crate::auth::SignedIn;
use crate::error::AdminResult;
use crate::view::{self, Layout, Section};

struct CollectionCard {
    href: String,
    new_href: String,
    label: String,
    path: String,
    /// Live now.
    published: usize,
    /// Published but outside their window (docs/publishing.md): shown when there are any.
    scheduled: usize,
    /// `1 draft`, `3 drafts`.
    drafts: String,
    /// Why the collection cannot be listed, if it cannot.
    problem: Option<String>,
}

#[derive(Template)]
#[template(path = "home.html")]
struct HomePage {
    l: Layout,
    collections: Vec<CollectionCard>,
    folders: Vec<(String, String)>,
    notices: Vec<crate::SiteNotice>,
}

/// `GET /admin/`
pub async fn dashboard(
    user: SignedIn,
    req: HttpRequest,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    let mut collections = Vec::new();
    for collection in state.cms.collections() {
        let (mut published, mut scheduled, mut drafts, mut problem) = (0, 0, 0, None);
        match state.cms.status_counts(collection).await {
            Ok(counts) => (published, scheduled, drafts) = (counts.live, counts.scheduled, counts.drafts),
            Err(error) => problem = Some(crate::error::message_of(&error)),
        }
        collections.push(CollectionCard {
            href: format!("/admin/collections/{}", collection.slug),
            new_href: format!("/admin/collections/{}/new", collection.slug),
            label: collection.label.clone(),
            path: collection.path.clone(),
            published,
            scheduled,
            drafts: crate::readable::count(drafts, "draft", "drafts"),
            problem,
        });
    }
    let folders = state
        .cms
        .resource_folders()
        .iter()
        .map(|f| (format!("/admin/media?folder={}", f.index), f.label.clone()))
        .collect();
    let l = Layout::new(&state, &user, Section::Home).with_notice(query_param(&req, "ok").as_deref());
    let detailed = user.principal.user.role >= cms_core::account::Role::Admin;
    let notices = state.site_notices.as_ref().map(|notices| notices(detailed)).unwrap_or_default();
    view::ok(&HomePage { l, collections, folders, notices })
}
