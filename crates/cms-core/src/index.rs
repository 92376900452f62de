//! The in-memory index of a collection: built once, then changed in place.
//!
//! Every item file has a slot (its stamp and, if it could be parsed, its [`IndexedItem`]).
//! Beside the slots the index keeps what makes reads cheap without touching storage:
//! filename and slug maps (single reads in O(1)), the usable items sorted by each list
//! order, once over every item and once over the published ones (a default list page is a
//! slice), and per tag the items in date order (a tag list walks only its tag). Each
//! change costs a binary search and a shift of 4-byte ids per order, never a sort or a
//! scan of the collection; a new version of a listed item (the usual write) moves only in
//! the lists whose key or membership it changed, usually the `modified` order alone.
//!
//! The index itself does no I/O: the facade feeds it what the ports read (see
//! `service::index` for when).

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use crate::dates::SiteZone;
use crate::document::ItemDocument;
use crate::item::{ItemMeta, Status};
use crate::item_file::ContentTag;
use crate::model::{KeptField, KeptFields, Model, Shared, compare_kept};
use crate::ports::{FileStamp, StoredFile};
use crate::query::{Direction, ListQuery, OrderBy, StatusFilter};
use crate::render;
use crate::slug::{ItemFilename, ItemRef, slugify};

/// One indexed item: its metadata and what lists and feeds show of its body (related items
/// by content use the search index's postings).
/// Only what a list or a discovery route needs is kept, each in its smallest form: a
/// single read takes the rest (frontmatter, HTML, the excerpt as written) from the file.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct IndexedItem {
    pub meta: ItemMeta,
    /// `fm.image`, for the search index.
    pub image: Option<Box<str>>,
    /// The excerpt as lists and single reads show it, when it differs from
    /// `plain_excerpt` (a written `fm.excerpt` with Markdown or HTML in it): see
    /// [`Self::excerpt`].
    written_excerpt: Option<Box<str>>,
    /// The excerpt as plain text for discovery routes: no Markdown, no HTML, cut on a word
    /// boundary (see [`plain_excerpt_of`]).
    pub plain_excerpt: Box<str>,
    /// What names the file's bytes (its strong ETag as text: [`Self::etag`]).
    pub content: ContentTag,
    /// What names this version of the file (`service::file_version`): a single read's
    /// answer is kept by it.
    pub file_version: u64,
    /// The tags as slugs, for `tags=` filters; `None` when every tag is its own slug (the
    /// usual case), so that nothing is kept twice.
    tag_slugs: Option<Box<[Box<str>]>>,
    /// The fields of the collection's model, as filters, orders and `fields=` use them
    /// (see [`Self::field`]); `None` in a collection without a model. They refer to texts
    /// of `meta` (see [`Shared`]): an item is made whole, never given another meta.
    fields: Option<KeptFields>,
    /// Whether the frontmatter breaks the collection's model (its own rules; whether the
    /// items and media it names exist is checked on writes and by `cms check`).
    pub breaks_model: bool,
}

impl IndexedItem {
    /// Parses an item file; `Err` with the reason when it cannot be used.
    pub fn from_file(
        name: &ItemFilename,
        file: &StoredFile,
        zone: &SiteZone,
        model: Option<&Model>,
    ) -> Result<Self, String> {
        Self::from_file_with_text(name, file, zone, model).map(|(item, _)| item)
    }

    /// [`Self::from_file`], and the body as plain text (what the search index takes), so
    /// that a write parses and renders its file once for both.
    pub fn from_file_with_text(
        name: &ItemFilename,
        file: &StoredFile,
        zone: &SiteZone,
        model: Option<&Model>,
    ) -> Result<(Self, String), String> {
        let text = std::str::from_utf8(&file.bytes).map_err(|_| "the file is not UTF-8".to_owned())?;
        let doc = ItemDocument::parse(text).map_err(|e| format!("the frontmatter cannot be read: {e}"))?;
        Ok(Self::from_document_with_text(name, &doc, file, zone, model))
    }

    /// [`Self::from_file_with_text`] for a file whose document is at hand (`doc` must be
    /// what its bytes parse to): a write has just encoded it and need not parse it again.
    pub fn from_document_with_text(
        name: &ItemFilename,
        doc: &ItemDocument,
        file: &StoredFile,
        zone: &SiteZone,
        model: Option<&Model>,
    ) -> (Self, String) {
        let body_text = render::to_plain_text(&doc.body);
        let plain_excerpt = plain_excerpt_with(doc, &body_text);
        let excerpt = excerpt_with(doc, &body_text);
        (Self::assemble(name, doc, file, zone, model, plain_excerpt, excerpt), body_text)
    }

    /// [`Self::from_document_with_text`] for a new version of `previous`'s file with the same
    /// body (a change of frontmatter alone, such as publishing): the body's excerpt is taken
    /// from `previous` rather than rendering the Markdown again. `previous_wrote_excerpt`
    /// says whether the document `previous` was made from had a written excerpt. `None`
    /// when the body's excerpt is needed and `previous` does not hold it (its excerpt was
    /// written).
    pub fn with_body_of(
        name: &ItemFilename,
        doc: &ItemDocument,
        file: &StoredFile,
        zone: &SiteZone,
        model: Option<&Model>,
        previous: &IndexedItem,
        previous_wrote_excerpt: bool,
    ) -> Option<Self> {
        let (plain_excerpt, excerpt) = match written_excerpt(doc) {
            Some(written) => (plain_written_excerpt(written), written.to_owned()),
            None if previous_wrote_excerpt => return None,
            None => (previous.plain_excerpt.to_string(), previous.plain_excerpt.to_string()),
        };
        Some(Self::assemble(name, doc, file, zone, model, plain_excerpt, excerpt))
    }

    fn assemble(
        name: &ItemFilename,
        doc: &ItemDocument,
        file: &StoredFile,
        zone: &SiteZone,
        model: Option<&Model>,
        plain_excerpt: String,
        excerpt: String,
    ) -> Self {
        let meta = ItemMeta::derive(name, doc, file.stamp.modified, file.stamp.size, zone);
        let slugs: Vec<String> = meta.tags.iter().map(|t| slugify(t)).collect();
        let tag_slugs = (!slugs.iter().map(String::as_str).eq(meta.tags.iter().map(|t| &**t)))
            .then(|| slugs.into_iter().map(String::into_boxed_str).collect());
        let content = ContentTag::of(&file.bytes);
        let meta = meta.compacted();
        Self {
            written_excerpt: (excerpt != plain_excerpt).then(|| excerpt.into_boxed_str()),
            plain_excerpt: plain_excerpt.into_boxed_str(),
            file_version: crate::item_file::file_version(&meta, content),
            content,
            tag_slugs,
            image: doc.fm.get("image").and_then(|v| v.as_str()).map(Box::from),
            fields: model.map(|model| model.keep(&doc.fm, Shared::of(&meta))),
            meta,
            breaks_model: model.is_some_and(|model| !model.validate(&doc.fm).is_empty()),
        }
    }

    /// Whether the document has a written excerpt (`fm.excerpt` or `fm.description`):
    /// then the index's excerpts come from it, not from the body.
    pub fn writes_excerpt(doc: &ItemDocument) -> bool {
        written_excerpt(doc).is_some()
    }

    /// The excerpt as lists and single reads show it: `fm.excerpt` or `fm.description` as
    /// written, else the body as plain text (see [`excerpt_of`]).
    pub fn excerpt(&self) -> &str {
        self.written_excerpt.as_deref().unwrap_or(&self.plain_excerpt)
    }

    /// The strong ETag of the file's bytes.
    pub fn etag(&self) -> String {
        self.content.text()
    }

    /// The item's tags as slugs.
    pub fn tag_slugs(&self) -> impl Iterator<Item = &str> {
        let (slugs, tags) = match &self.tag_slugs {
            Some(slugs) => (Some(slugs.iter().map(|s| &**s)), None),
            None => (None, Some(self.meta.tags.iter().map(|t| &**t))),
        };
        slugs.into_iter().flatten().chain(tags.into_iter().flatten())
    }

    /// Whether the item carries any of these tag slugs.
    pub fn has_any_tag(&self, wanted_slugs: &[String]) -> bool {
        self.tag_slugs().any(|t| wanted_slugs.iter().any(|w| w == t))
    }

    /// The kept field at `at` (its place in the collection's model); `None` without a
    /// model.
    pub fn field(&self, at: usize) -> Option<KeptField<'_>> {
        self.fields.as_ref()?.get(at, Shared::of(&self.meta))
    }

    fn admitted_by(&self, query: &ListQuery, now: i64) -> bool {
        query.status.admits(self.meta.status, self.meta.live_at(now))
            && query.filters.iter().all(|filter| filter.admits(self.field(filter.at)))
            && (query.tags.is_empty() || self.has_any_tag(&query.tags))
            && query
                .author
                .as_ref()
                .is_none_or(|a| self.meta.author.as_deref().is_some_and(|b| b.eq_ignore_ascii_case(a)))
            && query.text.as_ref().is_none_or(|text| text.admits(&self.meta))
    }
}

/// An item file as the index takes it: its item, or why it cannot be used.
pub type Parsed = Result<IndexedItem, String>;

/// What the index holds for one item file: its item, or why it cannot be used.
pub type Held = Result<Arc<IndexedItem>, Box<str>>;

/// A parsed file as the index holds it.
pub fn held(parsed: Parsed) -> Held {
    parsed.map(Arc::new).map_err(Box::from)
}

/// Longest excerpt kept in the index, in characters.
pub const EXCERPT_CHARS: usize = 160;

/// What the index holds for one item file.
#[derive(Debug, Clone)]
struct Slot {
    name: Arc<str>,
    stamp: Stamp,
    /// `Err`: why the file cannot be used (broken YAML, over a limit). It stays known, so
    /// that it is not re-read until it changes, and it is reported as skipped.
    item: Held,
}

type Id = u32;

/// A [`FileStamp`] without its name, which the slot holds once (shared with the item): a
/// second copy of every filename cost about 70 bytes an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    size: u64,
    modified: i64,
    change_token: u64,
}

impl Stamp {
    fn of(stamp: &FileStamp) -> Self {
        Self { size: stamp.size, modified: stamp.modified, change_token: stamp.change_token }
    }

    fn named(self, name: &str) -> FileStamp {
        FileStamp {
            name: name.to_owned(),
            size: self.size,
            modified: self.modified,
            change_token: self.change_token,
        }
    }
}

/// The longest run of items of one date that a newest-first page sorts around its window
/// (see `CollectionIndex::newest_window`); past it, the page is selected from the matches.
const NEWEST_RUN_LIMIT: usize = 4096;

/// The files that carry one slug, in filename order: nearly always one, kept without a
/// list of its own.
#[derive(Debug)]
enum SlugFiles {
    One(Id),
    Many(Vec<Id>),
}

impl SlugFiles {
    fn ids(&self) -> &[Id] {
        match self {
            Self::One(id) => std::slice::from_ref(id),
            Self::Many(ids) => ids,
        }
    }

    /// Adds a file in filename order (`name_of` names the ids already there).
    fn insert<'a>(&mut self, id: Id, name: &str, name_of: impl Fn(Id) -> &'a str) {
        let mut ids = match std::mem::replace(self, Self::Many(Vec::new())) {
            Self::One(first) => vec![first],
            Self::Many(ids) => ids,
        };
        let at = ids.partition_point(|other| name_of(*other) < name);
        ids.insert(at, id);
        *self = Self::Many(ids);
    }

    /// Forgets a file; `false` when none is left.
    fn remove(&mut self, id: Id) -> bool {
        match self {
            Self::One(only) => *only != id,
            Self::Many(ids) => {
                ids.retain(|other| *other != id);
                match ids[..] {
                    [] => false,
                    [only] => {
                        *self = Self::One(only);
                        true
                    }
                    _ => true,
                }
            }
        }
    }
}

/// One tag's usable items ascending by date: all of them, and the published ones.
#[derive(Debug, Default)]
struct TagLists {
    all: Vec<Id>,
    published: Vec<Id>,
}

const ORDERS: [OrderBy; 4] = [OrderBy::DatePublished, OrderBy::Title, OrderBy::Slug, OrderBy::Modified];

fn order_slot(order: OrderBy) -> usize {
    match order {
        OrderBy::DatePublished => 0,
        OrderBy::Title => 1,
        OrderBy::Slug => 2,
        OrderBy::Modified => 3,
        // Not kept: a list in this order takes its candidates from the date order (any kept
        // order would do) and sorts its matches.
        OrderBy::Newest => 0,
    }
}

/// Ascending comparison of two items in one order; ties fall back to the filename so that
/// pages are stable.
fn compare(order: OrderBy, a: &IndexedItem, b: &IndexedItem) -> Ordering {
    let primary = match order {
        // Instants, not strings: `2024-03-01 23:00 -0500` is after `2024-03-02 01:00 +0100`.
        OrderBy::DatePublished => a.meta.date_at.cmp(&b.meta.date_at),
        OrderBy::Title => caseless_cmp(&a.meta.title, &b.meta.title),
        OrderBy::Slug => a.meta.slug.cmp(&b.meta.slug),
        OrderBy::Modified => a.meta.modified.cmp(&b.meta.modified),
        OrderBy::Newest => (a.meta.date_at, a.meta.modified).cmp(&(b.meta.date_at, b.meta.modified)),
    };
    primary.then_with(|| a.meta.filename.cmp(&b.meta.filename))
}

/// Ascending comparison of two items by a field of the model (its place in it).
fn compare_field(at: usize, a: &IndexedItem, b: &IndexedItem) -> Ordering {
    match (a.field(at).map(|f| f.value), b.field(at).map(|f| f.value)) {
        (Some(a), Some(b)) => compare_kept(a, b),
        _ => Ordering::Equal,
    }
}

/// What a change did to the index, so the caller can log or count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// The stamp was already known: nothing to do.
    Unchanged,
    Updated,
    Removed,
}

/// An item that went live or came down when the index's clock moved (see
/// [`CollectionIndex::advance`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    pub filename: Arc<str>,
    /// `true`: it went live (`item.published`); `false`: it came down.
    pub live: bool,
    /// The instant (Unix seconds) that caused it.
    pub at: i64,
}

/// One page of a list query, with the number of matches.
#[derive(Debug, Clone)]
pub struct Selection {
    pub items: Vec<Arc<IndexedItem>>,
    /// Matching items after `offset`.
    pub total: usize,
}

/// A collection's items by status, as the web editor's dashboard shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusCounts {
    pub live: usize,
    pub scheduled: usize,
    pub drafts: usize,
}

fn is_draft(item: &IndexedItem) -> bool {
    item.meta.status == Status::Draft
}

#[derive(Debug, Default)]
pub struct CollectionIndex {
    slots: Vec<Option<Slot>>,
    free: Vec<Id>,
    by_name: HashMap<Arc<str>, Id>,
    /// Every file with this slug (dated or not), in filename order.
    by_slug: HashMap<Box<str>, SlugFiles>,
    /// Per order (see [`order_slot`]): usable items ascending, all and published.
    sorted_all: [Vec<Id>; 4],
    sorted_published: [Vec<Id>; 4],
    /// Per tag slug: its items ascending by date, all and published.
    by_tag: HashMap<String, TagLists>,
    usable: usize,
    /// Usable items that break the collection's model (see [`IndexedItem::breaks_model`]).
    breaking_model: usize,
    /// Usable items whose status is draft (see [`Self::status_counts`]).
    drafts: usize,
    /// Item files that cannot be used, in filename order (so the skipped-file report
    /// does not walk every slot).
    unusable: std::collections::BTreeMap<Arc<str>, Id>,
    /// Files of the folder whose names are not items', with the reason.
    others: std::collections::BTreeMap<Box<str>, Box<str>>,
    /// XOR of a hash of every slot's name and stamp, and of the name of every published
    /// item outside its window: the same set of file versions at the same visibility
    /// gives the same value, whatever changes led to it (see [`Self::fingerprint`]).
    fingerprint: u64,
    /// The index's clock (Unix seconds): what "published" means for the published orders,
    /// moved only by [`Self::advance`].
    now: i64,
    /// Instants after `now` at which a published item's visibility changes, with the item:
    /// the first one is when [`Self::advance`] has work (no scan needed to find it).
    pending: std::collections::BTreeSet<(i64, Id)>,
}

impl CollectionIndex {
    /// An index of these files at `now` (Unix seconds), sorted once.
    pub fn build(mut entries: Vec<(FileStamp, Held)>, now: i64) -> Self {
        // In filename order, so that ids are too (see `sort_by_order`). Usually already
        // in order, or two ordered runs: a stable sort merges those in linear time.
        entries.sort_by(|a, b| a.0.name.cmp(&b.0.name));
        let mut index = Self { now, ..Self::default() };
        for (stamp, item) in entries {
            let Some(name) = ItemFilename::parse(&stamp.name) else { continue };
            if index.by_name.contains_key(name.as_str()) {
                continue;
            }
            index.insert_slot(&name, stamp, item, false);
        }
        index.sort_all();
        index
    }

    /// Sorts the bulk-built lists: each order once, on a thread of its own, by a key
    /// computed once per item (a title's lowercase form, a date's instant) rather than in
    /// every comparison; the published lists and the tag lists then take their order
    /// from the sorted ones in one pass each. At 100,000 items this was most of a restart.
    fn sort_all(&mut self) {
        let slots = &self.slots;
        let item =
            |id: Id| slots[id as usize].as_ref().and_then(|s| s.item.as_deref().ok()).expect("usable id");
        std::thread::scope(|scope| {
            for (k, ids) in self.sorted_all.iter_mut().enumerate() {
                scope.spawn(move || sort_by_order(ORDERS[k], ids, item));
            }
        });
        let mut rank = vec![0u32; self.slots.len()];
        for (position, id) in self.sorted_all[order_slot(OrderBy::DatePublished)].iter().enumerate() {
            rank[*id as usize] = position as u32;
        }
        let now = self.now;
        for (all, published) in self.sorted_all.iter().zip(self.sorted_published.iter_mut()) {
            published.clear();
            published.extend(all.iter().filter(|id| item(**id).meta.live_at(now)));
        }
        for lists in self.by_tag.values_mut() {
            for ids in [&mut lists.all, &mut lists.published] {
                ids.sort_unstable_by_key(|id| rank[*id as usize]);
            }
        }
    }

    /// Whether a public client sees this item now (see [`ItemMeta::live_at`]), by the
    /// index's clock.
    pub fn is_live(&self, item: &IndexedItem) -> bool {
        item.meta.live_at(self.now)
    }

    /// The index's clock (Unix seconds).
    pub fn now(&self) -> i64 {
        self.now
    }

    /// The next instant at which an item's visibility changes, if any.
    pub fn next_instant(&self) -> Option<i64> {
        self.pending.first().map(|(at, _)| *at)
    }

    /// Moves the index's clock to `now`: the items whose window opened or closed since
    /// move in or out of the published orders. Costs the due items only.
    pub fn advance(&mut self, now: i64) -> Vec<Transition> {
        if now <= self.now {
            return Vec::new();
        }
        let later = self.pending.split_off(&(now + 1, 0));
        let due = std::mem::replace(&mut self.pending, later);
        // Each item once, with its latest due instant.
        let mut ids: Vec<(Id, i64)> = due.into_iter().map(|(at, id)| (id, at)).collect();
        ids.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        ids.dedup_by_key(|(id, _)| *id);
        let before: Vec<(Id, i64, bool)> =
            ids.into_iter().map(|(id, at)| (id, at, self.is_live(self.usable_item(id)))).collect();
        self.now = now;
        let mut transitions = Vec::new();
        for (id, at, was_live) in before {
            let live = self.is_live(self.usable_item(id));
            if live == was_live {
                continue;
            }
            self.unlink_sorted(id);
            self.link_sorted(id);
            let name = Arc::clone(&self.slot(id).name);
            self.fingerprint ^= hidden_hash(&name);
            transitions.push(Transition { filename: name, live, at });
        }
        transitions
    }

    /// The transitions that happened in `(since, self.now]`, for a server that was not
    /// running then: each published item's instants in that span, oldest first. Walks
    /// every item, once per start.
    pub fn transitions_since(&self, since: i64) -> Vec<Transition> {
        let mut found = Vec::new();
        for slot in self.slots.iter().flatten() {
            let Ok(item) = &slot.item else { continue };
            let Some(schedule) = item.meta.schedule.as_deref() else { continue };
            if item.meta.status != Status::Published || schedule.unreadable {
                continue;
            }
            let bounds = [(schedule.publish_at, true), (schedule.unpublish_at, false)];
            for (at, live) in bounds.into_iter().filter_map(|(at, l)| Some((crate::item::whole_secs(at?), l)))
            {
                if since < at && at <= self.now {
                    found.push(Transition { filename: Arc::clone(&slot.name), live, at });
                }
            }
        }
        found.sort_by(|a, b| (a.at, &a.filename, a.live).cmp(&(b.at, &b.filename, b.live)));
        found
    }

    /// Changes whenever a file is added, changed or removed: a version of everything a
    /// list of this collection can show.
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// Every known item file with what the index holds for it (for a snapshot).
    pub fn entries(&self) -> Vec<(FileStamp, Held)> {
        self.slots.iter().flatten().map(|s| (s.stamp.named(&s.name), s.item.clone())).collect()
    }

    /// How many item files are known, usable or not.
    pub fn file_count(&self) -> usize {
        self.by_name.len()
    }

    /// How many items can be listed.
    pub fn usable_count(&self) -> usize {
        self.usable
    }

    /// How many listed items break the collection's model.
    pub fn breaking_model_count(&self) -> usize {
        self.breaking_model
    }

    /// How many usable items are live (published and inside their window at the index's
    /// clock), scheduled (published, outside it) and drafts: from the kept lists and
    /// counts, without a walk.
    pub fn status_counts(&self) -> StatusCounts {
        let live = self.sorted_published[0].len();
        let drafts = self.drafts;
        StatusCounts { live, scheduled: self.usable.saturating_sub(live + drafts), drafts }
    }

    /// The stamp the index holds for a file.
    pub fn stamp(&self, name: &str) -> Option<FileStamp> {
        self.by_name.get(name).map(|id| self.slot(*id).stamp.named(name))
    }

    /// Whether the index holds this file at this stamp.
    pub fn holds(&self, stamp: &FileStamp) -> bool {
        self.by_name.get(stamp.name.as_str()).is_some_and(|id| self.slot(*id).stamp == Stamp::of(stamp))
    }

    /// Every known filename (for comparing with a fresh scan).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.slots.iter().flatten().map(|s| &*s.name)
    }

    /// Every usable item, in no particular order.
    pub fn items(&self) -> Vec<Arc<IndexedItem>> {
        self.slots.iter().flatten().filter_map(|s| s.item.clone().ok()).collect()
    }

    /// Every tag of the usable items (of the live ones only, for `live_only`), once per
    /// slug: the slug, how the newest item carrying it spells it, and how many items carry
    /// it. From the tag lists (no walk of the items), in no particular order.
    pub fn tags(&self, live_only: bool) -> Vec<(&str, &str, usize)> {
        let mut found = Vec::with_capacity(self.by_tag.len());
        for (slug, lists) in &self.by_tag {
            let ids = if live_only { &lists.published } else { &lists.all };
            let Some(newest) = ids.last() else { continue };
            let item = self.usable_item(*newest);
            let spelling = item.meta.tags.iter().zip(item.tag_slugs()).find(|(_, s)| s == slug);
            found.push((slug.as_str(), spelling.map_or(slug.as_str(), |(tag, _)| &**tag), ids.len()));
        }
        found
    }

    /// The published items, newest first (by `date`, then filename).
    pub fn published_newest_first(&self) -> impl Iterator<Item = &Arc<IndexedItem>> {
        self.sorted_published[order_slot(OrderBy::DatePublished)].iter().rev().map(|id| self.usable_item(*id))
    }

    /// The file an item reference names (first in filename order when several files share
    /// a slug), usable or not.
    pub fn locate(&self, item_ref: &ItemRef) -> Option<ItemFilename> {
        let id = match item_ref {
            ItemRef::Slug(slug) => *self.by_slug.get(slug.as_str())?.ids().first()?,
            ItemRef::Filename(name) => *self.by_name.get(name.as_str())?,
        };
        ItemFilename::parse(&self.slot(id).name)
    }

    /// What the index holds for the file an item reference names (as [`Self::locate`]),
    /// found with one lookup: the indexed item, or `Err` with why the file is unusable.
    /// The hot path of single reads, which need no `ItemFilename`.
    pub fn find(&self, item_ref: &ItemRef) -> Option<Result<&Arc<IndexedItem>, &str>> {
        let id = match item_ref {
            ItemRef::Slug(slug) => *self.by_slug.get(slug.as_str())?.ids().first()?,
            ItemRef::Filename(name) => *self.by_name.get(name.as_str())?,
        };
        Some(self.slot(id).item.as_ref().map_err(|reason| &**reason))
    }

    /// The published item a reference names: for a bare slug that several files carry,
    /// the first published one in filename order, so a draft never shadows it.
    pub fn locate_published(&self, item_ref: &ItemRef) -> Option<&Arc<IndexedItem>> {
        let ids: &[Id] = match item_ref {
            ItemRef::Slug(slug) => self.by_slug.get(slug.as_str())?.ids(),
            ItemRef::Filename(name) => std::slice::from_ref(self.by_name.get(name.as_str())?),
        };
        ids.iter().filter_map(|id| self.slot(*id).item.as_ref().ok()).find(|item| self.is_live(item))
    }

    /// A file with this slug (dated or not).
    pub fn file_with_slug(&self, slug: &str) -> Option<ItemFilename> {
        let id = *self.by_slug.get(slug)?.ids().first()?;
        ItemFilename::parse(&self.slot(id).name)
    }

    /// The indexed item of a file; `Err` with the reason when the file is known but
    /// unusable.
    pub fn get(&self, name: &str) -> Option<Result<&Arc<IndexedItem>, &str>> {
        self.by_name.get(name).map(|id| self.slot(*id).item.as_ref().map_err(|reason| &**reason))
    }

    /// Files in the collection's folder that are not listed, each with the reason: item
    /// files that cannot be used, and files whose names are not items' (as of the last
    /// full scan), in filename order.
    pub fn skipped(&self) -> Vec<(&str, &str)> {
        let unusable = self.unusable.values().filter_map(|id| {
            let slot = self.slot(*id);
            Some((&*slot.name, &**slot.item.as_ref().err()?))
        });
        let mut all: Vec<(&str, &str)> =
            unusable.chain(self.others.iter().map(|(n, r)| (&**n, &**r))).collect();
        all.sort_unstable();
        all
    }

    /// Records the files of the last full scan whose names are not items', with the
    /// reason; returns those that were not known before (to report each once).
    pub fn set_others(&mut self, others: Vec<(String, String)>) -> Vec<(String, String)> {
        let fresh: Vec<(String, String)> =
            others.iter().filter(|(name, _)| !self.others.contains_key(name.as_str())).cloned().collect();
        self.others = others.into_iter().map(|(n, r)| (n.into_boxed_str(), r.into_boxed_str())).collect();
        fresh
    }

    /// Records a file's new content (or that it cannot be used).
    pub fn upsert(&mut self, name: &ItemFilename, stamp: FileStamp, item: Parsed) -> Applied {
        let known = self.by_name.get(name.as_str()).copied();
        if let Some(id) = known
            && self.slot(id).stamp == Stamp::of(&stamp)
        {
            return Applied::Unchanged;
        }
        match (known, item) {
            // The usual write: a new version of a listed item.
            (Some(id), Ok(item)) if self.slot(id).item.is_ok() => self.replace_usable(id, stamp, item),
            (_, item) => {
                self.remove(name.as_str());
                self.insert_slot(name, stamp, item.map(Arc::new).map_err(Box::from), true);
            }
        }
        Applied::Updated
    }

    /// Puts a new usable version of a usable item in its slot, keeping the slot's id and
    /// name: only the lists whose key or published membership changed are touched (a
    /// write usually moves the item in the `modified` order alone), where a removal and
    /// an insertion would search and shift every list.
    fn replace_usable(&mut self, id: Id, stamp: FileStamp, mut item: IndexedItem) {
        let slot = self.slots[id as usize].as_mut().expect("indexed id");
        debug_assert_eq!(*slot.name, *item.meta.filename, "a new version of the same file");
        // The slot's name is the key of `by_name` (and of the search index): the new
        // version shares it, so that no map changes.
        item.meta.filename = Arc::clone(&slot.name);
        let new = Arc::new(item);
        let old = Arc::clone(slot.item.as_ref().expect("usable id"));
        self.breaking_model =
            self.breaking_model + usize::from(new.breaks_model) - usize::from(old.breaks_model);
        self.drafts = self.drafts + usize::from(is_draft(&new)) - usize::from(is_draft(&old));
        let stamp = Stamp::of(&stamp);
        self.fingerprint ^= stamp_hash(&slot.name, slot.stamp) ^ stamp_hash(&slot.name, stamp);
        slot.stamp = stamp;
        self.forget_schedule(id, &old);
        // While the slot still holds the old version, which places the id in its lists.
        self.relink_sorted(id, &old, &new);
        self.slots[id as usize].as_mut().expect("indexed id").item = Ok(Arc::clone(&new));
        self.note_schedule(id, &new);
    }

    /// Forgets a file.
    pub fn remove(&mut self, name: &str) -> Applied {
        let Some(id) = self.by_name.get(name).copied() else { return Applied::Unchanged };
        if let Ok(item) = self.slot(id).item.clone() {
            self.unlink_sorted(id);
            self.usable -= 1;
            self.breaking_model -= usize::from(item.breaks_model);
            self.drafts -= usize::from(is_draft(&item));
            self.forget_schedule(id, &item);
        } else {
            self.unusable.remove(name);
        }
        let slot = self.slots[id as usize].take().expect("indexed id");
        self.fingerprint ^= stamp_hash(&slot.name, slot.stamp);
        self.by_name.remove(&slot.name);
        if let Some(name) = ItemFilename::parse(&slot.name)
            && let Some(files) = self.by_slug.get_mut(name.slug())
            && !files.remove(id)
        {
            self.by_slug.remove(name.slug());
        }
        self.free.push(id);
        Applied::Removed
    }

    /// One page of a list query: a slice of a kept order when only `status` filters (or
    /// one tag in date order, from the tag's own lists); newest first, such a slice of the
    /// date order re-sorted inside its runs of one date; a walk of a kept order for other
    /// filters; for several tags, a partial selection of their matches (never a full
    /// sort of the collection).
    pub fn select(&self, query: &ListQuery, page: usize, per_page: usize) -> Selection {
        let start = query.offset.saturating_add((page - 1).saturating_mul(per_page));
        if let Some(selection) = self.newest_window(query, start, per_page) {
            return selection;
        }
        let k = order_slot(query.order_by);
        // Filters on the model's fields and on text need a look at each item; an order by
        // one of the model's fields, or newest first, is not kept sorted (below: only the
        // matches are, as far as the page needs).
        let unkept_order = query.order_field.is_some() || query.order_by == OrderBy::Newest;
        let on_fields = !query.filters.is_empty() || query.text.is_some() || unkept_order;
        let kept: Option<&[Id]> =
            match (query.tags.as_slice(), query.author.is_none() && !on_fields, query.status) {
                (_, false, _) | (_, _, StatusFilter::Draft | StatusFilter::Scheduled) => None,
                ([], true, StatusFilter::Published) => Some(&self.sorted_published[k]),
                ([], true, _) => Some(&self.sorted_all[k]),
                // One tag in date order: its own lists are already in that order.
                ([tag], true, status) if query.order_by == OrderBy::DatePublished => {
                    let lists = self.by_tag.get(tag);
                    Some(lists.map_or(&[][..], |l| {
                        if status == StatusFilter::Published { &l.published } else { &l.all }
                    }))
                }
                _ => None,
            };
        if let Some(ids) = kept {
            let total = ids.len().saturating_sub(query.offset);
            let items = match query.direction {
                Direction::Asc => self.page_of(ids.iter(), start, per_page),
                Direction::Desc => self.page_of(ids.iter().rev(), start, per_page),
            };
            return Selection { items, total };
        }
        let walked: Option<&[Id]> = match query.tags.as_slice() {
            _ if unkept_order => None,
            [] => Some(&self.sorted_all[k]),
            // One tag in date order: its own list is already in that order.
            [tag] if query.order_by == OrderBy::DatePublished => {
                Some(self.by_tag.get(tag).map_or(&[][..], |l| &l.all))
            }
            _ => None,
        };
        if let Some(ids) = walked {
            let admitted = |id: &&Id| self.usable_item(**id).admitted_by(query, self.now);
            return match query.direction {
                Direction::Asc => self.walk(ids.iter().filter(admitted), query.offset, start, per_page),
                Direction::Desc => {
                    self.walk(ids.iter().rev().filter(admitted), query.offset, start, per_page)
                }
            };
        }
        let mut candidates: Vec<Id> = if query.tags.is_empty() {
            self.sorted_all[k].clone()
        } else {
            query.tags.iter().filter_map(|t| self.by_tag.get(t)).flat_map(|l| &l.all).copied().collect()
        };
        if query.tags.len() > 1 {
            candidates.sort_unstable();
            candidates.dedup();
        }
        candidates.retain(|id| self.usable_item(*id).admitted_by(query, self.now));
        // Several tags, one in another order, an order by a field of the model, or newest
        // first: sort only the matches, and only as far as the page needs.
        let mut ids = candidates;
        let total = ids.len().saturating_sub(query.offset);
        let wanted = start.saturating_add(per_page).min(ids.len());
        let order = |a: &Id, b: &Id| {
            let (a, b) = (self.usable_item(*a), self.usable_item(*b));
            let ordered = match query.order_field {
                Some(at) => compare_field(at, a, b).then_with(|| a.meta.filename.cmp(&b.meta.filename)),
                None => compare(query.order_by, a, b),
            };
            if query.direction == Direction::Desc { ordered.reverse() } else { ordered }
        };
        if wanted > 0 && wanted < ids.len() {
            ids.select_nth_unstable_by(wanted - 1, order);
            ids.truncate(wanted);
        }
        ids.sort_unstable_by(order);
        let items = ids.iter().skip(start).map(|id| Arc::clone(self.usable_item(*id))).collect();
        Selection { items, total }
    }

    /// A page newest first ([`OrderBy::Newest`]) filtered by status alone or with one tag:
    /// the kept date order differs from it only inside runs of one date, so the page's
    /// window of that order, widened to whole runs, is all that is sorted. `None` for
    /// other filters, or when a run is longer than [`NEWEST_RUN_LIMIT`] (a folder of
    /// undated items): then the matches are selected as for other unkept orders.
    fn newest_window(&self, query: &ListQuery, start: usize, per_page: usize) -> Option<Selection> {
        let filtered = query.author.is_some() || query.text.is_some() || !query.filters.is_empty();
        if query.order_by != OrderBy::Newest || query.order_field.is_some() || filtered {
            return None;
        }
        let published = match query.status {
            StatusFilter::All => false,
            StatusFilter::Published => true,
            StatusFilter::Draft | StatusFilter::Scheduled => return None,
        };
        let k = order_slot(OrderBy::DatePublished);
        let ids: &[Id] = match query.tags.as_slice() {
            [] if published => &self.sorted_published[k],
            [] => &self.sorted_all[k],
            [tag] => self.by_tag.get(tag).map_or(&[][..], |l| if published { &l.published } else { &l.all }),
            _ => return None,
        };
        let total = ids.len().saturating_sub(query.offset);
        let end = start.saturating_add(per_page).min(ids.len());
        if start >= end {
            return Some(Selection { items: Vec::new(), total });
        }
        // The window as positions of the ascending list.
        let (first, last) = match query.direction {
            Direction::Asc => (start, end),
            Direction::Desc => (ids.len() - end, ids.len() - start),
        };
        let date = |at: usize| self.usable_item(ids[at]).meta.date_at;
        let (mut from, mut to) = (first, last);
        while from > 0 && date(from - 1) == date(first) {
            from -= 1;
            if first - from > NEWEST_RUN_LIMIT {
                return None;
            }
        }
        while to < ids.len() && date(to) == date(last - 1) {
            to += 1;
            if to - last > NEWEST_RUN_LIMIT {
                return None;
            }
        }
        let mut runs = ids[from..to].to_vec();
        runs.sort_unstable_by(|a, b| compare(OrderBy::Newest, self.usable_item(*a), self.usable_item(*b)));
        let window = &runs[first - from..last - from];
        let items = match query.direction {
            Direction::Asc => self.page_of(window.iter(), 0, per_page),
            Direction::Desc => self.page_of(window.iter().rev(), 0, per_page),
        };
        Some(Selection { items, total })
    }

    fn page_of<'a>(
        &self,
        ids: impl Iterator<Item = &'a Id>,
        start: usize,
        per_page: usize,
    ) -> Vec<Arc<IndexedItem>> {
        ids.skip(start).take(per_page).map(|id| Arc::clone(self.usable_item(*id))).collect()
    }

    /// Counts every match and keeps the page's.
    fn walk<'a>(
        &self,
        matching: impl Iterator<Item = &'a Id>,
        offset: usize,
        start: usize,
        per_page: usize,
    ) -> Selection {
        let mut items = Vec::new();
        let mut seen = 0usize;
        for id in matching {
            if seen >= start && items.len() < per_page {
                items.push(Arc::clone(self.usable_item(*id)));
            }
            seen += 1;
        }
        Selection { items, total: seen.saturating_sub(offset) }
    }

    fn slot(&self, id: Id) -> &Slot {
        self.slots[id as usize].as_ref().expect("indexed id")
    }

    fn usable_item(&self, id: Id) -> &Arc<IndexedItem> {
        self.slot(id).item.as_ref().expect("usable id")
    }

    fn insert_slot(&mut self, name: &ItemFilename, stamp: FileStamp, item: Held, link: bool) {
        let usable = item.is_ok();
        let stamp = Stamp::of(&stamp);
        self.fingerprint ^= stamp_hash(name.as_str(), stamp);
        // A usable item's filename is shared with it (and with the search index).
        let shared = match &item {
            Ok(item) => Arc::clone(&item.meta.filename),
            Err(_) => Arc::from(name.as_str()),
        };
        let slot = Slot { name: shared, stamp, item };
        let id = match self.free.pop() {
            Some(id) => {
                self.slots[id as usize] = Some(slot.clone());
                id
            }
            None => {
                self.slots.push(Some(slot.clone()));
                Id::try_from(self.slots.len() - 1).expect("fewer than 4 billion items")
            }
        };
        if !usable {
            self.unusable.insert(Arc::clone(&slot.name), id);
        }
        self.by_name.insert(slot.name, id);
        let slots = &self.slots;
        let name_of = |other: Id| &*slots[other as usize].as_ref().expect("id").name;
        match self.by_slug.get_mut(name.slug()) {
            Some(files) => files.insert(id, name.as_str(), name_of),
            None => {
                self.by_slug.insert(Box::from(name.slug()), SlugFiles::One(id));
            }
        }
        if usable {
            self.usable += 1;
            let item = Arc::clone(self.usable_item(id));
            self.breaking_model += usize::from(item.breaks_model);
            self.drafts += usize::from(is_draft(&item));
            self.note_schedule(id, &item);
            if link {
                self.link_sorted(id);
            } else {
                // Bulk build: append now, sort once at the end.
                let live = self.is_live(&item);
                for order in ORDERS {
                    self.sorted_all[order_slot(order)].push(id);
                    if live {
                        self.sorted_published[order_slot(order)].push(id);
                    }
                }
                for tag in distinct(&item) {
                    let lists = self.by_tag.entry(tag.to_owned()).or_default();
                    lists.all.push(id);
                    if live {
                        lists.published.push(id);
                    }
                }
            }
        }
    }

    /// Records a new usable item's future instants, and whether its window hides it.
    fn note_schedule(&mut self, id: Id, item: &IndexedItem) {
        let Some(schedule) = item.meta.schedule.as_deref() else { return };
        if item.meta.status != Status::Published {
            return;
        }
        for at in schedule.instants().filter(|at| *at > self.now) {
            self.pending.insert((at, id));
        }
        if !self.is_live(item) {
            self.fingerprint ^= hidden_hash(&self.slot(id).name);
        }
    }

    /// Undoes [`Self::note_schedule`] for an item about to leave.
    fn forget_schedule(&mut self, id: Id, item: &IndexedItem) {
        let Some(schedule) = item.meta.schedule.as_deref() else { return };
        if item.meta.status != Status::Published {
            return;
        }
        for at in schedule.instants() {
            self.pending.remove(&(at, id));
        }
        if !self.is_live(item) {
            self.fingerprint ^= hidden_hash(&self.slot(id).name);
        }
    }

    fn link_sorted(&mut self, id: Id) {
        let item = Arc::clone(self.usable_item(id));
        let published = self.is_live(&item);
        let mut sorted_all = std::mem::take(&mut self.sorted_all);
        let mut sorted_published = std::mem::take(&mut self.sorted_published);
        for order in ORDERS {
            let k = order_slot(order);
            self.insert_sorted(&mut sorted_all[k], order, &item, id);
            if published {
                self.insert_sorted(&mut sorted_published[k], order, &item, id);
            }
        }
        let mut by_tag = std::mem::take(&mut self.by_tag);
        for tag in distinct(&item) {
            let lists = by_tag.entry(tag.to_owned()).or_default();
            self.insert_sorted(&mut lists.all, OrderBy::DatePublished, &item, id);
            if published {
                self.insert_sorted(&mut lists.published, OrderBy::DatePublished, &item, id);
            }
        }
        (self.sorted_all, self.sorted_published, self.by_tag) = (sorted_all, sorted_published, by_tag);
    }

    fn unlink_sorted(&mut self, id: Id) {
        let item = Arc::clone(self.usable_item(id));
        let mut sorted_all = std::mem::take(&mut self.sorted_all);
        let mut sorted_published = std::mem::take(&mut self.sorted_published);
        for order in ORDERS {
            let k = order_slot(order);
            self.remove_sorted(&mut sorted_all[k], order, &item, id);
            self.remove_sorted(&mut sorted_published[k], order, &item, id);
        }
        let mut by_tag = std::mem::take(&mut self.by_tag);
        for tag in distinct(&item) {
            if let Some(lists) = by_tag.get_mut(tag) {
                self.remove_sorted(&mut lists.all, OrderBy::DatePublished, &item, id);
                self.remove_sorted(&mut lists.published, OrderBy::DatePublished, &item, id);
                if lists.all.is_empty() {
                    by_tag.remove(tag);
                }
            }
        }
        (self.sorted_all, self.sorted_published, self.by_tag) = (sorted_all, sorted_published, by_tag);
    }

    /// Moves an item's id between its old and new versions' places in each list they
    /// differ in: by its key in an order, or by whether it is live (published lists), or
    /// by a tag's coming or going. The slot must still hold `old`.
    fn relink_sorted(&mut self, id: Id, old: &IndexedItem, new: &IndexedItem) {
        let (was_live, live) = (self.is_live(old), self.is_live(new));
        let mut sorted_all = std::mem::take(&mut self.sorted_all);
        let mut sorted_published = std::mem::take(&mut self.sorted_published);
        for order in ORDERS {
            let k = order_slot(order);
            // Same filename: equal means the order's key is the same.
            let same_key = compare(order, old, new) == Ordering::Equal;
            if !same_key {
                self.reposition(&mut sorted_all[k], order, id, Some(old), Some(new));
            }
            if !same_key || was_live != live {
                let (from, to) = (was_live.then_some(old), live.then_some(new));
                self.reposition(&mut sorted_published[k], order, id, from, to);
            }
        }
        let mut by_tag = std::mem::take(&mut self.by_tag);
        let same_date = compare(OrderBy::DatePublished, old, new) == Ordering::Equal;
        let (old_tags, new_tags) = (distinct(old), distinct(new));
        let gone = old_tags.iter().filter(|tag| !new_tags.contains(tag));
        for tag in new_tags.iter().chain(gone) {
            let (had, has) = (old_tags.contains(tag), new_tags.contains(tag));
            if had && has && same_date && was_live == live {
                continue;
            }
            if !by_tag.contains_key(*tag) {
                by_tag.insert((*tag).to_owned(), TagLists::default());
            }
            let lists = by_tag.get_mut(*tag).expect("just made");
            let order = OrderBy::DatePublished;
            self.reposition(&mut lists.all, order, id, had.then_some(old), has.then_some(new));
            let (from, to) = ((had && was_live).then_some(old), (has && live).then_some(new));
            self.reposition(&mut lists.published, order, id, from, to);
            if lists.all.is_empty() {
                by_tag.remove(*tag);
            }
        }
        (self.sorted_all, self.sorted_published, self.by_tag) = (sorted_all, sorted_published, by_tag);
    }

    /// Moves `id` in one sorted list from where `old` sorts (`None`: it is not in the
    /// list) to where `new` sorts (`None`: it leaves the list), shifting only the ids
    /// between the two places. The slot must still hold `old`.
    fn reposition(
        &self,
        ids: &mut Vec<Id>,
        order: OrderBy,
        id: Id,
        old: Option<&IndexedItem>,
        new: Option<&IndexedItem>,
    ) {
        let from = old.and_then(|old| {
            let at =
                ids.partition_point(|other| compare(order, self.usable_item(*other), old) == Ordering::Less);
            (ids.get(at) == Some(&id)).then_some(at)
        });
        let Some(new) = new else {
            if let Some(from) = from {
                ids.remove(from);
            }
            return;
        };
        let Some(from) = from else {
            self.insert_sorted(ids, order, new, id);
            return;
        };
        // The place among the other ids (the list without `from`, still sorted), found
        // without comparing the id itself: its slot holds the other version.
        let before = |other: &Id| compare(order, self.usable_item(*other), new) == Ordering::Less;
        let to = if from > 0 && !before(&ids[from - 1]) {
            ids[..from].partition_point(before)
        } else {
            from + sorted_position(&ids[from + 1..], order, before)
        };
        if to < from {
            ids[to..=from].rotate_right(1);
        } else {
            ids[from..=to].rotate_left(1);
        }
    }

    fn insert_sorted(&self, ids: &mut Vec<Id>, order: OrderBy, item: &IndexedItem, id: Id) {
        let at = sorted_position(ids, order, |other| {
            compare(order, self.usable_item(*other), item) == Ordering::Less
        });
        ids.insert(at, id);
    }

    fn remove_sorted(&self, ids: &mut Vec<Id>, order: OrderBy, item: &IndexedItem, id: Id) {
        let at =
            ids.partition_point(|other| compare(order, self.usable_item(*other), item) == Ordering::Less);
        if ids.get(at) == Some(&id) {
            ids.remove(at);
        }
    }
}

/// Where an item goes in a sorted list (`before` tells the ids that sort before it).
/// In the `modified` order a written item is nearly always the newest: the end is tried
/// first, which saves the binary search's cache misses.
fn sorted_position(ids: &[Id], order: OrderBy, before: impl Fn(&Id) -> bool) -> usize {
    if order == OrderBy::Modified && ids.last().is_none_or(&before) {
        return ids.len();
    }
    ids.partition_point(before)
}

/// Sorts ids ascending in one order, exactly as [`compare`] orders them, comparing keys
/// made once per item. Only for a freshly built index, whose ids ascend with filenames:
/// an id then breaks ties as the filename does, without comparing strings.
fn sort_by_order<'a>(order: OrderBy, ids: &mut [Id], item: impl Fn(Id) -> &'a IndexedItem) {
    fn by_key<'a, K: Ord>(
        ids: &mut [Id],
        item: impl Fn(Id) -> &'a IndexedItem,
        key: impl Fn(&'a IndexedItem) -> K,
    ) {
        let mut keyed: Vec<(K, Id)> = ids.iter().map(|id| (key(item(*id)), *id)).collect();
        keyed.sort_unstable();
        for (slot, (_, id)) in ids.iter_mut().zip(keyed) {
            *slot = id;
        }
    }
    match order {
        OrderBy::DatePublished => by_key(ids, item, |i| i.meta.date_at.map(|d| d.unix_timestamp_nanos())),
        // Lowercase forms compare byte by byte as `caseless_cmp` compares them char by
        // char (UTF-8 keeps the order of code points); their first 8 bytes as a number
        // settle most comparisons without a string comparison.
        OrderBy::Title => by_key(ids, item, |i| {
            let lower = caseless_key(&i.meta.title);
            (prefix_number(&lower), lower)
        }),
        OrderBy::Slug => by_key(ids, item, |i| (prefix_number(&i.meta.slug), i.meta.slug.as_str())),
        OrderBy::Modified => by_key(ids, item, |i| i.meta.modified),
        OrderBy::Newest => {
            by_key(ids, item, |i| (i.meta.date_at.map(|d| d.unix_timestamp_nanos()), i.meta.modified))
        }
    }
}

/// The first 8 bytes of a string as a big-endian number (zero-padded): ordered as the
/// strings' first 8 bytes are.
fn prefix_number(text: &str) -> u64 {
    let mut bytes = [0u8; 8];
    let n = text.len().min(8);
    bytes[..n].copy_from_slice(&text.as_bytes()[..n]);
    u64::from_be_bytes(bytes)
}

fn caseless_key(title: &str) -> String {
    if title.is_ascii() {
        title.to_ascii_lowercase()
    } else {
        title.chars().flat_map(char::to_lowercase).collect()
    }
}

/// Compares two titles as their lowercase forms would compare, without keeping or
/// building those forms (ASCII titles, the usual case, compare byte by byte).
fn caseless_cmp(a: &str, b: &str) -> Ordering {
    if a.is_ascii() && b.is_ascii() {
        return a.bytes().map(|c| c.to_ascii_lowercase()).cmp(b.bytes().map(|c| c.to_ascii_lowercase()));
    }
    a.chars().flat_map(char::to_lowercase).cmp(b.chars().flat_map(char::to_lowercase))
}

/// What a published item outside its window adds to the fingerprint.
fn hidden_hash(name: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    ("outside its window", name).hash(&mut hasher);
    hasher.finish()
}

fn stamp_hash(name: &str, stamp: Stamp) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    (name, stamp.change_token, stamp.size, stamp.modified).hash(&mut hasher);
    hasher.finish()
}

/// An item's tag slugs, each once (an item tagged `Rust` and `rust` is listed once).
fn distinct(item: &IndexedItem) -> Vec<&str> {
    let mut seen: Vec<&str> = Vec::new();
    for slug in item.tag_slugs() {
        if !seen.contains(&slug) {
            seen.push(slug);
        }
    }
    seen
}

/// An item's excerpt: `fm.excerpt`, else `fm.description`, else the body as plain text
/// cut on a word boundary. Lists and single reads use this one rule.
pub fn excerpt_of(doc: &ItemDocument) -> String {
    excerpt_with(doc, &render::to_plain_text(&doc.body))
}

fn excerpt_with(doc: &ItemDocument, body_text: &str) -> String {
    match written_excerpt(doc) {
        Some(text) => text.to_owned(),
        None => render::excerpt(body_text, EXCERPT_CHARS),
    }
}

/// The same rule as [`excerpt_of`], as plain text: a written `fm.excerpt` or
/// `fm.description` loses its Markdown and HTML too, and every excerpt is cut on a word
/// boundary at [`EXCERPT_CHARS`]. The search index, feeds and related items use this.
pub fn plain_excerpt_of(doc: &ItemDocument) -> String {
    plain_excerpt_with(doc, &render::to_plain_text(&doc.body))
}

fn plain_excerpt_with(doc: &ItemDocument, body_text: &str) -> String {
    match written_excerpt(doc) {
        Some(text) => plain_written_excerpt(text),
        None => render::excerpt(body_text, EXCERPT_CHARS),
    }
}

fn plain_written_excerpt(text: &str) -> String {
    render::excerpt(&render::to_plain_text(&strip_tags(text)), EXCERPT_CHARS)
}

/// Removes HTML tags (`<p>`, `</b>`, `<!-- -->`) from a written excerpt, keeping their
/// text: Markdown drops a whole HTML block, and `<p>Intro</p>` must still give `Intro`.
/// A `<` that does not open a tag (`a < b`) stays.
fn strip_tags(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('<') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let opens_tag = after.starts_with(|c: char| c.is_ascii_alphabetic() || c == '/' || c == '!');
        match after.find('>') {
            Some(end) if opens_tag => {
                out.push(' ');
                rest = &after[end + 1..];
            }
            _ => {
                out.push('<');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn written_excerpt(doc: &ItemDocument) -> Option<&str> {
    ["excerpt", "description"].iter().find_map(|key| doc.fm.get(*key).and_then(|v| v.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::ListParams;

    fn doc(fm: &str) -> ItemDocument {
        ItemDocument::parse(&format!("---\n{fm}\n---\nThe *body* text.\n")).unwrap()
    }

    #[test]
    fn plain_excerpts_lose_markdown_and_html() {
        assert_eq!(plain_excerpt_of(&doc("excerpt: '<p>Intro &amp; <b>more</b></p>'")), "Intro & more");
        assert_eq!(plain_excerpt_of(&doc("description: '**a** < b <!-- c -->'")), "a < b");
        assert_eq!(plain_excerpt_of(&doc("title: T")), "The body text.");
        assert_eq!(excerpt_of(&doc("excerpt: '<p>x</p>'")), "<p>x</p>", "lists keep it as written");
    }

    fn file(name: &str, token: u64, fm: &str) -> (ItemFilename, FileStamp, Parsed) {
        let name = ItemFilename::parse(name).unwrap();
        let bytes = format!("---\n{fm}\n---\nbody\n").into_bytes();
        let stamp = FileStamp {
            name: name.as_str().into(),
            size: bytes.len() as u64,
            modified: token as i64,
            change_token: token,
        };
        let item = IndexedItem::from_file(
            &name,
            &StoredFile { bytes, stamp: stamp.clone() },
            &SiteZone::utc(),
            None,
        );
        (name, stamp, item)
    }

    #[test]
    fn an_item_from_its_document_is_the_item_from_its_bytes() {
        let name = ItemFilename::parse("2024-05-01-hello.md").unwrap();
        let text = "---\ntitle: Hello\ndate: 2024-05-01 10:00 +0200\ntags: [Rust, web dev]\nexcerpt: '*Short*'\nimage: a.png\n---\n# Hi\n\nSome *body* text.\n";
        let stamp =
            FileStamp { name: name.as_str().into(), size: text.len() as u64, modified: 7, change_token: 7 };
        let file = StoredFile { bytes: text.as_bytes().to_vec(), stamp };
        let zone = SiteZone::utc();
        let doc = ItemDocument::parse(text).unwrap();
        let (from_doc, doc_text) = IndexedItem::from_document_with_text(&name, &doc, &file, &zone, None);
        let (from_bytes, bytes_text) = IndexedItem::from_file_with_text(&name, &file, &zone, None).unwrap();
        assert_eq!(from_doc, from_bytes);
        assert_eq!(doc_text, bytes_text);
    }

    #[test]
    fn a_new_version_with_the_same_body_is_the_item_made_from_scratch() {
        let name = ItemFilename::parse("2024-05-01-hello.md").unwrap();
        let zone = SiteZone::utc();
        let version = |fm: &str| {
            let text = format!("---\n{fm}\n---\n# Hi\n\nSome *body* text, <b>bold</b>.\n");
            let stamp = FileStamp {
                name: name.as_str().into(),
                size: text.len() as u64,
                modified: 7,
                change_token: 7,
            };
            let file = StoredFile { bytes: text.into_bytes(), stamp };
            let doc = ItemDocument::parse(std::str::from_utf8(&file.bytes).unwrap()).unwrap();
            let (item, _) = IndexedItem::from_document_with_text(&name, &doc, &file, &zone, None);
            (doc, file, item)
        };
        let plain = "title: Hello\nstatus: draft";
        let written = "title: Hello\nexcerpt: '*Short*, <i>written</i>'";
        // (before, after, whether the body's excerpt must be rendered again)
        let cases = [
            (plain, "title: Hello\nstatus: published\nn: 2", false),
            (plain, "title: Renamed\ntags: [Rust]", false),
            (plain, written, false),
            (written, "title: Hello\ndescription: Other", false),
            (written, plain, true),
        ];
        for (before, after, renders) in cases {
            let (before_doc, _, previous) = version(before);
            let (doc, file, expected) = version(after);
            let wrote = IndexedItem::writes_excerpt(&before_doc);
            let kept = IndexedItem::with_body_of(&name, &doc, &file, &zone, None, &previous, wrote);
            match kept {
                Some(item) => assert!(!renders && item == expected, "{before:?} -> {after:?}"),
                None => assert!(renders, "{before:?} -> {after:?} should not need the body"),
            }
        }
    }

    fn query(pairs: &[(&str, &str)]) -> ListQuery {
        ListQuery::parse(&ListParams::from_pairs(pairs.iter().copied())).unwrap()
    }

    /// What a full sort of the matches would give: the reference the kept orders must equal.
    fn reference(
        index: &CollectionIndex,
        q: &ListQuery,
        page: usize,
        per_page: usize,
    ) -> (Vec<String>, usize) {
        let mut all: Vec<_> = index.items().into_iter().filter(|i| i.admitted_by(q, index.now)).collect();
        all.sort_by(|a, b| {
            let o = compare(q.order_by, a, b);
            if q.direction == Direction::Desc { o.reverse() } else { o }
        });
        let rest: Vec<_> = all.into_iter().skip(q.offset).collect();
        let total = rest.len();
        (
            rest.into_iter()
                .skip((page - 1) * per_page)
                .take(per_page)
                .map(|i| i.meta.filename.to_string())
                .collect(),
            total,
        )
    }

    #[test]
    fn the_fingerprint_names_the_set_of_file_versions() {
        let (a, stamp_a, item_a) = file("a.md", 1, "title: A");
        let (_, stamp_b, item_b) = file("b.md", 2, "title: B");
        let mut index =
            CollectionIndex::build(vec![(stamp_a.clone(), held(item_a.clone())), (stamp_b, held(item_b))], 0);
        let original = index.fingerprint();
        let (c, stamp_c, item_c) = file("c.md", 3, "title: C");
        index.upsert(&c, stamp_c, item_c);
        assert_ne!(index.fingerprint(), original, "a new file changes it");
        index.remove("c.md");
        assert_eq!(index.fingerprint(), original, "back to the same files, back to the same value");
        let (_, edited, item) = file("a.md", 4, "title: A2");
        index.upsert(&a, edited, item);
        assert_ne!(index.fingerprint(), original, "an edit changes it");
        index.upsert(&a, stamp_a, item_a);
        assert_eq!(index.fingerprint(), original);
    }

    /// A run of one date longer than the window may sort (undated items, here) is selected
    /// from the matches instead, in the same order.
    #[test]
    fn newest_first_over_a_long_run_of_undated_items() {
        let entries = (0..NEWEST_RUN_LIMIT as u64 + 100)
            .map(|i| {
                // File names in the other order than last changes.
                let (_, stamp, item) = file(&format!("p{:05}.md", 99_999 - i), i, "title: P");
                (stamp, held(item))
            })
            .chain([{
                let (_, stamp, item) = file("dated.md", 0, "title: D\ndate: 2024-01-01");
                (stamp, held(item))
            }])
            .collect();
        let index = CollectionIndex::build(entries, 0);
        let q = ListQuery { order_by: OrderBy::Newest, status: StatusFilter::All, ..ListQuery::default() };
        for (page, per_page) in [(1, 20), (2, 20), (206, 20), (211, 20)] {
            let got = index.select(&q, page, per_page);
            let names: Vec<String> = got.items.iter().map(|i| i.meta.filename.to_string()).collect();
            assert_eq!((names, got.total), reference(&index, &q, page, per_page), "page {page}");
        }
        let first = index.select(&q, 1, 2).items;
        assert_eq!(first.iter().map(|i| &*i.meta.filename).collect::<Vec<_>>(), ["dated.md", "p95804.md"]);
    }

    #[test]
    fn a_slug_names_its_files_in_filename_order() {
        let located = |index: &CollectionIndex| {
            let x = ItemRef::parse("x").unwrap();
            let name = index.locate(&x).map(|name| name.as_str().to_owned());
            let found = index.find(&x).map(|item| item.map(|item| item.meta.filename.to_string()));
            assert_eq!(found, name.clone().map(Ok), "find names the file locate names");
            name
        };
        let mut index = CollectionIndex::build(Vec::new(), 0);
        for (name, token) in [("x.md", 1), ("2024-02-01-x.md", 2), ("2024-01-01-x.md", 3)] {
            let (name, stamp, item) = file(name, token, "title: X");
            index.upsert(&name, stamp, item);
        }
        assert_eq!(located(&index).as_deref(), Some("2024-01-01-x.md"));
        index.remove("2024-01-01-x.md");
        assert_eq!(located(&index).as_deref(), Some("2024-02-01-x.md"));
        index.remove("2024-02-01-x.md");
        assert_eq!(index.file_with_slug("x").unwrap().as_str(), "x.md", "one left");
        let (name, stamp, item) = file("2023-01-01-x.md", 4, "title: X");
        index.upsert(&name, stamp, item);
        assert_eq!(located(&index).as_deref(), Some("2023-01-01-x.md"));
        index.remove("2023-01-01-x.md");
        index.remove("x.md");
        assert_eq!(located(&index), None);
        assert!(index.by_slug.is_empty());
    }

    #[test]
    fn kept_orders_equal_a_full_sort_after_changes() {
        let mut entries = Vec::new();
        // Titles that tie, differ only in case or are not ASCII; dates that are the same
        // instant written with different offsets.
        let titles = ["Zebra", "apple", "Äpfel", "éclair", "Apple", "banana", "ÉCLAIR", "T"];
        for i in 0..40u64 {
            let status = if i % 4 == 0 { "draft" } else { "published" };
            let date = match i % 5 {
                0 => "\ndate: 2024-02-01 10:00 +0200",
                1 => "\ndate: 2024-02-01 09:00 +0100",
                _ => "",
            };
            let (_, stamp, item) = file(
                &format!("2024-01-{:02}-post-{i}.md", i % 28 + 1),
                i,
                &format!(
                    "title: {}{}\nstatus: {status}\ntags: [t{}, all]\nauthor: a{}{date}",
                    titles[i as usize % titles.len()],
                    if i % 3 == 0 { String::new() } else { (40 - i).to_string() },
                    i % 3,
                    i % 2
                ),
            );
            entries.push((stamp, item));
        }
        let (_, stamp, _) = file("broken.md", 99, "x: [");
        entries.push((stamp, Err("broken".to_owned())));
        let mut index = CollectionIndex::build(entries.into_iter().map(|(s, p)| (s, held(p))).collect(), 0);
        // Changes in place: an update, a removal, an insert, a file turned broken.
        let (name, stamp, item) =
            file("2024-01-05-post-4.md", 100, "title: Zed\nstatus: published\ntags: [t2]");
        index.upsert(&name, stamp, item);
        index.remove("2024-01-08-post-7.md");
        let (name, stamp, item) = file("new.md", 101, "title: New\ndate: 2023-12-31\ntags: [t0]");
        index.upsert(&name, stamp, item);
        let (name, stamp, _) = file("2024-01-10-post-9.md", 102, "");
        index.upsert(&name, stamp, Err("broken".to_owned()));

        let queries = [
            vec![],
            vec![("status", "all")],
            vec![("status", "draft")],
            vec![("orderBy", "title"), ("direction", "asc")],
            vec![("orderBy", "slug"), ("status", "all"), ("offset", "3")],
            vec![("orderBy", "modified")],
            vec![("tags", "t0")],
            vec![("tags", "t0"), ("direction", "asc"), ("status", "all")],
            vec![("tags", "t1,t2"), ("orderBy", "title")],
            vec![("author", "A1")],
            vec![("tags", "all"), ("orderBy", "title")],
        ];
        // Newest first (not a client's order): from the date order's window, or selected.
        let newest = [
            vec![],
            vec![("status", "all")],
            vec![("status", "all"), ("direction", "asc"), ("offset", "2")],
            vec![("status", "draft")],
            vec![("tags", "t0"), ("status", "all")],
            vec![("tags", "all")],
            vec![("tags", "t1,t2"), ("status", "all")],
            vec![("author", "A1"), ("status", "all")],
        ];
        let queries = queries.into_iter().map(|pairs| (query(&pairs), pairs));
        let newest =
            newest.into_iter().map(|pairs| (ListQuery { order_by: OrderBy::Newest, ..query(&pairs) }, pairs));
        for (q, pairs) in queries.chain(newest) {
            for (page, per_page) in [(1, 5), (2, 5), (3, 7), (9, 5)] {
                let got = index.select(&q, page, per_page);
                let got_names: Vec<String> = got.items.iter().map(|i| i.meta.filename.to_string()).collect();
                assert_eq!(
                    (got_names, got.total),
                    reference(&index, &q, page, per_page),
                    "{pairs:?} page {page}"
                );
            }
        }
        // The kept status counts equal a walk (post-4 went from draft to published, post-7
        // and post-9 left the usable items).
        let items = index.items();
        let live = items.iter().filter(|i| i.meta.live_at(index.now)).count();
        let drafts = items.iter().filter(|i| i.meta.status == Status::Draft).count();
        let counts = index.status_counts();
        assert_eq!(counts, StatusCounts { live, scheduled: items.len() - live - drafts, drafts });
        assert_eq!(counts.drafts, 9, "ten drafts, one published since: {counts:?}");
        assert_eq!(index.file_count(), 41);
        assert!(matches!(index.get("broken.md"), Some(Err("broken"))));
        assert_eq!(index.skipped(), [("2024-01-10-post-9.md", "broken"), ("broken.md", "broken")]);
        assert_eq!(
            index.locate(&ItemRef::parse("post-4").unwrap()).unwrap().as_str(),
            "2024-01-05-post-4.md"
        );
        assert!(index.locate(&ItemRef::parse("post-7").unwrap()).is_none());
        assert!(index.find(&ItemRef::parse("post-7").unwrap()).is_none());
        assert_eq!(index.find(&ItemRef::parse("post-9").unwrap()), Some(Err("broken")), "known, unusable");
        let by_file = index.find(&ItemRef::parse("2024-01-05-post-4.md").unwrap());
        assert_eq!(by_file.and_then(Result::ok).map(|item| &*item.meta.slug), Some("post-4"));
    }

    /// A small deterministic generator (xorshift64*), so that a failing run repeats.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
        }

        fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
            from[self.below(from.len())]
        }
    }

    /// Frontmatter varying every key the index keeps an order, a list or a schedule by.
    fn random_frontmatter(rng: &mut Rng) -> String {
        let mut fm = format!("title: {}", rng.pick(&["Alpha", "alpha", "Beta", "Äpfel", "zed"]));
        let date =
            rng.pick(&["", "2024-01-01", "2024-01-01 10:00 +0200", "2024-01-01 09:00 +0100", "2023-12-31"]);
        if !date.is_empty() {
            fm += &format!("\ndate: {date}");
        }
        fm += rng.pick(&["", "\nstatus: published", "\nstatus: draft", "\ndraft: true"]);
        let bounds = ["", "2024-06-05", "2024-06-11", "2024-06-12 12:00", "2024-06-20", "2024-06-99"];
        for key in ["publish_date", "unpublish_date"] {
            let at = if rng.below(3) == 0 { rng.pick(&bounds) } else { "" };
            if !at.is_empty() {
                fm += &format!("\n{key}: '{at}'");
            }
        }
        let tags: Vec<&str> = ["a", "b", "B", "c d"].into_iter().filter(|_| rng.below(2) == 0).collect();
        fm + &format!("\ntags: [{}]", tags.join(", "))
    }

    /// Everything a list, a lookup or the fingerprint can tell, of an index changed in
    /// place and of one built fresh from the same files, must agree.
    fn assert_same_as_fresh(
        index: &CollectionIndex,
        files: &HashMap<String, (FileStamp, Held)>,
        step: usize,
    ) {
        let fresh = CollectionIndex::build(files.values().cloned().collect(), index.now());
        assert_eq!(index.fingerprint(), fresh.fingerprint(), "step {step}: fingerprint");
        assert_eq!(index.usable_count(), fresh.usable_count(), "step {step}");
        assert_eq!(index.file_count(), fresh.file_count(), "step {step}");
        assert_eq!(index.skipped(), fresh.skipped(), "step {step}");
        assert_eq!(index.next_instant(), fresh.next_instant(), "step {step}");
        let pending = |i: &CollectionIndex| {
            let mut named: Vec<_> =
                i.pending.iter().map(|(at, id)| (*at, i.slot(*id).name.to_string())).collect();
            named.sort();
            named
        };
        assert_eq!(pending(index), pending(&fresh), "step {step}: pending instants");
        let tags = |i: &CollectionIndex| {
            let mut tags: Vec<_> = i.by_tag.keys().cloned().collect();
            tags.sort();
            tags
        };
        assert_eq!(tags(index), tags(&fresh), "step {step}: no empty tag is left");
        // The kept lists themselves, by name (ids differ between the two).
        let named = |i: &CollectionIndex, ids: &[Id]| -> Vec<String> {
            ids.iter().map(|id| i.slot(*id).name.to_string()).collect()
        };
        for k in 0..ORDERS.len() {
            assert_eq!(
                named(index, &index.sorted_all[k]),
                named(&fresh, &fresh.sorted_all[k]),
                "step {step}"
            );
            assert_eq!(
                named(index, &index.sorted_published[k]),
                named(&fresh, &fresh.sorted_published[k]),
                "step {step}"
            );
        }
        for (tag, lists) in &fresh.by_tag {
            let kept = &index.by_tag[tag];
            assert_eq!(named(index, &kept.all), named(&fresh, &lists.all), "step {step}: {tag}");
            assert_eq!(named(index, &kept.published), named(&fresh, &lists.published), "step {step}: {tag}");
        }
        for (name, (stamp, held)) in files {
            assert_eq!(index.stamp(name).as_ref(), Some(stamp), "step {step}");
            assert!(index.holds(stamp), "step {step}");
            assert_eq!(index.get(name), held.as_ref().map_err(|r| &**r).into(), "step {step}: {name}");
            let slug = ItemFilename::parse(name).unwrap().slug().to_owned();
            assert_eq!(index.file_with_slug(&slug), fresh.file_with_slug(&slug), "step {step}: {slug}");
        }
        // One copy of each filename, shared by the slot, its item and `by_name`.
        for (key, id) in &index.by_name {
            let slot = index.slot(*id);
            assert!(Arc::ptr_eq(key, &slot.name), "step {step}: {key}");
            if let Ok(item) = &slot.item {
                assert!(Arc::ptr_eq(&item.meta.filename, &slot.name), "step {step}: {key}");
            }
        }
        if step % 15 != 14 {
            return;
        }
        for order in ["date_published", "title", "slug", "modified"] {
            for direction in ["asc", "desc"] {
                for status in ["published", "draft", "scheduled", "all"] {
                    for tags in ["", "a", "b", "c-d", "a,b"] {
                        let mut pairs =
                            vec![("orderBy", order), ("direction", direction), ("status", status)];
                        if !tags.is_empty() {
                            pairs.push(("tags", tags));
                        }
                        let q = query(&pairs);
                        let names = |s: Selection| {
                            (s.items.iter().map(|i| i.meta.filename.to_string()).collect::<Vec<_>>(), s.total)
                        };
                        let got = names(index.select(&q, 1, 50));
                        assert_eq!(got, names(fresh.select(&q, 1, 50)), "step {step}: {pairs:?}");
                        assert_eq!(got, reference(index, &q, 1, 50), "step {step}: {pairs:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn rewrites_in_place_keep_the_index_as_a_fresh_build_would_be() {
        let names =
            ["2024-01-01-a.md", "a.md", "2024-02-01-b.md", "c.md", "d.md", "2024-03-03-e.md", "f.md", "g.md"];
        // 2024-06-10 UTC: the schedule bounds above fall on both sides, and the clock
        // crosses some of them.
        let mut now = 1_717_977_600;
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut files: HashMap<String, (FileStamp, Held)> = HashMap::new();
        let mut modified = 1_000;
        let mut write = |rng: &mut Rng, name: &str, token: u64| {
            // Mostly later, sometimes the same second, now and then earlier (a restored file).
            modified += [1, 1, 1, 5, 0, -3][rng.below(6)];
            let fm = random_frontmatter(rng);
            let (name, mut stamp, item) = file(name, token, &fm);
            stamp.modified = modified;
            let item = item.map(|mut item| {
                item.meta.modified = modified;
                item.file_version = crate::item_file::file_version(&item.meta, item.content);
                item
            });
            (name, stamp, item)
        };
        for (k, name) in names.iter().enumerate().step_by(2) {
            let (_, stamp, item) = write(&mut rng, name, k as u64);
            files.insert(name.to_string(), (stamp, held(item)));
        }
        let mut index = CollectionIndex::build(files.values().cloned().collect(), now);
        let mut in_place = 0;
        // 300 steps: every 15th (and the last) checks every list query too.
        for step in 0..300 {
            let name = rng.pick(&names);
            let token = 100 + step as u64;
            match rng.below(20) {
                0 => {
                    index.remove(name);
                    files.remove(name);
                }
                1 => {
                    let (name, stamp, _) = file(name, token, "");
                    index.upsert(&name, stamp.clone(), Err("broken".to_owned()));
                    files.insert(name.as_str().to_owned(), (stamp, Err(Box::from("broken"))));
                }
                2 => {
                    now += [0, 3_600, 43_200, 86_400][rng.below(4)];
                    index.advance(now);
                }
                _ => {
                    let (name, stamp, item) = write(&mut rng, name, token);
                    let before = index.by_name.get(name.as_str()).copied();
                    let was_usable = matches!(index.get(name.as_str()), Some(Ok(_)));
                    let usable = item.is_ok();
                    assert_eq!(index.upsert(&name, stamp.clone(), item.clone()), Applied::Updated);
                    if was_usable && usable {
                        assert_eq!(index.by_name.get(name.as_str()).copied(), before, "the slot is kept");
                        in_place += 1;
                    }
                    files.insert(name.as_str().to_owned(), (stamp, held(item)));
                }
            }
            assert_same_as_fresh(&index, &files, step);
        }
        assert!(in_place > 150, "the in-place path ran {in_place} times");
    }
}

#[cfg(test)]
mod upsert_cost {
    use super::*;

    /// A rough measure of a write's cost at 10,000 items (run with `--release --ignored`):
    /// each file rewritten with a later `modified`, as an API write does.
    #[test]
    #[ignore = "a measure, not a check"]
    fn rewrite_cost_at_10000_items() {
        let zone = SiteZone::utc();
        let parsed = |i: usize, token: u64| {
            let name = ItemFilename::parse(&format!("2024-01-{:02}-post-{i}.md", i % 28 + 1)).unwrap();
            let bytes = format!(
                "---\ntitle: Post {i}\ndate: 2024-{:02}-{:02}\ntags: [t{}, t{}]\n---\nbody {token}\n",
                i % 12 + 1,
                i % 28 + 1,
                i % 20,
                (i * 7) % 20
            )
            .into_bytes();
            let stamp = FileStamp {
                name: name.as_str().into(),
                size: bytes.len() as u64,
                modified: token as i64,
                change_token: token,
            };
            let item =
                IndexedItem::from_file(&name, &StoredFile { bytes, stamp: stamp.clone() }, &zone, None);
            (name, stamp, item)
        };
        let n = 10_000;
        let entries = (0..n).map(|i| parsed(i, i as u64)).map(|(_, s, p)| (s, held(p))).collect();
        let mut index = CollectionIndex::build(entries, 0);
        let writes: Vec<_> = (0..20_000).map(|k| parsed((k * 7919) % n, (n + k) as u64)).collect();
        let started = std::time::Instant::now();
        for (name, stamp, item) in writes {
            index.upsert(&name, stamp, item);
        }
        let per = started.elapsed() / 20_000;
        eprintln!("upsert of an existing item at {n} items: {per:?} each");
    }
}
