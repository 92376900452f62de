//! An item's history: its versions, any version against the current text, restore. A
//! deleted item has the same pages (its history is kept): the item's name comes from its
//! newest version, and a version is compared with nothing.

use actix_web::{HttpResponse, web};
use askama::Template;
use cms_core::collection::Collection;
use cms_core::policy::{self, Operation, Principal};
use cms_core::service::{VersionId, VersionList};
use cms_core::slug::ItemRef;

use super::links::{CollectionLink, author_text, item_href};
use crate::AdminState;
use crate::auth::{PostedForm, SignedIn};
use crate::diff::{self, Row};
use crate::error::AdminResult;
use crate::readable::Moment;
use crate::view::{self, Layout, Section};

struct VersionRow {
    when: Moment,
    /// The instant to the second, naming the version to a screen reader.
    label: String,
    author: String,
    size: String,
    href: String,
    /// On a site kept in git, the commit's short name (what `git show` takes).
    commit: Option<String>,
}

#[derive(Template)]
#[template(path = "history.html")]
struct HistoryPage {
    l: Layout,
    collection: CollectionLink,
    title: String,
    filename: String,
    item_href: String,
    /// When the current file changed, and its size; `None` once the item is deleted.
    current: Option<(Moment, String)>,
    versions: Vec<VersionRow>,
    /// Some version is a commit: the site is kept in git, and the page says so.
    in_git: bool,
    deleted_href: String,
}

/// The item's name as the pages show it: the current file's title, else (deleted) the
/// newest version's, else the filename.
async fn title_of(
    state: &AdminState,
    principal: &Principal,
    collection: &Collection,
    list: &VersionList,
) -> AdminResult<String> {
    let file = ItemRef::parse(&list.filename)?;
    let title = match (&list.current, list.versions.first()) {
        (Some(_), _) => {
            Some(state.cms.read_item_source(principal, collection, &file).await?.meta.title.into())
        }
        (None, Some(newest)) => {
            let newest = VersionId::new(newest.timestamp)?;
            let version = state.cms.read_version(principal, collection, &file, newest).await?;
            version.doc.fm.get("title").and_then(|t| t.as_str()).map(str::to_owned)
        }
        (None, None) => None,
    };
    Ok(title.filter(|t| !t.trim().is_empty()).unwrap_or_else(|| list.filename.clone()))
}

/// `GET /admin/collections/{collection}/items/{item}/history`
pub async fn versions(
    user: SignedIn,
    path: web::Path<(String, String)>,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    let (collection, item) = path.into_inner();
    let collection = super::collection_at(&state, &collection)?;
    let list = state.cms.list_versions(&user.principal, collection, &ItemRef::parse(&item)?).await?;
    let title = title_of(&state, &user.principal, collection, &list).await?;
    let href = item_href(collection, &list.filename);
    let versions = list
        .versions
        .iter()
        .map(|v| VersionRow {
            when: Moment::unix(v.timestamp),
            label: view::unix_time(v.timestamp),
            author: author_text(v.author.as_deref()),
            size: view::size(v.size),
            href: format!("{href}/history/{}", v.timestamp),
            commit: v.commit.as_deref().map(|commit| commit.chars().take(12).collect()),
        })
        .collect::<Vec<_>>();
    let in_git = versions.iter().any(|v| v.commit.is_some());
    let current = list.current.map(|(modified, size)| (Moment::unix(modified), view::size(size)));
    view::ok(&HistoryPage {
        l: Layout::new(&state, &user, Section::Collection(collection.family())),
        collection: CollectionLink::of(collection),
        title,
        filename: list.filename,
        item_href: href,
        current,
        versions,
        in_git,
        deleted_href: super::links::list_href(collection),
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
    author: String,
    /// The item is deleted: the version is compared with nothing.
    deleted: bool,
    deleted_href: String,
    /// `None` when the role may not restore.
    restore_action: Option<String>,
    rows: Vec<Row>,
    differs: bool,
}

/// `GET /admin/collections/{collection}/items/{item}/history/{version}`: the version (left)
/// against the current file (right), or against nothing once the item is deleted.
pub async fn diff(
    user: SignedIn,
    path: web::Path<(String, String, String)>,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    let (collection, item, version) = path.into_inner();
    let collection = super::collection_at(&state, &collection)?;
    let version = VersionId::parse(&version)?;
    let list = state.cms.list_versions(&user.principal, collection, &ItemRef::parse(&item)?).await?;
    // The file the history is of, to read the same file (a slug may name several).
    let file = ItemRef::parse(&list.filename)?;
    let old = state.cms.read_version(&user.principal, collection, &file, version).await?;
    let author =
        list.versions.iter().find(|v| v.timestamp == old.stamp.timestamp).and_then(|v| v.author.clone());
    let (title, current_text) = match list.current {
        Some(_) => {
            let current = state.cms.read_item_source(&user.principal, collection, &file).await?;
            (current.meta.title.into(), current.doc.to_file_text()?)
        }
        None => (title_of(&state, &user.principal, collection, &list).await?, String::new()),
    };
    let rows = diff::side_by_side(&old.doc.to_file_text()?, &current_text);
    let href = item_href(collection, &list.filename);
    let may_restore = policy::may(&user.principal, Operation::RestoreVersion);
    view::ok(&DiffPage {
        l: Layout::new(&state, &user, Section::Collection(collection.family())),
        collection: CollectionLink::of(collection),
        title,
        restore_action: may_restore.then(|| format!("{href}/history/{}/restore", old.stamp.timestamp)),
        item_href: href,
        when: view::unix_time(old.stamp.timestamp),
        author: author_text(author.as_deref()),
        deleted: list.current.is_none(),
        deleted_href: super::links::list_href(collection),
        differs: diff::differs(&rows),
        rows,
    })
}

/// `POST /admin/collections/{collection}/items/{item}/history/{version}/restore`: also
/// brings a deleted item back.
pub async fn restore(
    posted: PostedForm,
    path: web::Path<(String, String, String)>,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    let (collection, item, version) = path.into_inner();
    let collection = super::collection_at(&state, &collection)?;
    let version = VersionId::parse(&version)?;
    let (outcome, _) = state
        .cms
        .restore_version(&posted.user.principal, collection, &ItemRef::parse(&item)?, version, None)
        .await?;
    Ok(view::see_other(&format!("{}?ok=restored", item_href(collection, &outcome.filename))))
}
