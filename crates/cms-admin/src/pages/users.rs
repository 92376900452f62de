//! Users: admins see the list; owners add, remove and set roles and passwords.

use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use cms_core::CoreError;
use cms_core::account::{self, PASSWORD_SALT_BYTES, Role};
use cms_core::policy::{self, Operation};

use super::{ConfirmPage, query_param};
use crate::AdminState;
use crate::auth::{PostedForm, SignedIn, random};
use crate::error::{AdminError, AdminResult, form_error_status, message_of};
use crate::readable::Moment;
use crate::view::{self, Layout, Section, query_escape};

struct UserRow {
    email: String,
    role: &'static str,
    created: Moment,
    is_me: bool,
    remove_href: String,
}

#[derive(Template)]
#[template(path = "users.html")]
struct UsersPage {
    l: Layout,
    users: Vec<UserRow>,
    can_manage: bool,
    roles: [&'static str; 3],
    error: Option<String>,
    email: String,
    role: String,
}

const ROLES: [&str; 3] = ["editor", "admin", "owner"];

async fn page(state: &AdminState, user: &SignedIn, l: Layout) -> AdminResult<UsersPage> {
    let users = state
        .cms
        .users_by_role(&user.principal)
        .await?
        .into_iter()
        .map(|u| UserRow {
            is_me: u.email == user.email(),
            remove_href: format!("/admin/users/remove?email={}", query_escape(&u.email)),
            role: u.role.as_str(),
            created: Moment::unix(u.created),
            email: u.email,
        })
        .collect();
    Ok(UsersPage {
        l,
        users,
        can_manage: policy::may(&user.principal, Operation::ManageUsers),
        roles: ROLES,
        error: None,
        email: String::new(),
        role: "editor".into(),
    })
}

/// `GET /admin/users` (admin or owner)
pub async fn list(
    user: SignedIn,
    req: HttpRequest,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    let l = Layout::new(&state, &user, Section::Users).with_notice(query_param(&req, "ok").as_deref());
    view::ok(&page(&state, &user, l).await?)
}

/// `POST /admin/users` (`email`, `role`, `password` optional): adds a user, or changes an
/// existing one's role; sets the password when one is given.
pub async fn add(posted: PostedForm, state: web::Data<AdminState>) -> AdminResult<HttpResponse> {
    state.cms.authorize(&posted.user.principal, Operation::ManageUsers).await?;
    let fields = &posted.fields;
    let email = fields.text("email").trim().to_owned();
    let role = fields.text("role").to_owned();
    let password = fields.text("password").to_owned();
    let added = async {
        let role: Role = role.parse()?;
        if !password.is_empty() {
            account::check_password_rules(&password)?;
        }
        let (user, _) = state.cms.add_user(&posted.user.principal, &email, role).await?;
        if !password.is_empty() {
            let salt = random::<PASSWORD_SALT_BYTES>()
                .map_err(|e| CoreError::internal("drawing a salt", e.to_string()))?;
            let hash = web::block(move || account::hash_password(&password, salt))
                .await
                .map_err(|e| CoreError::internal("hashing a password", e.to_string()))??;
            state.cms.set_password(&posted.user.principal, &user.email, &hash).await?;
        }
        Ok::<_, CoreError>(())
    }
    .await;
    match added {
        Ok(()) => Ok(view::see_other("/admin/users?ok=user-saved")),
        Err(error) => {
            let l = Layout::new(&state, &posted.user, Section::Users);
            let mut page = page(&state, &posted.user, l).await?;
            page.error = Some(message_of(&error));
            page.email = email;
            page.role = role;
            view::page(form_error_status(&error), &page)
        }
    }
}

/// `POST /admin/users/role` (`email`, `role`)
pub async fn set_role(posted: PostedForm, state: web::Data<AdminState>) -> AdminResult<HttpResponse> {
    state.cms.authorize(&posted.user.principal, Operation::ManageUsers).await?;
    let email = posted.fields.required("email", "The user's email")?;
    let role: Role = posted.fields.text("role").parse()?;
    if state.cms.user_credentials(email).await?.is_none() {
        return Err(CoreError::not_found(format!("no user {email}")).into());
    }
    state.cms.add_user(&posted.user.principal, email, role).await?;
    Ok(view::see_other("/admin/users?ok=user-saved"))
}

/// `GET /admin/users/remove?email=`
pub async fn confirm_remove(
    user: SignedIn,
    req: HttpRequest,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    state.cms.authorize(&user.principal, Operation::ManageUsers).await?;
    let email = query_param(&req, "email")
        .filter(|e| !e.is_empty())
        .ok_or_else(|| AdminError::bad_request("name the user to remove"))?;
    view::ok(&ConfirmPage {
        l: Layout::new(&state, &user, Section::Users),
        heading: format!("Remove {email}?"),
        message: format!("{email} will be removed, their API keys revoked and their editor sessions ended."),
        action: "/admin/users/remove".into(),
        fields: vec![("email", email)],
        button: "Remove",
        cancel: "/admin/users".into(),
    })
}

/// `POST /admin/users/remove` (`email`): the user and their keys go; their sessions no
/// longer stand for anyone (`Session::stands_for`), so every server refuses them at once.
pub async fn remove(posted: PostedForm, state: web::Data<AdminState>) -> AdminResult<HttpResponse> {
    state.cms.authorize(&posted.user.principal, Operation::ManageUsers).await?;
    let email = posted.fields.required("email", "The user's email")?.to_ascii_lowercase();
    state.cms.remove_user(&posted.user.principal, &email).await?;
    Ok(view::see_other("/admin/users?ok=user-removed"))
}
