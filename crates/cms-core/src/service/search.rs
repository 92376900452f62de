//! Full-text search (see `crate::engine::search`): one search index per collection, built from
//! the item files on first use (the server starts that in the background), then kept in
//! step by following the change log ([`SearchIndexes`] is its first subscriber): every
//! change to the kept index, from any source, reaches it before the write answers.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use futures_util::lock::Mutex as AsyncMutex;

use super::{Cms, Viewer, read, write};
use crate::changes::{Change, ChangeSubscriber, SearchTerms};
use crate::collection::Collection;
use crate::document::ItemDocument;
use crate::engine::index::IndexedItem;
use crate::engine::search::{MAX_QUERY_CHARS, Query, SearchIndex, SearchText, Stemming};
use crate::error::{CoreError, CoreResult};
use crate::ports::{FileStamp, StoredFile};
use crate::query::{Page, at_least_one, positive};
use crate::render;
use crate::slug::ItemFilename;

/// How a collection's words are stemmed: by its language's stemmer (English on a site
/// without languages).
fn stemming_of(collection: &Collection) -> Stemming {
    collection
        .language
        .as_ref()
        .map_or_else(Stemming::default, |language| Stemming::of_language(&language.code))
}

/// Characters of a snippet (about two lines).
const SNIPPET_CHARS: usize = 160;
/// Files read at a time while a search index is built (their bytes and plain texts are
/// held until the batch is indexed).
const BUILD_BATCH: usize = 512;

/// `GET /cms/search` as sent, in text; [`SearchQuery::parse`] validates it.
#[derive(Debug, Clone, Default, Hash)]
pub struct SearchParams {
    pub q: Option<String>,
    /// A collection's index or label slug; all collections when absent.
    pub collection: Option<String>,
    pub page: Option<String>,
    pub per_page: Option<String>,
}

/// A search's parameters with its numbers typed, as an adapter that receives numbers (the
/// `search` tool) passes them; [`SearchQuery::from_input`] validates them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct SearchInput {
    pub q: Option<String>,
    /// A collection's index or label slug; all collections when absent or blank.
    pub collection: Option<String>,
    /// 1 or more.
    pub page: Option<usize>,
    /// 1 or more; clamped to the site's maximum.
    pub per_page: Option<usize>,
}

/// A validated search, what [`Cms::search`] takes: words to look for (present, not too
/// long), the collection to search (resolved by the search, so that an unknown one is
/// reported after the parameters' mistakes), the page.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SearchQuery {
    q: String,
    collection: Option<String>,
    page: usize,
    /// `None`: the site's default page size.
    per_page: Option<usize>,
}

impl SearchQuery {
    /// From the text a client sent: `q` is checked first, then the numbers, as ever.
    pub fn parse(params: &SearchParams) -> CoreResult<Self> {
        let q = checked_words(params.q.as_deref())?;
        Self::from_input(&SearchInput {
            q: Some(q.to_owned()),
            collection: params.collection.clone(),
            page: params.page.as_deref().map(|p| positive("page", p)).transpose()?,
            per_page: params.per_page.as_deref().map(|p| positive("per_page", p)).transpose()?,
        })
    }

    /// From typed values: the same checks and messages as [`Self::parse`].
    pub fn from_input(input: &SearchInput) -> CoreResult<Self> {
        let q = checked_words(input.q.as_deref())?.to_owned();
        let page = input.page.map(|p| at_least_one("page", p)).transpose()?.unwrap_or(1);
        let per_page = input.per_page.map(|p| at_least_one("per_page", p)).transpose()?;
        let collection =
            input.collection.as_deref().map(str::trim).filter(|key| !key.is_empty()).map(str::to_owned);
        Ok(Self { q, collection, page, per_page })
    }

    /// The words searched for.
    pub fn words(&self) -> &str {
        &self.q
    }

    /// The collection searched (its index or label slug); `None`: all of them.
    pub fn collection(&self) -> Option<&str> {
        self.collection.as_deref()
    }

    pub fn page(&self) -> usize {
        self.page
    }

    /// `None`: the site's default page size.
    pub fn per_page(&self) -> Option<usize> {
        self.per_page
    }
}

/// The words of a search: required, and at most [`MAX_QUERY_CHARS`] long.
fn checked_words(q: Option<&str>) -> CoreResult<&str> {
    let q = q.unwrap_or_default();
    if q.is_empty() {
        return Err(CoreError::invalid("q is required: the words to search for"));
    }
    if q.chars().count() > MAX_QUERY_CHARS {
        return Err(CoreError::invalid(format!("q must be at most {MAX_QUERY_CHARS} characters")));
    }
    Ok(q)
}

/// One search result.
#[derive(Debug, Clone)]
pub struct SearchHit {
    pub item: Arc<IndexedItem>,
    /// The collection's index and slug.
    pub collection: usize,
    pub collection_slug: String,
    pub url: String,
    pub canonical_url: String,
    /// Higher is better; rounded to 3 decimals.
    pub score: f64,
    /// A short passage of the body around the first match, HTML-escaped, with the
    /// matching words in `<mark>`.
    pub snippet: String,
}

/// Every collection's search index, and the number of changes to them.
pub(super) struct SearchIndexes {
    cells: Vec<SearchCell>,
    /// Counts changes to the search indexes (see `Cms::search_version`).
    generation: AtomicU64,
}

impl SearchIndexes {
    pub(super) fn new(collections: usize) -> Self {
        Self {
            cells: (0..collections).map(|_| SearchCell::default()).collect(),
            generation: AtomicU64::new(0),
        }
    }

    fn changed(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }
}

impl std::ops::Index<usize> for SearchIndexes {
    type Output = SearchCell;

    fn index(&self, collection: usize) -> &SearchCell {
        &self.cells[collection]
    }
}

impl ChangeSubscriber for SearchIndexes {
    /// Applies a change to its collection's search index, once that exists (a build
    /// under way takes changes too; one not started reads the files when it starts).
    fn changed(&self, change: &Change) {
        let cell = &self[change.collection];
        if read(&cell.index).is_none() {
            return;
        }
        cell.changes.fetch_add(1, Ordering::AcqRel);
        {
            let mut search = write(&cell.index);
            let Some(search) = search.as_mut() else { return };
            let after = change.after.as_ref().and_then(|known| Some((known.item()?, known.live())));
            match (&change.terms, after) {
                (SearchTerms::Text(body), Some((item, live))) => {
                    search.upsert(Arc::clone(&item.meta.filename), live, &search_text(item, body))
                }
                (SearchTerms::Unchanged(markdown), Some((item, live))) => {
                    if !search.set_published_at(&item.meta.filename, live, item.file_version) {
                        let body = render::to_plain_text(markdown);
                        search.upsert(Arc::clone(&item.meta.filename), live, &search_text(item, &body));
                    }
                }
                (SearchTerms::Visibility, Some((item, live))) => {
                    search.set_published(&item.meta.filename, live);
                }
                _ => search.remove(&change.filename),
            }
        }
        self.changed();
    }
}

/// One collection's search index, and the lock that lets one task build it.
#[derive(Default)]
pub(super) struct SearchCell {
    /// `Some` from the moment the build starts: changes made meanwhile apply to it.
    pub(super) index: RwLock<Option<SearchIndex>>,
    building: AsyncMutex<()>,
    complete: AtomicBool,
    /// Changes applied to it, and how many of those its last saved snapshot holds (see
    /// [`Cms::save_search_snapshots`]).
    changes: AtomicU64,
    saved: AtomicU64,
}

impl Cms {
    /// Ranked full-text search over title, tags and body of one collection or all of
    /// them; drafts only for a key.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn search(&self, search: &SearchQuery, viewer: &Viewer) -> CoreResult<Page<SearchHit>> {
        self.search_in(search, viewer, None).await
    }

    /// [`Self::search`] of one language's items, on a site with languages (`lang` is its
    /// position in `languages:`; the default language's without it): each language's
    /// words are stemmed by its own stemmer.
    pub async fn search_in(
        &self,
        search: &SearchQuery,
        viewer: &Viewer,
        lang: Option<usize>,
    ) -> CoreResult<Page<SearchHit>> {
        let page = search.page();
        let per_page = search.per_page().unwrap_or(self.site.per_page).min(self.site.max_per_page);
        let collections: Vec<&Collection> = match search.collection() {
            Some(key) => vec![self.collection(key)?],
            None => self.collections().iter().collect(),
        };
        let collections: Vec<&Collection> = match lang {
            Some(at) => collections.into_iter().map(|c| self.in_language(c, at)).collect(),
            None => collections,
        };
        // A query without letters or digits matches nothing (it is not an error).
        let query = Query::parse(search.words());

        let start = (page - 1).saturating_mul(per_page);
        // Each collection's best `start + per_page`, merged: enough for this page.
        let wanted = start.saturating_add(per_page);
        let (mut hits, mut total) = (Vec::new(), 0);
        for collection in collections.into_iter().filter(|_| !query.is_empty()) {
            self.ensure_searchable(collection).await?;
            let query = Query::parse_in(search.words(), stemming_of(collection));
            let (found, count) = read(&self.search[collection.index].index)
                .as_ref()
                .map(|index| index.search(&query, viewer.has_key(), wanted))
                .unwrap_or_default();
            total += count;
            hits.extend(found.into_iter().map(|hit| (collection, hit)));
        }
        hits.sort_by(|(ca, a), (cb, b)| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| ca.index.cmp(&cb.index))
                .then_with(|| a.name.cmp(&b.name))
        });
        let mut items = Vec::new();
        for (collection, hit) in hits.into_iter().skip(start).take(per_page) {
            let item = self.index(collection).await?.get(&hit.name).and_then(Result::ok).cloned();
            let Some(item) = item else { continue }; // removed since it was found
            let query = Query::parse_in(search.words(), stemming_of(collection));
            let snippet = self.snippet(collection, &item, &query).await;
            let url = collection.item_url(&item.meta.slug);
            items.push(SearchHit {
                canonical_url: self.site.absolute_url(&url),
                url,
                collection: collection.family(),
                collection_slug: collection.slug.clone(),
                score: (f64::from(hit.score) * 1000.0).round() / 1000.0,
                snippet,
                item,
            });
        }
        Ok(Page::of_selection(items, total, page, per_page))
    }

    /// The snippet of one hit, from its file as stored now (the index keeps no text);
    /// from the excerpt when the file cannot be read.
    async fn snippet(&self, collection: &Collection, item: &IndexedItem, query: &Query) -> String {
        let body = match collection.naming.parse(&item.meta.filename) {
            Some(name) => match self.ports.content.read(collection, &name).await {
                Ok(Some(file)) => plain_body(&file),
                _ => None,
            },
            None => None,
        };
        query.snippet(body.as_deref().unwrap_or(&item.plain_excerpt), SNIPPET_CHARS)
    }

    /// How each published item of a collection overlaps `source` by content (see
    /// [`SearchIndex::content_overlap`]): per filename sharing any content term, the
    /// counts. Builds the search index first if it is not yet built, and reads the
    /// source's file (the indexes keep no text).
    pub(super) async fn content_overlap(
        &self,
        collection: &Collection,
        source: &IndexedItem,
    ) -> CoreResult<(u32, std::collections::HashMap<String, (u32, u32)>)> {
        self.ensure_searchable(collection).await?;
        let body = match collection.naming.parse(&source.meta.filename) {
            Some(name) => match self.ports.content.read(collection, &name).await? {
                Some(file) => plain_body(&file).unwrap_or_default(),
                None => String::new(),
            },
            None => String::new(),
        };
        let search = read(&self.search[collection.index].index);
        let Some(search) = search.as_ref() else { return Ok((0, Default::default())) };
        let overlap = search.content_overlap(&search_text(source, &body));
        let items = overlap.items.into_iter().map(|(name, counts)| (name.to_owned(), counts)).collect();
        Ok((overlap.source_terms, items))
    }

    /// Builds the collection's search index now rather than on the first search (the
    /// server calls it in the background after start-up). Cheap once built.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn prepare_search(&self) -> CoreResult<()> {
        for collection in &self.collections {
            self.ensure_searchable(collection).await?;
        }
        Ok(())
    }

    /// Builds the search index from the item files the kept index lists. Changes made
    /// while it is built apply to it at once; a file read here is only taken when the kept
    /// index still holds that very version, so the build never undoes a newer change.
    async fn ensure_searchable(&self, collection: &Collection) -> CoreResult<()> {
        let cell = &self.search[collection.index];
        if cell.complete.load(Ordering::Acquire) {
            return Ok(());
        }
        let _building = cell.building.lock().await;
        if cell.complete.load(Ordering::Acquire) {
            return Ok(());
        }
        let saved = self.load_search_snapshot(collection).await;
        let items: Vec<Arc<IndexedItem>> = {
            let index = self.index(collection).await?;
            let mut search = write(&cell.index);
            match saved {
                // What the snapshot holds of the items as they are now; the others are
                // read below.
                Some(mut saved) if search.is_none() => {
                    saved.keep_current(|name| {
                        let item = index.get(name)?.ok()?;
                        Some((&item.meta.filename, item.file_version, index.is_live(item)))
                    });
                    let unsaved: Vec<Arc<IndexedItem>> = index
                        .items()
                        .into_iter()
                        .filter(|item| !saved.contains(&item.meta.filename))
                        .collect();
                    *search = Some(saved);
                    unsaved
                }
                _ => {
                    search.get_or_insert_with(|| SearchIndex::new(stemming_of(collection)));
                    index.items()
                }
            }
        };
        let read_again = items.len();
        for items in items.chunks(BUILD_BATCH) {
            // Named a batch at a time: a name per item for the whole build was 9 MB at
            // 100,000 items, held at the build's peak.
            let batch: Vec<ItemFilename> =
                items.iter().filter_map(|item| collection.naming.parse(&item.meta.filename)).collect();
            let files: Vec<StoredFile> = self
                .ports
                .content
                .read_many(collection, &batch)
                .await
                .into_iter()
                .filter_map(|f| f.ok()?)
                .collect();
            let texts = plain_bodies(files);
            let index = self.index(collection).await?;
            let mut search = write(&cell.index);
            let Some(search) = search.as_mut() else { continue };
            for (stamp, body) in &texts {
                // Only the version the kept index holds (a newer one is already applied).
                if !index.holds(stamp) {
                    continue;
                }
                if let Some(Ok(item)) = index.get(&stamp.name) {
                    let name = Arc::clone(&item.meta.filename);
                    search.upsert(name, index.is_live(item), &search_text(item, body));
                }
            }
        }
        // Postings grew by doubling while built: give back the spare room (a third of
        // them at 100,000 items).
        if read_again > 0
            && let Some(search) = write(&cell.index).as_mut()
        {
            search.compact();
            cell.changes.fetch_add(1, Ordering::AcqRel);
        }
        cell.complete.store(true, Ordering::Release);
        self.search.changed();
        tracing::info!(
            collection = collection.slug.as_str(),
            items = read(&cell.index).as_ref().map_or(0, SearchIndex::len),
            read_again,
            "built the search index"
        );
        // Saved at once: the next start reads it rather than every file.
        if let Err(error) = self.save_search_snapshot(collection).await {
            tracing::warn!(collection = collection.slug.as_str(), %error, "cannot save the search index");
        }
        Ok(())
    }

    /// The collection's saved search index, if it has one that can be used (else logged:
    /// the build then reads every item file, nothing more).
    async fn load_search_snapshot(&self, collection: &Collection) -> Option<SearchIndex> {
        let bytes = match self.ports.snapshots.load_search(collection).await {
            Ok(bytes) => bytes?,
            Err(error) => {
                tracing::warn!(collection = collection.slug.as_str(), %error, "cannot read the search index snapshot");
                return None;
            }
        };
        match SearchIndex::decode(&bytes, stemming_of(collection)) {
            Ok(search) => Some(search),
            Err(reason) => {
                tracing::info!(
                    collection = collection.slug.as_str(),
                    reason,
                    "not using the search index snapshot"
                );
                None
            }
        }
    }

    /// Saves the collection's search index when it is built and changed since its last
    /// snapshot; whether it saved one.
    async fn save_search_snapshot(&self, collection: &Collection) -> CoreResult<bool> {
        let cell = &self.search[collection.index];
        if !cell.complete.load(Ordering::Acquire) {
            return Ok(false);
        }
        let changes = cell.changes.load(Ordering::Acquire);
        if cell.saved.load(Ordering::Acquire) == changes {
            return Ok(false);
        }
        let Some(bytes) = read(&cell.index).as_ref().map(SearchIndex::encode) else { return Ok(false) };
        self.ports.snapshots.save_search(collection, bytes).await?;
        cell.saved.store(changes, Ordering::Release);
        Ok(true)
    }

    /// [`Self::save_search_snapshot`] for every collection; how many were saved.
    pub(super) async fn save_search_snapshots(&self) -> CoreResult<usize> {
        let mut saved = 0;
        for collection in &self.collections {
            saved += usize::from(self.save_search_snapshot(collection).await?);
        }
        Ok(saved)
    }

    /// A number that changes whenever a search index does: the search indexes are updated
    /// just after the item indexes, so an answer built from search results names both
    /// this and [`Cms::content_version`].
    pub fn search_version(&self) -> u64 {
        self.search.generation.load(Ordering::Acquire)
    }
}

fn search_text<'a>(item: &'a IndexedItem, body: &'a str) -> SearchText<'a> {
    SearchText { title: &item.meta.title, tags: &item.meta.tags, body, version: item.file_version }
}

fn parse(file: &StoredFile) -> Option<ItemDocument> {
    ItemDocument::parse(std::str::from_utf8(&file.bytes).ok()?).ok()
}

fn plain_body(file: &StoredFile) -> Option<String> {
    parse(file).map(|doc| render::to_plain_text(&doc.body))
}

/// The bodies of a batch of files as plain text, on every core (parsing YAML and Markdown
/// is the cost of a build, and pure CPU work), as the kept index's build does.
fn plain_bodies(files: Vec<StoredFile>) -> Vec<(FileStamp, String)> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 16);
    let chunk = files.len().div_ceil(threads).max(256);
    let texts = |files: &[StoredFile]| -> Vec<(FileStamp, String)> {
        files.iter().filter_map(|file| Some((file.stamp.clone(), plain_body(file)?))).collect()
    };
    if files.len() <= chunk {
        return texts(&files);
    }
    std::thread::scope(|scope| {
        let workers: Vec<_> = files.chunks(chunk).map(|part| scope.spawn(move || texts(part))).collect();
        workers.into_iter().flat_map(|w| w.join().expect("a search worker panicked")).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(pairs: &[(&str, &str)]) -> SearchParams {
        let mut params = SearchParams::default();
        for (name, value) in pairs {
            let slot = match *name {
                "q" => &mut params.q,
                "collection" => &mut params.collection,
                "page" => &mut params.page,
                _ => &mut params.per_page,
            };
            *slot = Some((*value).to_owned());
        }
        params
    }

    fn refused(params: &SearchParams) -> String {
        SearchQuery::parse(params).unwrap_err().to_string()
    }

    #[test]
    fn the_words_are_checked_first_then_the_numbers() {
        assert_eq!(refused(&text(&[])), "q is required: the words to search for");
        assert_eq!(refused(&text(&[("q", ""), ("page", "0")])), "q is required: the words to search for");
        let long = "a".repeat(MAX_QUERY_CHARS + 1);
        assert_eq!(
            refused(&text(&[("q", &long)])),
            format!("q must be at most {MAX_QUERY_CHARS} characters")
        );
        assert!(SearchQuery::parse(&text(&[("q", &"é".repeat(MAX_QUERY_CHARS))])).is_ok());
        assert_eq!(
            refused(&text(&[("q", "x"), ("page", "0")])),
            r#"page must be a whole number of 1 or more, got "0""#
        );
        assert_eq!(
            refused(&text(&[("q", "x"), ("per_page", "two")])),
            r#"per_page must be a whole number of 1 or more, got "two""#
        );
    }

    #[test]
    fn typed_values_are_checked_as_their_text_is() {
        let refused = |input: SearchInput| SearchQuery::from_input(&input).unwrap_err().to_string();
        assert_eq!(refused(SearchInput::default()), "q is required: the words to search for");
        let words = || SearchInput { q: Some("x".into()), ..SearchInput::default() };
        assert_eq!(
            refused(SearchInput { page: Some(0), ..words() }),
            "page must be a whole number of 1 or more, got 0"
        );
        assert_eq!(
            refused(SearchInput { per_page: Some(0), ..words() }),
            "per_page must be a whole number of 1 or more, got 0"
        );
        let query = SearchQuery::from_input(&SearchInput {
            collection: Some("  ".into()),
            page: Some(2),
            per_page: Some(7),
            ..words()
        })
        .unwrap();
        assert_eq!(
            (query.words(), query.collection(), query.page(), query.per_page()),
            ("x", None, 2, Some(7))
        );
    }

    #[test]
    fn text_and_typed_values_make_the_same_query() {
        let parsed = SearchQuery::parse(&text(&[("q", "rust"), ("collection", " posts "), ("page", " 3")]));
        let typed = SearchQuery::from_input(&SearchInput {
            q: Some("rust".into()),
            collection: Some("posts".into()),
            page: Some(3),
            per_page: None,
        });
        assert_eq!(parsed.unwrap(), typed.unwrap());
        let defaults = SearchQuery::parse(&text(&[("q", "rust")])).unwrap();
        assert_eq!((defaults.collection(), defaults.page(), defaults.per_page()), (None, 1, None));
    }
}
