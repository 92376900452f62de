//! Counts and times as a reader reads them: "1 draft", "3 minutes ago", with the exact
//! instant kept for machines and for a hover (`<time datetime title>`).

use std::fmt;

use time::macros::format_description;
use time::{Duration, OffsetDateTime, UtcOffset};

/// `1 draft`, `2 drafts`, `0 drafts`: the count with the word in the right number.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// An instant on a page: `text` to read (relative within a week, else the date), `exact`
/// in words with the time (the `title`), `iso` in RFC 3339 (the `datetime`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moment {
    pub iso: String,
    pub exact: String,
    pub text: String,
}

impl Moment {
    /// `time`, as read now.
    pub fn of(time: OffsetDateTime) -> Self {
        Self::at(time, OffsetDateTime::now_utc())
    }

    /// Unix seconds (stored files' and records' times), as read now.
    pub fn unix(seconds: i64) -> Self {
        Self::of(OffsetDateTime::from_unix_timestamp(seconds).unwrap_or(OffsetDateTime::UNIX_EPOCH))
    }

    /// `time` as read at `now` (the pages are not cached, so "5 minutes ago" is right when
    /// shown).
    pub fn at(time: OffsetDateTime, now: OffsetDateTime) -> Self {
        let time = time.to_offset(UtcOffset::UTC);
        let iso_format = format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]Z");
        let exact_format =
            format_description!("[day padding:none] [month repr:short] [year], [hour]:[minute] UTC");
        let date_format = format_description!("[day padding:none] [month repr:short] [year]");
        let text = match relative(time - now) {
            Some(text) => text,
            None => time.format(&date_format).unwrap_or_default(),
        };
        Self {
            iso: time.format(&iso_format).unwrap_or_default(),
            exact: time.format(&exact_format).unwrap_or_default(),
            text,
        }
    }
}

/// In a template, `{{ moment }}` is the element
/// `<time datetime="2026-11-27T09:55:30Z" title="27 Nov 2026, 09:55 UTC">4 minutes ago</time>`.
/// All three texts are made here from an instant by fixed formats (digits, month names,
/// fixed words), never from user input, so the element needs no escaping.
impl fmt::Display for Moment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<time datetime=\"{}\" title=\"{}\">{}</time>", self.iso, self.exact, self.text)
    }
}

impl askama::filters::HtmlSafe for Moment {}

/// `3 minutes ago`, `in 2 hours`, `just now`; `None` a week or more away.
fn relative(offset: Duration) -> Option<String> {
    let seconds = offset.whole_seconds();
    let away = seconds.unsigned_abs();
    if away < 60 {
        return Some("just now".into());
    }
    let (n, one, many) = match away {
        60..3_600 => (away / 60, "minute", "minutes"),
        3_600..86_400 => (away / 3_600, "hour", "hours"),
        86_400..604_800 => (away / 86_400, "day", "days"),
        _ => return None,
    };
    let amount = count(n as usize, one, many);
    Some(if seconds < 0 { format!("{amount} ago") } else { format!("in {amount}") })
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    #[test]
    fn counts() {
        assert_eq!(count(0, "draft", "drafts"), "0 drafts");
        assert_eq!(count(1, "draft", "drafts"), "1 draft");
        assert_eq!(count(2, "entry", "entries"), "2 entries");
    }

    #[test]
    fn moments() {
        let now = datetime!(2026-11-27 10:00:00 UTC);
        let at = |time| Moment::at(time, now);
        let ago = at(datetime!(2026-11-27 09:55:30 UTC));
        assert_eq!(ago.text, "4 minutes ago");
        assert_eq!(ago.iso, "2026-11-27T09:55:30Z");
        assert_eq!(ago.exact, "27 Nov 2026, 09:55 UTC");
        assert_eq!(at(datetime!(2026-11-27 09:59:31 UTC)).text, "just now");
        assert_eq!(at(datetime!(2026-11-27 11:00:00 UTC)).text, "in 1 hour");
        assert_eq!(at(datetime!(2026-11-25 08:00:00 UTC)).text, "2 days ago");
        let old = at(datetime!(2026-01-12 10:00:00 +01:00));
        assert_eq!((old.text.as_str(), old.iso.as_str()), ("12 Jan 2026", "2026-01-12T09:00:00Z"));
        assert_eq!(
            old.to_string(),
            r#"<time datetime="2026-01-12T09:00:00Z" title="12 Jan 2026, 09:00 UTC">12 Jan 2026</time>"#
        );
    }
}
