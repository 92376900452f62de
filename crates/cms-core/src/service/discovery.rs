//! Read-only discovery: the search index, tags, RSS, sitemaps, related items, and the
//! legacy item routes that name a collection by its folder.
//!
//! Everything here answers from the kept index (built once, then changed in place by the
//! change log's changes: no request scans a folder) and shows published items only,
//! whoever asks; related items also ask the search index for shared terms.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::Arc;

use time::OffsetDateTime;

use super::discovery_params::*;
use super::{Cms, ItemSummary, ItemView, Viewer};
use crate::collection::Collection;
use crate::engine::index::IndexedItem;
use crate::error::{CoreError, CoreResult};
use crate::feed::{self, RssChannel, RssItem, SitemapUrl};
use crate::query::{ListQuery, Page};
use crate::related::{self, ContentCounts, Criterion};
use crate::sitepath;
use crate::slug::{ItemRef, slugify};
use crate::urls::PagePath;

/// A tag with the URL of its page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagLink {
    /// As the item spells it.
    pub tag: String,
    pub slug: String,
    pub url: String,
}

/// One entry of the search index.
#[derive(Debug, Clone)]
pub struct SearchEntry {
    pub item: Arc<IndexedItem>,
    /// The collection's slug.
    pub collection: String,
    pub url: String,
    pub canonical_url: String,
    pub tag_links: Vec<TagLink>,
    pub author_url: Option<String>,
    /// `fm.image`, resolved against `resourcesPath`'s public URL when relative.
    pub image: Option<String>,
}

/// A tag in use and how many published items carry it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagCount {
    /// The most common spelling (ties: the first in sort order).
    pub tag: String,
    pub slug: String,
    pub count: usize,
    pub url: String,
}

/// An item related to the source item.
#[derive(Debug, Clone)]
pub struct RelatedItem {
    pub item: Arc<IndexedItem>,
    pub url: String,
    pub canonical_url: String,
    pub score: f64,
    pub shared_tags: Vec<String>,
}

impl Cms {
    // ---- path parameters ----------------------------------------------------------------

    /// The collection whose folder `raw` names (relative to the site folder, or absolute).
    /// Nothing outside the configured folders is ever looked at.
    pub fn collection_at_path(&self, param: &str, raw: Option<&str>) -> CoreResult<&Collection> {
        let path = sitepath::resolve(param, raw.unwrap_or(""), self.site_root.as_deref())?;
        if let Some(collection) = self.collections.iter().find(|c| sitepath::configured(&c.path) == path) {
            return Ok(collection);
        }
        Err(CoreError::not_found(format!(
            "{param} {:?} is not a configured collection folder; the collection folders are {}",
            raw.unwrap_or("").trim(),
            self.collection_folders()
        )))
    }

    /// The collection and item that `raw` names: a collection folder and an item file (or
    /// bare slug) directly inside it.
    fn item_at_path(&self, param: &str, raw: Option<&str>) -> CoreResult<(&Collection, ItemRef)> {
        let raw_text = raw.unwrap_or("").trim();
        let path = sitepath::resolve(param, raw_text, self.site_root.as_deref())?;
        for collection in &self.collections {
            let folder = sitepath::configured(&collection.path);
            if path == folder {
                // Well formed, but not an item file: `404`, like any other such path.
                return Err(CoreError::not_found(format!(
                    "{param} {raw_text:?} names the collection folder itself; name an item file in it, e.g. {}/hello.md",
                    collection.path
                )));
            }
            if path.len() == folder.len() + 1 && path.starts_with(&folder) {
                let name = &path[folder.len()];
                // Translations by file name share a folder: the name says whose it is.
                if !collection.naming.owns(name) {
                    continue;
                }
                let item_ref = ItemRef::parse(name).map_err(|_| {
                    CoreError::not_found(format!(
                        "{param} {raw_text:?}: {name:?} is not an item file of collection {:?}",
                        collection.slug
                    ))
                })?;
                return Ok((collection, item_ref));
            }
        }
        Err(CoreError::not_found(format!(
            "{param} {raw_text:?} is not an item file in a configured collection folder; the collection folders are {}",
            self.collection_folders()
        )))
    }

    /// The public URL prefix of the resource folder that `raw` names.
    fn resource_url_at_path(&self, raw: &str) -> CoreResult<&str> {
        let path = sitepath::resolve("resourcesPath", raw, self.site_root.as_deref())?;
        let folders = &self.resource_folders;
        folders.iter().find(|f| sitepath::configured(&f.path) == path).map(|f| f.url.as_str()).ok_or_else(
            || {
                let folders: Vec<&str> = folders.iter().map(|f| f.path.as_str()).collect();
                CoreError::not_found(format!(
                    "resourcesPath {raw:?} is not a configured resource folder; the resource folders are {}",
                    if folders.is_empty() { "none".into() } else { folders.join(", ") }
                ))
            },
        )
    }

    fn collection_folders(&self) -> String {
        if self.collections.is_empty() {
            return "none".into();
        }
        let mut folders: Vec<&str> = Vec::new();
        for collection in &self.collections {
            if !folders.contains(&collection.path.as_str()) {
                folders.push(&collection.path);
            }
        }
        folders.join(", ")
    }

    // ---- shared pieces ------------------------------------------------------------------

    /// A collection's published items, newest first (undated last; ties by filename).
    async fn published(&self, collection: &Collection) -> CoreResult<Vec<Arc<IndexedItem>>> {
        Ok(self.index(collection).await?.published_newest_first().cloned().collect())
    }

    /// Item URLs from the request's `page_path`, else the collection's.
    fn item_pages(
        &self,
        collection: &Collection,
        page_path: Option<&str>,
        pretty: bool,
    ) -> CoreResult<PagePath> {
        match page_path {
            Some(path) => PagePath::parse("page_path", path, pretty),
            None => Ok(PagePath::trusted(&collection.page_path, pretty)),
        }
    }

    // ---- search index -------------------------------------------------------------------

    /// Every published item of the collection at `collectionPath`, newest first.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn search_index(&self, params: &SearchIndexParams) -> CoreResult<Vec<SearchEntry>> {
        let collection = self.collection_at_path("collectionPath", params.collection_path.as_deref())?;
        let pretty = params.pretty_urls.unwrap_or(true);
        let pages = self.item_pages(collection, params.page_path.as_deref(), pretty)?;
        let tag_pages = tag_pages(params.tag_page_path.as_deref(), pretty);
        let author_pages =
            PagePath::trusted(params.author_page_path.as_deref().unwrap_or(DEFAULT_AUTHOR_PAGE_PATH), pretty);
        let site_url = params.site_url.clone().unwrap_or_else(|| self.site.url.clone());
        let resource_url =
            given(&params.resources_path).map(|raw| self.resource_url_at_path(raw)).transpose()?;

        Ok(self
            .published(collection)
            .await?
            .into_iter()
            .map(|item| {
                let url = pages.url("item", &item.meta.slug);
                let tag_links = item
                    .meta
                    .tags
                    .iter()
                    .map(|tag| {
                        let slug = slugify(tag);
                        TagLink { tag: tag.to_string(), url: tag_pages.url("tag", &slug), slug }
                    })
                    .collect();
                let author_url = item
                    .meta
                    .author
                    .as_deref()
                    .map(slugify)
                    .filter(|s| !s.is_empty())
                    .map(|slug| author_pages.url("author", &slug));
                let image = item.image().map(|image| resolve_image(image, resource_url));
                SearchEntry {
                    collection: collection.slug.clone(),
                    canonical_url: format!("{site_url}{url}"),
                    url,
                    tag_links,
                    author_url,
                    image,
                    item,
                }
            })
            .collect())
    }

    // ---- tags ---------------------------------------------------------------------------

    /// Every tag of the published items at `content_path`, most used first, then by slug.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn tags(&self, params: &TagsParams) -> CoreResult<Vec<TagCount>> {
        self.tags_in(params, None).await
    }

    /// [`Self::tags`] of one language's items, on a site with languages (`lang`: its
    /// position in `languages:`; the folder's own language without it).
    pub async fn tags_in(&self, params: &TagsParams, lang: Option<usize>) -> CoreResult<Vec<TagCount>> {
        let collection = self.collection_at_path("content_path", params.content_path.as_deref())?;
        let collection = match lang {
            Some(at) => self.in_language(collection, at),
            None => collection,
        };
        let tag_pages = tag_pages(params.tag_page_path.as_deref(), params.pretty_urls.unwrap_or(true));

        // slug → (items carrying it, spelling → uses)
        let mut tags: HashMap<String, (usize, HashMap<String, usize>)> = HashMap::new();
        for item in self.published(collection).await? {
            let mut seen: Vec<String> = Vec::new();
            for tag in &item.meta.tags {
                let slug = slugify(tag);
                if slug.is_empty() {
                    continue;
                }
                let entry = tags.entry(slug.clone()).or_default();
                *entry.1.entry(tag.to_string()).or_default() += 1;
                if !seen.contains(&slug) {
                    entry.0 += 1;
                    seen.push(slug);
                }
            }
        }
        let mut counted: Vec<TagCount> = tags
            .into_iter()
            .map(|(slug, (count, spellings))| {
                let tag = spellings
                    .into_iter()
                    .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0)))
                    .map(|(spelling, _)| spelling)
                    .unwrap_or_else(|| slug.clone());
                TagCount { url: tag_pages.url("tag", &slug), tag, slug, count }
            })
            .collect();
        // decisions.md: most used first, then by name (case-insensitively; the slug breaks
        // what is left so the order is stable).
        counted.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then_with(|| a.tag.to_lowercase().cmp(&b.tag.to_lowercase()))
                .then_with(|| a.slug.cmp(&b.slug))
        });
        Ok(counted)
    }

    /// One page of the published items carrying `tag` (matched by slug), newest first; from
    /// the collection at `content_path`, or from every collection when it is absent.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn tag_items(&self, tag: &str, params: &TagItemsParams) -> CoreResult<Page<ItemSummary>> {
        self.tag_items_in(tag, params, None).await
    }

    /// [`Self::tag_items`] of one language's items, on a site with languages.
    pub async fn tag_items_in(
        &self,
        tag: &str,
        params: &TagItemsParams,
        lang: Option<usize>,
    ) -> CoreResult<Page<ItemSummary>> {
        let wanted = slugify(tag);
        if wanted.is_empty() {
            return Err(CoreError::invalid(format!(
                "tag {tag:?} has no letters or digits, so it names no tag"
            )));
        }
        let collections: Vec<&Collection> = match given(&params.content_path) {
            Some(path) => vec![self.collection_at_path("content_path", Some(path))?],
            None => self.collections().iter().collect(),
        };
        let collections: Vec<&Collection> = match lang {
            Some(at) => collections.into_iter().map(|c| self.in_language(c, at)).collect(),
            None => collections,
        };
        let mut items: Vec<(&Collection, Arc<IndexedItem>)> = Vec::new();
        for collection in collections {
            for item in self.published(collection).await? {
                if item.meta.has_any_tag(std::slice::from_ref(&wanted)) {
                    items.push((collection, item));
                }
            }
        }
        // A list's default order: newest first.
        let order = ListQuery::default();
        items.sort_by(|a, b| order.compare(&a.1.meta, &b.1.meta).then_with(|| a.0.index.cmp(&b.0.index)));
        let per_page =
            params.per_page.map_or(self.site.per_page, NonZeroUsize::get).min(self.site.max_per_page);
        let page = Page::cut(items, params.page.get(), per_page, 0);
        Ok(page.map(|(collection, item)| self.summary(collection, item)))
    }

    // ---- feeds --------------------------------------------------------------------------

    /// An RSS 2.0 feed of the collection's newest published items.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn rss(&self, collection: &Collection, params: &RssParams) -> CoreResult<String> {
        let limit = params.limit.map_or(RSS_DEFAULT_LIMIT, NonZeroUsize::get);
        let link = match &params.link {
            Some(link) => link.clone(),
            None => self.site.absolute_url(&collection.page_path),
        };
        let mut newest: Option<OffsetDateTime> = None;
        let items: Vec<RssItem> = self
            .published(collection)
            .await?
            .into_iter()
            .take(limit)
            .map(|item| {
                let at = published_at(&item);
                if let Some(at) = at {
                    newest = Some(newest.map_or(at, |n| n.max(at)));
                }
                let url = self.site.absolute_url(&collection.item_url(&item.meta.slug));
                RssItem {
                    title: item.meta.title.to_string(),
                    link: url.clone(),
                    guid: url,
                    pub_date: at.and_then(feed::rfc822),
                    description: item.plain_excerpt.to_string(),
                    categories: item.meta.tags.to_strings(),
                }
            })
            .collect();
        let channel = RssChannel {
            title: params.title.clone().unwrap_or_else(|| self.site.name.clone()),
            link,
            description: (params.description.clone())
                .unwrap_or_else(|| format!("{} from {}", collection.label, self.site.name)),
            last_build_date: newest.and_then(feed::rfc822),
            language: collection.language.as_ref().map(|language| language.code.to_string()),
        };
        Ok(feed::rss_xml(&channel, &items))
    }

    /// A sitemaps.org `urlset` of the collection's published items (newest first). With no
    /// published item it lists the collection's own page, so that the document stays valid
    /// (the schema wants at least one `url`).
    ///
    /// On a site with languages, `collection` is one language's (see [`Self::list_in`]):
    /// its items, each with its translations as alternates. [`Self::sitemap_of_languages`]
    /// lists every language's.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn sitemap(&self, collection: &Collection, params: &SitemapParams) -> CoreResult<String> {
        self.sitemap_of(&[collection], params).await
    }

    /// The sitemap of `collection` in every language of the site, language by language,
    /// each item with `xhtml:link rel="alternate"` to every translation (its own too) and
    /// `x-default` (the default language's page), as search engines ask; the same as
    /// [`Self::sitemap`] on a site without languages.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn sitemap_of_languages(
        &self,
        collection: &Collection,
        params: &SitemapParams,
    ) -> CoreResult<String> {
        let lanes: Vec<&Collection> = self.family_of(collection).collect();
        self.sitemap_of(&lanes, params).await
    }

    async fn sitemap_of(&self, lanes: &[&Collection], params: &SitemapParams) -> CoreResult<String> {
        let limit = params.limit.map_or(SITEMAP_MAX_URLS, NonZeroUsize::get).min(SITEMAP_MAX_URLS);
        let base = params.base_url.clone().unwrap_or_else(|| self.site.url.clone());
        let mut urls: Vec<SitemapUrl> = Vec::new();
        for lane in lanes {
            let room = limit - urls.len();
            for item in self.published(lane).await?.into_iter().take(room) {
                let url = lane.item_url(&item.meta.slug);
                let alternates = self.alternates(lane, &item, &base);
                urls.push(SitemapUrl {
                    loc: format!("{base}{url}"),
                    lastmod: OffsetDateTime::from_unix_timestamp(item.meta.modified)
                        .ok()
                        .map(feed::w3c_datetime),
                    alternates,
                });
            }
        }
        if urls.is_empty() {
            let page_path = &lanes.first().map_or("/", |lane| lane.page_path.as_str());
            urls.push(SitemapUrl {
                loc: format!("{base}{page_path}"),
                lastmod: None,
                alternates: Vec::new(),
            });
        }
        Ok(feed::sitemap_xml(&urls))
    }

    /// A sitemap entry's alternates: none without published translations; else the page in
    /// every language that has it published, this one's included, then `x-default`, the
    /// default language's page when there is one.
    fn alternates(&self, lane: &Collection, item: &IndexedItem, base: &str) -> Vec<(String, String)> {
        let Some(language) = &lane.language else { return Vec::new() };
        let translations = self.translations(lane, item, false);
        if translations.is_empty() {
            return Vec::new();
        }
        let own = (language.code.to_string(), lane.item_url(&item.meta.slug));
        let mut alternates: Vec<(String, String)> =
            translations.into_iter().map(|t| (t.lang.to_string(), t.url)).collect();
        alternates.insert(language.at.min(alternates.len()), own);
        let default = self.languages.as_deref().map(|languages| &*languages.get(0).code);
        let x_default =
            alternates.iter().find(|(lang, _)| Some(lang.as_str()) == default).map(|(_, url)| url.clone());
        let mut alternates: Vec<(String, String)> =
            alternates.into_iter().map(|(lang, url)| (lang, format!("{base}{url}"))).collect();
        if let Some(url) = x_default {
            alternates.push(("x-default".to_owned(), format!("{base}{url}")));
        }
        alternates
    }

    // ---- related items ------------------------------------------------------------------

    /// Published items of the source item's collection related to it by `by`, best first,
    /// never the source itself; items with nothing in common are left out.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn related(&self, params: &RelatedParams) -> CoreResult<Vec<RelatedItem>> {
        let criteria = if params.by.is_empty() { vec![Criterion::Tags] } else { params.by.clone() };
        let limit = params.limit.map_or(RELATED_DEFAULT_LIMIT, NonZeroUsize::get);
        let pretty = params.pretty_urls.unwrap_or(true);
        let site_url = params.site_url.clone().unwrap_or_else(|| self.site.url.clone());
        let (collection, item_ref) = self.item_at_path("contentPath", params.content_path.as_deref())?;
        let pages = self.item_pages(collection, given(&params.page_path), pretty)?;

        let items = self.published(collection).await?;
        let source = self.index(collection).await?.locate_published(&item_ref).cloned();
        let source = source.ok_or_else(|| {
            CoreError::not_found(format!(
                "contentPath names no published item: no {:?} in collection {:?}",
                item_ref.to_string(),
                collection.slug
            ))
        })?;
        let (source_terms, overlap) = if criteria.contains(&Criterion::Content) {
            self.content_overlap(collection, &source).await?
        } else {
            (0, Default::default())
        };
        let content = |candidate: &IndexedItem| {
            let (shared, candidate_terms) = overlap.get(&*candidate.meta.filename).copied().unwrap_or((0, 0));
            ContentCounts { shared, source: source_terms, candidate: candidate_terms }
        };
        let mut scored: Vec<RelatedItem> = items
            .iter()
            .filter(|candidate| candidate.meta.filename != source.meta.filename)
            .filter_map(|candidate| {
                let score =
                    related::score(&source.meta.tags, &candidate.meta.tags, content(candidate), &criteria);
                (score.score > 0.0).then(|| {
                    let url = pages.url("item", &candidate.meta.slug);
                    RelatedItem {
                        item: Arc::clone(candidate),
                        canonical_url: format!("{site_url}{url}"),
                        url,
                        score: score.score,
                        shared_tags: score.shared_tags,
                    }
                })
            })
            .collect();
        // `items` is newest first, and the sort is stable: equal scores stay newest first.
        scored.sort_by(|a, b| {
            b.score.total_cmp(&a.score).then_with(|| b.shared_tags.len().cmp(&a.shared_tags.len()))
        });
        scored.truncate(limit);
        Ok(scored)
    }

    // ---- published items by name ---------------------------------------------------------

    /// The first published item with this slug (or filename), looking through the
    /// collections in configuration order.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn read_item_anywhere(&self, item: &ItemRef) -> CoreResult<ItemView> {
        self.read_item_anywhere_in(item, None).await
    }

    /// [`Self::read_item_anywhere`] in a language, on a site with languages: in each
    /// collection, the first language of the choice's chain that has the item published.
    pub async fn read_item_anywhere_in(
        &self,
        item: &ItemRef,
        choice: Option<crate::language::Choice>,
    ) -> CoreResult<ItemView> {
        for collection in self.collections() {
            match (choice, self.languages.as_deref()) {
                (Some(choice), Some(languages)) => {
                    for at in languages.chain(choice) {
                        let lane = self.in_language(collection, at);
                        if let Some(view) = self.read_published_in(lane, item, Some(choice.requested)).await?
                        {
                            return Ok(view);
                        }
                    }
                }
                _ => {
                    if let Some(view) = self.read_published(collection, item).await? {
                        return Ok(view);
                    }
                }
            }
        }
        Err(CoreError::not_found(format!("no published item {:?} in any collection", item.to_string())))
    }

    /// The published item `item_ref` names in `collection` (found through the index, so a
    /// draft with the same slug never shadows it), rendered; `None` when there is none.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn read_published(
        &self,
        collection: &Collection,
        item_ref: &ItemRef,
    ) -> CoreResult<Option<ItemView>> {
        self.read_published_in(collection, item_ref, None).await
    }

    /// [`Self::read_published`] answering for a read that asked for language `requested`.
    pub async fn read_published_in(
        &self,
        collection: &Collection,
        item_ref: &ItemRef,
        requested: Option<usize>,
    ) -> CoreResult<Option<ItemView>> {
        let item_ref = match self.ref_in(collection, item_ref) {
            Some(named) => named,
            None => return Ok(None),
        };
        let found = self.index(collection).await?.locate_published(&item_ref).cloned();
        let Some(found) = found else { return Ok(None) };
        let named = ItemRef::parse(&found.meta.filename)?;
        match self.read_item_in(collection, &named, &Viewer::Anonymous, requested).await {
            Ok(view) => Ok(Some(view)),
            // Deleted or made a draft since the index saw it.
            Err(CoreError::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// Tag pages at `checked` (a page path the options' parse checked), else at the default.
fn tag_pages(checked: Option<&str>, pretty: bool) -> PagePath {
    PagePath::trusted(checked.unwrap_or(DEFAULT_TAG_PAGE_PATH), pretty)
}

/// When an item was published: the instant its `date` names (a date alone is midnight in
/// the site's time zone), else the time its file last changed.
fn published_at(item: &IndexedItem) -> Option<OffsetDateTime> {
    item.meta.date_at.or_else(|| OffsetDateTime::from_unix_timestamp(item.meta.modified).ok())
}

/// `fm.image`: kept as written when it is a site path or an absolute URL, else put under
/// the resource folder's public URL (when `resourcesPath` named one).
fn resolve_image(image: &str, resource_url: Option<&str>) -> String {
    match resource_url {
        Some(base) if !image.starts_with('/') && !image.contains("://") => {
            format!("{}/{}", base.trim_end_matches('/'), image.trim_start_matches("./"))
        }
        _ => image.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::resolve_image;

    #[test]
    fn images() {
        assert_eq!(resolve_image("a.jpg", Some("/media/uploads")), "/media/uploads/a.jpg");
        assert_eq!(resolve_image("./a.jpg", Some("/media/uploads/")), "/media/uploads/a.jpg");
        assert_eq!(resolve_image("/img/a.jpg", Some("/media/uploads")), "/img/a.jpg");
        assert_eq!(resolve_image("https://cdn.example/a.jpg", Some("/media")), "https://cdn.example/a.jpg");
        assert_eq!(resolve_image("a.jpg", None), "a.jpg");
    }

    fn text(value: &str) -> Option<String> {
        Some(value.to_owned())
    }

    #[test]
    fn feed_options_are_read_from_text_limit_first() {
        use super::{NonZeroUsize, RssParams, RssText};
        let read = RssParams::parse(RssText {
            title: text(" A "),
            description: text(""),
            link: text("https://example.com/news/"),
            limit: text(" 2 "),
        })
        .unwrap();
        let want = RssParams {
            title: text("A"),
            description: None,
            link: text("https://example.com/news"),
            limit: NonZeroUsize::new(2),
        };
        assert_eq!(read, want);
        assert_eq!(
            RssParams::parse(RssText { link: text(" "), limit: text(""), ..Default::default() }).unwrap(),
            RssParams::default()
        );
        let refused = |link, limit| {
            RssParams::parse(RssText { link, limit, ..Default::default() }).unwrap_err().to_string()
        };
        assert_eq!(
            refused(text("ftp://x"), text("0")),
            r#"limit must be a whole number of 1 or more, got "0""#
        );
        assert!(refused(text("ftp://x"), None).starts_with("link "), "{}", refused(text("ftp://x"), None));
    }

    #[test]
    fn related_options_are_read_from_text_in_the_order_they_were_checked() {
        use super::{Criterion, NonZeroUsize, RelatedParams, RelatedText};
        let read = RelatedParams::parse(RelatedText {
            content_path: text("content/posts/a.md"),
            by: text("content, TAGS, content"),
            limit: text("3"),
            page_path: text("/blog/{slug}"),
            site_url: text("https://example.com/"),
            pretty_urls: text(" No "),
        })
        .unwrap();
        let want = RelatedParams {
            content_path: text("content/posts/a.md"),
            by: vec![Criterion::Content, Criterion::Tags],
            limit: NonZeroUsize::new(3),
            page_path: text("/blog/{slug}"),
            site_url: text("https://example.com"),
            pretty_urls: Some(false),
        };
        assert_eq!(read, want);
        let defaults =
            RelatedParams::parse(RelatedText { pretty_urls: text(" "), ..Default::default() }).unwrap();
        assert_eq!(defaults, RelatedParams { by: vec![Criterion::Tags], ..RelatedParams::default() });
        let refused = |by, limit, site_url, pretty| {
            RelatedParams::parse(RelatedText {
                by,
                limit,
                site_url,
                pretty_urls: pretty,
                ..Default::default()
            })
            .unwrap_err()
            .to_string()
        };
        let (by, limit, url, flag) = (|| text("colour"), || text("0"), || text("/x"), || text("maybe"));
        assert!(refused(by(), limit(), url(), flag()).starts_with("by must be"));
        assert!(refused(None, limit(), url(), flag()).starts_with("limit must be"));
        assert_eq!(refused(None, None, url(), flag()), r#"pretty_urls must be true or false, got "maybe""#);
        assert!(refused(None, None, url(), None).starts_with("site_url "));
    }

    #[test]
    fn search_index_options_are_read_from_text_in_the_order_they_were_checked() {
        use super::{SearchIndexParams, SearchIndexText};
        let read = SearchIndexParams::parse(SearchIndexText {
            collection_path: text("content/posts"),
            resources_path: text("media/uploads"),
            page_path: text(" /blog "),
            tag_page_path: text("/tag.php"),
            site_url: text("https://example.com/"),
            pretty_urls: text("no"),
            ..Default::default()
        })
        .unwrap();
        let want = SearchIndexParams {
            collection_path: text("content/posts"),
            resources_path: text("media/uploads"),
            page_path: text("/blog"),
            tag_page_path: text("/tag.php"),
            author_page_path: None,
            site_url: text("https://example.com"),
            pretty_urls: Some(false),
        };
        assert_eq!(read, want);
        let blank = || text(" ");
        let defaults = SearchIndexParams::parse(SearchIndexText {
            page_path: blank(),
            tag_page_path: blank(),
            author_page_path: blank(),
            site_url: blank(),
            pretty_urls: blank(),
            ..Default::default()
        });
        assert_eq!(defaults.unwrap(), SearchIndexParams::default());
        let refused = |page, tag, author, url, pretty| {
            SearchIndexParams::parse(SearchIndexText {
                page_path: page,
                tag_page_path: tag,
                author_page_path: author,
                site_url: url,
                pretty_urls: pretty,
                ..Default::default()
            })
            .unwrap_err()
            .to_string()
        };
        let (path, url, flag) = (|| text("blog"), || text("/x"), || text("maybe"));
        assert_eq!(
            refused(path(), path(), path(), url(), flag()),
            r#"pretty_urls must be true or false, got "maybe""#
        );
        assert!(
            refused(path(), path(), path(), url(), None)
                .starts_with("page_path \"blog\" must start with '/'")
        );
        assert!(refused(None, path(), path(), url(), None).starts_with("tag_page_path "));
        assert!(refused(None, None, path(), url(), None).starts_with("author_page_path "));
        assert!(refused(None, None, None, url(), None).starts_with("site_url "));
    }

    #[test]
    fn tag_options_are_read_from_text_flag_first() {
        use super::{NonZeroUsize, TagItemsParams, TagItemsText, TagsParams, TagsText};
        let read = TagsParams::parse(TagsText {
            content_path: text("content/posts"),
            tag_page_path: text("/t/"),
            pretty_urls: text("FALSE"),
        })
        .unwrap();
        assert_eq!(
            read,
            TagsParams {
                content_path: text("content/posts"),
                tag_page_path: text("/t/"),
                pretty_urls: Some(false)
            }
        );
        assert_eq!(
            TagsParams::parse(TagsText {
                tag_page_path: text(""),
                pretty_urls: text(" "),
                ..Default::default()
            })
            .unwrap(),
            TagsParams::default()
        );
        let refused = |path, flag| {
            TagsParams::parse(TagsText { tag_page_path: path, pretty_urls: flag, ..Default::default() })
                .unwrap_err()
                .to_string()
        };
        assert_eq!(refused(text("t"), text("2")), r#"pretty_urls must be true or false, got "2""#);
        assert!(refused(text("//evil.example"), None).starts_with("tag_page_path "));

        let read = TagItemsParams::parse(TagItemsText {
            content_path: text("content/pages"),
            page: text("3"),
            per_page: text("10"),
        })
        .unwrap();
        assert_eq!((read.page, read.per_page), (NonZeroUsize::new(3).unwrap(), NonZeroUsize::new(10)));
        assert_eq!(
            TagItemsParams::parse(TagItemsText { ..Default::default() }).unwrap(),
            TagItemsParams::default()
        );
        assert_eq!(TagItemsParams::default().page.get(), 1);
        for (page, per_page, named) in
            [(text("0"), None, "page"), (None, text("0"), "per_page"), (text("x"), None, "page")]
        {
            let message = TagItemsParams::parse(TagItemsText { page, per_page, ..Default::default() })
                .unwrap_err()
                .to_string();
            assert!(message.starts_with(named), "{message}");
        }
    }

    #[test]
    fn sitemap_options_are_read_from_text_limit_first() {
        use super::{NonZeroUsize, SitemapParams, SitemapText};
        let read = SitemapParams::parse(SitemapText {
            base_url: text("https://cdn.example.com/"),
            limit: text("999999"),
        })
        .unwrap();
        assert_eq!(
            (read.base_url.as_deref(), read.limit),
            (Some("https://cdn.example.com"), NonZeroUsize::new(999999))
        );
        assert_eq!(
            SitemapParams::parse(SitemapText { limit: text(" "), ..Default::default() }).unwrap(),
            SitemapParams::default()
        );
        let refused = |base, limit| {
            SitemapParams::parse(SitemapText { base_url: base, limit }).unwrap_err().to_string()
        };
        assert_eq!(
            refused(text("/relative"), text("-1")),
            r#"limit must be a whole number of 1 or more, got "-1""#
        );
        assert!(
            refused(text("/relative"), None).starts_with("baseUrl "),
            "{}",
            refused(text("/relative"), None)
        );
    }
}
