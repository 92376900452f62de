//! What every page shows around its content, and small formatting helpers.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use askama::Template;
use cms_core::policy::{self, Operation};
use time::OffsetDateTime;
use time::macros::format_description;

use crate::AdminState;
use crate::auth::SignedIn;
use crate::error::AdminResult;

/// The parts of the editor, for the navigation's current mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Home,
    Collection(usize),
    Media,
    Keys,
    Webhooks,
    Theme,
    Users,
}

/// A link in the navigation.
pub struct NavLink {
    pub href: String,
    pub label: String,
    pub current: bool,
}

/// The frame of every signed-in page: site name, navigation (only what the role may
/// use), the signed-in user, the CSRF token for the page's forms, and a notice.
pub struct Layout {
    pub site_name: String,
    pub email: String,
    pub role: &'static str,
    pub csrf: String,
    pub nav: Vec<NavLink>,
    pub notice: Option<&'static str>,
    pub assets: &'static str,
}

impl Layout {
    pub fn new(state: &AdminState, user: &SignedIn, section: Section) -> Self {
        let cms = &state.cms;
        let mut nav =
            vec![NavLink { href: "/admin/".into(), label: "Home".into(), current: section == Section::Home }];
        for collection in cms.collections() {
            nav.push(NavLink {
                href: format!("/admin/collections/{}", collection.slug),
                label: collection.label.clone(),
                current: section == Section::Collection(collection.index),
            });
        }
        let mut add = |href: &str, label: &str, this: Section| {
            nav.push(NavLink { href: href.into(), label: label.into(), current: section == this });
        };
        if !cms.resource_folders().is_empty() {
            add("/admin/media", "Media", Section::Media);
        }
        // The links the user's role allows (the facade checks each action again).
        let may = |operation| policy::may(&user.principal, operation);
        if may(Operation::ListUsers) {
            add("/admin/users", "Users", Section::Users);
        }
        if may(Operation::ManageKeys) {
            add("/admin/keys", "API keys", Section::Keys);
        }
        if may(Operation::ManageWebhooks) {
            add("/admin/webhooks", "Webhooks", Section::Webhooks);
        }
        if may(Operation::EditTheme) {
            add("/admin/theme", "Theme", Section::Theme);
        }
        Self {
            site_name: cms.site().name.clone(),
            email: user.email().to_owned(),
            role: user.role().as_str(),
            csrf: user.session.csrf.clone(),
            nav,
            notice: None,
            assets: crate::assets::VERSION.as_str(),
        }
    }

    /// With the notice a redirect asked for (`?ok=<code>`).
    pub fn with_notice(mut self, code: Option<&str>) -> Self {
        self.notice = code.and_then(notice);
        self
    }
}

/// The fixed messages a redirect can ask a page to show (`?ok=<code>`): codes only, so no
/// text from the URL ever reaches the page.
pub fn notice(code: &str) -> Option<&'static str> {
    Some(match code {
        "created" => "Item created.",
        "saved" => "Saved.",
        "published" => "Saved and published.",
        "unpublished" => "Saved as a draft.",
        "deleted" => "Item deleted. Its history is kept.",
        "restored" => "Version restored. The content it replaced is in the history.",
        "undeleted" => "Item restored from its history.",
        "notice-dismissed" => "Marked as resolved.",
        "translated" => "Translation created from its source: a draft to translate.",
        "up-to-date" => "Marked as up to date with its source.",
        "notice-gone" => "Nothing to mark: the notice was gone already.",
        "uploaded" => "Uploaded.",
        "renamed" => "Renamed.",
        "moved" => "Moved.",
        "file-deleted" => "Deleted.",
        "folder-created" => "Folder created.",
        "key-revoked" => "Key revoked. It stopped working at once.",
        "webhook-enabled" => "Webhook enabled.",
        "webhook-disabled" => "Webhook disabled.",
        "webhook-removed" => "Webhook removed.",
        "log-cleared" => "Delivery log cleared.",
        "theme-saved" => "Theme saved.",
        "user-saved" => "User saved.",
        "user-removed" => "User removed, with their keys and sessions.",
        _ => return None,
    })
}

/// Renders a page with a status.
pub fn page(status: StatusCode, template: &impl Template) -> AdminResult<HttpResponse> {
    Ok(HttpResponse::build(status).content_type("text/html; charset=utf-8").body(template.render()?))
}

pub fn ok(template: &impl Template) -> AdminResult<HttpResponse> {
    page(StatusCode::OK, template)
}

/// `303 See Other` to `location` (after a form: the browser then GETs it).
pub fn see_other(location: &str) -> HttpResponse {
    HttpResponse::SeeOther().insert_header(("Location", location)).finish()
}

pub use crate::escape::{path_escape, query_escape};

/// `2026-01-12 10:00 UTC`
pub fn unix_time(seconds: i64) -> String {
    OffsetDateTime::from_unix_timestamp(seconds).map_or_else(|_| seconds.to_string(), time_text)
}

pub fn time_text(time: OffsetDateTime) -> String {
    let format = format_description!("[year]-[month]-[day] [hour]:[minute]:[second] UTC");
    time.to_offset(time::UtcOffset::UTC).format(&format).unwrap_or_default()
}

/// `1.2 MB`, `512 bytes`.
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if bytes < 1000 {
        return crate::readable::count(bytes as usize, "byte", "bytes");
    }
    let mut value = bytes as f64 / 1000.0;
    let mut unit = 0;
    while value >= 1000.0 && unit < UNITS.len() - 1 {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(size(512), "512 bytes");
        assert_eq!(size(1), "1 byte");
        assert_eq!(size(1_234), "1.2 KB");
        assert_eq!(size(5_600_000), "5.6 MB");
        assert_eq!(unix_time(1_767_225_600), "2026-01-01 00:00:00 UTC");
        assert_eq!(query_escape("/admin/x?a=b&c"), "%2Fadmin%2Fx%3Fa%3Db%26c");
        assert_eq!(path_escape("a b.jpg"), "a%20b.jpg");
        assert_eq!(notice("saved"), Some("Saved."));
        assert_eq!(notice("<script>"), None);
    }
}
