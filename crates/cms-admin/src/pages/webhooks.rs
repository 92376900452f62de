//! Webhooks (owner, with the license's `webhooks` feature): subscriptions, the delivery
//! log. The facade checks the role and the feature on every call.

use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use cms_core::CoreError;
use cms_core::events::EventKind;
use cms_core::service::Principal;

use super::{ConfirmPage, query_param};
use crate::AdminState;
use crate::auth::{PostedForm, SignedIn};
use crate::error::{AdminError, AdminResult, form_error_status, message_of};
use crate::readable::Moment;
use crate::view::{self, Layout, Section, query_escape};

struct HookRow {
    id: String,
    /// `/admin/webhooks/remove?id=`: the confirmation.
    remove_href: String,
    url: String,
    events: String,
    enabled: bool,
    created: Moment,
}

struct LogRow {
    time: Moment,
    event: &'static str,
    url: String,
    status: String,
    outcome: String,
    success: bool,
}

/// A subscription just added: its signing secret is shown here once.
struct NewHook {
    id: String,
    secret: String,
}

#[derive(Template)]
#[template(path = "webhooks.html")]
struct WebhooksPage {
    l: Layout,
    hooks: Vec<HookRow>,
    events: Vec<(&'static str, bool)>,
    url: String,
    log: Vec<LogRow>,
    new_hook: Option<NewHook>,
    error: Option<String>,
}

async fn page(state: &AdminState, principal: &Principal, l: Layout) -> AdminResult<WebhooksPage> {
    let cms = &state.cms;
    let hooks = cms
        .webhook_settings(principal)
        .await?
        .into_iter()
        .map(|h| HookRow {
            events: h.events.iter().map(|e| e.as_str()).collect::<Vec<_>>().join(", "),
            remove_href: format!("/admin/webhooks/remove?id={}", query_escape(&h.id)),
            id: h.id,
            url: h.url,
            enabled: h.enabled,
            created: Moment::of(h.created_at),
        })
        .collect();
    let log = cms
        .webhook_log(principal)
        .await?
        .into_iter()
        .map(|d| LogRow {
            time: Moment::of(d.time),
            event: d.event.as_str(),
            url: d.url,
            status: d.status.map(|s| s.to_string()).unwrap_or_else(|| "–".into()),
            outcome: d.error.unwrap_or_else(|| if d.success { "delivered".into() } else { "failed".into() }),
            success: d.success,
        })
        .collect();
    let events = EventKind::ALL.iter().map(|e| (e.as_str(), false)).collect();
    Ok(WebhooksPage { l, hooks, events, url: String::new(), log, new_hook: None, error: None })
}

/// `GET /admin/webhooks`
pub async fn list(
    user: SignedIn,
    req: HttpRequest,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    let l = Layout::new(&state, &user, Section::Webhooks).with_notice(query_param(&req, "ok").as_deref());
    view::ok(&page(&state, &user.principal, l).await?)
}

/// `POST /admin/webhooks` (`url`, `events` checked): the secret is shown on the answer, once.
pub async fn add(posted: PostedForm, state: web::Data<AdminState>) -> AdminResult<HttpResponse> {
    let principal = &posted.user.principal;
    let url = posted.fields.text("url").trim().to_owned();
    let chosen = posted.fields.all("events");
    let added = state.cms.add_webhook(principal, &url, &chosen.join(",")).await;
    let l = Layout::new(&state, &posted.user, Section::Webhooks);
    let mut page = page(&state, principal, l).await?;
    match added {
        Ok((hook, secret)) => {
            page.new_hook = Some(NewHook { id: hook.id, secret });
            view::ok(&page)
        }
        Err(error) => {
            page.error = Some(message_of(&error));
            page.url = url;
            for (name, checked) in &mut page.events {
                *checked = chosen.contains(name);
            }
            view::page(form_error_status(&error), &page)
        }
    }
}

/// `POST /admin/webhooks/state` (`id`, `enabled`: `true` or `false`)
pub async fn set_state(posted: PostedForm, state: web::Data<AdminState>) -> AdminResult<HttpResponse> {
    let id = posted.fields.required("id", "The webhook id")?;
    let enabled = posted.fields.get("enabled") == Some("true");
    state.cms.set_webhook_enabled(&posted.user.principal, id, enabled).await?;
    let done = if enabled { "webhook-enabled" } else { "webhook-disabled" };
    Ok(view::see_other(&format!("/admin/webhooks?ok={done}")))
}

/// `GET /admin/webhooks/remove?id=`: a confirmation first (its secret goes with it, so
/// adding it again means a new secret at the receiver).
pub async fn confirm_remove(
    user: SignedIn,
    req: HttpRequest,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    let id = query_param(&req, "id")
        .filter(|id| !id.is_empty())
        .ok_or_else(|| AdminError::bad_request("name the webhook to remove"))?;
    let hook = state
        .cms
        .webhook_settings(&user.principal)
        .await?
        .into_iter()
        .find(|h| h.id == id)
        .ok_or_else(|| CoreError::not_found(format!("no webhook {id}")))?;
    view::ok(&ConfirmPage {
        l: Layout::new(&state, &user, Section::Webhooks),
        heading: format!("Remove the webhook to {}?", hook.url),
        message: format!(
            "{} will get no more events, and its signing secret is forgotten: adding it again \
             makes a new secret. To pause deliveries instead, disable it.",
            hook.url
        ),
        action: "/admin/webhooks/remove".into(),
        fields: vec![("id", hook.id)],
        button: "Remove",
        cancel: "/admin/webhooks".into(),
    })
}

/// `POST /admin/webhooks/remove` (`id`)
pub async fn remove(posted: PostedForm, state: web::Data<AdminState>) -> AdminResult<HttpResponse> {
    let id = posted.fields.required("id", "The webhook id")?;
    state.cms.remove_webhook(&posted.user.principal, id).await?;
    Ok(view::see_other("/admin/webhooks?ok=webhook-removed"))
}

/// `GET /admin/webhooks/log/clear`: a confirmation first (the log is the only record of
/// past deliveries).
pub async fn confirm_clear_log(user: SignedIn, state: web::Data<AdminState>) -> AdminResult<HttpResponse> {
    let entries = state.cms.webhook_log(&user.principal).await?.len();
    view::ok(&ConfirmPage {
        l: Layout::new(&state, &user, Section::Webhooks),
        heading: "Clear the delivery log?".into(),
        message: format!(
            "{} of the delivery log will be deleted. Subscriptions stay as they are.",
            crate::readable::count(entries, "entry", "entries")
        ),
        action: "/admin/webhooks/log/clear".into(),
        fields: Vec::new(),
        button: "Clear the log",
        cancel: "/admin/webhooks".into(),
    })
}

/// `POST /admin/webhooks/log/clear`
pub async fn clear_log(posted: PostedForm, state: web::Data<AdminState>) -> AdminResult<HttpResponse> {
    state.cms.clear_webhook_log(&posted.user.principal).await?;
    Ok(view::see_other("/admin/webhooks?ok=log-cleared"))
}
