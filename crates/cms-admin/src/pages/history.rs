//! An item's history: its versions, any version against the current text, restore.

use actix_web::{HttpResponse, web};
use askama::Template;
use cms_core::service::VersionId;

use super::ItemAt;
use super::items::{CollectionLink, item_href};
use crate::AdminState;
use crate::auth::{PostedForm, SignedIn};
use crate::diff::{self, Row};
use crate::error::AdminResult;
use crate::view::{self, Layout, Section};

struct VersionRow {
    when: String,
    size: String,
    href: String,
}

#[derive(Template)]
#[template(path = "history.html")]
struct HistoryPage {
    l: Layout,
    collection: CollectionLink,
    title: String,
    filename: String,
    item_href: String,
    current: String,
    versions: Vec<VersionRow>,
}

/// `GET /admin/collections/{collection}/items/{item}/history`
pub async fn versions(
    user: SignedIn,
    path: web::Path<(String, String)>,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    let (collection, item) = path.into_inner();
    let ItemAt { collection, raw, href } = ItemAt::read(&state, &collection, &item).await?;
    let list = state.cms.list_versions(&user.principal, collection, &item).await?;
    let versions = list
        .versions
        .iter()
        .map(|v| VersionRow {
            when: view::unix_time(v.timestamp),
            size: view::size(v.size),
            href: format!("{href}/history/{}", v.timestamp),
        })
        .collect();
    let current = list
        .current
        .map(|(modified, size)| format!("{}, {}", view::unix_time(modified), view::size(size)))
        .unwrap_or_default();
    view::ok(&HistoryPage {
        l: Layout::new(&state, &user, Section::Collection(collection.index)),
        collection: CollectionLink::of(collection),
        title: raw.meta.title,
        filename: raw.meta.filename.to_string(),
        item_href: href,
        current,
        versions,
    })
}

#[derive(Template)]
#[template(path = "diff.html")]
struct DiffPage {
    l: Layout,
    collection: CollectionLink,
    title: String,
    item_href: String,
    when: String,
    restore_action: String,
    rows: Vec<Row>,
    differs: bool,
}

/// `GET /admin/collections/{collection}/items/{item}/history/{version}`: the version (left)
/// against the current file (right).
pub async fn diff(
    user: SignedIn,
    path: web::Path<(String, String, String)>,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    let (collection, item, version) = path.into_inner();
    let collection = state.cms.collection(&collection)?;
    let old = state.cms.read_version(&user.principal, collection, &item, VersionId::parse(&version)?).await?;
    let current = state.cms.read_raw(collection, &item).await?;
    let rows = diff::side_by_side(&old.doc.to_file_text()?, &current.doc.to_file_text()?);
    let href = item_href(collection, &current.meta.filename);
    view::ok(&DiffPage {
        l: Layout::new(&state, &user, Section::Collection(collection.index)),
        collection: CollectionLink::of(collection),
        title: current.meta.title,
        restore_action: format!("{href}/history/{}/restore", old.stamp.timestamp),
        item_href: href,
        when: view::unix_time(old.stamp.timestamp),
        differs: diff::differs(&rows),
        rows,
    })
}

/// `POST /admin/collections/{collection}/items/{item}/history/{version}/restore`
pub async fn restore(
    posted: PostedForm,
    path: web::Path<(String, String, String)>,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    let (collection, item, version) = path.into_inner();
    let collection = state.cms.collection(&collection)?;
    let (outcome, _) = state
        .cms
        .restore_version(&posted.user.principal, collection, &item, VersionId::parse(&version)?, None)
        .await?;
    Ok(view::see_other(&format!("{}?ok=restored", item_href(collection, &outcome.filename))))
}
