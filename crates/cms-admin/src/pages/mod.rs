//! The editor's pages, one module per area. Handlers are thin: extract (the signed-in
//! user, a CSRF-checked form), check the role, call the facade, render or redirect.

mod deleted;
mod history;
mod home;
mod items;
mod keys;
mod links;
mod live;
mod media;
mod share;
mod signin;
mod suggest;
mod theme;
mod translations;
mod users;
mod webhooks;

use actix_web::{HttpRequest, HttpResponse, web};
use cms_core::CoreResult;
use cms_core::collection::Collection;
use cms_core::policy::Principal;
use cms_core::service::RawItem;
use cms_core::slug::ItemRef;

use crate::AdminState;
use crate::error::{AdminError, AdminResult};

/// The route table under `/admin`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    // One resource per path, so that a wrong method is answered 405, not 404.
    for resource in [
        web::resource("/").route(web::get().to(home::dashboard)),
        web::resource("/assets/{name}").route(web::get().to(crate::assets::serve)),
        web::resource("/signin").route(web::get().to(signin::form)).route(web::post().to(signin::submit)),
        web::resource("/signout").route(web::post().to(signin::sign_out)),
        web::resource("/preview").route(web::post().to(items::preview)),
        web::resource("/events").route(web::get().to(live::stream)),
        web::resource("/collections/{collection}").route(web::get().to(items::list)),
        web::resource("/collections/{collection}/suggest").route(web::get().to(suggest::suggest)),
        web::resource("/collections/{collection}/new")
            .route(web::get().to(items::new_form))
            .route(web::post().to(items::create)),
        web::resource("/collections/{collection}/items/{item}")
            .route(web::get().to(items::edit))
            .route(web::post().to(items::save)),
        web::resource("/collections/{collection}/items/{item}/delete")
            .route(web::get().to(items::confirm_delete))
            .route(web::post().to(items::delete)),
        web::resource("/collections/{collection}/items/{item}/notice/dismiss")
            .route(web::post().to(items::dismiss_notice)),
        web::resource("/collections/{collection}/items/{item}/translate/{lang}")
            .route(web::post().to(translations::translate)),
        web::resource("/collections/{collection}/items/{item}/source-diff")
            .route(web::get().to(translations::source_diff)),
        web::resource("/collections/{collection}/items/{item}/share")
            .route(web::get().to(share::confirm))
            .route(web::post().to(share::create)),
        web::resource("/collections/{collection}/items/{item}/history")
            .route(web::get().to(history::versions)),
        web::resource("/collections/{collection}/items/{item}/history/{version}")
            .route(web::get().to(history::diff)),
        web::resource("/collections/{collection}/items/{item}/history/{version}/restore")
            .route(web::post().to(history::restore)),
        // Deleted items come back (their history pages are the ones above).
        web::resource("/collections/{collection}/deleted").route(web::get().to(deleted::list)),
        web::resource("/collections/{collection}/deleted/{item}/restore")
            .route(web::post().to(deleted::restore)),
        web::resource("/media").route(web::get().to(media::browse)),
        web::resource("/media/upload").route(web::post().to(media::upload)),
        web::resource("/media/rename").route(web::post().to(media::rename)),
        web::resource("/media/move").route(web::post().to(media::move_file)),
        web::resource("/media/delete")
            .route(web::get().to(media::confirm_delete))
            .route(web::post().to(media::delete)),
        web::resource("/media/folder").route(web::post().to(media::create_folder)),
        web::resource("/keys").route(web::get().to(keys::list)).route(web::post().to(keys::create)),
        web::resource("/keys/revoke")
            .route(web::get().to(keys::confirm_revoke))
            .route(web::post().to(keys::revoke)),
        web::resource("/webhooks").route(web::get().to(webhooks::list)).route(web::post().to(webhooks::add)),
        web::resource("/webhooks/state").route(web::post().to(webhooks::set_state)),
        web::resource("/webhooks/remove")
            .route(web::get().to(webhooks::confirm_remove))
            .route(web::post().to(webhooks::remove)),
        web::resource("/webhooks/log/clear")
            .route(web::get().to(webhooks::confirm_clear_log))
            .route(web::post().to(webhooks::clear_log)),
        web::resource("/theme").route(web::get().to(theme::form)).route(web::post().to(theme::save)),
        web::resource("/users").route(web::get().to(users::list)).route(web::post().to(users::add)),
        web::resource("/users/role").route(web::post().to(users::set_role)),
        web::resource("/users/remove")
            .route(web::get().to(users::confirm_remove))
            .route(web::post().to(users::remove)),
    ] {
        cfg.service(resource.default_service(web::to(wrong_method)));
    }
}

/// The item a page under `/admin/collections/{collection}/items/{item}` is about: its
/// collection, its stored source, and the item page's address (named by the filename, so
/// that a slug in the path still links to the one file).
struct ItemAt<'a> {
    collection: &'a Collection,
    raw: RawItem,
    href: String,
}

impl<'a> ItemAt<'a> {
    /// Read as `user` may (the policy's `ReadDrafts`).
    async fn read(
        state: &'a AdminState,
        user: &Principal,
        collection: &str,
        item: &str,
    ) -> AdminResult<Self> {
        let collection = collection_at(state, collection)?;
        let raw = state.cms.read_item_source(user, collection, &ItemRef::parse(item)?).await?;
        let href = links::item_href(collection, &raw.meta.filename);
        Ok(Self { collection, raw, href })
    }
}

/// The collection a path of the editor names (see [`links::segment`]): a configured one
/// by its slug or index, or a translation's, `blog-posts.fr`.
pub(crate) fn collection_at<'a>(state: &'a AdminState, key: &str) -> CoreResult<&'a Collection> {
    let cms = &state.cms;
    if let (Some(languages), Some((family, code))) = (cms.languages(), key.rsplit_once('.')) {
        // Not a language of the site: no such collection.
        let at = languages
            .find(code)
            .ok_or_else(|| cms_core::CoreError::not_found(format!("no collection {key:?}")))?;
        return Ok(cms.in_language(cms.collection(family)?, at));
    }
    cms.collection(key)
}

/// A path of the editor asked with a method it does not answer.
async fn wrong_method(req: HttpRequest) -> HttpResponse {
    HttpResponse::MethodNotAllowed().content_type("text/plain; charset=utf-8").body(format!(
        "{} is not answered at {}",
        req.method(),
        req.path()
    ))
}

/// Anything else under `/admin/`.
pub async fn not_found(req: HttpRequest) -> Result<HttpResponse, AdminError> {
    Err(AdminError::Core(cms_core::CoreError::not_found(format!(
        "there is no page at {} in the editor; the address may be mistyped, or what it showed was moved or deleted",
        req.path()
    ))))
}

/// A query parameter of a page (`?name=value`), first value wins.
pub fn query_param(req: &HttpRequest, name: &str) -> Option<String> {
    form_urlencoded::parse(req.query_string().as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// A confirmation page: what will happen, and a form that does it.
#[derive(askama::Template)]
#[template(path = "confirm.html")]
pub struct ConfirmPage {
    pub l: crate::view::Layout,
    pub heading: String,
    pub message: String,
    pub action: String,
    pub fields: Vec<(&'static str, String)>,
    pub button: &'static str,
    pub cancel: String,
}
