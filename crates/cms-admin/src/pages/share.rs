//! "Share preview": a preview link for an item (editor or above), made through the same
//! facade call as `POST /cms/collections/{c}/items/{slug}/preview`.

use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use time::format_description::well_known::Rfc3339;

use super::{ConfirmPage, ItemAt};
use crate::AdminState;
use crate::auth::{PostedForm, SignedIn};
use crate::error::AdminResult;
use crate::view::{self, Layout, Section};

/// The new link, to copy.
#[derive(Template)]
#[template(path = "share.html")]
struct SharePage {
    l: Layout,
    title: String,
    url: String,
    expires: String,
    back: String,
}

/// `GET /admin/collections/{collection}/items/{item}/share`
pub async fn confirm(
    user: SignedIn,
    path: web::Path<(String, String)>,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    let (collection, item) = path.into_inner();
    let ItemAt { collection, raw, href } = ItemAt::read(&state, &collection, &item).await?;
    view::ok(&ConfirmPage {
        l: Layout::new(&state, &user, Section::Collection(collection.index)),
        heading: format!("Share a preview of “{}”?", raw.meta.title),
        message: "Anyone with the link can read this item, draft or not, without signing in, for an hour (previews.ttl_secs). `cms previews revoke-all` ends every link.".into(),
        action: format!("{href}/share"),
        fields: Vec::new(),
        button: "Make the link",
        cancel: href,
    })
}

/// `POST /admin/collections/{collection}/items/{item}/share`
pub async fn create(
    posted: PostedForm,
    path: web::Path<(String, String)>,
    state: web::Data<AdminState>,
    req: HttpRequest,
) -> AdminResult<HttpResponse> {
    let (collection, item) = path.into_inner();
    let ItemAt { collection, raw, href } = ItemAt::read(&state, &collection, &item).await?;
    let link = state.cms.create_preview(&posted.user.principal, collection, &item, None).await?;
    let origin = state.cms.hosts().public_origin(&crate::auth::request_origin(&req));
    view::ok(&SharePage {
        l: Layout::new(&state, &posted.user, Section::Collection(collection.index)),
        title: raw.meta.title,
        url: format!("{origin}/cms/preview/{}", link.token),
        expires: link.expires.format(&Rfc3339).unwrap_or_default(),
        back: href,
    })
}
