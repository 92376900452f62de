//! Item dates as instants. Jekyll and Hugo sites write `date` in several forms; each is
//! read as the instant it names, so that "newest first" compares instants and feeds show
//! the time and offset as written. A date or time without an offset is in the site's time
//! zone (`site.timezone`, default UTC).

use std::fmt;

use jiff::civil;
use jiff::tz::TimeZone;
use serde::{Deserialize, Deserializer};
use time::{OffsetDateTime, UtcOffset};

/// The site's time zone: where a date without an offset happened.
#[derive(Clone, PartialEq)]
pub struct SiteZone {
    name: String,
    zone: TimeZone,
}

impl SiteZone {
    pub fn utc() -> Self {
        Self { name: "UTC".to_owned(), zone: TimeZone::UTC }
    }

    /// An IANA time zone name (`Europe/Berlin`, `America/New_York`, `UTC`), from the tz
    /// database built into the binary.
    pub fn named(name: &str) -> Result<Self, String> {
        let zone = TimeZone::get(name).map_err(|_| {
            format!("site.timezone: {name:?} is not a time zone name of the tz database (e.g. \"Europe/Berlin\", \"UTC\")")
        })?;
        Ok(Self { name: name.to_owned(), zone })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reads an item's `date`:
    /// - RFC 3339 and its relatives: `2024-03-01T10:00:00+02:00`, `…Z`, fractions of a
    ///   second, a space instead of the `T`;
    /// - Jekyll's form, an offset after a space: `2018-04-19 16:07:00 +0100`;
    /// - a date and time without an offset (`2024-03-01 10:00`): in the site's time zone;
    /// - a date alone (`2024-03-01`): midnight in the site's time zone.
    ///
    /// A date followed by something that is not a time still counts as that date;
    /// anything else is `None`.
    pub fn parse(&self, text: &str) -> Option<OffsetDateTime> {
        self.parse_with(text, false)
    }

    /// The same forms, but a date must be followed by nothing or by a time that reads:
    /// for instants that decide something (`publish_date`), where a typo must not
    /// silently mean midnight.
    pub fn parse_exact(&self, text: &str) -> Option<OffsetDateTime> {
        self.parse_with(text, true)
    }

    /// The zone's offset from UTC at `at` (for showing an instant as the zone's local time).
    pub fn offset_at(&self, at: OffsetDateTime) -> UtcOffset {
        jiff::Timestamp::from_second(at.unix_timestamp())
            .ok()
            .and_then(|instant| UtcOffset::from_whole_seconds(self.zone.to_offset(instant).seconds()).ok())
            .unwrap_or(UtcOffset::UTC)
    }

    fn parse_with(&self, text: &str, exact: bool) -> Option<OffsetDateTime> {
        let text = text.trim();
        let date = parse_date(text.get(..10)?)?;
        let rest = &text[10..];
        let (clock, offset) = match rest.strip_prefix(['T', 't', ' ']).and_then(parse_time_and_offset) {
            Some(parsed) => parsed,
            None if exact && !rest.is_empty() => return None,
            None => (civil::Time::midnight(), None),
        };
        let local = date.to_datetime(clock);
        let instant = match offset {
            Some(offset) => offset.to_timestamp(local).ok()?,
            None => self.zone.to_ambiguous_timestamp(local).compatible().ok()?,
        };
        let offset = offset.unwrap_or_else(|| self.zone.to_offset(instant));
        let at = OffsetDateTime::from_unix_timestamp_nanos(instant.as_nanosecond()).ok()?;
        Some(at.to_offset(UtcOffset::from_whole_seconds(offset.seconds()).ok()?))
    }
}

impl Default for SiteZone {
    fn default() -> Self {
        Self::utc()
    }
}

impl fmt::Debug for SiteZone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SiteZone({})", self.name)
    }
}

/// `site.timezone` is written as an IANA name.
impl schemars::JsonSchema for SiteZone {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "TimeZone".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "An IANA time zone name of the tz database, e.g. Europe/Berlin or UTC.",
            "examples": ["UTC", "Europe/Berlin"]
        })
    }
}

impl<'de> Deserialize<'de> for SiteZone {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Self::named(&name).map_err(serde::de::Error::custom)
    }
}

fn number(text: &str) -> Option<i32> {
    (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())).then(|| text.parse().ok()).flatten()
}

fn parse_date(text: &str) -> Option<civil::Date> {
    let bytes = text.as_bytes();
    if bytes.get(4) != Some(&b'-') || bytes.get(7) != Some(&b'-') {
        return None;
    }
    let year = i16::try_from(number(&text[..4])?).ok()?;
    let month = i8::try_from(number(&text[5..7])?).ok()?;
    let day = i8::try_from(number(&text[8..10])?).ok()?;
    civil::Date::new(year, month, day).ok()
}

/// `HH:MM[:SS[.fraction]]`, then optionally spaces and an offset (`Z`, `+01:00`, `+0100`,
/// `+01`). The whole rest must be used.
fn parse_time_and_offset(text: &str) -> Option<(civil::Time, Option<jiff::tz::Offset>)> {
    let time_end = text.find(|c: char| !(c.is_ascii_digit() || c == ':' || c == '.')).unwrap_or(text.len());
    let (clock, rest) = text.split_at(time_end);
    let mut parts = clock.splitn(3, ':');
    let hour = i8::try_from(number(parts.next()?)?).ok()?;
    let minute = i8::try_from(number(parts.next()?)?).ok()?;
    let (second, nanos) = match parts.next() {
        None => (0, 0),
        Some(seconds) => {
            let (whole, fraction) = seconds.split_once('.').unwrap_or((seconds, ""));
            let nanos = if fraction.is_empty() {
                0
            } else {
                let digits: String = fraction.chars().chain(std::iter::repeat('0')).take(9).collect();
                number(fraction)?;
                number(&digits)?
            };
            (i8::try_from(number(whole)?).ok()?, nanos)
        }
    };
    let time = civil::Time::new(hour, minute, second, nanos).ok()?;
    let rest = rest.trim_start();
    if rest.is_empty() {
        return Some((time, None));
    }
    Some((time, Some(parse_offset(rest)?)))
}

fn parse_offset(text: &str) -> Option<jiff::tz::Offset> {
    if text.eq_ignore_ascii_case("z") || text == "UTC" || text == "GMT" {
        return Some(jiff::tz::Offset::UTC);
    }
    let sign = match text.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let digits: String = text[1..].chars().filter(|c| *c != ':').collect();
    let (hours, minutes) = match digits.len() {
        2 => (number(&digits)?, 0),
        4 => (number(&digits[..2])?, number(&digits[2..])?),
        _ => return None,
    };
    if hours > 23 || minutes > 59 || text[1..].matches(':').count() > 1 {
        return None;
    }
    jiff::tz::Offset::from_seconds(sign * (hours * 3600 + minutes * 60)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(text: &str) -> Option<String> {
        SiteZone::utc().parse(text).map(|at| at.to_string())
    }

    #[test]
    fn reads_the_forms_jekyll_and_hugo_sites_use() {
        let same = |text: &str| SiteZone::utc().parse(text).unwrap().unix_timestamp();
        let instant = same("2018-04-19T15:07:00Z");
        for text in [
            "2018-04-19 16:07:00 +0100",
            "2018-04-19 16:07:00 +01:00",
            "2018-04-19T16:07:00+01:00",
            "2018-04-19T16:07:00+0100",
            "2018-04-19 16:07 +0100",
            "2018-04-19T16:07:00.000+01:00",
            "2018-04-19 08:07:00 -07:00",
            "2018-04-19 15:07:00 UTC",
            " 2018-04-19 15:07:00Z ",
        ] {
            assert_eq!(same(text), instant, "{text}");
        }
        assert_eq!(
            utc("2018-04-19 16:07:00 +0100").unwrap(),
            "2018-04-19 16:07:00.0 +01:00:00",
            "the offset is kept"
        );
        assert_eq!(utc("2018-04-19T16:07:00.25Z").unwrap(), "2018-04-19 16:07:00.25 +00:00:00");
    }

    #[test]
    fn the_offset_at_an_instant_follows_summer_time() {
        let berlin = SiteZone::named("Europe/Berlin").unwrap();
        let winter = SiteZone::utc().parse("2024-03-01 12:00").unwrap();
        let summer = SiteZone::utc().parse("2024-07-01 12:00").unwrap();
        assert_eq!(berlin.offset_at(winter).whole_hours(), 1);
        assert_eq!(berlin.offset_at(summer).whole_hours(), 2);
        assert_eq!(SiteZone::utc().offset_at(summer), UtcOffset::UTC);
    }

    #[test]
    fn dates_without_an_offset_are_in_the_site_time_zone() {
        assert_eq!(utc("2024-03-01").unwrap(), "2024-03-01 0:00:00.0 +00:00:00");
        let berlin = SiteZone::named("Europe/Berlin").unwrap();
        assert_eq!(berlin.parse("2024-03-01").unwrap().to_string(), "2024-03-01 0:00:00.0 +01:00:00");
        assert_eq!(berlin.parse("2024-07-01 10:30").unwrap().to_string(), "2024-07-01 10:30:00.0 +02:00:00");
        assert_eq!(
            berlin.parse("2024-07-01 10:30 +00:00").unwrap().to_string(),
            "2024-07-01 10:30:00.0 +00:00:00",
            "a written offset wins"
        );
    }

    #[test]
    fn refuses_what_is_not_a_date() {
        for text in ["", "yesterday", "2024-13-01", "2024-02-30", "24-03-01", "2024/03/01"] {
            assert_eq!(utc(text), None, "{text:?}");
        }
        assert_eq!(
            utc("2024-03-01 soon").unwrap(),
            "2024-03-01 0:00:00.0 +00:00:00",
            "the date still counts"
        );
        assert_eq!(utc("2024-03-01 25:00").unwrap(), "2024-03-01 0:00:00.0 +00:00:00");
        assert!(SiteZone::named("Mars/Olympus").unwrap_err().contains("site.timezone"));
    }
}
