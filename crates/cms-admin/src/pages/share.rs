//! "Share preview": a preview link for an item (editor or above), made through the same
//! facade call as `POST /cms/collections/{c}/items/{slug}/preview`.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use cms_core::CoreError;
use cms_core::config::MAX_PREVIEW_TTL_SECS;
use cms_core::slug::ItemRef;
use time::macros::format_description;
use time::{Duration, OffsetDateTime};

use super::ItemAt;
use crate::AdminState;
use crate::auth::{PostedForm, SignedIn};
use crate::error::{AdminResult, message_of};
use crate::readable::Moment;
use crate::view::{self, Layout, Section};

/// What a link does, and when it expires (a date and time input in the site's time zone).
#[derive(Template)]
#[template(path = "share_form.html")]
struct ShareForm {
    l: Layout,
    title: String,
    action: String,
    cancel: String,
    /// The input's value, `min` and `max` (`YYYY-MM-DDTHH:MM`, the site's local time).
    expires: String,
    earliest: String,
    latest: String,
    zone: String,
    error: Option<String>,
}

/// The new link, to copy.
#[derive(Template)]
#[template(path = "share.html")]
struct SharePage {
    l: Layout,
    title: String,
    url: String,
    expires: Moment,
    back: String,
}

/// `instant` as a `datetime-local` input shows it: the site's local time, to the minute.
fn local_input(state: &AdminState, instant: OffsetDateTime) -> String {
    let local = instant.to_offset(state.cms.zone().offset_at(instant));
    local.format(format_description!("[year]-[month]-[day]T[hour]:[minute]")).unwrap_or_default()
}

impl ShareForm {
    fn new(state: &AdminState, l: Layout, title: String, href: String, expires: Option<String>) -> Self {
        let now = OffsetDateTime::now_utc();
        let ttl = state.cms.default_preview_ttl().unwrap_or(3600);
        Self {
            l,
            title,
            action: format!("{href}/share"),
            cancel: href,
            expires: expires.unwrap_or_else(|| local_input(state, now + Duration::seconds(ttl as i64))),
            // A minute on: a link that expires at once is of no use.
            earliest: local_input(state, now + Duration::minutes(1)),
            latest: local_input(state, now + Duration::seconds(MAX_PREVIEW_TTL_SECS as i64)),
            zone: state.cms.zone().name().to_owned(),
            error: None,
        }
    }
}

/// `GET /admin/collections/{collection}/items/{item}/share`
pub async fn confirm(
    user: SignedIn,
    path: web::Path<(String, String)>,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    let (collection, item) = path.into_inner();
    let ItemAt { collection, raw, href } = ItemAt::read(&state, &user.principal, &collection, &item).await?;
    let l = Layout::new(&state, &user, Section::Collection(collection.family()));
    view::ok(&ShareForm::new(&state, l, raw.meta.title.into(), href, None))
}

/// The seconds from now to the `expires` the form sent (in the site's time zone); `None`
/// when none was sent (the site's default, `previews.ttl_secs`).
fn ttl_of(state: &AdminState, expires: &str) -> Result<Option<u64>, CoreError> {
    let expires = expires.trim();
    if expires.is_empty() {
        return Ok(None);
    }
    let at = state
        .cms
        .zone()
        .parse_exact(expires)
        .ok_or_else(|| CoreError::invalid(format!("{expires:?} is not a date and time")))?;
    let seconds = (at - OffsetDateTime::now_utc()).whole_seconds();
    if seconds < 1 {
        return Err(CoreError::invalid("The expiry must be in the future."));
    }
    let seconds = seconds as u64;
    if seconds > MAX_PREVIEW_TTL_SECS {
        return Err(CoreError::invalid("A link can last at most 7 days: choose an earlier expiry."));
    }
    Ok(Some(seconds))
}

/// `POST /admin/collections/{collection}/items/{item}/share` (`expires`, optional)
pub async fn create(
    posted: PostedForm,
    path: web::Path<(String, String)>,
    state: web::Data<AdminState>,
    req: HttpRequest,
) -> AdminResult<HttpResponse> {
    let (collection, item) = path.into_inner();
    let ItemAt { collection, raw, href } =
        ItemAt::read(&state, &posted.user.principal, &collection, &item).await?;
    let l = Layout::new(&state, &posted.user, Section::Collection(collection.family()));
    let expires = posted.fields.text("expires");
    let made = match ttl_of(&state, expires) {
        Ok(ttl) => {
            state.cms.create_preview(&posted.user.principal, collection, &ItemRef::parse(&item)?, ttl).await
        }
        Err(error) => Err(error),
    };
    let link = match made {
        Ok(link) => link,
        Err(error @ CoreError::Invalid(_)) => {
            let mut form = ShareForm::new(&state, l, raw.meta.title.into(), href, Some(expires.to_owned()));
            form.error = Some(message_of(&error));
            return view::page(StatusCode::UNPROCESSABLE_ENTITY, &form);
        }
        Err(error) => return Err(error.into()),
    };
    let origin = state.cms.hosts().public_origin(&crate::auth::request_origin(&req));
    view::ok(&SharePage {
        l,
        title: raw.meta.title.into(),
        url: format!("{origin}/cms/preview/{}", link.token),
        expires: Moment::of(link.expires),
        back: href,
    })
}
