//! Items: the list with filters and pages, the edit form with its live preview, create,
//! save (with `If-Match`), publish and unpublish, delete.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use cms_core::codec;
use cms_core::collection::Collection;
use cms_core::document::Frontmatter;
use cms_core::item::{ItemMeta, Status, whole_secs};
use cms_core::model::{FieldError, Model};
use cms_core::policy::{self, Operation, Principal};
use cms_core::query::{ListQuery, OrderBy, StatusFilter, TextMatch};
use cms_core::service::{ItemUpdate, NewItem, Precondition, UpdateMode, Viewer};
use cms_core::slug::{ItemRef, slugify};
use cms_core::{CoreError, CoreResult};

use super::links::{CollectionLink, item_href};
use super::{ConfirmPage, ItemAt, query_param};
use crate::AdminState;
use crate::auth::{PostedForm, SignedIn};
use crate::diff::{self, Row};
use crate::error::{AdminError, AdminResult, form_error_status, message_of};
use crate::forms::{Fields, unix_lines};
use crate::item_form::ItemForm;
use crate::media_library::{MediaLibrary, MediaView};
use crate::model_form::ModelForm;
use crate::model_view::{Lookups, ModelView, Summary};
use crate::pager::{PageLink, page_links};
use crate::preview;
use crate::readable::{self, Moment};
use crate::view::{self, Layout, Section, query_escape};

/// Items on one page of the list.
const PER_PAGE: usize = 20;

struct ItemRow {
    title: String,
    /// What the live list's events name the item by.
    slug: String,
    filename: String,
    href: String,
    /// `published`, `draft`, or why a published item is not live now (see [`shown_status`]),
    /// and the badge's class.
    status: (&'static str, &'static str),
    /// The item's date read as an instant, else as written.
    date: Result<Moment, String>,
    tags: String,
    modified: Moment,
    /// The file breaks its collection's model (edited by hand): its edit page says how.
    breaks_model: bool,
}

struct Filters {
    status: String,
    tag: String,
    q: String,
}

#[derive(Template)]
#[template(path = "items.html")]
struct ItemsPage {
    l: Layout,
    collection: CollectionLink,
    items: Vec<ItemRow>,
    filters: Filters,
    status_options: [(&'static str, &'static str, bool); 4],
    /// `3 items`, `1 item`.
    count: String,
    skipped_count: String,
    /// Every tag of the collection, and whether it is the one filtered on.
    tags: Vec<(String, bool)>,
    pages: Vec<PageLink>,
    skipped: Vec<(String, String)>,
    /// After a delete: its Undo.
    undo: Option<super::deleted::Undo>,
    deleted_href: String,
    /// The collection's live stream, which the script follows to fetch the list again.
    live: Option<String>,
    /// On a site with languages: each language's list (name, code, link, whether it is
    /// this one).
    languages: Vec<(String, String, String, bool)>,
}

/// `GET /admin/collections/{collection}?status=&tag=&q=&page=`
pub async fn list(
    user: SignedIn,
    req: HttpRequest,
    path: web::Path<String>,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    let collection = super::collection_at(&state, &path)?;
    let filters = Filters {
        status: query_param(&req, "status").unwrap_or_else(|| "all".into()),
        tag: query_param(&req, "tag").unwrap_or_default(),
        q: query_param(&req, "q").unwrap_or_default().trim().to_owned(),
    };
    // As `status=` of the REST API: published means live now; scheduled, published but
    // outside its window (docs/publishing.md).
    let status = match filters.status.as_str() {
        "all" | "" => StatusFilter::All,
        "published" => StatusFilter::Published,
        "scheduled" => StatusFilter::Scheduled,
        "draft" => StatusFilter::Draft,
        other => {
            return Err(AdminError::bad_request(format!(
                "status must be all, published, scheduled or draft, not {other:?}"
            )));
        }
    };
    let page: usize = match query_param(&req, "page") {
        None => 1,
        Some(raw) => raw.parse().ok().filter(|p| *p >= 1).ok_or_else(|| {
            AdminError::bad_request(format!("page must be a whole number from 1, got {raw:?}"))
        })?,
    };
    // The REST API's list, as the signed-in user: a page cut from the kept index, in the
    // editor's order (newest first; undated items after the dated ones, by last change).
    let tag_slug = slugify(&filters.tag);
    let query = ListQuery {
        page,
        per_page: Some(PER_PAGE),
        status,
        tags: if tag_slug.is_empty() { Vec::new() } else { vec![tag_slug.clone()] },
        order_by: OrderBy::Newest,
        text: TextMatch::new(&filters.q),
        ..ListQuery::default()
    };
    let viewer = Viewer::Key(user.principal.clone());
    // Where the events stand before the list is read: a change after this is streamed.
    let live = super::live::url(super::live::since(&state).await, collection, None);
    let listed = state.cms.list_items(collection, &query, &viewer).await?;
    let tags = state.cms.collection_tags(collection, &viewer).await?;
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let (total, last_page) = (listed.total_items, listed.last_page);
    let items = listed
        .items
        .iter()
        .map(|entry| &entry.item)
        .map(|item| ItemRow {
            title: item.meta.title.to_string(),
            slug: item.meta.slug.to_string(),
            filename: item.meta.filename.to_string(),
            href: item_href(collection, &item.meta.filename),
            status: shown_status(&item.meta, now),
            date: item
                .meta
                .date_at
                .map(Moment::of)
                .ok_or_else(|| item.meta.date.as_deref().unwrap_or_default().to_owned()),
            tags: item.meta.tags.join(", "),
            modified: Moment::unix(item.meta.modified),
            breaks_model: item.breaks_model(),
        })
        .collect();
    let link = |p: usize| {
        format!(
            "/admin/collections/{}?status={}&tag={}&q={}&page={p}",
            super::links::segment(collection),
            query_escape(&filters.status),
            query_escape(&filters.tag),
            query_escape(&filters.q)
        )
    };
    let pages = page_links(page, last_page, link);
    let skipped: Vec<(String, String)> = state
        .cms
        .skipped_files()
        .await
        .into_iter()
        .filter(|s| s.collection == collection.slug)
        .map(|s| (s.filename, s.reason))
        .collect();
    let l = Layout::new(&state, &user, Section::Collection(collection.family()))
        .with_notice(query_param(&req, "ok").as_deref());
    let status_options = [
        ("all", "All", status == StatusFilter::All),
        ("published", "Published", status == StatusFilter::Published),
        ("scheduled", "Scheduled", status == StatusFilter::Scheduled),
        ("draft", "Drafts", status == StatusFilter::Draft),
    ];
    // One entry per tag slug, selected when it is the one filtered on (however spelled).
    let tags = tags
        .into_iter()
        .map(|tag| {
            let selected = !tag_slug.is_empty() && tag.slug == tag_slug;
            (tag.tag, selected)
        })
        .collect();
    view::ok(&ItemsPage {
        l,
        undo: super::deleted::Undo::offered(&req, &user, collection),
        deleted_href: super::links::list_href(collection),
        collection: CollectionLink::of(collection),
        items,
        count: readable::count(total, "item", "items"),
        skipped_count: readable::count(skipped.len(), "file", "files"),
        filters,
        status_options,
        tags,
        pages,
        skipped,
        live,
        languages: language_lists(&state, collection),
    })
}

/// The lists of `collection` in each language of the site (none without languages).
fn language_lists(state: &AdminState, collection: &Collection) -> Vec<(String, String, String, bool)> {
    let Some(languages) = state.cms.languages() else { return Vec::new() };
    languages
        .all()
        .iter()
        .enumerate()
        .map(|(at, language)| {
            let lane = state.cms.in_language(collection, at);
            let href = CollectionLink::of(lane).href;
            (language.name.clone(), language.code.to_string(), href, lane.index == collection.index)
        })
        .collect()
}

/// An item's status as the list shows it, and its badge's class: a published item that is
/// not live now says why.
fn shown_status(meta: &ItemMeta, now: i64) -> (&'static str, &'static str) {
    match (meta.status, &meta.schedule) {
        (Status::Published, Some(schedule)) if !meta.live_at(now) => {
            if schedule.publish_at.is_some_and(|at| whole_secs(at) > now) {
                ("scheduled", "scheduled")
            } else if schedule.unpublish_at.is_some_and(|at| whole_secs(at) <= now) {
                ("expired", "expired")
            } else {
                // A `publish_date` that names no instant keeps the item hidden.
                ("hidden: unreadable date", "hidden")
            }
        }
        (status, _) => (status.as_str(), status.as_str()),
    }
}

/// What the edit page shows when a save met a newer version.
struct Conflict {
    /// Asked for (*Compare*, before saving) rather than met by a save.
    asked: bool,
    /// Their text against yours, side by side.
    rows: Vec<Row>,
    /// Their frontmatter, as YAML.
    their_fields: String,
}

#[derive(Template)]
#[template(path = "edit.html")]
struct EditPage {
    l: Layout,
    collection: CollectionLink,
    /// `None` for a new item.
    filename: Option<String>,
    action: String,
    form: ItemForm,
    etag: String,
    preview: String,
    error: Option<String>,
    conflict: Option<Conflict>,
    history_href: String,
    delete_href: String,
    /// The inputs of a collection with a model (`None`: the fixed fields).
    model: Option<ModelView>,
    /// Field errors: of a refused save, or of a stored item that breaks its model.
    summary: Option<Summary>,
    /// The media library the body's *Insert image* and image fields pick from.
    media: Option<MediaView>,
    /// The stored item's status as the list shows it (a published item not live now says
    /// scheduled or expired), for the action bar; `None` on a new or refused form.
    stored_status: Option<(&'static str, &'static str)>,
    /// The item's live stream, which the script follows to say that someone else saved.
    live: Option<String>,
    /// What the binary's parts say of the item (a git pull's conflict).
    notice: Option<NoticeView>,
    /// Its languages, on a site with `languages:`.
    languages: Option<super::translations::LanguagesView>,
}

struct NoticeView {
    heading: String,
    text: String,
    /// The side-by-side view of the newest version against the current one.
    compare_href: Option<String>,
    /// The dismiss button: its label and where it posts.
    dismiss: Option<(String, String)>,
}

impl EditPage {
    fn new(l: Layout, collection: &Collection, filename: Option<&str>, form: ItemForm, etag: String) -> Self {
        let base = filename.map(|f| item_href(collection, f));
        Self {
            l,
            action: base
                .clone()
                .unwrap_or_else(|| format!("/admin/collections/{}/new", super::links::segment(collection))),
            history_href: base.as_ref().map(|b| format!("{b}/history")).unwrap_or_default(),
            delete_href: base.map(|b| format!("{b}/delete")).unwrap_or_default(),
            collection: CollectionLink::of(collection),
            filename: filename.map(str::to_owned),
            preview: preview::html(&form.body),
            form,
            etag,
            error: None,
            conflict: None,
            model: None,
            summary: None,
            media: None,
            stored_status: None,
            live: None,
            notice: None,
            languages: None,
        }
    }

    /// The page of `form`; a form of a collection with a model gets its inputs, with
    /// `errors` at their fields and in a summary at the top: of a refused save (focused)
    /// when `refused`, else of the stored item (a notice).
    #[allow(clippy::too_many_arguments)]
    async fn of(
        state: &AdminState,
        principal: &Principal,
        l: Layout,
        collection: &Collection,
        filename: Option<&str>,
        form: &Form<'_>,
        etag: String,
        errors: &[FieldError],
        refused: bool,
    ) -> Self {
        let mut page = Self::new(l, collection, filename, form.shared(), etag);
        let media = MediaLibrary::load(state, principal).await;
        page.media = media.view();
        if let Form::Modelled(model, form) = form {
            if page.form.title.trim().is_empty() {
                // A model without a title field: the heading names the file.
                page.form.title = filename.unwrap_or_default().to_owned();
            }
            let lookups = Lookups::load(state, principal, model, &media).await;
            let view = ModelView::new(model, form, &lookups, errors);
            let count = errors.len();
            let heading = if refused {
                format!("Nothing was saved: {count} field{} to fix", if count == 1 { "" } else { "s" })
            } else {
                format!(
                    "This item breaks its collection's model ({count} field{}): it is still served, \
                     but cannot be saved until fixed. Its file was probably edited by hand.",
                    if count == 1 { "" } else { "s" }
                )
            };
            page.summary = view.summary(errors, heading, refused);
            page.model = Some(view);
        }
        page
    }

    /// ` lang="fr" dir="ltr"`: the language of the item's text, on its inputs and preview
    /// (screen readers and right-to-left text); empty on a site without languages.
    fn text_lang(&self) -> String {
        self.languages
            .as_ref()
            .map_or_else(String::new, |l| format!(" lang=\"{}\" dir=\"{}\"", l.code, l.dir))
    }

    fn status_options(&self) -> [(&'static str, &'static str, bool); 2] {
        let status = self.form.status.as_str();
        [("draft", "Draft", status != "published"), ("published", "Published", status == "published")]
    }
}

/// `GET /admin/collections/{collection}/items/{item}`
pub async fn edit(
    user: SignedIn,
    req: HttpRequest,
    path: web::Path<(String, String)>,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    let (collection, item) = path.into_inner();
    // Where the events stand before the item is read: a save after this is streamed.
    let since = super::live::since(&state).await;
    let ItemAt { collection, raw, .. } = ItemAt::read(&state, &user.principal, &collection, &item).await?;
    let form = Form::of(collection, &raw.doc.fm, &raw.doc.body)?;
    // An item edited by hand may break the model: shown at its fields, as a save's errors.
    // Only a notice: when it cannot be worked out (a media folder unreadable), the page
    // still opens.
    let errors = state.cms.model_errors(collection, &raw.doc.fm).await.unwrap_or_else(|error| {
        tracing::warn!(%error, collection = collection.slug.as_str(), "cannot check an item against its model");
        Vec::new()
    });
    let l = Layout::new(&state, &user, Section::Collection(collection.family()))
        .with_notice(query_param(&req, "ok").as_deref());
    let filename = Some(&*raw.meta.filename);
    let mut page =
        EditPage::of(&state, &user.principal, l, collection, filename, &form, raw.etag, &errors, false).await;
    page.stored_status = Some(shown_status(&raw.meta, time::OffsetDateTime::now_utc().unix_timestamp()));
    page.live = super::live::url(since, collection, Some(&raw.meta.slug));
    page.notice = notice(&state, &user.principal, collection, &raw.meta.filename).await;
    page.languages = super::translations::view(&state, &user.principal, collection, &raw.meta.filename).await;
    view::ok(&page)
}

/// What the binary's parts say of the item, with the side-by-side view of its newest
/// version when the notice asks for it (and the user may read the history).
async fn notice(
    state: &AdminState,
    principal: &Principal,
    collection: &Collection,
    filename: &str,
) -> Option<NoticeView> {
    let notice = state.notices.as_ref().and_then(|notices| notices(collection, filename))?;
    let compare_href = if notice.compare_newest {
        let item = ItemRef::parse(filename).ok();
        let versions = match item {
            Some(item) => state.cms.list_versions(principal, collection, &item).await.ok(),
            None => None,
        };
        versions.and_then(|list| {
            let newest = list.versions.iter().map(|version| version.timestamp).max()?;
            Some(format!("{}/history/{newest}", item_href(collection, filename)))
        })
    } else {
        None
    };
    let dismiss = notice
        .dismiss
        .filter(|_| state.dismiss_notice.is_some() && policy::may(principal, Operation::UpdateItem))
        .map(|label| (label, format!("{}/notice/dismiss", item_href(collection, filename))));
    Some(NoticeView { heading: notice.heading, text: notice.text, compare_href, dismiss })
}

/// `POST /admin/collections/{collection}/items/{item}/notice/dismiss`: the user marks the
/// item's notice done (a git conflict resolved, once both versions were looked at).
pub async fn dismiss_notice(
    posted: PostedForm,
    path: web::Path<(String, String)>,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    let (collection, item) = path.into_inner();
    let principal = &posted.user.principal;
    let ItemAt { collection, raw, href } = ItemAt::read(&state, principal, &collection, &item).await?;
    state.cms.authorize(principal, Operation::UpdateItem).await?;
    let dismissed = match &state.dismiss_notice {
        Some(dismiss) => dismiss(collection, &raw.meta.filename)
            .map_err(|why| CoreError::internal("marking the item's notice resolved", why))?,
        None => false,
    };
    let code = if dismissed { "notice-dismissed" } else { "notice-gone" };
    Ok(view::see_other(&format!("{href}?ok={code}")))
}

/// `GET /admin/collections/{collection}/new`
pub async fn new_form(
    user: SignedIn,
    path: web::Path<String>,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    let collection = super::collection_at(&state, &path)?;
    let l = Layout::new(&state, &user, Section::Collection(collection.family()));
    let form = Form::blank(collection)?;
    view::ok(
        &EditPage::of(&state, &user.principal, l, collection, None, &form, String::new(), &[], false).await,
    )
}

/// `POST /admin/collections/{collection}/new`
pub async fn create(
    posted: PostedForm,
    path: web::Path<String>,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    let collection = super::collection_at(&state, &path)?;
    Form::check_kind(collection, &posted.fields)?;
    let form = Form::from_fields(collection, &posted.fields);
    let created = async {
        let fm = form.new_frontmatter()?;
        let slug = (!form.slug().is_empty()).then(|| form.slug().to_owned());
        state
            .cms
            .create_item(
                &posted.user.principal,
                collection,
                NewItem { slug, date_prefix: None, fm, body: form.body().to_owned() },
            )
            .await
    }
    .await;
    match created {
        Ok(outcome) => {
            Ok(view::see_other(&format!("{}?ok=created", item_href(collection, &outcome.filename))))
        }
        Err(error) => {
            let l = Layout::new(&state, &posted.user, Section::Collection(collection.family()));
            let page = refused_page(
                &state,
                &posted.user.principal,
                l,
                collection,
                None,
                &form,
                String::new(),
                &error,
            )
            .await;
            view::page(form_error_status(&error), &page)
        }
    }
}

/// `POST /admin/collections/{collection}/items/{item}` (`action`: save, publish,
/// unpublish): the form's changes over the stored item, only if it is still the version
/// the form was made from (`etag`, sent as `If-Match`). `action=compare` saves nothing:
/// the saved version against the form's, as a conflict shows them (the live notice's
/// button, when someone else saved meanwhile).
pub async fn save(
    posted: PostedForm,
    path: web::Path<(String, String)>,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    let (collection, item) = path.into_inner();
    let collection = super::collection_at(&state, &collection)?;
    let fields = &posted.fields;
    Form::check_kind(collection, fields)?;
    let form = Form::from_fields(collection, fields);
    let etag = fields.required("etag", "The version the form was made from (etag)")?.to_owned();
    let (status, done) = match fields.get("action").unwrap_or("save") {
        "compare" => {
            let l = Layout::new(&state, &posted.user, Section::Collection(collection.family()));
            let item = ItemRef::parse(&item)?;
            return compared(&state, &posted.user.principal, l, collection, &item, &form, true).await;
        }
        "save" => (None, "saved"),
        "publish" => (Some(Status::Published), "published"),
        "unpublish" => (Some(Status::Draft), "unpublished"),
        other => return Err(AdminError::bad_request(format!("unknown action {other:?}"))),
    };
    let item = ItemRef::parse(&item)?;
    let stored = state.cms.read_item_source(&posted.user.principal, collection, &item).await?;
    let saved = async {
        let changes = form.changes_from(&stored.doc.fm, status)?;
        let mut body = form.body().to_owned();
        if stored.doc.body.contains("\r\n") {
            // The file was written with CRLF line endings: keep them.
            body = body.replace('\n', "\r\n");
        }
        let update = ItemUpdate { mode: UpdateMode::Patch, fm: changes, body: Some(body) };
        state
            .cms
            .update_item(
                &posted.user.principal,
                collection,
                &item,
                update,
                Some(&Precondition::from_if_match(&etag)),
            )
            .await
    }
    .await;
    let l = Layout::new(&state, &posted.user, Section::Collection(collection.family()));
    match saved {
        Ok(outcome) => {
            Ok(view::see_other(&format!("{}?ok={done}", item_href(collection, &outcome.filename))))
        }
        Err(CoreError::PreconditionFailed(_)) => {
            // Someone saved first. Nothing was written: show both, and let a second save
            // (against their version now) put this one over it on purpose.
            compared(&state, &posted.user.principal, l, collection, &item, &form, false).await
        }
        Err(error) => {
            let filename = Some(&*stored.meta.filename);
            let page =
                refused_page(&state, &posted.user.principal, l, collection, filename, &form, etag, &error)
                    .await;
            view::page(form_error_status(&error), &page)
        }
    }
}

/// The edit page with the saved version against the form's (`asked`: *Compare*, `200`;
/// else a save that met a newer version, `409`). The form now carries the saved version's
/// etag, so that a save puts the form's version over it on purpose.
async fn compared(
    state: &AdminState,
    principal: &Principal,
    l: Layout,
    collection: &Collection,
    item: &ItemRef,
    form: &Form<'_>,
    asked: bool,
) -> AdminResult<HttpResponse> {
    let theirs = state.cms.read_item_source(principal, collection, item).await?;
    let conflict = Conflict {
        asked,
        rows: diff::side_by_side(&theirs.doc.body, form.body()),
        their_fields: match form {
            Form::Plain(_) => ItemForm::of(&theirs.doc.fm, "")?.fields_summary(),
            Form::Modelled(..) => codec::to_yaml(&theirs.doc.fm)?,
        },
    };
    let filename = Some(&*theirs.meta.filename);
    let mut page =
        EditPage::of(state, principal, l, collection, filename, form, theirs.etag, &[], false).await;
    page.conflict = Some(conflict);
    view::page(if asked { StatusCode::OK } else { StatusCode::CONFLICT }, &page)
}

/// The edit page again after a refused save, with what was typed: field errors at their
/// fields (a collection with a model), any other error above the form.
#[allow(clippy::too_many_arguments)]
async fn refused_page(
    state: &AdminState,
    principal: &Principal,
    l: Layout,
    collection: &Collection,
    filename: Option<&str>,
    form: &Form<'_>,
    etag: String,
    error: &CoreError,
) -> EditPage {
    let fields = error.field_errors();
    let mut page = EditPage::of(state, principal, l, collection, filename, form, etag, fields, true).await;
    if page.summary.is_none() {
        page.error = Some(message_of(error));
    }
    page
}

/// The edit form of a collection: the fixed fields, or inputs built from its model.
enum Form<'a> {
    Plain(ItemForm),
    Modelled(&'a Model, ModelForm),
}

impl<'a> Form<'a> {
    fn of(collection: &'a Collection, fm: &Frontmatter, body: &str) -> CoreResult<Self> {
        Ok(match &collection.model {
            Some(model) => Self::Modelled(model.as_ref(), ModelForm::of(model, fm, body)?),
            None => Self::Plain(ItemForm::of(fm, body)?),
        })
    }

    fn blank(collection: &'a Collection) -> CoreResult<Self> {
        Ok(match &collection.model {
            Some(model) => Self::Modelled(model.as_ref(), ModelForm::blank(model)?),
            None => Self::Plain(ItemForm::blank()),
        })
    }

    fn from_fields(collection: &'a Collection, fields: &Fields) -> Self {
        match &collection.model {
            Some(model) => Self::Modelled(model.as_ref(), ModelForm::from_fields(model, fields)),
            None => Self::Plain(ItemForm::from_fields(fields)),
        }
    }

    /// A posted form of the kind the collection has now: one opened before `cms.yaml` gave
    /// the collection its fields (or took them away) lacks the inputs the other kind reads,
    /// which a save would take as emptied.
    fn check_kind(collection: &Collection, fields: &Fields) -> AdminResult<()> {
        let posted_model_form = fields.get("form") == Some("model");
        if posted_model_form == collection.model.is_some() {
            return Ok(());
        }
        Err(AdminError::bad_request(
            "this form was opened before the collection's fields changed in cms.yaml, so nothing \
             was saved; open the item again (copy what you typed first: use Back)",
        ))
    }

    fn changes_from(&self, fm: &Frontmatter, status: Option<Status>) -> CoreResult<Frontmatter> {
        match self {
            Self::Plain(form) => form.changes_from(fm, status),
            Self::Modelled(model, form) => form.changes_from(model, fm, status),
        }
    }

    fn new_frontmatter(&self) -> CoreResult<Frontmatter> {
        match self {
            Self::Plain(form) => form.new_frontmatter(),
            Self::Modelled(model, form) => form.new_frontmatter(model),
        }
    }

    fn body(&self) -> &str {
        match self {
            Self::Plain(form) => &form.body,
            Self::Modelled(_, form) => &form.body,
        }
    }

    fn slug(&self) -> &str {
        match self {
            Self::Plain(form) => &form.slug,
            Self::Modelled(_, form) => &form.slug,
        }
    }

    /// What the template shows of either form (status, YAML box, text, slug, heading).
    fn shared(&self) -> ItemForm {
        match self {
            Self::Plain(form) => form.clone(),
            Self::Modelled(_, form) => form.as_item_form(),
        }
    }
}

/// `POST /admin/preview` (`body`): the Markdown as the site renders it, its headings
/// under the preview's (`preview.rs`).
pub async fn preview(posted: PostedForm) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .body(preview::html(&unix_lines(posted.fields.text("body"))))
}

/// `GET /admin/collections/{collection}/items/{item}/delete`
pub async fn confirm_delete(
    user: SignedIn,
    path: web::Path<(String, String)>,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    let (collection, item) = path.into_inner();
    let ItemAt { collection, raw, href } = ItemAt::read(&state, &user.principal, &collection, &item).await?;
    view::ok(&ConfirmPage {
        l: Layout::new(&state, &user, Section::Collection(collection.family())),
        heading: format!("Delete “{}”?", raw.meta.title),
        message: format!(
            "{} will be deleted from {}. Its history is kept, so a version can bring it back.",
            raw.meta.filename, collection.label
        ),
        action: format!("{href}/delete"),
        fields: vec![("etag", raw.etag)],
        button: "Delete",
        cancel: href,
    })
}

/// `POST /admin/collections/{collection}/items/{item}/delete` (`etag`)
pub async fn delete(
    posted: PostedForm,
    path: web::Path<(String, String)>,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    let (collection, item) = path.into_inner();
    let collection = super::collection_at(&state, &collection)?;
    let etag = posted.fields.get("etag").filter(|e| !e.is_empty());
    let item = ItemRef::parse(&item)?;
    let outcome = state
        .cms
        .delete_item(
            &posted.user.principal,
            collection,
            &item,
            etag.map(Precondition::from_if_match).as_ref(),
        )
        .await?;
    let undo = format!("undo={}", query_escape(&outcome.filename));
    Ok(view::see_other(&format!(
        "/admin/collections/{}?ok=deleted&{undo}",
        super::links::segment(collection)
    )))
}

impl ItemForm {
    /// The own fields and the YAML box in one text, for showing another version's fields.
    fn fields_summary(&self) -> String {
        let mut text = String::new();
        for (name, value) in [
            ("title", &self.title),
            ("date", &self.date),
            ("status", &self.status),
            ("tags", &self.tags),
            ("author", &self.author),
        ] {
            if !value.is_empty() {
                text.push_str(&format!("{name}: {value}\n"));
            }
        }
        text.push_str(&self.extra);
        text
    }
}
