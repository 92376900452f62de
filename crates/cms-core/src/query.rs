//! List queries: filters, sorting and pagination of item lists.

use std::cmp::Ordering;

use crate::error::{CoreError, CoreResult};
use crate::item::{ItemMeta, Status};
use crate::model::{FieldFilter, Kind, Model};
use crate::slug::slugify;

/// The raw list parameters as a client sent them in a query string: [`ListParams::typed`]
/// reads their numbers, [`ListQuery::from_input`] validates the rest.
#[derive(Debug, Clone, Default)]
pub struct ListParams {
    pub page: Option<String>,
    pub per_page: Option<String>,
    pub status: Option<String>,
    pub tags: Option<String>,
    pub author: Option<String>,
    pub order_by: Option<String>,
    pub direction: Option<String>,
    pub offset: Option<String>,
    /// `filter[FIELD]=VALUE` and `filter[FIELD][OP]=VALUE`: what follows `filter`
    /// (`[price][gte]`) and the value.
    pub filters: Vec<(String, String)>,
    pub fields: Option<String>,
    pub expand: Option<String>,
}

impl ListParams {
    /// From `(name, value)` pairs named as in a query string (`page`, `per_page`,
    /// `status`, `tags`, `author`, `orderBy`, `direction`, `offset`, `filter[...]`,
    /// `fields`, `expand`); other names are ignored, a later pair wins.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut params = Self::default();
        for (name, value) in pairs {
            if let Some(filter) = name.strip_prefix("filter").filter(|rest| rest.starts_with('[')) {
                params.filters.push((filter.to_owned(), value.to_owned()));
                continue;
            }
            let slot = match name {
                "page" => &mut params.page,
                "per_page" => &mut params.per_page,
                "status" => &mut params.status,
                "tags" => &mut params.tags,
                "author" => &mut params.author,
                "orderBy" => &mut params.order_by,
                "direction" => &mut params.direction,
                "offset" => &mut params.offset,
                "fields" => &mut params.fields,
                "expand" => &mut params.expand,
                _ => continue,
            };
            *slot = Some(value.to_owned());
        }
        params
    }

    /// The numbers read from their text (`page` and `per_page` of 1 or more, `offset` of 0
    /// or more), the rest as sent: what [`ListQuery::from_input`] validates.
    pub fn typed(&self) -> CoreResult<ListInput> {
        self.clone().into_typed()
    }

    /// [`Self::typed`], its texts moved rather than copied.
    pub fn into_typed(self) -> CoreResult<ListInput> {
        let offset = |raw: &String| {
            raw.trim().parse().map_err(|_| {
                CoreError::invalid(format!("offset must be a whole number of 0 or more, got {raw:?}"))
            })
        };
        Ok(ListInput {
            page: self.page.as_deref().map(|p| positive("page", p)).transpose()?,
            per_page: self.per_page.as_deref().map(|p| positive("per_page", p)).transpose()?,
            offset: self.offset.as_ref().map(offset).transpose()?,
            status: self.status,
            tags: self.tags,
            author: self.author,
            order_by: self.order_by,
            direction: self.direction,
            filters: self.filters,
            fields: self.fields,
            expand: self.expand,
        })
    }
}

/// A list query's parameters with its numbers typed, as an adapter that receives numbers
/// (MCP) passes them; [`ListQuery::from_input`] validates them. The words (status, order,
/// filters, field names) stay text: only the collection's model can tell a field's name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ListInput {
    /// 1 or more.
    pub page: Option<usize>,
    /// 1 or more; clamped to the site's maximum when listed.
    pub per_page: Option<usize>,
    pub offset: Option<usize>,
    /// `published`, `draft`, `scheduled` or `all`.
    pub status: Option<String>,
    /// Comma-separated tags, each read as a slug.
    pub tags: Option<String>,
    pub author: Option<String>,
    /// `date_published`, `title`, `slug`, `modified` or a field of the model.
    pub order_by: Option<String>,
    /// `asc` or `desc`.
    pub direction: Option<String>,
    /// As in [`ListParams::filters`].
    pub filters: Vec<(String, String)>,
    pub fields: Option<String>,
    pub expand: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StatusFilter {
    /// What a public client sees: published and inside its window.
    Published,
    Draft,
    /// Published but outside its window (not yet live, or taken down): editors only.
    Scheduled,
    All,
}

impl StatusFilter {
    /// Whether an item with this status, live or not now, passes the filter.
    pub fn admits(self, status: Status, live: bool) -> bool {
        match self {
            Self::All => true,
            Self::Published => live,
            Self::Draft => status == Status::Draft,
            Self::Scheduled => status == Status::Published && !live,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OrderBy {
    DatePublished,
    Title,
    Slug,
    Modified,
    /// Newest first as the web editor lists items: by date, undated items after the dated
    /// ones, each run of one date (and the undated) by last change. Not a client's
    /// `orderBy`. The index keeps no list in this order (it would move on every write): a
    /// page filtered by status and at most one tag re-sorts the kept date order's window
    /// widened to whole runs of one date; other pages sort their matches as far as needed.
    Newest,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    Asc,
    Desc,
}

/// A validated list query.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ListQuery {
    pub page: usize,
    /// `None`: the site's default page size.
    pub per_page: Option<usize>,
    pub status: StatusFilter,
    /// Tag slugs; an item matches when it carries any of them.
    pub tags: Vec<String>,
    pub author: Option<String>,
    pub order_by: OrderBy,
    /// `orderBy` naming a field of the model: its place there (then `order_by` is not
    /// used).
    pub order_field: Option<usize>,
    pub direction: Direction,
    pub offset: usize,
    /// Conditions on the model's fields, all of which an item meets.
    pub filters: Vec<FieldFilter>,
    /// `fields=`: the model's fields a list entry shows in its `fm` (none: no `fm`).
    pub fields: Vec<String>,
    /// `expand=`: reference fields whose items a list entry's `fm` shows inline.
    pub expand: Vec<String>,
    /// A text the item's title, file name or author contains, or one of its tags is (the
    /// web editor's search box); `None`: any item.
    pub text: Option<TextMatch>,
}

impl Default for ListQuery {
    fn default() -> Self {
        Self {
            page: 1,
            per_page: None,
            status: StatusFilter::Published,
            tags: Vec::new(),
            author: None,
            order_by: OrderBy::DatePublished,
            order_field: None,
            direction: Direction::Desc,
            offset: 0,
            filters: Vec::new(),
            fields: Vec::new(),
            expand: Vec::new(),
            text: None,
        }
    }
}

impl ListQuery {
    /// The query of a collection without a model: `filter[...]`, `fields` and `expand`
    /// are refused (they name fields only a model declares).
    pub fn parse(params: &ListParams) -> CoreResult<Self> {
        Self::parse_for(params, None)
    }

    /// The query of a collection with `model` (if it has one), from the text a client
    /// sent: [`ListParams::typed`], then [`Self::from_input`].
    pub fn parse_for(params: &ListParams, model: Option<&Model>) -> CoreResult<Self> {
        Self::from_input(&params.typed()?, model)
    }

    /// [`Self::parse_for`] of parameters the caller no longer needs (a request's).
    pub fn parse_owned_for(params: ListParams, model: Option<&Model>) -> CoreResult<Self> {
        Self::from_input(&params.into_typed()?, model)
    }

    /// The query of a collection with `model` (if it has one), from values an adapter
    /// already holds typed (MCP's numbers): the same checks and messages as
    /// [`Self::parse_for`].
    pub fn from_input(params: &ListInput, model: Option<&Model>) -> CoreResult<Self> {
        let mut query = Self::default();
        if let Some(page) = params.page {
            query.page = at_least_one("page", page)?;
        }
        if let Some(per_page) = params.per_page {
            query.per_page = Some(at_least_one("per_page", per_page)?);
        }
        query.offset = params.offset.unwrap_or(0);
        if let Some(status) = &params.status {
            query.status = match status.as_str() {
                "published" => StatusFilter::Published,
                "draft" => StatusFilter::Draft,
                "all" => StatusFilter::All,
                "scheduled" => StatusFilter::Scheduled,
                other => {
                    return Err(CoreError::invalid(format!(
                        "status must be published, draft, scheduled or all, got {other:?}"
                    )));
                }
            };
        }
        if let Some(tags) = &params.tags {
            query.tags = tags.split(',').map(slugify).filter(|t| !t.is_empty()).collect();
        }
        query.author = params.author.clone().filter(|a| !a.is_empty());
        if let Some(order_by) = &params.order_by {
            query.order_by = match order_by.as_str() {
                "date_published" | "date" => OrderBy::DatePublished,
                "title" => OrderBy::Title,
                "slug" => OrderBy::Slug,
                "modified" => OrderBy::Modified,
                other => match model {
                    Some(model) => {
                        query.order_field = Some(model.sort_field(other).map_err(|why| {
                            CoreError::invalid(format!("{why} (or date_published, title, slug, modified)"))
                        })?);
                        OrderBy::DatePublished
                    }
                    None => {
                        return Err(CoreError::invalid(format!(
                            "orderBy must be date_published, title, slug or modified, got {other:?}"
                        )));
                    }
                },
            };
        }
        let needs_model = |parameter: &str| {
            CoreError::invalid(format!(
                "{parameter} names fields of the collection's model, and this collection has none: \
                 declare its fields in cms.yaml (collections[].fields, see docs/content-model.md)"
            ))
        };
        for (name, value) in &params.filters {
            let model = model.ok_or_else(|| needs_model(&format!("filter{name}")))?;
            query.filters.push(model.parse_filter(name, value).map_err(CoreError::invalid)?);
        }
        if let Some(fields) = &params.fields {
            let model = model.ok_or_else(|| needs_model("fields"))?;
            query.fields = field_names("fields", fields, model, |_| true)?;
        }
        if let Some(expand) = &params.expand {
            let model = model.ok_or_else(|| needs_model("expand"))?;
            query.expand =
                field_names("expand", expand, model, |kind| matches!(kind, Kind::Reference { .. }))?;
        }
        if let Some(direction) = &params.direction {
            query.direction = match direction.to_ascii_lowercase().as_str() {
                "asc" => Direction::Asc,
                "desc" => Direction::Desc,
                _ => {
                    return Err(CoreError::invalid(format!(
                        "direction must be asc or desc, got {direction:?}"
                    )));
                }
            };
        }
        Ok(query)
    }

    /// Whether an item passes the filters (status, tags, author, text) at `now` (Unix
    /// seconds).
    pub fn admits(&self, item: &ItemMeta, now: i64) -> bool {
        self.status.admits(item.status, item.live_at(now))
            && (self.tags.is_empty() || item.has_any_tag(&self.tags))
            && self
                .author
                .as_ref()
                .is_none_or(|a| item.author.as_deref().is_some_and(|b| b.eq_ignore_ascii_case(a)))
            && self.text.as_ref().is_none_or(|text| text.admits(item))
    }

    /// Orders two items; ties fall back to the filename so pages are stable.
    pub fn compare(&self, a: &ItemMeta, b: &ItemMeta) -> Ordering {
        let primary = match self.order_by {
            OrderBy::DatePublished => a.date.as_deref().unwrap_or("").cmp(b.date.as_deref().unwrap_or("")),
            OrderBy::Title => a.title.to_lowercase().cmp(&b.title.to_lowercase()),
            OrderBy::Slug => a.slug.cmp(&b.slug),
            OrderBy::Modified => a.modified.cmp(&b.modified),
            OrderBy::Newest => (a.date_at, a.modified).cmp(&(b.date_at, b.modified)),
        };
        let ordered = primary.then_with(|| a.filename.cmp(&b.filename));
        match self.direction {
            Direction::Asc => ordered,
            Direction::Desc => ordered.reverse(),
        }
    }
}

/// The web editor's search box as a list condition: an item whose title, file name or
/// author contains the text, or that has a tag equal to it, both ignoring case.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TextMatch {
    /// Lowercase, so that each item costs one lowercasing of its own texts.
    lowercase: String,
}

impl TextMatch {
    /// The condition for `text` without its surrounding blanks; `None` for a blank text,
    /// which every item matches.
    pub fn new(text: &str) -> Option<Self> {
        let text = text.trim();
        (!text.is_empty()).then(|| Self { lowercase: text.to_lowercase() })
    }

    pub fn admits(&self, item: &ItemMeta) -> bool {
        let needle = self.lowercase.as_str();
        [&*item.title, &*item.filename]
            .into_iter()
            .chain(item.author.as_deref())
            .any(|text| text.to_lowercase().contains(needle))
            || item.tags.iter().any(|tag| tag.to_lowercase() == needle)
    }
}

/// A comma-separated list of the model's fields, each of a kind `fits` takes; the error
/// names the parameter, the field and the fields it may name.
fn field_names(
    parameter: &str,
    raw: &str,
    model: &Model,
    fits: impl Fn(&Kind) -> bool,
) -> CoreResult<Vec<String>> {
    let mut names = Vec::new();
    for name in raw.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if !model.field(name).is_some_and(|field| fits(&field.kind)) {
            let allowed: Vec<&str> =
                model.fields.iter().filter(|f| fits(&f.kind)).map(|f| f.name.as_str()).collect();
            let which = if parameter == "expand" { "reference fields" } else { "fields" };
            return Err(CoreError::invalid(format!(
                "{parameter}: {name:?} is not one of this collection's {which} ({})",
                if allowed.is_empty() { "it has none".to_owned() } else { allowed.join(", ") }
            )));
        }
        if !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
    }
    Ok(names)
}

/// A page number or size as typed values carry it: 1 or more.
pub(crate) fn at_least_one(name: &str, n: usize) -> CoreResult<usize> {
    if n >= 1 {
        Ok(n)
    } else {
        Err(CoreError::invalid(format!("{name} must be a whole number of 1 or more, got {n}")))
    }
}

pub(crate) fn positive(name: &str, raw: &str) -> CoreResult<usize> {
    match raw.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(CoreError::invalid(format!("{name} must be a whole number of 1 or more, got {raw:?}"))),
    }
}

/// One page of a list, with the numbers clients need to page through it.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub current_page: usize,
    pub last_page: usize,
    /// Items matching the filters, after `offset`.
    pub total_items: usize,
    pub per_page: usize,
    /// Changes whenever the page's content may have (set by lists answered from one
    /// collection's index); lets the web layer answer `If-None-Match` before building
    /// the body. `None`: no such version is known.
    pub version: Option<u64>,
}

impl<T> Page<T> {
    /// Cuts page `page` of `per_page` items out of `all` after skipping `offset`.
    pub fn cut(all: Vec<T>, page: usize, per_page: usize, offset: usize) -> Self {
        let remaining: Vec<T> = all.into_iter().skip(offset).collect();
        let total_items = remaining.len();
        let last_page = total_items.div_ceil(per_page).max(1);
        let start = (page - 1).saturating_mul(per_page);
        let items = remaining.into_iter().skip(start).take(per_page).collect();
        Self { items, current_page: page, last_page, total_items, per_page, version: None }
    }

    /// A page already cut by the index: `items` are the page's, `total_items` every match
    /// after the offset.
    pub fn of_selection(items: Vec<T>, total_items: usize, page: usize, per_page: usize) -> Self {
        let last_page = total_items.div_ceil(per_page).max(1);
        Self { items, current_page: page, last_page, total_items, per_page, version: None }
    }

    pub fn has_prev(&self) -> bool {
        self.current_page > 1
    }

    pub fn has_next(&self) -> bool {
        self.current_page < self.last_page
    }

    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page {
            items: self.items.into_iter().map(f).collect(),
            current_page: self.current_page,
            last_page: self.last_page,
            total_items: self.total_items,
            per_page: self.per_page,
            version: self.version,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> ListParams {
        ListParams::from_pairs(pairs.iter().copied())
    }

    #[test]
    fn defaults() {
        assert_eq!(ListQuery::parse(&ListParams::default()).unwrap(), ListQuery::default());
    }

    #[test]
    fn refuses_bad_values_with_a_message() {
        for (key, value) in [
            ("page", "0"),
            ("page", "x"),
            ("per_page", "-1"),
            ("status", "deleted"),
            ("orderBy", "colour"),
            ("direction", "up"),
            ("offset", "-3"),
        ] {
            let message = ListQuery::parse(&params(&[(key, value)])).unwrap_err().to_string();
            assert!(message.contains(value), "{key}={value}: {message}");
        }
    }

    #[test]
    fn typed_numbers_are_checked_as_their_text_is() {
        for (input, message) in [
            (
                ListInput { page: Some(0), ..ListInput::default() },
                "page must be a whole number of 1 or more, got 0",
            ),
            (
                ListInput { per_page: Some(0), ..ListInput::default() },
                "per_page must be a whole number of 1 or more, got 0",
            ),
        ] {
            assert_eq!(ListQuery::from_input(&input, None).unwrap_err().to_string(), message);
        }
        let input = ListInput { page: Some(2), per_page: Some(5), offset: Some(3), ..ListInput::default() };
        let query = ListQuery::from_input(&input, None).unwrap();
        assert_eq!((query.page, query.per_page, query.offset), (2, Some(5), 3));
        // The words are the text parser's: the same messages.
        let input = ListInput { status: Some("deleted".into()), ..ListInput::default() };
        let typed = ListQuery::from_input(&input, None).unwrap_err().to_string();
        assert_eq!(typed, ListQuery::parse(&params(&[("status", "deleted")])).unwrap_err().to_string());
    }

    #[test]
    fn text_reads_into_the_typed_input() {
        let text = params(&[("page", " 2 "), ("per_page", "5"), ("offset", "0"), ("orderBy", "title")]);
        let input = text.typed().unwrap();
        assert_eq!(
            input,
            ListInput {
                page: Some(2),
                per_page: Some(5),
                offset: Some(0),
                order_by: Some("title".into()),
                ..ListInput::default()
            }
        );
        assert_eq!(ListQuery::parse(&text).unwrap(), ListQuery::from_input(&input, None).unwrap());
        for (key, value, message) in [
            ("page", "0", r#"page must be a whole number of 1 or more, got "0""#),
            ("per_page", "x", r#"per_page must be a whole number of 1 or more, got "x""#),
            ("offset", "-3", r#"offset must be a whole number of 0 or more, got "-3""#),
        ] {
            assert_eq!(params(&[(key, value)]).typed().unwrap_err().to_string(), message);
        }
    }

    #[test]
    fn tags_are_slugs() {
        let q = ListQuery::parse(&params(&[("tags", "Rust Lang, web")])).unwrap();
        assert_eq!(q.tags, ["rust-lang", "web"]);
    }

    #[test]
    fn pagination_numbers() {
        let page = Page::cut((1..=25).collect(), 3, 10, 0);
        assert_eq!((page.items.len(), page.last_page, page.total_items), (5, 3, 25));
        assert!(page.has_prev() && !page.has_next());
        let past = Page::cut((1..=25).collect::<Vec<_>>(), 9, 10, 0);
        assert!(past.items.is_empty());
        assert_eq!(past.last_page, 3);
        let offset = Page::cut((1..=25).collect::<Vec<_>>(), 1, 10, 20);
        assert_eq!((offset.items, offset.total_items, offset.last_page), (vec![21, 22, 23, 24, 25], 5, 1));
        let empty = Page::cut(Vec::<u8>::new(), 1, 10, 0);
        assert_eq!((empty.last_page, empty.has_next()), (1, false));
    }
}
