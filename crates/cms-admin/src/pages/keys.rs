//! API and MCP keys (owner): the list, create (shown once, with a copy button), revoke.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use cms_core::account::{KEY_RANDOM_BYTES, KeyFamily};
use cms_core::policy::Operation;

use cms_core::CoreError;

use super::{ConfirmPage, query_param};
use crate::AdminState;
use crate::auth::{PostedForm, SignedIn, random};
use crate::error::{AdminError, AdminResult, message_of};
use crate::readable::Moment;
use crate::view::{self, Layout, Section, query_escape};

struct KeyRow {
    id: String,
    /// `/admin/keys/revoke?id=`: the confirmation.
    revoke_href: String,
    /// `api` (the REST API) or `mcp` (the AI-agent endpoint).
    kind: &'static str,
    email: String,
    name: String,
    created: Moment,
}

/// A key just made: its plaintext is on this page and nowhere else, ever.
struct NewKey {
    id: String,
    plaintext: String,
}

#[derive(Template)]
#[template(path = "keys.html")]
struct KeysPage {
    l: Layout,
    keys: Vec<KeyRow>,
    users: Vec<String>,
    me: String,
    new_key: Option<NewKey>,
    error: Option<String>,
}

async fn page(state: &AdminState, user: &SignedIn, l: Layout) -> AdminResult<KeysPage> {
    let keys = state
        .cms
        .keys(&user.principal)
        .await?
        .into_iter()
        .map(|k| KeyRow {
            kind: KeyFamily::of(&k).as_str(),
            revoke_href: format!("/admin/keys/revoke?id={}", query_escape(&k.id)),
            id: k.id,
            email: k.email,
            name: k.name,
            created: Moment::unix(k.created),
        })
        .collect();
    let users = state.cms.users_by_role(&user.principal).await?.into_iter().map(|u| u.email).collect();
    Ok(KeysPage { l, keys, users, me: user.email().to_owned(), new_key: None, error: None })
}

/// `GET /admin/keys`
pub async fn list(
    user: SignedIn,
    req: HttpRequest,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    let l = Layout::new(&state, &user, Section::Keys).with_notice(query_param(&req, "ok").as_deref());
    view::ok(&page(&state, &user, l).await?)
}

/// `POST /admin/keys` (`user`, `name`, `kind`: `api` or `mcp`): the new key is shown on
/// the answer, once.
pub async fn create(posted: PostedForm, state: web::Data<AdminState>) -> AdminResult<HttpResponse> {
    let user = &posted.user;
    state.cms.authorize(&user.principal, Operation::ManageKeys).await?;
    let owner = posted.fields.text("user").trim();
    let owner = if owner.is_empty() { user.email() } else { owner };
    let name = match posted.fields.text("name").trim() {
        "" => "editor",
        name => name,
    };
    let family = match posted.fields.text("kind") {
        "" | "api" => KeyFamily::Api,
        "mcp" => KeyFamily::Agent,
        other => {
            return Err(crate::error::AdminError::bad_request(format!(
                "kind must be api or mcp, not {other:?}"
            )));
        }
    };
    let created =
        state.cms.create_key_of(&user.principal, family, owner, name, random::<KEY_RANDOM_BYTES>()?).await;
    let l = Layout::new(&state, user, Section::Keys);
    match created {
        Ok(key) => {
            let mut page = page(&state, user, l).await?;
            page.new_key = Some(NewKey { id: key.record.id, plaintext: key.plaintext });
            view::ok(&page)
        }
        Err(error) => {
            let mut page = page(&state, user, l).await?;
            page.error = Some(message_of(&error));
            view::page(StatusCode::UNPROCESSABLE_ENTITY, &page)
        }
    }
}

/// `GET /admin/keys/revoke?id=`: what revoking the key stops, and the form that does it
/// (a key is not brought back: a confirmation first, as for removing a user).
pub async fn confirm_revoke(
    user: SignedIn,
    req: HttpRequest,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    let id = query_param(&req, "id")
        .filter(|id| !id.is_empty())
        .ok_or_else(|| AdminError::bad_request("name the key to revoke"))?;
    let key = state
        .cms
        .keys(&user.principal)
        .await?
        .into_iter()
        .find(|k| k.id == id)
        .ok_or_else(|| CoreError::not_found(format!("no key {id}")))?;
    view::ok(&ConfirmPage {
        l: Layout::new(&state, &user, Section::Keys),
        heading: format!("Revoke the key “{}”?", key.name),
        message: format!(
            "The {} key {} of {} will stop working at once: anything that uses it gets 401 \
             until it is given a new key. A revoked key cannot be brought back.",
            KeyFamily::of(&key).as_str(),
            key.id,
            key.email
        ),
        action: "/admin/keys/revoke".into(),
        fields: vec![("id", key.id)],
        button: "Revoke",
        cancel: "/admin/keys".into(),
    })
}

/// `POST /admin/keys/revoke` (`id`)
pub async fn revoke(posted: PostedForm, state: web::Data<AdminState>) -> AdminResult<HttpResponse> {
    state.cms.authorize(&posted.user.principal, Operation::ManageKeys).await?;
    state.cms.revoke_key(&posted.user.principal, posted.fields.required("id", "The key id")?).await?;
    Ok(view::see_other("/admin/keys?ok=key-revoked"))
}
