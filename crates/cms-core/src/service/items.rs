//! Item reads and writes.

use std::borrow::Cow;
use std::sync::Arc;

use time::OffsetDateTime;

use super::index::{KeptBody, Why};
use super::rendered::{Rendered, Version};
use super::shared_fields::TranslationOf;
use super::{
    CollectionTag, ItemSummary, ItemUpdate, ItemVersion, ItemView, NewItem, RawItem, UpdateMode, Viewer,
    WriteOutcome,
};
use crate::changes::ChangeKind;
use crate::codec::YamlLimits;
use crate::collection::Collection;
use crate::document::ItemDocument;
use crate::engine::index::IndexedItem;
use crate::error::{CoreError, CoreResult};
use crate::item::{self, ItemMeta};
use crate::item_file::{ContentTag, Precondition, etag_of, file_version, parse_bytes};
use crate::policy::{Caller, Operation};
use crate::ports::StoredFile;
use crate::query::{ListQuery, Page, StatusFilter};
use crate::render;
use crate::service::Cms;
use crate::slug::{ItemFilename, ItemRef, Slug, slugify};

/// How many times an update reads, merges and writes before it gives up on an item that
/// keeps changing under it.
const UPDATE_ATTEMPTS: usize = 8;

impl Cms {
    // ---- items: reads ------------------------------------------------------------------

    /// One page of a collection's items, from the kept index (no storage access).
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn list_items(
        &self,
        collection: &Collection,
        query: &ListQuery,
        viewer: &Viewer,
    ) -> CoreResult<Page<ItemSummary>> {
        self.list_items_where(collection, query, viewer, None).await
    }

    /// [`Self::list_items`] of the items whose translation into a language is missing or
    /// outdated (`missing=`, `outdated=`), on a site with languages.
    pub async fn list_items_where(
        &self,
        collection: &Collection,
        query: &ListQuery,
        viewer: &Viewer,
        filter: Option<super::TranslationFilter>,
    ) -> CoreResult<Page<ItemSummary>> {
        let per_page = self.list_page_size(query, viewer)?;
        let (selection, fingerprint) = match filter {
            None => {
                let index = self.index(collection).await?;
                (index.select(query, query.page, per_page), index.fingerprint())
            }
            Some(filter) => self.select_translated(collection, query, per_page, filter).await?,
        };
        let mut page = Page::of_selection(selection.items, selection.total, query.page, per_page);
        page.version = Some(self.expanded_version(
            collection,
            query,
            list_version(collection, query, per_page, fingerprint)
                ^ self.translations_version(collection, None, viewer.has_key())
                ^ filter_version(filter),
        ));
        let mut page = page.map(|item| self.summary_for(collection, item, None, viewer));
        if !query.fields.is_empty() || !query.expand.is_empty() {
            for summary in &mut page.items {
                self.add_entry_fields(collection, query, summary, viewer).await?;
            }
        }
        Ok(page)
    }

    /// A list entry's `fm`: the fields `fields=` names, as the file has them; and the
    /// items that the references `expand=` names refer to, if the viewer may see them.
    async fn add_entry_fields(
        &self,
        collection: &Collection,
        query: &ListQuery,
        summary: &mut ItemSummary,
        viewer: &Viewer,
    ) -> CoreResult<()> {
        let Some(model) = collection.model.as_deref() else { return Ok(()) };
        let mut fm = crate::document::Frontmatter::new();
        let mut expanded = Vec::new();
        // A reference both shown and expanded is expanded, once.
        let shown = query.fields.iter().filter(|name| !query.expand.contains(name));
        for name in shown.chain(&query.expand) {
            let Some(at) = model.fields.iter().position(|f| f.name == *name) else { continue };
            let Some(value) = summary.item.field(at).and_then(|f| f.json()) else { continue };
            if let (crate::model::Kind::Reference { collection: target }, true) =
                (&model.fields[at].kind, query.expand.contains(name))
            {
                expanded
                    .push((name.clone(), self.referred(target, value.as_str(), viewer).await?.map(Box::new)));
            }
            fm.insert(name.clone(), value);
        }
        summary.fm = Some(fm);
        summary.expanded = expanded;
        Ok(())
    }

    /// The item `slug` of collection `target`, if it exists and the viewer may see it.
    async fn referred(
        &self,
        target: &str,
        slug: Option<&str>,
        viewer: &Viewer,
    ) -> CoreResult<Option<ItemSummary>> {
        let (Some(slug), Some(target)) = (slug, self.collections().iter().find(|c| c.slug == target)) else {
            return Ok(None);
        };
        let Ok(item_ref) = ItemRef::parse(slug) else { return Ok(None) };
        let found = {
            let index = self.index(target).await?;
            index
                .find(&item_ref)
                .and_then(Result::ok)
                .filter(|item| viewer.has_key() || index.is_live(item))
                .cloned()
        };
        Ok(found.map(|item| self.summary(target, item)))
    }

    /// A list's version, also naming the collections whose items `expand=` inlines.
    fn expanded_version(&self, collection: &Collection, query: &ListQuery, version: u64) -> u64 {
        let Some(model) = collection.model.as_deref().filter(|_| !query.expand.is_empty()) else {
            return version;
        };
        use std::hash::{Hash, Hasher};
        let mut hasher = std::hash::DefaultHasher::new();
        version.hash(&mut hasher);
        for name in &query.expand {
            if let Some(crate::model::Kind::Reference { collection: target }) =
                model.field(name).map(|f| &f.kind)
                && let Some(target) = self.collections().iter().find(|c| c.slug == *target)
            {
                self.content_version(Some(target)).hash(&mut hasher);
            }
        }
        hasher.finish()
    }

    /// The `version` that [`Self::list_items`] gives this page now, without selecting or
    /// building it, and with the same errors: a caller that keeps answers by version
    /// answers a repeated page from what it kept.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn list_items_version(
        &self,
        collection: &Collection,
        query: &ListQuery,
        viewer: &Viewer,
    ) -> CoreResult<u64> {
        self.list_items_version_where(collection, query, viewer, None).await
    }

    /// [`Self::list_items_version`] of [`Self::list_items_where`].
    pub async fn list_items_version_where(
        &self,
        collection: &Collection,
        query: &ListQuery,
        viewer: &Viewer,
        filter: Option<super::TranslationFilter>,
    ) -> CoreResult<u64> {
        let per_page = self.list_page_size(query, viewer)?;
        let fingerprint = self.index(collection).await?.fingerprint();
        Ok(self.expanded_version(
            collection,
            query,
            list_version(collection, query, per_page, fingerprint)
                ^ self.translations_version(collection, None, viewer.has_key())
                ^ filter_version(filter),
        ))
    }

    /// A number that changes whenever an item of `collection` (of every collection, for
    /// `None`) is added, changed, removed, published or unpublished: a version of all that
    /// the discovery routes can show of it. Builds no index: one not built yet counts as
    /// such (the answer made then builds it, and the next version names what it holds).
    pub fn content_version(&self, collection: Option<&Collection>) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::hash::DefaultHasher::new();
        for collection in collection.map_or(&self.collections[..], std::slice::from_ref) {
            let index = super::read(&self.indexes[collection.index].index);
            (collection.index, index.as_ref().map(|index| index.fingerprint())).hash(&mut hasher);
        }
        hasher.finish()
    }

    fn list_page_size(&self, query: &ListQuery, viewer: &Viewer) -> CoreResult<usize> {
        if query.status != StatusFilter::Published && !viewer.has_key() {
            return Err(CoreError::Unauthorized(
                "listing drafts (status=draft, status=scheduled or status=all) needs an API key".into(),
            ));
        }
        Ok(query.per_page.unwrap_or(self.site.per_page).min(self.site.max_per_page))
    }

    /// The tags of a collection's items that the viewer may see (of drafts and scheduled
    /// items too, with a key), each once by slug, by spelling ignoring case: from the
    /// index's tag lists, without a walk of the items.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn collection_tags(
        &self,
        collection: &Collection,
        viewer: &Viewer,
    ) -> CoreResult<Vec<CollectionTag>> {
        let mut tags: Vec<CollectionTag> = {
            let index = self.index(collection).await?;
            index
                .tags(!viewer.has_key())
                .into_iter()
                .map(|(slug, tag, items)| CollectionTag { slug: slug.to_owned(), tag: tag.to_owned(), items })
                .collect()
        };
        tags.sort_by_cached_key(|t| (t.tag.to_lowercase(), t.slug.clone()));
        Ok(tags)
    }

    /// How many of a collection's items are live, scheduled and drafts now (at the index's
    /// clock, which the scheduler moves): kept counts, no walk of the items.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn status_counts(
        &self,
        collection: &Collection,
    ) -> CoreResult<crate::engine::index::StatusCounts> {
        Ok(self.index(collection).await?.status_counts())
    }

    /// Every usable item of a collection, as the index holds them.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn indexed_items(&self, collection: &Collection) -> CoreResult<Vec<Arc<IndexedItem>>> {
        Ok(self.index(collection).await?.items())
    }

    /// A list entry as a public client sees it (its published translations only).
    pub(super) fn summary(&self, collection: &Collection, item: Arc<IndexedItem>) -> ItemSummary {
        self.summary_for(collection, item, None, &Viewer::Anonymous)
    }

    /// A list entry of `viewer`'s answer; `requested` is the language asked for, when the
    /// entry may have fallen back to another.
    pub(super) fn summary_for(
        &self,
        collection: &Collection,
        item: Arc<IndexedItem>,
        requested: Option<usize>,
        viewer: &Viewer,
    ) -> ItemSummary {
        let url = collection.item_url(&item.meta.slug);
        let language = self.language_of(collection, &item, requested, viewer.has_key());
        ItemSummary {
            canonical_url: self.site.absolute_url(&url),
            url,
            item,
            fm: None,
            expanded: Vec::new(),
            language,
        }
    }

    /// The [`ItemVersion`] that [`Self::read_item`] would give now, from the index alone,
    /// with its errors (an unknown item, or a draft without a key: `NotFound`). `None`
    /// when the index cannot name it (a file it could not use): read the item instead.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn item_version(
        &self,
        collection: &Collection,
        item_ref: &ItemRef,
        viewer: &Viewer,
    ) -> CoreResult<Option<ItemVersion>> {
        self.item_version_in(collection, item_ref, viewer, None).await
    }

    /// [`Self::item_version`] of an answer in a language (see [`Self::item_in`]):
    /// `requested` is the language asked for.
    pub async fn item_version_in(
        &self,
        collection: &Collection,
        item_ref: &ItemRef,
        viewer: &Viewer,
        requested: Option<usize>,
    ) -> CoreResult<Option<ItemVersion>> {
        self.settle_announced(collection, item_ref).await?;
        let (indexed, state) = {
            let index = self.index(collection).await?;
            let (found, state) =
                index.find_linked(item_ref).ok_or_else(|| item_not_found(collection, item_ref))?;
            let Ok(indexed) = found else { return Ok(None) };
            if !index.is_live(indexed) && !viewer.has_key() {
                return Err(item_not_found(collection, item_ref));
            }
            if collection.language.is_none() {
                return Ok(Some(ItemVersion::of(collection.index, indexed.file_version, indexed.etag())));
            }
            (Arc::clone(indexed), state)
        };
        Ok(Some(self.version_of_indexed(collection, &indexed, state, viewer, requested)))
    }

    /// The [`ItemVersion`] of an answer of `indexed`, an item of `collection` the viewer
    /// may see, whose index keeps `state` as its linked state (if it keeps one).
    pub(super) fn version_of_indexed(
        &self,
        collection: &Collection,
        indexed: &IndexedItem,
        state: Option<u64>,
        viewer: &Viewer,
        requested: Option<usize>,
    ) -> ItemVersion {
        let translations = self.item_translations_version(collection, indexed, viewer.has_key(), state);
        ItemVersion::of(collection.index, indexed.file_version, indexed.etag())
            .with_languages(languages_version(collection, translations, requested))
    }

    /// What names the language part of a single answer of the file `filename` (0 on a
    /// site without languages).
    fn languages_version(
        &self,
        collection: &Collection,
        filename: &str,
        requested: Option<usize>,
        viewer: &Viewer,
    ) -> u64 {
        languages_version(
            collection,
            self.translations_version(collection, Some(filename), viewer.has_key()),
            requested,
        )
    }

    /// A single item, rendered. Drafts are invisible without a key. The metadata comes
    /// from the index and the HTML from a cache kept per file version; storage is read
    /// only when the rendering of this version is not cached.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn read_item(
        &self,
        collection: &Collection,
        item_ref: &ItemRef,
        viewer: &Viewer,
    ) -> CoreResult<ItemView> {
        self.read_item_in(collection, item_ref, viewer, None).await
    }

    /// [`Self::read_item`] answering in a language (see [`Self::item_in`]): `requested`
    /// is the language asked for.
    pub async fn read_item_in(
        &self,
        collection: &Collection,
        item_ref: &ItemRef,
        viewer: &Viewer,
        requested: Option<usize>,
    ) -> CoreResult<ItemView> {
        let view = self.read_item_plain(collection, item_ref, viewer).await?;
        Ok(self.in_its_language(collection, view, requested, viewer))
    }

    /// A view of `collection`'s item as an answer in a language says it: its version and
    /// ETag also name its translations, which it lists (see [`Self::languages_version`]).
    /// As it is on a site without languages.
    pub(super) fn in_its_language(
        &self,
        collection: &Collection,
        mut view: ItemView,
        requested: Option<usize>,
        viewer: &Viewer,
    ) -> ItemView {
        if collection.language.is_some() {
            let languages = self.languages_version(collection, &view.meta.filename, requested, viewer);
            let version = ItemVersion { etag: view.etag, version: view.version }.with_languages(languages);
            (view.etag, view.version) = (version.etag, version.version);
            view.language = self.translations_of_view(collection, &view, requested, viewer);
        }
        view
    }

    /// The version of the answer to an anonymous read of `item` of `collection` in its own
    /// language (what [`Self::in_its_language`] gives it): how answers made ahead are kept.
    pub(super) fn public_answer_version(&self, collection: &Collection, item: &IndexedItem) -> u64 {
        let own = collection.language.as_ref().map(|l| l.at);
        let translations = self.item_translations_version(collection, item, false, None);
        let languages = languages_version(collection, translations, own);
        ItemVersion::of(collection.index, item.file_version, String::new()).with_languages(languages).version
    }

    async fn read_item_plain(
        &self,
        collection: &Collection,
        item_ref: &ItemRef,
        viewer: &Viewer,
    ) -> CoreResult<ItemView> {
        self.settle_announced(collection, item_ref).await?;
        let (name, indexed) = {
            let index = self.index(collection).await?;
            let name = index.locate(item_ref).ok_or_else(|| item_not_found(collection, item_ref))?;
            let indexed =
                index.get(name.as_str()).and_then(Result::ok).map(|i| (Arc::clone(i), index.is_live(i)));
            (name, indexed)
        };
        let Some((indexed, live)) = indexed else {
            // Known but unusable: read it to say why.
            let (name, file) = self.load(collection, item_ref).await?;
            let doc = parse_stored(&name, &file)?;
            return self.view_of_file(collection, &name, &file, doc, viewer, item_ref);
        };
        if !live && !viewer.has_key() {
            return Err(item_not_found(collection, item_ref));
        }
        let version = Version { collection: collection.index, name: name.as_str(), content: indexed.content };
        let rendered = match self.kept_rendering(version) {
            Some(rendered) => rendered,
            None => {
                let file = self
                    .ports
                    .content
                    .read(collection, &name)
                    .await?
                    .ok_or_else(|| item_not_found(collection, item_ref))?;
                let doc = parse_stored(&name, &file)?;
                if ContentTag::of(&file.bytes) != indexed.content {
                    // Changed since it was indexed, and the change report is on its way:
                    // answer from the file as read, in full.
                    return self.view_of_file(collection, &name, &file, doc, viewer, item_ref);
                }
                let rendered = Rendered { html: render::to_html(&doc.body), fm: doc.fm };
                self.keep_rendering(version, &rendered);
                rendered
            }
        };
        Ok(self.view_of(collection, &indexed, rendered))
    }

    /// The view of an indexed item with its rendering.
    pub(super) fn view_of(
        &self,
        collection: &Collection,
        indexed: &IndexedItem,
        rendered: Rendered,
    ) -> ItemView {
        let url = collection.item_url(&indexed.meta.slug);
        ItemView {
            version: ItemVersion::of(collection.index, indexed.file_version, String::new()).version,
            collection: collection.family(),
            canonical_url: self.site.absolute_url(&url),
            url,
            excerpt: indexed.excerpt().to_owned(),
            html: rendered.html,
            etag: indexed.etag(),
            fm: rendered.fm,
            meta: indexed.meta.clone(),
            language: None,
        }
    }

    /// What a single answer says of its language (from the index's entry of its file).
    fn translations_of_view(
        &self,
        collection: &Collection,
        view: &ItemView,
        requested: Option<usize>,
        viewer: &Viewer,
    ) -> Option<super::InLanguage> {
        // Taken out of the index first: the translations read the other languages' indexes,
        // and one index's lock is never held while another's is taken.
        let indexed = {
            let index = super::read(&self.indexes[collection.index].index);
            Arc::clone(index.as_ref()?.get(&view.meta.filename)?.ok()?)
        };
        self.language_of(collection, &indexed, requested, viewer.has_key())
    }

    fn view_of_file(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        file: &StoredFile,
        doc: ItemDocument,
        viewer: &Viewer,
        item_ref: &ItemRef,
    ) -> CoreResult<ItemView> {
        let meta = ItemMeta::derive(
            name,
            &doc,
            file.stamp.modified,
            file.stamp.size,
            &self.zone,
            collection.slugs(),
        );
        if !meta.live_at(self.now_secs()) && !viewer.has_key() {
            return Err(item_not_found(collection, item_ref));
        }
        let url = collection.item_url(&meta.slug);
        let content = ContentTag::of(&file.bytes);
        Ok(ItemView {
            version: ItemVersion::of(collection.index, file_version(&meta, content), String::new()).version,
            collection: collection.family(),
            canonical_url: self.site.absolute_url(&url),
            url,
            excerpt: crate::engine::index::excerpt_of(&doc),
            html: render::to_html(&doc.body),
            etag: content.text(),
            fm: doc.fm,
            meta,
            language: None,
        })
    }

    /// An item's frontmatter and Markdown as stored, whatever its status, for `caller`:
    /// the source of an item is privileged as its drafts are ([`Operation::ReadDrafts`]).
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn read_item_source(
        &self,
        caller: impl Into<Caller<'_>>,
        collection: &Collection,
        item: &ItemRef,
    ) -> CoreResult<RawItem> {
        self.authorize(caller, Operation::ReadDrafts).await?;
        self.settle_announced(collection, item).await?;
        self.read_raw(collection, item).await
    }

    /// An item's frontmatter and Markdown as stored, unchecked: [`Self::read_item_source`] is
    /// every adapter's way in.
    pub(crate) async fn read_raw(&self, collection: &Collection, item: &ItemRef) -> CoreResult<RawItem> {
        let (name, file) = self.load(collection, item).await?;
        let doc = parse_stored(&name, &file)?;
        Ok(RawItem {
            collection: collection.family(),
            meta: ItemMeta::derive(
                &name,
                &doc,
                file.stamp.modified,
                file.stamp.size,
                &self.zone,
                collection.slugs(),
            ),
            etag: etag_of(&file.bytes),
            doc,
        })
    }

    /// Finds the file an item reference names (in the index) and reads it from storage.
    pub(super) async fn load(
        &self,
        collection: &Collection,
        item_ref: &ItemRef,
    ) -> CoreResult<(ItemFilename, StoredFile)> {
        let name = self.locate(collection, item_ref).await?;
        let file = self
            .ports
            .content
            .read(collection, &name)
            .await?
            .ok_or_else(|| item_not_found(collection, item_ref))?;
        Ok((name, file))
    }

    /// A current file of the collection with this slug, dated or not.
    pub(super) async fn file_with_slug(
        &self,
        collection: &Collection,
        slug: &str,
    ) -> CoreResult<Option<ItemFilename>> {
        Ok(self.index(collection).await?.file_with_slug(slug))
    }

    /// The item a write of `item_ref` in `collection` names: on a site with languages, a
    /// slug or file name of any of its languages, as a read finds it (`winter` in French is
    /// `hiver.fr.md`); as given elsewhere.
    async fn written_ref<'r>(
        &self,
        collection: &Collection,
        item_ref: &'r ItemRef,
    ) -> CoreResult<Cow<'r, ItemRef>> {
        // Before the item's lock, which reading its file takes.
        self.settle_announced(collection, item_ref).await?;
        match collection.language {
            Some(_) => Ok(Cow::Owned(self.named_in(collection, item_ref).await?)),
            None => Ok(Cow::Borrowed(item_ref)),
        }
    }

    /// Reads the file of an item another server changed when this one has streamed the
    /// change's event but perhaps not read the file yet
    /// ([`EventLog::take_unapplied`](crate::event_log::EventLog::take_unapplied)): a
    /// client that reads or writes the item on its event finds what the event announced.
    /// Called before the item's lock is held (reading the file takes it); one atomic
    /// load when no such event is waiting.
    pub(super) async fn settle_announced(
        &self,
        collection: &Collection,
        item_ref: &ItemRef,
    ) -> CoreResult<()> {
        let lang = collection.language.as_ref().map(|language| &*language.code);
        let Some(filename) = self.event_log.take_unapplied(collection.family(), lang, item_ref.slug()) else {
            return Ok(());
        };
        let change = crate::ports::StorageChange::Items {
            collection: collection.index,
            names: vec![filename],
            origin: crate::ports::ChangeOrigin::OtherNode,
        };
        // Boxed: every single read awaits this, and only a marked item's needs the
        // (large) future of reading a file into the index.
        Box::pin(self.apply_changes(vec![change])).await
    }

    /// What an item's writes are serialized by: its file's slug. On a site with languages
    /// a translation's own slug (`slug:`) names the same file, so it is looked up; the
    /// slug as given when no file has it (a write then says not found).
    pub(super) async fn lock_key<'r>(&self, collection: &Collection, item_ref: &'r ItemRef) -> Cow<'r, str> {
        if collection.language.is_none() {
            return Cow::Borrowed(item_ref.slug());
        }
        match self.index(collection).await.ok().and_then(|index| index.locate(item_ref)) {
            Some(name) => Cow::Owned(name.slug().to_owned()),
            None => Cow::Borrowed(item_ref.slug()),
        }
    }

    /// On a site with languages, a write's own slug (`fm.slug`: a localized URL) must be a
    /// slug, and no other item of the language's collection may answer to it (`current`:
    /// the file written, which may keep its own).
    async fn check_own_slug(
        &self,
        collection: &Collection,
        fm: &crate::document::Frontmatter,
        current: Option<&ItemFilename>,
    ) -> CoreResult<()> {
        let Some(value) = fm.get(crate::item_file::OWN_SLUG).filter(|_| collection.language.is_some()) else {
            return Ok(());
        };
        if value.is_null() {
            return Ok(());
        }
        let Some(text) = value.as_str() else {
            return Err(CoreError::invalid(format!(
                "fm.slug must be a string (the item's own slug in its language), got {}",
                crate::codec::json_type_name(value)
            )));
        };
        let slug = Slug::parse(text).map_err(|e| CoreError::invalid(format!("fm.slug: {e}")))?;
        if !item::is_own_slug(text) {
            return Err(CoreError::invalid(format!(
                "fm.slug {text:?} ends like an item file's name, so a read of it would ask for that file; \
                 drop the extension"
            )));
        }
        let taken = self.index(collection).await?.locate(&ItemRef::Slug(slug));
        match taken {
            Some(other) if current.is_none_or(|current| current.as_str() != other.as_str()) => {
                Err(CoreError::Conflict(format!(
                    "fm.slug {text:?} is taken in collection {:?}: {} answers to it; choose another slug",
                    collection.slug,
                    other.as_str()
                )))
            }
            _ => Ok(()),
        }
    }

    /// The filename an item reference names (first in name order when several match).
    async fn locate(&self, collection: &Collection, item_ref: &ItemRef) -> CoreResult<ItemFilename> {
        self.index(collection).await?.locate(item_ref).ok_or_else(|| item_not_found(collection, item_ref))
    }

    // ---- items: writes -----------------------------------------------------------------

    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn create_item(
        &self,
        caller: impl Into<Caller<'_>>,
        collection: &Collection,
        new: NewItem,
    ) -> CoreResult<WriteOutcome> {
        let caller = caller.into();
        self.authorize(caller, Operation::CreateItem).await?;
        let NewItem { slug, date_prefix, mut fm, body } = new;
        item::validate_frontmatter(&fm)?;
        let slug = match slug {
            Some(slug) => Slug::parse(&slug)?,
            None => {
                let title = fm
                    .get("title")
                    .and_then(|t| t.as_str())
                    .ok_or_else(|| CoreError::invalid("slug is required when fm.title is absent"))?;
                Slug::parse(&slugify(title)).map_err(|_| {
                    CoreError::invalid(format!("cannot derive a slug from fm.title {title:?}; send a slug"))
                })?
            }
        };
        fm.retain(|_, v| !v.is_null());
        self.check_own_slug(collection, &fm, None).await?;
        let key = crate::engine::index::translation_key_of(&fm).map(str::to_owned);
        let new = TranslationOf::New { key: key.as_deref(), slug: slug.as_str() };
        let source = self.source_of_translation(collection, new, &fm).await?;
        if let Some(source) = &source {
            take_shared(&mut fm, source.shared.clone());
            // What it was made from, unless the write says (a copy of another site's).
            if !fm.contains_key(crate::item_file::TRANSLATED_FROM) {
                fm.insert(crate::item_file::TRANSLATED_FROM.into(), source.content.clone().into());
            }
        }
        self.check_model(collection, &mut fm, true).await?;
        if !fm.contains_key("status") {
            fm.insert("status".into(), item::Status::Draft.as_str().into());
        }
        let date = if date_prefix.unwrap_or(collection.date_prefix) {
            let from_fm =
                fm.get("date").and_then(|d| d.as_str()).and_then(|d| d.get(..10)).map(str::to_owned);
            Some(from_fm.unwrap_or_else(|| today(self.now())))
        } else {
            None
        };
        // A translation is named after its source's file (its date prefix and extension
        // too), which is what links the two.
        let name = match source.and_then(|source| {
            collection
                .naming
                .parse(&collection.naming.name_for_base(&source.filename))
                .filter(|n| n.slug() == slug.as_str())
        }) {
            Some(name) => name,
            None => collection.naming.new_name(&slug, date.as_deref()),
        };
        // A slug ending in another language's code would name that language's file.
        if !collection.naming.owns(name.as_str()) {
            return Err(CoreError::invalid(format!(
                "slug {slug:?} ends in the code of another of this site's languages, so its file {:?} would be \
                 that language's translation; to write a translation, send lang= with the slug it translates",
                name.as_str()
            )));
        }
        let doc = ItemDocument { fm, body };
        let bytes = encode(&doc)?;

        let _guard = self.item_locks.lock(collection.index, slug.as_str()).await;
        if let Some(existing) = self.file_with_slug(collection, slug.as_str()).await? {
            return Err(CoreError::Conflict(format!(
                "an item with slug {slug:?} already exists in collection {:?} ({})",
                collection.slug,
                existing.as_str()
            )));
        }
        let stamp = self.ports.content.create(collection, &name, &bytes).await?;
        let outcome = outcome(collection, &name, Some(&bytes));
        let why = Why::write(caller, ChangeKind::Created);
        self.index_encoded(collection, &name, &StoredFile { bytes, stamp }, &doc, why);
        self.event_log.publish_pending().await;
        drop(_guard);
        self.spread_shared(caller, collection, &name, &doc.fm).await?;
        Ok(outcome)
    }

    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn update_item(
        &self,
        caller: impl Into<Caller<'_>>,
        collection: &Collection,
        item_ref: &ItemRef,
        update: ItemUpdate,
        if_match: Option<&Precondition>,
    ) -> CoreResult<WriteOutcome> {
        let caller = caller.into();
        self.authorize(caller, Operation::UpdateItem).await?;
        item::validate_frontmatter(&update.fm)?;
        let named = self.written_ref(collection, item_ref).await?;
        let item_ref = named.as_ref();
        // The lock serializes this process's writes; another server sharing the store is
        // caught by the conditional replace, and the whole cycle runs again on what it wrote.
        let _guard = self.item_locks.lock(collection.index, &self.lock_key(collection, item_ref).await).await;
        for _ in 0..UPDATE_ATTEMPTS {
            let (name, file) = self.load(collection, item_ref).await?;
            check(if_match, &file.bytes)?;
            let mut doc = parse_stored(&name, &file)?;
            let wrote_excerpt = IndexedItem::writes_excerpt(&doc);
            self.check_own_slug(collection, &update.fm, Some(&name)).await?;
            let source =
                self.source_of_translation(collection, TranslationOf::File(&name), &update.fm).await?;
            doc.merge_frontmatter(update.fm.clone());
            if let Some(source) = source {
                take_shared(&mut doc.fm, source.shared);
            }
            let body_kept = match (&update.body, update.mode) {
                (Some(body), _) => *body == doc.body,
                (None, UpdateMode::Put) => doc.body.is_empty(),
                (None, UpdateMode::Patch) => true,
            };
            doc.body = match (&update.body, update.mode) {
                (Some(body), _) => body.clone(),
                (None, UpdateMode::Put) => String::new(),
                (None, UpdateMode::Patch) => doc.body,
            };
            self.check_model(collection, &mut doc.fm, false).await?;
            let bytes = encode(&doc)?;
            // A stale attempt's snapshot is still right: those bytes were current (one kept
            // through the item's file is made a copy of its own again), and a retry over the
            // same bytes adds no second entry (the snapshot skips a repeat).
            let stamp =
                match self.snapshot_and_replace(collection, &name, &file, &bytes, caller.author()).await {
                    Ok(stamp) => stamp,
                    Err(CoreError::Stale(_)) => continue,
                    Err(other) => return Err(other),
                };
            let outcome = outcome(collection, &name, Some(&bytes));
            let kept = body_kept.then(|| KeptBody { read: ContentTag::of(&file.bytes), wrote_excerpt });
            let why = Why::write(caller, ChangeKind::Updated);
            self.index_rewritten(collection, &name, &StoredFile { bytes, stamp }, &doc, kept, why);
            self.event_log.publish_pending().await;
            drop(_guard);
            self.spread_shared(caller, collection, &name, &doc.fm).await?;
            return Ok(outcome);
        }
        Err(CoreError::Stale(format!(
            "item {:?} in collection {:?} changed while it was being written, {UPDATE_ATTEMPTS} times in a \
             row (another server or an editor is writing it); read it again and retry",
            item_ref.to_string(),
            collection.slug
        )))
    }

    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn delete_item(
        &self,
        caller: impl Into<Caller<'_>>,
        collection: &Collection,
        item_ref: &ItemRef,
        if_match: Option<&Precondition>,
    ) -> CoreResult<WriteOutcome> {
        let caller = caller.into();
        self.authorize(caller, Operation::DeleteItem).await?;
        let named = self.written_ref(collection, item_ref).await?;
        let item_ref = named.as_ref();
        let _guard = self.item_locks.lock(collection.index, &self.lock_key(collection, item_ref).await).await;
        let (name, file) = self.load(collection, item_ref).await?;
        check(if_match, &file.bytes)?;
        self.snapshot_and_delete(collection, &name, &file, caller.author()).await?;
        self.index_removed(collection, &name, Why::write(caller, ChangeKind::Deleted));
        self.event_log.publish_pending().await;
        self.end_preview_links(collection, name.slug()).await;
        Ok(outcome(collection, &name, None))
    }
}

/// The shared fields' values into a translation's frontmatter (`null`: the default
/// language's item has none).
fn take_shared(fm: &mut crate::document::Frontmatter, shared: crate::document::Frontmatter) {
    for (name, value) in shared {
        if value.is_null() {
            fm.remove(&name);
        } else {
            fm.insert(name, value);
        }
    }
}

pub(super) fn item_not_found(collection: &Collection, item_ref: &ItemRef) -> CoreError {
    CoreError::not_found(format!("no item {:?} in collection {:?}", item_ref.to_string(), collection.slug))
}

fn parse_stored(name: &ItemFilename, file: &StoredFile) -> CoreResult<ItemDocument> {
    parse_bytes(name, &file.bytes)
}

/// Serializes a document and proves it reads back, so nothing is written that the server
/// could not read again.
fn encode(doc: &ItemDocument) -> CoreResult<Vec<u8>> {
    let text = doc.to_file_text()?;
    let yaml_len = text.len() - doc.body.len();
    if yaml_len > YamlLimits::FRONTMATTER.max_bytes {
        return Err(CoreError::TooLarge(format!(
            "the frontmatter is {yaml_len} bytes as YAML; the limit is {} bytes",
            YamlLimits::FRONTMATTER.max_bytes
        )));
    }
    match ItemDocument::parse(&text) {
        Ok(back) if back == *doc => Ok(text.into_bytes()),
        Ok(_) => Err(CoreError::invalid("fm contains values that do not survive a YAML round trip")),
        Err(e) => Err(CoreError::invalid(format!("fm cannot be stored as YAML: {e}"))),
    }
}

/// What a list page shows depends on the collection's files, the query and the page
/// size; the site's URLs are fixed for the process.
fn list_version(collection: &Collection, query: &ListQuery, per_page: usize, fingerprint: u64) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    (collection.index, query, per_page, fingerprint).hash(&mut hasher);
    hasher.finish()
}

/// The language part of a single answer's version: its translations' version (0 on a
/// site without languages, which leaves the answer's version as it is) and the language
/// asked for when it is not the answer's.
fn languages_version(collection: &Collection, translations: u64, requested: Option<usize>) -> u64 {
    if translations == 0 {
        return 0;
    }
    let asked = requested.filter(|&at| collection.language.as_ref().is_some_and(|l| l.at != at));
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    (translations, asked).hash(&mut hasher);
    hasher.finish().max(1)
}

/// What a list's `missing=` or `outdated=` adds to its version (0 without either); the
/// other language's index is in the version already (see `translations_version`).
fn filter_version(filter: Option<super::TranslationFilter>) -> u64 {
    use std::hash::{Hash, Hasher};
    let Some(filter) = filter else { return 0 };
    let mut hasher = std::hash::DefaultHasher::new();
    ("translation filter", filter).hash(&mut hasher);
    hasher.finish()
}

/// Checks a write's precondition, if it has one, against the item's current bytes.
pub(super) fn check(precondition: Option<&Precondition>, current: &[u8]) -> CoreResult<()> {
    precondition.map_or(Ok(()), |precondition| precondition.check(current))
}

pub(super) fn outcome(collection: &Collection, name: &ItemFilename, bytes: Option<&[u8]>) -> WriteOutcome {
    WriteOutcome {
        filename: name.as_str().to_owned(),
        slug: name.slug().to_owned(),
        folder: collection.family(),
        etag: bytes.map(etag_of),
    }
}

fn today(now: OffsetDateTime) -> String {
    let date = now.date();
    format!("{:04}-{:02}-{:02}", date.year(), u8::from(date.month()), date.day())
}
