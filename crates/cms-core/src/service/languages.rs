//! Reads in a language, on a site with `languages:`: which language's collection answers
//! (the one asked for, or the first of its fallback chain that has the item), and the
//! translations each answer lists. A site without languages skips all of it.

use std::borrow::Cow;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use super::{Cms, Viewer};
use crate::collection::Collection;
use crate::engine::index::{CollectionIndex, IndexedItem, Link};
use crate::error::{CoreError, CoreResult};
use crate::item_file::ContentTag;
use crate::language::Choice;
use crate::slug::{ItemFilename, ItemRef};

/// Whether a translation was made from another content of its source than the source's
/// content now. A translation that does not say (made by hand, or before this was kept) is
/// not known to be outdated; nor is one whose source is gone.
pub(super) fn is_outdated(translation: &IndexedItem, source: Option<ContentTag>) -> bool {
    matches!((translation.translated_from(), source), (Some(made_from), Some(now)) if made_from != now)
}

/// What an item's translations are looked up by (see `Cms::translations_version`).
enum Linked<'a> {
    Item(&'a IndexedItem),
    Name(&'a Link),
}

/// A list's filter on its items' translations into another language (a position in
/// `languages:`): `missing=` (no translation yet, not even a draft) or `outdated=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TranslationFilter {
    Missing(usize),
    Outdated(usize),
}

/// What an answer says of its language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InLanguage {
    /// The language the answer is in (its code as `languages:` writes it).
    pub lang: Arc<str>,
    /// The language asked for, when the answer fell back to another one.
    pub requested: Option<Arc<str>>,
    /// The item in the site's other languages, in the order of `languages:`: those the
    /// viewer may see (a public client sees published translations only).
    pub translations: Vec<Translation>,
    /// For a translation (not the default language's item): whether its source changed
    /// since it was made (see [`crate::item_file::TRANSLATED_FROM`]).
    pub outdated: Option<bool>,
}

/// One of an item's translations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Translation {
    pub lang: Arc<str>,
    /// Its file's name (for the editor's links; answers name it by `slug`).
    pub filename: Arc<str>,
    pub slug: String,
    /// Site-relative, under `/{lang}` for a language other than the default.
    pub url: String,
    pub status: &'static str,
    /// Whether its source (the default language's item) changed since it was made; never
    /// for the default language's item.
    pub outdated: bool,
}

impl Cms {
    /// The language a read asks for: `lang=`, else `Accept-Language`, else the default
    /// language (see [`crate::language::Languages::choose`]); `None` on a site without
    /// languages, which ignores all three as it always has.
    pub fn choose_language(
        &self,
        lang: Option<&str>,
        accept_language: Option<&str>,
        fallback: Option<&str>,
    ) -> CoreResult<Option<Choice>> {
        match &self.languages {
            Some(languages) => languages.choose(lang, accept_language, fallback).map(Some),
            None => Ok(None),
        }
    }

    /// The collection that a list of `collection` in the chosen language reads: that
    /// language's (a list does not fall back: it lists the items written in it).
    pub fn list_in<'a>(&'a self, collection: &'a Collection, choice: Option<Choice>) -> &'a Collection {
        match choice {
            Some(choice) => self.in_language(collection, choice.requested),
            None => collection,
        }
    }

    /// Where a single read of `item_ref` in the chosen language is answered from: the
    /// collection of the first language of the choice's chain whose translation of the
    /// item the viewer may see, with the reference as that collection names the item.
    /// `NotFound` names the languages tried. On a site without languages: the collection
    /// and the reference as given.
    pub async fn item_in<'a, 'r>(
        &'a self,
        collection: &'a Collection,
        item_ref: &'r ItemRef,
        choice: Option<Choice>,
        viewer: &Viewer,
    ) -> CoreResult<(&'a Collection, Cow<'r, ItemRef>)> {
        let (lane, named, _) = self.located_in(collection, item_ref, choice, viewer).await?;
        Ok((lane, named))
    }

    /// [`Self::item_in`] and the [`Self::item_version_in`] of what it found, with one
    /// lookup of the item (the hot path of a single read in a language).
    pub async fn item_version_in_language<'a, 'r>(
        &'a self,
        collection: &'a Collection,
        item_ref: &'r ItemRef,
        choice: Option<Choice>,
        viewer: &Viewer,
    ) -> CoreResult<(&'a Collection, Cow<'r, ItemRef>, Option<super::ItemVersion>)> {
        let (lane, named, found) = self.located_in(collection, item_ref, choice, viewer).await?;
        let requested = choice.map(|choice| choice.requested);
        let version = match found {
            Some((item, state)) => Some(self.version_of_indexed(lane, &item, state, viewer, requested)),
            // Not looked up (a site without languages), or a file that cannot be used.
            None => self.item_version_in(lane, &named, viewer, requested).await?,
        };
        Ok((lane, named, version))
    }

    /// [`Self::item_in`], and the item found when it is usable (the viewer may see it).
    async fn located_in<'a, 'r>(
        &'a self,
        collection: &'a Collection,
        item_ref: &'r ItemRef,
        choice: Option<Choice>,
        viewer: &Viewer,
    ) -> CoreResult<(&'a Collection, Cow<'r, ItemRef>, Option<(Arc<IndexedItem>, Option<u64>)>)> {
        let (Some(choice), Some(languages)) = (choice, self.languages.as_deref()) else {
            return Ok((collection, Cow::Borrowed(item_ref), None));
        };
        let mut tried = Vec::new();
        for at in languages.chain(choice) {
            let lane = self.in_language(collection, at);
            self.settle_announced(lane, item_ref).await?;
            // Named as this language names it (the usual read): one lookup.
            let direct = {
                let index = self.index(lane).await?;
                match index.find_linked(item_ref) {
                    Some((Ok(item), state)) => Some(
                        (viewer.has_key() || index.is_live(item)).then(|| Some((Arc::clone(item), state))),
                    ),
                    // Known but unusable: the read says why.
                    Some((Err(_), _)) => Some(Some(None)),
                    None => None,
                }
            };
            match direct {
                Some(Some(found)) => return Ok((lane, Cow::Borrowed(item_ref), found)),
                Some(None) => {
                    tried.push(&*languages.get(at).code);
                    continue;
                }
                None => {}
            }
            if let Some(named) = self.ref_in(lane, item_ref) {
                let index = self.index(lane).await?;
                let visible = match index.find_linked(&named) {
                    Some((Ok(item), state)) => {
                        (viewer.has_key() || index.is_live(item)).then(|| Some((Arc::clone(item), state)))
                    }
                    // Known but unusable: the read says why.
                    Some((Err(_), _)) => Some(None),
                    None => None,
                };
                if let Some(found) = visible {
                    return Ok((lane, Cow::Owned(named), found));
                }
            }
            tried.push(&*languages.get(at).code);
        }
        Err(CoreError::not_found(format!(
            "no item {:?} in collection {:?} in {}{}",
            item_ref.to_string(),
            collection.slug,
            tried.join(", then "),
            if choice.no_fallback { " (fallback=none)" } else { "" }
        )))
    }

    /// `item_ref` as `lane` names the item: as given when `lane` has an item by that slug
    /// or file name; else, when another language's collection has one (the default
    /// language's first), the file of `lane` linked to it (a slug or a file name of any
    /// language finds the item in each); `None` when that item has no translation here.
    /// Reads one kept index at a time; one not built yet is passed over.
    pub(super) fn ref_in(&self, lane: &Collection, item_ref: &ItemRef) -> Option<ItemRef> {
        if lane.language.is_none() {
            return Some(item_ref.clone());
        }
        let here =
            super::read(&self.indexes[lane.index].index).as_ref().map(|index| index.find(item_ref).is_some());
        if here != Some(false) {
            return Some(item_ref.clone());
        }
        for other in self.family_of(lane).filter(|c| c.index != lane.index) {
            let link = {
                let index = super::read(&self.indexes[other.index].index);
                match index.as_ref().and_then(|index| index.find(item_ref)) {
                    Some(Ok(item)) => Link::of(item, &other.naming),
                    _ => continue,
                }
            };
            return self.linked_name(lane, &link).map(ItemRef::Filename);
        }
        Some(item_ref.clone())
    }

    /// [`Self::ref_in`] with every language's index built: the item may be named in any
    /// language (its slug, its own slug or its file). As given when `lane` has no
    /// translation of it (a read then says not found).
    pub(super) async fn named_in(&self, lane: &Collection, item_ref: &ItemRef) -> CoreResult<ItemRef> {
        for collection in self.family_of(lane) {
            drop(self.index(collection).await?);
        }
        Ok(self.ref_in(lane, item_ref).unwrap_or_else(|| item_ref.clone()))
    }

    /// The file of `lane` linked by `link` (see [`CollectionIndex::linked`]).
    ///
    /// [`CollectionIndex::linked`]: crate::engine::index::CollectionIndex::linked
    fn linked_name(&self, lane: &Collection, link: &Link) -> Option<ItemFilename> {
        let index = super::read(&self.indexes[lane.index].index);
        let name = match index.as_ref()?.linked(link)? {
            Ok(item) => item.meta.filename.to_string(),
            Err(_) => lane.naming.name_for_base(&link.base),
        };
        lane.naming.parse(&name)
    }

    /// The file of `other` (another language's collection of the same configured
    /// collection) that is the item `item_ref` names in `lane`: linked by `translationKey`
    /// or by name. `None` when either is missing.
    pub async fn counterpart(
        &self,
        lane: &Collection,
        item_ref: &ItemRef,
        other: &Collection,
    ) -> CoreResult<Option<ItemFilename>> {
        let link = match self.index(lane).await?.find(item_ref) {
            Some(Ok(item)) => Link::of(item, &lane.naming),
            _ => return Ok(None),
        };
        drop(self.index(other).await?);
        Ok(self.linked_name(other, &link))
    }

    /// Every language's collection of `collection`'s configured collection (itself alone
    /// on a site without languages).
    pub fn family_of<'a>(&'a self, collection: &Collection) -> impl Iterator<Item = &'a Collection> + 'a {
        let (family, step) = (collection.family(), self.families);
        self.collections.iter().skip(family).step_by(step.max(1))
    }

    /// What an answer of `item` from `lane` says of its language; `requested` is the
    /// language asked for (position in `languages:`), `drafts` whether the viewer sees
    /// unpublished translations. `None` on a site without languages.
    pub(super) fn language_of(
        &self,
        lane: &Collection,
        item: &IndexedItem,
        requested: Option<usize>,
        drafts: bool,
    ) -> Option<InLanguage> {
        let language = lane.language.as_ref()?;
        let languages = self.languages.as_deref()?;
        let requested =
            requested.filter(|&at| at != language.at).map(|at| Arc::clone(&languages.get(at).code));
        let source = self.source_content(lane, item);
        Some(InLanguage {
            lang: Arc::clone(&language.code),
            requested,
            translations: self.translations(lane, item, drafts),
            outdated: (language.at > 0).then(|| is_outdated(item, source)),
        })
    }

    /// What the item of `lane` named `filename` says of its language (as
    /// [`Self::language_of`]): for the editor, which shows drafts when `drafts`.
    pub fn language_of_file(&self, lane: &Collection, filename: &str, drafts: bool) -> Option<InLanguage> {
        // Out of the index first: one index's lock is never held while another's is taken.
        let item = {
            let index = super::read(&self.indexes[lane.index].index);
            Arc::clone(index.as_ref()?.get(filename)?.ok()?)
        };
        self.language_of(lane, &item, None, drafts)
    }

    /// The item of `lane` in the other languages, from their kept indexes (one lookup
    /// each; an index not built yet lists nothing).
    pub(super) fn translations(
        &self,
        lane: &Collection,
        item: &IndexedItem,
        drafts: bool,
    ) -> Vec<Translation> {
        let source = self.source_content(lane, item);
        let mut found = Vec::new();
        for sibling in self.family_of(lane).filter(|c| c.index != lane.index) {
            let Some(language) = &sibling.language else { continue };
            let index = super::read(&self.indexes[sibling.index].index);
            let Some(index) = index.as_ref() else { continue };
            let Some(Ok(translation)) = index.linked_to(item, &lane.naming) else { continue };
            if !drafts && !index.is_live(translation) {
                continue;
            }
            found.push(Translation {
                lang: Arc::clone(&language.code),
                filename: Arc::clone(&translation.meta.filename),
                slug: translation.meta.slug.to_string(),
                url: sibling.item_url(&translation.meta.slug),
                status: translation.meta.status.as_str(),
                outdated: language.at > 0 && is_outdated(translation, source),
            });
        }
        found
    }

    /// The items of `collection`'s translation into language `at` whose source changed
    /// since they were made, in the collection's default order, as `viewer` may see them:
    /// the index's kept set of them (see `translation_marks`), not a walk.
    pub async fn outdated_items(
        &self,
        collection: &Collection,
        at: usize,
        viewer: &Viewer,
    ) -> CoreResult<Vec<super::ItemSummary>> {
        let lane = self.in_language(collection, at);
        let query = crate::query::ListQuery {
            status: if viewer.has_key() {
                crate::query::StatusFilter::All
            } else {
                crate::query::StatusFilter::Published
            },
            ..Default::default()
        };
        let (selection, _) =
            self.select_translated(lane, &query, usize::MAX, TranslationFilter::Outdated(at)).await?;
        Ok(selection.items.into_iter().map(|item| self.summary_for(lane, item, None, viewer)).collect())
    }

    /// A page of `lane`'s items that `filter` admits, and the index's fingerprint: from the
    /// sets the index keeps of them (see `translation_marks`), which hold once every
    /// language's index of the collection is built.
    pub(super) async fn select_translated(
        &self,
        lane: &Collection,
        query: &crate::query::ListQuery,
        per_page: usize,
        filter: TranslationFilter,
    ) -> CoreResult<(crate::engine::index::Selection, u64)> {
        for collection in self.family_of(lane) {
            self.ensure_indexed(collection).await?;
        }
        let index = self.index(lane).await?;
        Ok((index.select_where(query, query.page, per_page, Some(filter.mark())), index.fingerprint()))
    }

    /// What the default language's file of `item` (of `lane`) holds now, if it exists.
    fn source_content(&self, lane: &Collection, item: &IndexedItem) -> Option<ContentTag> {
        let language = lane.language.as_ref()?;
        if language.at == 0 {
            return Some(item.content);
        }
        let source = self.in_language(lane, 0);
        let index = super::read(&self.indexes[source.index].index);
        index.as_ref()?.linked_to(item, &lane.naming)?.ok().map(|source| source.content)
    }

    /// A number that changes with what [`Self::language_of`] says of `filename`'s
    /// translations (`None`: of every item's) as the viewer sees them: each other
    /// language's version of the item (or of its whole collection). 0 on a site without
    /// languages, so that versions there stay what they were.
    pub(super) fn translations_version(
        &self,
        lane: &Collection,
        filename: Option<&str>,
        drafts: bool,
    ) -> u64 {
        if lane.language.is_none() {
            return 0;
        }
        let Some(name) = filename else { return self.linked_version(lane, None, drafts) };
        // The item (its link made by each lookup, without allocating), or, for a file not
        // indexed (yet), its name.
        let item = {
            let index = super::read(&self.indexes[lane.index].index);
            index.as_ref().and_then(|index| index.get(name)).and_then(Result::ok).map(Arc::clone)
        };
        match item {
            Some(item) => self.linked_version(lane, Some(Linked::Item(&item)), drafts),
            None => {
                let link = Link { key: None, base: lane.naming.base_name(name) };
                self.linked_version(lane, Some(Linked::Name(&link)), drafts)
            }
        }
    }

    /// [`Self::translations_version`] of an item of `lane` that the caller holds: no
    /// lookup of it by name (a single read in a language found it already). `kept`: its
    /// linked state as its index keeps it ([`CollectionIndex::find_linked`]), which saves
    /// a lookup in each other language's index; made by those lookups when `None`.
    ///
    /// [`CollectionIndex::find_linked`]: crate::engine::index::CollectionIndex::find_linked
    pub(super) fn item_translations_version(
        &self,
        lane: &Collection,
        item: &IndexedItem,
        drafts: bool,
        kept: Option<u64>,
    ) -> u64 {
        if lane.language.is_none() {
            return 0;
        }
        let state = kept.unwrap_or_else(|| self.linked_state_by_lookups(lane, item));
        with_drafts(drafts, state)
    }

    /// The linked state of `item` (of `lane`): what it links to in the other languages,
    /// each one's translation's version and whether it is live ([`hash_sibling`]), from
    /// their indexes one at a time. The index keeps it per item on a site whose indexes
    /// are all built (`translation_marks`), the same number.
    pub(super) fn linked_state_by_lookups(&self, lane: &Collection, item: &IndexedItem) -> u64 {
        let mut hasher = std::hash::DefaultHasher::new();
        for sibling in self.family_of(lane).filter(|c| c.index != lane.index) {
            let index = super::read(&self.indexes[sibling.index].index);
            hash_sibling(&mut hasher, sibling.index, index.as_ref(), item, &lane.naming);
        }
        hasher.finish().max(1)
    }

    fn linked_version(&self, lane: &Collection, link: Option<Linked<'_>>, drafts: bool) -> u64 {
        let link = match link {
            Some(Linked::Item(item)) => return with_drafts(drafts, self.linked_state_by_lookups(lane, item)),
            Some(Linked::Name(link)) => Some(link),
            None => None,
        };
        let mut hasher = std::hash::DefaultHasher::new();
        drafts.hash(&mut hasher);
        for sibling in self.family_of(lane).filter(|c| c.index != lane.index) {
            let index = super::read(&self.indexes[sibling.index].index);
            let Some(index) = index.as_ref() else {
                (sibling.index, "unbuilt").hash(&mut hasher);
                continue;
            };
            match link {
                None => (sibling.index, index.fingerprint()).hash(&mut hasher),
                Some(link) => {
                    let item = index.linked(link).and_then(Result::ok);
                    let state = item.map(|item| (item.file_version, index.is_live(item)));
                    (sibling.index, state).hash(&mut hasher);
                }
            }
        }
        hasher.finish().max(1)
    }
}

/// What a single answer's version names of an item's translations, as the viewer sees
/// them (`drafts`): the item's linked state (see [`Cms::linked_state_by_lookups`]).
fn with_drafts(drafts: bool, state: u64) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    (drafts, state).hash(&mut hasher);
    hasher.finish().max(1)
}

/// One other language's part of an item's linked state: the version of the item's
/// translation there and whether it is live (`sibling` names that language's collection;
/// `None`: its index is not built yet).
pub(super) fn hash_sibling(
    hasher: &mut std::hash::DefaultHasher,
    sibling: usize,
    index: Option<&CollectionIndex>,
    item: &IndexedItem,
    naming: &crate::slug::Naming,
) {
    match index {
        None => (sibling, "unbuilt").hash(hasher),
        Some(index) => {
            let linked = index.linked_to(item, naming).and_then(Result::ok);
            (sibling, linked.map(|linked| (linked.file_version, index.is_live(linked)))).hash(hasher);
        }
    }
}
