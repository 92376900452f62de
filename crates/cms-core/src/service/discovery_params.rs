//! The discovery routes' options: each as sent, in text, with a field per query parameter
//! (`SearchIndexText`, ...: the parameter names and the fields come from one list, so no
//! value can land in another's field), and as checked (`SearchIndexParams`, ...), what the
//! facade's discovery calls take (`discovery.rs`).

use std::num::NonZeroUsize;

use crate::error::CoreResult;
use crate::query::{ListParams, ListQuery};
use crate::related::{self, Criterion};
use crate::urls::{self, PagePath};

/// A route's options as a query string sends them (blank is absent), one field per query
/// parameter: `NAMES` and `from_named` are made from one list of `field = "parameter"`.
macro_rules! query_text {
    ($(#[$doc:meta])* $name:ident { $($field:ident = $param:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Default, PartialEq, Eq)]
        pub struct $name {
            $(#[doc = concat!("`", $param, "` as sent.")] pub $field: Option<String>,)+
        }

        impl $name {
            /// The query parameters, in the order [`Self::from_named`] takes their values.
            pub const NAMES: [&'static str; query_text!(@count $($field)+)] = [$($param),+];

            /// The options from the values of [`Self::NAMES`], in that order.
            pub fn from_named(values: [Option<String>; query_text!(@count $($field)+)]) -> Self {
                let [$($field),+] = values;
                Self { $($field),+ }
            }
        }
    };
    (@count $($field:ident)+) => { <[()]>::len(&[$(query_text!(@unit $field)),+]) };
    (@unit $field:ident) => { () };
}

query_text! {
    /// `GET /cms/collections/search-index`'s options as sent; [`SearchIndexParams::parse`]
    /// checks them.
    SearchIndexText {
        collection_path = "collectionPath",
        resources_path = "resourcesPath",
        page_path = "page_path",
        tag_page_path = "tag_page_path",
        author_page_path = "author_page_path",
        site_url = "site_url",
        pretty_urls = "pretty_urls",
    }
}

query_text! {
    /// `GET /cms/tags`' options as sent; [`TagsParams::parse`] checks them.
    TagsText { content_path = "content_path", tag_page_path = "tag_page_path", pretty_urls = "pretty_urls" }
}

query_text! {
    /// `GET /cms/tags/{tag}/items`' options as sent; [`TagItemsParams::parse`] checks them.
    TagItemsText { content_path = "content_path", page = "page", per_page = "per_page" }
}

query_text! {
    /// A feed's options as sent; [`RssParams::parse`] checks them.
    RssText { title = "title", description = "description", link = "link", limit = "limit" }
}

query_text! {
    /// A sitemap's options as sent; [`SitemapParams::parse`] checks them.
    SitemapText { base_url = "baseUrl", limit = "limit" }
}

query_text! {
    /// `GET /cms/items/related`'s options as sent; [`RelatedParams::parse`] checks them.
    RelatedText {
        content_path = "contentPath",
        by = "by",
        limit = "limit",
        page_path = "page_path",
        site_url = "site_url",
        pretty_urls = "pretty_urls",
    }
}

/// Items in an RSS feed when `limit` is not given.
pub const RSS_DEFAULT_LIMIT: usize = 20;
/// URLs in a sitemap when `limit` is not given, and at most (the sitemaps.org limit).
pub const SITEMAP_MAX_URLS: usize = 50_000;
/// Related items when `limit` is not given.
pub const RELATED_DEFAULT_LIMIT: usize = 5;
/// Where tag and author pages live when the request does not say.
pub const DEFAULT_TAG_PAGE_PATH: &str = "/tags";
pub const DEFAULT_AUTHOR_PAGE_PATH: &str = "/authors";

/// What `Cms::search_index` takes: the folders' paths as sent (the facade resolves them
/// against the site's folders), the other options checked. Absent: the default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct SearchIndexParams {
    /// The collection's folder, relative to the site folder or absolute.
    pub collection_path: Option<String>,
    /// A resource folder, as above: a relative `fm.image` is put under its public URL.
    pub resources_path: Option<String>,
    /// Where the items' pages live (a site path such as `/blog`); the collection's by default.
    pub page_path: Option<String>,
    /// Where tag pages live; [`DEFAULT_TAG_PAGE_PATH`] by default.
    pub tag_page_path: Option<String>,
    /// Where author pages live; [`DEFAULT_AUTHOR_PAGE_PATH`] by default.
    pub author_page_path: Option<String>,
    /// An absolute URL without a trailing `/`; the site's URL by default.
    pub site_url: Option<String>,
    /// Whether page URLs end in `/{slug}` (else `?key={slug}`); yes by default.
    pub pretty_urls: Option<bool>,
}

impl SearchIndexParams {
    /// The options as a query string sends them (blank is absent): `pretty_urls`, the
    /// page paths and `site_url` are checked here, in that order; the folders' paths are
    /// the facade's to resolve.
    pub fn parse(text: SearchIndexText) -> CoreResult<Self> {
        let SearchIndexText {
            collection_path,
            resources_path,
            page_path,
            tag_page_path,
            author_page_path,
            site_url,
            pretty_urls,
        } = text;
        let pretty_urls = flag("pretty_urls", pretty_urls.as_deref())?;
        let page_path = page_path_of("page_path", &page_path)?;
        let tag_page_path = page_path_of("tag_page_path", &tag_page_path)?;
        let author_page_path = page_path_of("author_page_path", &author_page_path)?;
        let site_url = given(&site_url).map(|url| urls::parse_site_url("site_url", url)).transpose()?;
        Ok(Self {
            collection_path,
            resources_path,
            page_path,
            tag_page_path,
            author_page_path,
            site_url,
            pretty_urls,
        })
    }
}

/// What `Cms::tags` takes: the collection's folder as sent (the facade resolves it),
/// the other options checked. Absent: the default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct TagsParams {
    /// The collection's folder, relative to the site folder or absolute.
    pub content_path: Option<String>,
    /// Where tag pages live (a site path); [`DEFAULT_TAG_PAGE_PATH`] by default.
    pub tag_page_path: Option<String>,
    /// Whether page URLs end in `/{slug}` (else `?tag={slug}`); yes by default.
    pub pretty_urls: Option<bool>,
}

impl TagsParams {
    /// The options as a query string sends them (blank is absent): `pretty_urls`, then
    /// `tag_page_path`; the folder's path is the facade's to resolve.
    pub fn parse(text: TagsText) -> CoreResult<Self> {
        let TagsText { content_path, tag_page_path, pretty_urls } = text;
        let pretty_urls = flag("pretty_urls", pretty_urls.as_deref())?;
        let tag_page_path = page_path_of("tag_page_path", &tag_page_path)?;
        Ok(Self { content_path, tag_page_path, pretty_urls })
    }
}

/// What `Cms::tag_items` takes: the collection's folder as sent (the facade resolves
/// it), the page checked.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TagItemsParams {
    /// A collection's folder, relative to the site folder or absolute; every collection
    /// when absent.
    pub content_path: Option<String>,
    /// The page, from 1.
    pub page: NonZeroUsize,
    /// Items to a page; the site's page size by default (and at most its maximum).
    pub per_page: Option<NonZeroUsize>,
}

impl Default for TagItemsParams {
    fn default() -> Self {
        Self { content_path: None, page: NonZeroUsize::MIN, per_page: None }
    }
}

impl TagItemsParams {
    /// The options as a query string sends them, `page` and `per_page` read as a list's
    /// are (the same messages).
    pub fn parse(text: TagItemsText) -> CoreResult<Self> {
        let TagItemsText { content_path, page, per_page } = text;
        let query = ListQuery::parse(&ListParams { page, per_page, ..ListParams::default() })?;
        // A list's query takes pages and sizes of 1 or more only.
        let page = NonZeroUsize::new(query.page).unwrap_or(NonZeroUsize::MIN);
        Ok(Self { content_path, page, per_page: query.per_page.and_then(NonZeroUsize::new) })
    }
}

/// An RSS feed's options, checked: what `Cms::rss` takes. Absent: the default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct RssParams {
    /// The channel's title; the site's name by default.
    pub title: Option<String>,
    /// The channel's description; "{collection} from {site}" by default.
    pub description: Option<String>,
    /// The channel's link, an absolute URL without a trailing `/`; the collection's page
    /// by default.
    pub link: Option<String>,
    /// Items in the feed; [`RSS_DEFAULT_LIMIT`] by default.
    pub limit: Option<NonZeroUsize>,
}

impl RssParams {
    /// The options as a query string sends them (blank is absent): `limit` is checked
    /// first, then `link`.
    pub fn parse(text: RssText) -> CoreResult<Self> {
        let RssText { title, description, link, limit } = text;
        let limit = count("limit", limit.as_deref())?;
        let link = given(&link).map(|link| urls::parse_site_url("link", link)).transpose()?;
        Ok(Self {
            title: given(&title).map(str::to_owned),
            description: given(&description).map(str::to_owned),
            link,
            limit,
        })
    }
}

/// A sitemap's options, checked: what `Cms::sitemap` takes. Absent: the default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct SitemapParams {
    /// What the URLs start with, an absolute URL without a trailing `/`; the site's URL by
    /// default.
    pub base_url: Option<String>,
    /// URLs in the sitemap, at most [`SITEMAP_MAX_URLS`] (more is read as that many); that
    /// many by default.
    pub limit: Option<NonZeroUsize>,
}

impl SitemapParams {
    /// The options as a query string sends them (blank is absent): `limit` is checked
    /// first, then `baseUrl`.
    pub fn parse(text: SitemapText) -> CoreResult<Self> {
        let SitemapText { base_url, limit } = text;
        let limit = count("limit", limit.as_deref())?;
        let base_url = given(&base_url).map(|url| urls::parse_site_url("baseUrl", url)).transpose()?;
        Ok(Self { base_url, limit })
    }
}

/// A flag sent as text: absent or blank is `None` (the default), else true or false as
/// [`urls::parse_flag`] reads it (and with its message).
fn flag(param: &str, raw: Option<&str>) -> CoreResult<Option<bool>> {
    match raw.map(str::trim).filter(|text| !text.is_empty()) {
        None => Ok(None),
        Some(_) => urls::parse_flag(param, raw, true).map(Some),
    }
}

/// A site path (where pages live) sent as text: absent or blank is `None`, else checked by
/// [`PagePath::parse`] and kept trimmed.
fn page_path_of(param: &str, raw: &Option<String>) -> CoreResult<Option<String>> {
    given(raw).map(|path| PagePath::parse(param, path, true).map(|_| path.to_owned())).transpose()
}

/// A count sent as text: absent or blank is `None`, else a whole number of 1 or more
/// (the message is [`urls::parse_limit`]'s).
fn count(param: &str, raw: Option<&str>) -> CoreResult<Option<NonZeroUsize>> {
    match raw.map(str::trim).filter(|text| !text.is_empty()) {
        None => Ok(None),
        Some(_) => {
            let n = urls::parse_limit(param, raw, 1, usize::MAX)?;
            Ok(NonZeroUsize::new(n))
        }
    }
}

/// What `Cms::related` takes: the source item's and the pages' paths as sent (the
/// facade resolves them against the site's folders), the other options checked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct RelatedParams {
    /// The source item's file, relative to the site folder or absolute.
    pub content_path: Option<String>,
    /// What makes items related, each once; tags when empty.
    pub by: Vec<Criterion>,
    /// Items at most; [`RELATED_DEFAULT_LIMIT`] by default.
    pub limit: Option<NonZeroUsize>,
    /// Where the items' pages live (`/blog/{slug}`); the collection's by default.
    pub page_path: Option<String>,
    /// An absolute URL without a trailing `/`; the site's URL by default.
    pub site_url: Option<String>,
    /// Whether page URLs end in `/`; yes by default.
    pub pretty_urls: Option<bool>,
}

impl RelatedParams {
    /// The options as a query string sends them: `by`, `limit`, `pretty_urls` and
    /// `site_url` are checked here, in that order; the paths are the facade's to resolve.
    pub fn parse(text: RelatedText) -> CoreResult<Self> {
        let RelatedText { content_path, by, limit, page_path, site_url, pretty_urls } = text;
        let by = related::parse_criteria(given(&by))?;
        let limit = count("limit", limit.as_deref())?;
        let pretty_urls = flag("pretty_urls", pretty_urls.as_deref())?;
        let site_url = given(&site_url).map(|url| urls::parse_site_url("site_url", url)).transpose()?;
        Ok(Self { content_path, by, limit, page_path, site_url, pretty_urls })
    }
}

/// Optional non-empty text of a parameter.
pub(super) fn given(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each field takes the value of its own parameter (a value named after the parameter
    /// lands in the field of that name, spelled as the route spells it).
    #[test]
    fn each_field_takes_its_own_parameters_value() {
        fn named<const N: usize>(names: [&str; N]) -> [Option<String>; N] {
            names.map(|name| Some(name.to_owned()))
        }
        let text = SearchIndexText::from_named(named(SearchIndexText::NAMES));
        let fields = [
            &text.collection_path,
            &text.resources_path,
            &text.page_path,
            &text.tag_page_path,
            &text.author_page_path,
            &text.site_url,
            &text.pretty_urls,
        ];
        let expected = [
            "collectionPath",
            "resourcesPath",
            "page_path",
            "tag_page_path",
            "author_page_path",
            "site_url",
            "pretty_urls",
        ];
        assert_eq!(fields.map(|f| f.as_deref().unwrap()), expected);
        let related = RelatedText::from_named(named(RelatedText::NAMES));
        assert_eq!(
            [
                &related.content_path,
                &related.by,
                &related.limit,
                &related.page_path,
                &related.site_url,
                &related.pretty_urls
            ]
            .map(|f| f.as_deref().unwrap()),
            ["contentPath", "by", "limit", "page_path", "site_url", "pretty_urls"]
        );
        let sitemap = SitemapText::from_named(named(SitemapText::NAMES));
        assert_eq!((sitemap.base_url.as_deref(), sitemap.limit.as_deref()), (Some("baseUrl"), Some("limit")));
        let rss = RssText::from_named(named(RssText::NAMES));
        assert_eq!(
            [&rss.title, &rss.description, &rss.link, &rss.limit].map(|f| f.as_deref().unwrap()),
            ["title", "description", "link", "limit"]
        );
        let tags = TagsText::from_named(named(TagsText::NAMES));
        assert_eq!(
            [&tags.content_path, &tags.tag_page_path, &tags.pretty_urls].map(|f| f.as_deref().unwrap()),
            ["content_path", "tag_page_path", "pretty_urls"]
        );
        let items = TagItemsText::from_named(named(TagItemsText::NAMES));
        assert_eq!(
            [&items.content_path, &items.page, &items.per_page].map(|f| f.as_deref().unwrap()),
            ["content_path", "page", "per_page"]
        );
    }
}
