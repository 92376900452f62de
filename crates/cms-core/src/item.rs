//! What the domain knows about an item beyond its text: status, title, date, tags, author,
//! and the rules a written frontmatter must follow.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde_json::Value;

use time::OffsetDateTime;

use crate::codec::{self, json_type_name};
use crate::dates::SiteZone;
use crate::document::{Frontmatter, ItemDocument};
use crate::error::{CoreError, CoreResult};
use crate::slug::{ItemFilename, is_iso_date, slugify};

/// Publication state of an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Status {
    Published,
    Draft,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Published => "published",
            Self::Draft => "draft",
        }
    }
}

impl FromStr for Status {
    type Err = CoreError;

    fn from_str(s: &str) -> CoreResult<Self> {
        match s {
            "published" => Ok(Self::Published),
            "draft" => Ok(Self::Draft),
            other => {
                Err(CoreError::invalid(format!("status must be \"published\" or \"draft\", got {other:?}")))
            }
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Largest item file the server reads (frontmatter and body together), on every backend:
/// a bigger one is refused, not truncated.
pub const MAX_ITEM_BYTES: u64 = 16 * 1024 * 1024;

/// Keys the server owns: they describe where an item is stored, so `fm` cannot set them.
pub const SERVER_OWNED_KEYS: [&str; 2] = ["filename", "folder"];

/// The facts about an item that lists, filters and sorting need, read from its filename
/// and frontmatter.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ItemMeta {
    /// Shared with the index's maps and the search index (one copy per item).
    pub filename: Arc<str>,
    // Boxed texts, not `String`s: 8 bytes less each, and the index keeps a meta per item.
    pub slug: Box<str>,
    pub title: Box<str>,
    /// `fm.date`, else the filename's date prefix, as written.
    pub date: Option<Box<str>>,
    /// The instant `date` names (see [`SiteZone::parse`]); `None` when it names none.
    pub date_at: Option<OffsetDateTime>,
    /// See [`status_of`].
    pub status: Status,
    pub tags: Tags,
    pub author: Option<Box<str>>,
    /// Unix seconds of the file's last change.
    pub modified: i64,
    pub size: u64,
    /// `publish_date` / `unpublish_date`, when either is written (boxed: most items have
    /// neither, and the index keeps a meta per item).
    pub schedule: Option<Box<Schedule>>,
}

/// An item's tags as written. Each distinct tag is kept once and shared by every item
/// that carries it (a site has few tags and many items): an index of 100,000 items held
/// a `String` per tag per item.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tags(Box<[Arc<str>]>);

impl Tags {
    /// The tags as owned strings (for an answer's shape).
    pub fn to_strings(&self) -> Vec<String> {
        self.0.iter().map(|t| t.to_string()).collect()
    }
}

impl std::ops::Deref for Tags {
    type Target = [Arc<str>];

    fn deref(&self) -> &[Arc<str>] {
        &self.0
    }
}

impl<'a> IntoIterator for &'a Tags {
    type Item = &'a Arc<str>;
    type IntoIter = std::slice::Iter<'a, Arc<str>>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl From<Vec<String>> for Tags {
    fn from(tags: Vec<String>) -> Self {
        Self(tags.into_iter().map(|t| intern_tag(&t)).collect())
    }
}

impl serde::Serialize for Tags {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|t| &**t))
    }
}

impl<'de> serde::Deserialize<'de> for Tags {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<String>::deserialize(deserializer).map(Self::from)
    }
}

/// The shared copy of a tag. Tags no item carries any more are dropped whenever the set
/// has doubled since the last time, so it stays about as large as the tags in use.
fn intern_tag(tag: &str) -> Arc<str> {
    use std::collections::BTreeSet;
    use std::sync::Mutex;
    static TAGS: Mutex<(BTreeSet<Arc<str>>, usize)> = Mutex::new((BTreeSet::new(), 0));
    // Poisoning cannot leave the set inconsistent: take it as it is.
    let mut guard = TAGS.lock().unwrap_or_else(|e| e.into_inner());
    let (tags, pruned_at) = &mut *guard;
    if let Some(shared) = tags.get(tag) {
        return Arc::clone(shared);
    }
    if tags.len() >= (*pruned_at * 2).max(1024) {
        tags.retain(|t| Arc::strong_count(t) > 1);
        *pruned_at = tags.len();
    }
    let shared: Arc<str> = Arc::from(tag);
    tags.insert(Arc::clone(&shared));
    shared
}

/// When a published item is live: `publish_date <= now < unpublish_date` (either bound
/// may be absent). Instants are kept as whole Unix seconds, rounded up, so an item never
/// shows before its instant.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Schedule {
    pub publish_at: Option<OffsetDateTime>,
    pub unpublish_at: Option<OffsetDateTime>,
    /// A written date that names no instant: the item is never live (nothing goes out by
    /// accident), as with a `status` typo.
    pub unreadable: bool,
}

impl Schedule {
    /// The window written in a frontmatter; `None` when it names neither bound.
    pub fn of(fm: &Frontmatter, zone: &SiteZone) -> Option<Self> {
        let mut unreadable = false;
        let mut bound = |key: &str| {
            let value = fm.get(key).filter(|v| !v.is_null())?;
            let at = scalar_text(value).and_then(|text| zone.parse_exact(&text));
            unreadable |= at.is_none();
            at
        };
        let (publish_at, unpublish_at) = (bound("publish_date"), bound("unpublish_date"));
        (publish_at.is_some() || unpublish_at.is_some() || unreadable).then_some(Self {
            publish_at,
            unpublish_at,
            unreadable,
        })
    }

    /// Whether the window holds `now` (Unix seconds).
    pub fn holds(&self, now: i64) -> bool {
        !self.unreadable
            && self.publish_at.is_none_or(|at| whole_secs(at) <= now)
            && self.unpublish_at.is_none_or(|at| now < whole_secs(at))
    }

    /// The instants (Unix seconds) at which [`Self::holds`] can change.
    pub fn instants(&self) -> impl Iterator<Item = i64> + '_ {
        [self.publish_at, self.unpublish_at].into_iter().flatten().map(whole_secs)
    }
}

/// An instant as Unix seconds, rounded up.
pub fn whole_secs(at: OffsetDateTime) -> i64 {
    let secs = at.unix_timestamp();
    if at.nanosecond() > 0 { secs + 1 } else { secs }
}

/// The frontmatter key of an item's own slug on a site with languages (Hugo's `slug`): its
/// URL's last segment and the slug its language's routes answer to, where a translation
/// is otherwise named by its file (a localized URL: `hello.fr.md` with `slug: bonjour` is
/// `/fr/posts/bonjour`). A site without languages names items by their files alone.
pub const OWN_SLUG: &str = "slug";

/// Where an item's slug comes from: its file's name (a site without languages), or its
/// frontmatter's `slug` when that is a valid slug, else its file's name (a site with
/// languages, as Hugo: see [`OWN_SLUG`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SlugSource {
    FileName,
    Frontmatter,
}

/// The frontmatter's own slug (`slug:`), when it is a valid slug.
pub fn own_slug(fm: &Frontmatter) -> Option<&str> {
    let slug = fm.get(OWN_SLUG)?.as_str()?;
    is_own_slug(slug).then_some(slug)
}

/// Whether `slug` can be an item's own slug: a slug that does not read as a file name
/// (`page.md` would be asked for as the file `page.md`).
pub fn is_own_slug(slug: &str) -> bool {
    crate::slug::Slug::parse(slug).is_ok()
        && !crate::slug::ITEM_EXTENSIONS.iter().any(|ext| slug.ends_with(ext))
}

impl ItemMeta {
    /// The facts of the file `name` holding `doc`; `slugs` says where its slug comes from.
    pub fn derive(
        name: &ItemFilename,
        doc: &ItemDocument,
        modified: i64,
        size: u64,
        zone: &SiteZone,
        slugs: SlugSource,
    ) -> Self {
        let fm = &doc.fm;
        let text = |key: &str| fm.get(key).and_then(scalar_text);
        let status = status_of(fm);
        let date = text("date").or_else(|| name.date().map(str::to_owned));
        let slug = match slugs {
            SlugSource::Frontmatter => own_slug(fm).unwrap_or(name.slug()),
            SlugSource::FileName => name.slug(),
        };
        Self {
            filename: Arc::from(name.as_str()),
            slug: slug.into(),
            title: text("title").map_or_else(|| slug.into(), String::into_boxed_str),
            date_at: date.as_deref().and_then(|d| zone.parse(d)),
            date: date.map(String::into_boxed_str),
            status,
            tags: Tags::from(tags_of(fm)),
            author: text("author").map(String::into_boxed_str),
            modified,
            size,
            schedule: Schedule::of(fm, zone).map(Box::new),
        }
    }

    /// Whether a public client sees the item at `now` (Unix seconds): published, and
    /// inside its window when it has one.
    pub fn live_at(&self, now: i64) -> bool {
        self.status == Status::Published && self.schedule.as_ref().is_none_or(|s| s.holds(now))
    }

    /// The same facts with no spare capacity: what the index keeps of every item (boxed
    /// texts have none).
    pub fn compacted(self) -> Self {
        self
    }

    /// Slugs of the item's tags, for matching `tags=` filters.
    pub fn has_any_tag(&self, wanted_slugs: &[String]) -> bool {
        self.tags.iter().any(|t| wanted_slugs.contains(&slugify(t)))
    }
}

/// Only `status: published`, or no `status` at all, is public. A file without `status` was
/// written by hand (items created through the API always carry one) and counts as
/// published unless it says `draft: true`. Any other value (`Draft`, `private`, a typo)
/// counts as a draft, so that nothing is published by accident.
pub fn status_of(fm: &Frontmatter) -> Status {
    match fm.get("status") {
        Some(Value::String(s)) if s == "published" => Status::Published,
        Some(_) => Status::Draft,
        None if fm.get("draft") == Some(&Value::Bool(true)) => Status::Draft,
        None => Status::Published,
    }
}

fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// `tags` as a list of strings; a hand-written comma-separated string is accepted too.
fn tags_of(fm: &Frontmatter) -> Vec<String> {
    match fm.get("tags") {
        Some(Value::Array(items)) => items.iter().filter_map(scalar_text).collect(),
        Some(Value::String(s)) => {
            s.split(',').map(str::trim).filter(|t| !t.is_empty()).map(str::to_owned).collect()
        }
        _ => Vec::new(),
    }
}

/// Checks a frontmatter about to be written: known keys have the right types, no
/// server-owned key is set, and nesting stays within the frontmatter budget.
pub fn validate_frontmatter(fm: &Frontmatter) -> CoreResult<()> {
    for key in SERVER_OWNED_KEYS {
        if fm.contains_key(key) {
            return Err(CoreError::invalid(format!(
                "fm.{key} is set by the server from where the item is stored and cannot be written"
            )));
        }
    }
    let wrong_type = |key: &str, wanted: &str, value: &Value| {
        CoreError::invalid(format!("fm.{key} must be {wanted}, got {}", json_type_name(value)))
    };
    if fm.get("status").is_some_and(Value::is_null) {
        return Err(CoreError::invalid("fm.status cannot be removed; set it to \"published\" or \"draft\""));
    }
    for (key, value) in fm {
        if value.is_null() {
            continue;
        }
        match key.as_str() {
            "title" | "author" | "description" | "excerpt" if !value.is_string() => {
                return Err(wrong_type(key, "a string", value));
            }
            "status" => {
                let status = value.as_str().ok_or_else(|| wrong_type(key, "a string", value))?;
                status.parse::<Status>()?;
            }
            "tags" => {
                let ok = value.as_array().is_some_and(|items| items.iter().all(Value::is_string));
                if !ok {
                    return Err(wrong_type(key, "a list of strings", value));
                }
            }
            "date" | "publish_date" | "unpublish_date" => {
                let date = value.as_str().ok_or_else(|| wrong_type(key, "a date string", value))?;
                if !date.get(..10).is_some_and(is_iso_date) {
                    return Err(CoreError::invalid(format!(
                        "fm.{key} must start with a YYYY-MM-DD date, got {date:?}"
                    )));
                }
                if key != "date" && SiteZone::utc().parse_exact(date).is_none() {
                    return Err(CoreError::invalid(format!(
                        "fm.{key} must be a date or a date and time such as 2030-01-31T09:00:00+01:00, got {date:?}"
                    )));
                }
            }
            _ => {}
        }
        let depth = codec::depth(value);
        if depth > MAX_FM_DEPTH {
            return Err(CoreError::invalid(format!(
                "fm.{key} is nested {depth} levels deep; the limit is {MAX_FM_DEPTH}"
            )));
        }
    }
    Ok(())
}

/// How deep a frontmatter value may nest (a list of lists is 2).
pub const MAX_FM_DEPTH: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fm(value: Value) -> Frontmatter {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn tags_are_shared_and_read_as_written() {
        let a = Tags::from(vec!["Rust".to_owned(), "web".to_owned()]);
        let b = Tags::from(vec!["web".to_owned()]);
        assert!(Arc::ptr_eq(&a[1], &b[0]), "one copy of a tag for every item");
        assert_eq!(a.to_strings(), ["Rust", "web"]);
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(json, r#"["Rust","web"]"#);
        assert_eq!(serde_json::from_str::<Tags>(&json).unwrap(), a);
    }

    #[test]
    fn meta_from_filename_and_frontmatter() {
        let name = ItemFilename::parse("2024-03-01-hello.md").unwrap();
        let doc = ItemDocument {
            fm: fm(json!({"title": "Hello", "tags": ["Rust Lang", "web"], "author": "ann"})),
            body: String::new(),
        };
        let meta = ItemMeta::derive(&name, &doc, 5, 10, &SiteZone::utc(), SlugSource::FileName);
        assert_eq!(meta.date.as_deref(), Some("2024-03-01"));
        assert_eq!(meta.status, Status::Published);
        assert!(meta.has_any_tag(&["rust-lang".into()]));
        assert!(!meta.has_any_tag(&["go".into()]));
    }

    #[test]
    fn validation_names_the_problem() {
        let cases = [
            (json!({"tags": "a,b"}), "fm.tags must be a list of strings"),
            (json!({"tags": [1]}), "fm.tags must be a list of strings"),
            (json!({"status": "live"}), "status must be"),
            (json!({"title": 3}), "fm.title must be a string"),
            (json!({"date": "yesterday"}), "fm.date must start with"),
            (json!({"filename": "x.md"}), "fm.filename is set by the server"),
            (json!({"folder": 2}), "fm.folder is set by the server"),
        ];
        for (value, expected) in cases {
            let message = validate_frontmatter(&fm(value.clone())).unwrap_err().to_string();
            assert!(message.contains(expected), "{value}: {message}");
        }
        let mut deep = json!(1);
        for _ in 0..20 {
            deep = json!([deep]);
        }
        assert!(validate_frontmatter(&fm(json!({"x": deep}))).is_err());
        assert!(validate_frontmatter(&fm(json!({"title": "T", "status": "draft", "tags": ["a"], "date": "2024-01-01", "extra": {"a": [1]}}))).is_ok());
    }
}
