//! Deleted items come back: a collection's Deleted view (items whose file is gone but whose
//! history remains), and restoring one's newest version, which is also the Undo that the
//! notice after a delete offers. Their history and diff pages are `history.rs`'s.

use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use cms_core::CoreError;
use cms_core::collection::Collection;
use cms_core::policy::{self, Operation};
use cms_core::service::VersionId;
use cms_core::slug::ItemRef;

use super::links::{CollectionLink, author_text, item_href, list_href};
use super::query_param;
use crate::AdminState;
use crate::auth::{PostedForm, SignedIn};
use crate::error::{AdminError, AdminResult};
use crate::pager::{PageLink, page_links};
use crate::readable::{self, Moment};
use crate::view::{self, Layout, Section, path_escape};

/// Deleted items on one page of the view.
const PER_PAGE: usize = 20;

/// Where a deleted item's newest version is restored (the view's Restore, the Undo).
fn restore_href(collection: &Collection, filename: &str) -> String {
    format!("{}/{}/restore", list_href(collection), path_escape(filename))
}

/// The Undo that the item list's notice offers after a delete (`?ok=deleted&undo=<file>`),
/// when the role may restore.
pub(super) struct Undo {
    pub action: String,
    pub filename: String,
}

impl Undo {
    pub(super) fn offered(req: &HttpRequest, user: &SignedIn, collection: &Collection) -> Option<Self> {
        let filename = query_param(req, "undo").filter(|f| !f.is_empty())?;
        policy::may(&user.principal, Operation::RestoreVersion)
            .then(|| Self { action: restore_href(collection, &filename), filename })
    }
}

struct DeletedRow {
    title: String,
    filename: String,
    deleted: Moment,
    author: String,
    history_href: String,
    restore_action: String,
}

#[derive(Template)]
#[template(path = "deleted.html")]
struct DeletedPage {
    l: Layout,
    collection: CollectionLink,
    items: Vec<DeletedRow>,
    /// `3 items`, `1 item`.
    count: String,
    may_restore: bool,
    pages: Vec<PageLink>,
}

/// `GET /admin/collections/{collection}/deleted?page=`
pub async fn list(
    user: SignedIn,
    req: HttpRequest,
    path: web::Path<String>,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    let collection = super::collection_at(&state, &path)?;
    let page: usize = match query_param(&req, "page") {
        None => 1,
        Some(raw) => raw.parse().ok().filter(|p| *p >= 1).ok_or_else(|| {
            AdminError::bad_request(format!("page must be a whole number from 1, got {raw:?}"))
        })?,
    };
    let deleted = state.cms.deleted_items(&user.principal, collection, page, PER_PAGE).await?;
    let items = deleted
        .items
        .into_iter()
        .map(|item| DeletedRow {
            history_href: format!("{}/history", item_href(collection, &item.filename)),
            restore_action: restore_href(collection, &item.filename),
            deleted: Moment::unix(item.newest.timestamp),
            author: author_text(item.newest.author.as_deref()),
            title: item.title,
            filename: item.filename,
        })
        .collect();
    let last_page = deleted.total.div_ceil(PER_PAGE).max(1);
    let pages = page_links(page, last_page, |p| format!("{}?page={p}", list_href(collection)));
    view::ok(&DeletedPage {
        l: Layout::new(&state, &user, Section::Collection(collection.family()))
            .with_notice(query_param(&req, "ok").as_deref()),
        collection: CollectionLink::of(collection),
        items,
        count: readable::count(deleted.total, "item", "items"),
        may_restore: policy::may(&user.principal, Operation::RestoreVersion),
        pages,
    })
}

/// `POST /admin/collections/{collection}/deleted/{item}/restore`: brings a deleted item
/// back as its newest version (the content its delete kept). An item that is back already
/// is left as it is.
pub async fn restore(
    posted: PostedForm,
    path: web::Path<(String, String)>,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    let (collection, item) = path.into_inner();
    let collection = super::collection_at(&state, &collection)?;
    let principal = &posted.user.principal;
    let list = state.cms.list_versions(principal, collection, &ItemRef::parse(&item)?).await?;
    let href = item_href(collection, &list.filename);
    if list.current.is_some() {
        // Checked by the restore's role too: the answer must not tell more than a restore.
        state.cms.authorize(principal, Operation::RestoreVersion).await?;
        return Ok(view::see_other(&format!("{href}?ok=undeleted")));
    }
    let newest = list
        .versions
        .first()
        .ok_or_else(|| CoreError::not_found(format!("item {:?} has no version to restore", list.filename)))?;
    let version = VersionId::new(newest.timestamp)?;
    let (outcome, _) = state
        .cms
        .restore_version(principal, collection, &ItemRef::parse(&list.filename)?, version, None)
        .await?;
    Ok(view::see_other(&format!("{}?ok=undeleted", item_href(collection, &outcome.filename))))
}
