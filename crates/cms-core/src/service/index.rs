//! The facade's side of the kept index: built once per collection, then changed in place
//! by the facade's own writes (read-your-writes) and by the store's change feed (edits by
//! other programs), with a rescan whenever the feed cannot say exactly what changed.
//! The data structure is [`crate::engine::index`]. Every change to an entry, whatever made
//! it, is made in one place, [`Cms::change_entry`], and goes on the change log
//! (`crate::changes`), which the search index (`service::search`) and the webhooks follow.
//!
//! - **Built** at `cms serve` start ([`Cms::start`]; lazily on first use elsewhere) from one
//!   scan, then the files read in batches of `BUILD_BATCH` (`ContentStore::read_many`,
//!   which the file adapter reads in parallel) and parsed on every core, the next batch read
//!   while one is parsed; at most two batches of file contents are in memory at a time.
//! - **From a snapshot on restarts** ([`crate::engine::snapshot`], the `IndexSnapshots` port):
//!   while the folder is listed, the collection's last snapshot is decoded and built into
//!   an index; the listing then keeps each entry whose stamp equals the listed one, and
//!   only the other files are read and parsed. A few changes since the snapshot are made
//!   to its index one by one; more, and the index is built again from the entries still
//!   held and the files read. A snapshot can make a start faster, never different. The
//!   server saves one after start-up, every minute when the index's fingerprint (or the
//!   folder's stamp) moved, and when it stops.
//! - **From the snapshot alone** when the store says that no file was added to, removed
//!   from or renamed in the folder since it was saved (`ContentStore::folder_stamp` is the
//!   one it recorded): the server answers from it without listing the folder (a stat of
//!   every file, most of a restart at 1,000,000 items), then compares every file's stamp
//!   behind its first answers ([`Cms::check_snapshot_starts`]). An edit made in place
//!   while the server was stopped is found there and applied as any outside edit; until
//!   then lists answer the state the server stopped in, as they answer the previous state
//!   of an edit the change feed has not reported yet.
//! - **The facade's own writes** (create, update, delete, restore) update it before the
//!   request answers, under the item's lock, so the next request on the same server sees
//!   them. An update that keeps the body of the file it read takes the body's excerpt from
//!   the indexed item and, when title and tags are unchanged too, leaves the search terms
//!   as they are: only when the index holds that very file (same ETag), so the result
//!   equals a fresh parse.
//! - **Changes by other programs** arrive through the store's `ChangeFeed`
//!   ([`Cms::subscribe`], then [`Cms::follow_changes`] on the server's runtime). The files
//!   of one batch are stat-ed together (`ContentStore::stat_many`); a file whose stamp
//!   equals the indexed one (most reports on a busy server are of its own writes) needs
//!   nothing. The others are stat-ed again and re-read under the item's write lock, so a
//!   late report never overwrites a newer API write. A `Rescan` (lost or overflowed watch,
//!   a folder replaced wholesale) compares the whole collection with a fresh scan and
//!   re-reads what differs. A store without a feed is rescanned every second.
//! - **Consistency**: on one server, reads see every write acknowledged before they
//!   started. Edits made behind the server's back are seen within the feed's delay (about
//!   0.3 s on the folder, the journal's poll on a bucket); until then reads answer the
//!   previous state, never a torn one. A single read whose rendering is not cached reads
//!   the file; if it changed since it was indexed, the answer is built from the file read.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::task::Poll;

use futures_util::future::{MaybeDone, maybe_done};
use futures_util::lock::Mutex as AsyncMutex;

use super::Cms;
use crate::changes::{Cause, Change, ChangeKind, Known, SearchTerms};
use crate::collection::Collection;
use crate::dates::SiteZone;
use crate::document::ItemDocument;
use crate::engine::index::{Applied, CollectionIndex, Held, IndexedItem, Parsed, Reading, held};
use crate::engine::snapshot::{self, FolderState, SnapshotHeader};
use crate::error::CoreResult;
use crate::item_file::ContentTag;
use crate::policy::Caller;
use crate::ports::{ChangeFeed, ChangeOrigin, FileStamp, StorageChange, StoredFile};
use crate::slug::{ItemFilename, Naming};

/// What a rewrite kept of the file it read: its body (see [`Cms::index_rewritten`]).
pub(super) struct KeptBody {
    /// The ETag of the file read, so that only the index's item of that very file is used.
    pub(super) read: ContentTag,
    /// Whether that file had a written excerpt (the index's excerpt then is not the body's).
    pub(super) wrote_excerpt: bool,
}

/// Who changes an item's entry in the index, and what a facade write calls it: what the
/// [`Change`] will say.
pub(super) struct Why {
    cause: Cause,
    /// Named by the facade's write (a restore of a deleted item is an update); `None`:
    /// from whether the file was and is there.
    kind: Option<ChangeKind>,
}

impl Why {
    /// A write through this facade by `caller`.
    pub(super) fn write(caller: Caller<'_>, kind: ChangeKind) -> Self {
        let cause =
            Cause::Write { author: caller.author().to_owned(), email: caller.email().map(str::to_owned) };
        Self { cause, kind: Some(kind) }
    }

    /// A change found in the store.
    pub(super) fn found(origin: ChangeOrigin) -> Self {
        let cause = match origin {
            ChangeOrigin::Outside => Cause::OutsideEdit,
            ChangeOrigin::OtherNode => Cause::OtherNode,
        };
        Self { cause, kind: None }
    }
}

/// A file in a collection's folder that is not listed, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedFile {
    pub collection: String,
    pub filename: String,
    pub reason: String,
}

/// How far [`Cms::start`] has come: the server listens while the first indexing runs, and
/// reads this (one atomic load per request) to answer `503` until it is done, and to say
/// in its log and `/status` how many files are indexed.
pub(super) struct StartProgress {
    /// [`PHASE_LAZY`], [`PHASE_INDEXING`] or [`PHASE_DONE`].
    phase: AtomicU8,
    /// Item files found by the scans so far (a collection's are added when it is scanned).
    found: AtomicUsize,
    /// Of those, the files indexed so far (taken from the snapshot, or read and parsed).
    indexed: AtomicUsize,
}

/// Nobody called [`Cms::start`]: each index is built on its first use (tests, CLI).
const PHASE_LAZY: u8 = 0;
const PHASE_INDEXING: u8 = 1;
const PHASE_DONE: u8 = 2;

impl Default for StartProgress {
    fn default() -> Self {
        Self { phase: AtomicU8::new(PHASE_LAZY), found: AtomicUsize::new(0), indexed: AtomicUsize::new(0) }
    }
}

/// The first indexing while it runs: files indexed of those found so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Indexing {
    pub indexed: usize,
    /// Grows as each collection is scanned, so it is a lower bound until the last one is.
    pub found: usize,
}

/// One collection's index and the lock that lets one task build it.
#[derive(Default)]
pub(super) struct IndexCell {
    pub(super) index: RwLock<Option<CollectionIndex>>,
    building: AsyncMutex<()>,
    /// What the stored snapshot holds (as last saved, or as loaded when it held exactly
    /// the folder's files); `None` when it is behind or missing.
    snapshotted: std::sync::Mutex<Option<Snapshotted>>,
    /// Installed from its snapshot alone, without listing the folder (see
    /// [`Cms::start_from_snapshot`]), and not compared with a listing since.
    unchecked: AtomicBool,
}

/// What a stored snapshot holds: the index's fingerprint and the folder's stamp when it
/// was taken. A snapshot whose folder stamp is behind is saved again even when the index
/// did not change, so that the next start can use it without listing the folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Snapshotted {
    fingerprint: u64,
    folder: Option<u64>,
}

/// What the index knows about a collection, read under its lock.
pub(super) struct IndexRead<'a>(RwLockReadGuard<'a, Option<CollectionIndex>>);

impl std::ops::Deref for IndexRead<'_> {
    type Target = CollectionIndex;

    fn deref(&self) -> &CollectionIndex {
        self.0.as_ref().expect("read only after the index is built")
    }
}

impl Cms {
    /// Loads the license and builds every collection's index now rather than on the first
    /// request. The composition root calls it when it starts serving.
    ///
    /// From the call on (before the returned future is first polled), [`Cms::indexing`]
    /// reports the progress until the future completes, so that a server that already
    /// listens can answer "not yet" meanwhile.
    ///
    /// A collection that cannot be indexed (its folder resolves outside the site, say)
    /// does not stop the others: it is logged, and its requests answer the error until it
    /// can be built. The first error (the license's, else the first collection's) is
    /// returned after every collection was tried.
    pub(super) fn start(&self) -> impl Future<Output = CoreResult<()>> + '_ {
        self.progress.phase.store(PHASE_INDEXING, Ordering::Release);
        async move {
            // First, so that a server listening meanwhile answers with the right license.
            let license = self.reload_license().await;
            let mut first_error = license.err();
            for collection in &self.collections {
                self.start_from_snapshot(collection).await;
            }
            for lanes in self.lanes_sharing_folders() {
                if let Err(error) = self.index_together(&lanes).await {
                    tracing::error!(collection = lanes[0].slug.as_str(), %error, "cannot index the collection");
                    first_error.get_or_insert(error);
                }
            }
            // The rest, and any lane the shared build left (built already: nothing to do).
            for collection in &self.collections {
                if let Err(error) = self.ensure_indexed(collection).await {
                    tracing::error!(collection = collection.slug.as_str(), %error, "cannot index the collection");
                    first_error.get_or_insert(error);
                }
            }
            self.progress.phase.store(PHASE_DONE, Ordering::Release);
            first_error.map_or(Ok(()), Err)
        }
    }

    /// While [`Cms::start`] runs, how many item files it has indexed; `None` before it was
    /// called and after it is done. One atomic load when it is `None` (every request of a
    /// server asks).
    pub fn indexing(&self) -> Option<Indexing> {
        if self.progress.phase.load(Ordering::Acquire) != PHASE_INDEXING {
            return None;
        }
        Some(Indexing {
            indexed: self.progress.indexed.load(Ordering::Relaxed),
            found: self.progress.found.load(Ordering::Relaxed),
        })
    }

    /// Every file of the collection folders that is not listed (broken frontmatter, not
    /// UTF-8, over a size limit, a name that is not an item's), by collection and filename.
    /// A collection that cannot be indexed is left out (its requests say why).
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn skipped_files(&self) -> Vec<SkippedFile> {
        let mut all = Vec::new();
        for collection in &self.collections {
            let Ok(index) = self.index(collection).await else { continue };
            all.extend(index.skipped().into_iter().map(|(filename, reason)| SkippedFile {
                collection: collection.slug.clone(),
                filename: filename.to_owned(),
                reason: reason.to_owned(),
            }));
        }
        all
    }

    /// The collection's index, built on first use. Reads hold it briefly and never across
    /// an await.
    pub(super) async fn index(&self, collection: &Collection) -> CoreResult<IndexRead<'_>> {
        let cell = &self.indexes[collection.index];
        if super::read(&cell.index).is_none() {
            // Boxed: the build's future is large, and every read would otherwise carry it
            // in its own (a request's future is allocated, at its full size, per request).
            Box::pin(self.ensure_indexed(collection)).await?;
        }
        Ok(IndexRead(super::read(&cell.index)))
    }

    fn index_mut(&self, collection: &Collection) -> RwLockWriteGuard<'_, Option<CollectionIndex>> {
        super::write(&self.indexes[collection.index].index)
    }

    pub(super) async fn ensure_indexed(&self, collection: &Collection) -> CoreResult<()> {
        let cell = &self.indexes[collection.index];
        if super::read(&cell.index).is_some() {
            return Ok(());
        }
        let _building = cell.building.lock().await;
        if super::read(&cell.index).is_some() {
            return Ok(());
        }
        // The folder is listed (on the store's threads or connections) while the snapshot
        // is decoded and built into an index here: both at once.
        let (scan, prebuilt) =
            futures_util::future::join(self.ports.content.scan(collection), self.build_snapshot(collection))
                .await;
        let mut plan = self.plan(collection, scan?, prebuilt);
        self.read_planned(collection, &mut plan).await;
        let built = self.complete(collection, plan);
        self.install(collection, built);
        Ok(())
    }

    /// The collections (each language's, on a site translated by file name) that read the
    /// same folder, in index order; none on a site without languages.
    fn lanes_sharing_folders(&self) -> Vec<Vec<&Collection>> {
        let mut groups = by_folder(&self.collections);
        groups.retain(|group| group.len() > 1);
        groups
    }

    /// Builds the indexes of collections that read the same folder (`lanes`, in index
    /// order) at start-up: the folder is listed once and each file given to the language
    /// that owns it, and their snapshots are decoded side by side, one thread each,
    /// rather than each language listing the whole folder in turn.
    async fn index_together(&self, lanes: &[&Collection]) -> CoreResult<()> {
        // Every lane's build lock, in index order (as any builder of several takes them).
        let mut building = Vec::with_capacity(lanes.len());
        for lane in lanes {
            building.push(self.indexes[lane.index].building.lock().await);
        }
        if lanes.iter().any(|lane| super::read(&self.indexes[lane.index].index).is_some()) {
            return Ok(()); // a request built one meanwhile: each builds on its own
        }
        // The snapshots are decoded (each on every core) and built into indexes while the
        // folder is listed, one after the other: a snapshot's bytes are let go before the
        // next one's are read, so the start holds one at a time (each is as large as a
        // third of its index).
        let prebuilt = async {
            let mut indexes = Vec::with_capacity(lanes.len());
            for lane in lanes {
                indexes.push(self.build_snapshot(lane).await);
            }
            indexes
        };
        let (scan, prebuilt) = futures_util::future::join(self.ports.content.scan(lanes[0]), prebuilt).await;
        let mut parts: Vec<Vec<FileStamp>> = lanes.iter().map(|_| Vec::new()).collect();
        for stamp in scan? {
            let at = lanes.iter().position(|lane| lane.naming.owns(&stamp.name)).unwrap_or(0);
            parts[at].push(stamp);
        }
        // The comparisons and the builds are pure work: each language's on a thread of its
        // own.
        let mut plans: Vec<Plan> = std::thread::scope(|scope| {
            let plans: Vec<_> = lanes
                .iter()
                .zip(parts)
                .zip(prebuilt)
                .map(|((lane, part), index)| scope.spawn(move || self.plan(lane, part, index)))
                .collect();
            plans.into_iter().map(|plan| plan.join().expect("an index comparison panicked")).collect()
        });
        for (lane, plan) in lanes.iter().zip(&mut plans) {
            self.read_planned(lane, plan).await;
        }
        let built: Vec<Built> = std::thread::scope(|scope| {
            let builds: Vec<_> = lanes
                .iter()
                .zip(plans)
                .map(|(lane, plan)| scope.spawn(move || self.complete(lane, plan)))
                .collect();
            builds.into_iter().map(|build| build.join().expect("an index build panicked")).collect()
        });
        for (lane, built) in lanes.iter().zip(built) {
            self.install(lane, built);
        }
        drop(building);
        Ok(())
    }

    /// At a server's start, makes the collection's stored snapshot its index without
    /// listing the folder, when the store says that no file was added to, removed from or
    /// renamed in the folder since the snapshot was saved (its folder stamp is the one the
    /// snapshot recorded). At 1,000,000 items the listing is most of a restart: a stat of
    /// every file. An edit made in place while the server was stopped is found by
    /// [`Cms::check_snapshot_starts`], which compares every file's stamp behind the first
    /// answers. Whether it did; else the start builds the index as usual.
    async fn start_from_snapshot(&self, collection: &Collection) -> bool {
        let cell = &self.indexes[collection.index];
        let _building = cell.building.lock().await;
        if super::read(&cell.index).is_some() {
            return false;
        }
        let Ok(Some(folder)) = self.ports.content.folder_stamp(collection).await else { return false };
        let Some(reader) = self.open_snapshot(collection).await else { return false };
        // A snapshot that cannot be used says why in the usual start, which reads it again.
        let opened = match snapshot::open(reader, &self.snapshot_header(collection)) {
            Ok(opened) if opened.folder.stamp == Some(folder) => opened,
            _ => return false,
        };
        let others = opened.folder.others.clone();
        let decoded = self.decoded(collection, snapshot::decode_entries(opened));
        if decoded.entries.is_empty() {
            return false;
        }
        let mut index = self.build_decoded(collection, decoded);
        index.set_others(others);
        for (name, reason) in index.skipped() {
            report_skipped(collection, name, reason);
        }
        let files = index.file_count();
        self.progress.found.fetch_add(files, Ordering::Relaxed);
        self.progress.indexed.fetch_add(files, Ordering::Relaxed);
        cell.unchecked.store(true, Ordering::Release);
        self.install(collection, Built { index, reused: files, exact: true, recorded_folder: Some(folder) });
        true
    }

    /// Compares every index made from its snapshot alone ([`Self::start_from_snapshot`])
    /// with a listing of its folder, and re-reads the files that differ: edits made in
    /// place while the server was stopped, announced as outside edits. The composition
    /// root calls it once the server answers. Each collection is tried; the first error
    /// is returned, else how many files had changed.
    pub(super) async fn check_snapshot_starts(&self) -> CoreResult<usize> {
        let unchecked: Vec<&Collection> = self
            .collections
            .iter()
            .filter(|collection| self.indexes[collection.index].unchecked.swap(false, Ordering::AcqRel))
            .collect();
        let mut first_error = None;
        let mut changes = 0;
        // Each language's collection of a site translated by file name reads one folder:
        // it is listed once for all of them (at 3 × 100,000 items, a listing is 2-3 s of
        // CPU).
        for lanes in by_folder(unchecked) {
            match self.rescan_together(&lanes).await {
                Ok(changed) => {
                    for (collection, changed) in lanes.iter().zip(changed) {
                        changes += changed;
                        tracing::info!(
                            collection = collection.slug.as_str(),
                            changed,
                            "compared the index snapshot with the folder"
                        );
                    }
                }
                Err(error) => {
                    tracing::warn!(collection = lanes[0].slug.as_str(), %error, "cannot compare the index snapshot with the folder");
                    first_error.get_or_insert(error);
                }
            }
        }
        first_error.map_or(Ok(changes), Err)
    }

    /// The index of the collection's stored snapshot alone, built while the folder is
    /// listed; `None` when it has no snapshot that can be used.
    async fn build_snapshot(&self, collection: &Collection) -> Option<Prebuilt> {
        let (state, decoded) = self.load_snapshot(collection).await;
        if decoded.entries.is_empty() {
            return None;
        }
        let index = self.build_decoded(collection, decoded);
        Some(Prebuilt { index, folder: state.stamp })
    }

    /// The index of a snapshot's entries, in the orders it kept when they still hold.
    fn build_decoded(&self, collection: &Collection, decoded: snapshot::Decoded) -> CollectionIndex {
        let (index, took_orders) = CollectionIndex::build_with_orders(
            decoded.entries,
            self.now_secs(),
            collection.naming.clone(),
            decoded.orders,
        );
        tracing::debug!(collection = collection.slug.as_str(), took_orders, "built the snapshot's index");
        index
    }

    /// What the start does with the collection's listing (`scan`; files that another
    /// language owns are passed over) and the index of its snapshot. The files the snapshot
    /// holds as listed are kept. A few changes since (see [`few_changes`]) are made to the
    /// snapshot's index: the files changed or removed forgotten, the new and changed ones
    /// read into it. More, and a new index is built from what it held and what is read, as
    /// the start without a snapshot does. The caller holds the collection's build lock.
    fn plan(&self, collection: &Collection, scan: Vec<FileStamp>, prebuilt: Option<Prebuilt>) -> Plan {
        let (names, others) = classify(scan, &collection.naming);
        self.progress.found.fetch_add(names.len(), Ordering::Relaxed);
        let Some(Prebuilt { mut index, folder: recorded_folder }) = prebuilt else {
            // An empty folder without a snapshot has none to save either.
            let exact = names.is_empty();
            let names_to_read = to_read(collection, names);
            let recorded_folder = None;
            return Plan::Build(Gathered {
                entries: Vec::new(),
                names_to_read,
                others,
                reused: 0,
                exact,
                recorded_folder,
            });
        };
        let diff = index.compare_listing(names);
        let reused = diff.held_count();
        self.progress.indexed.fetch_add(reused, Ordering::Relaxed);
        // The stored snapshot is exactly this index: nothing to save until it changes.
        let exact = diff.changes() == 0;
        if diff.changes() <= few_changes(index.file_count()) {
            index.forget_unheld(&diff);
            for (name, reason) in index.skipped() {
                report_skipped(collection, name, reason);
            }
            let names_to_read = to_read(collection, diff.to_read);
            let read =
                Gathered { entries: Vec::new(), names_to_read, others, reused, exact, recorded_folder };
            return Plan::Amend { index: Box::new(index), read };
        }
        let entries = index.into_held_entries(&diff);
        for (stamp, held) in &entries {
            if let Err(reason) = held {
                report_skipped(collection, &stamp.name, reason);
            }
        }
        let names_to_read = to_read(collection, diff.to_read);
        Plan::Build(Gathered { entries, names_to_read, others, reused, exact, recorded_folder })
    }

    /// Reads and parses the files a plan has to read.
    async fn read_planned(&self, collection: &Collection, plan: &mut Plan) {
        let gathered = match plan {
            Plan::Amend { read, .. } => read,
            Plan::Build(gathered) => gathered,
        };
        self.read_unsnapshotted(collection, gathered).await;
    }

    /// The index a plan makes once its files are read (pure work: the start completes
    /// several side by side).
    fn complete(&self, collection: &Collection, plan: Plan) -> Built {
        match plan {
            Plan::Amend { mut index, read } => {
                for (stamp, item) in read.entries {
                    index.insert_read(&stamp, item);
                }
                for (name, reason) in index.set_others(read.others) {
                    report_skipped(collection, &name, &reason);
                }
                Built {
                    index: *index,
                    reused: read.reused,
                    exact: read.exact,
                    recorded_folder: read.recorded_folder,
                }
            }
            Plan::Build(gathered) => self.assemble(collection, gathered),
        }
    }

    /// Reads and parses the files the snapshot did not hold, in batches, so that at most two
    /// batches of file contents are in memory at a time: the next batch is being read (on
    /// the store's threads, or its connections) while this one is parsed, so that a cold
    /// disk's waits overlap the parsing.
    async fn read_unsnapshotted(&self, collection: &Collection, gathered: &mut Gathered) {
        let names_to_read = std::mem::take(&mut gathered.names_to_read);
        let read = |batch: &[(FileStamp, ItemFilename)]| {
            let names: Vec<ItemFilename> = batch.iter().map(|(_, n)| n.clone()).collect();
            Box::pin(maybe_done(async move { self.ports.content.read_many(collection, &names).await }))
        };
        let mut batches = names_to_read.chunks(BUILD_BATCH);
        let mut next = batches.next().map(|batch| (batch, read(batch)));
        while let Some((batch, mut reading)) = next.take() {
            reading.as_mut().await;
            let files = reading.as_mut().take_output().expect("a read that has finished");
            next = batches.next().map(|batch| (batch, read(batch)));
            if let Some((_, upcoming)) = next.as_mut() {
                begin(upcoming.as_mut()).await;
            }
            let mut readable = Vec::with_capacity(files.len());
            for ((stamp, name), file) in batch.iter().zip(files) {
                match file {
                    Ok(Some(file)) => readable.push(file),
                    Ok(None) => {} // deleted since the scan
                    Err(error) => {
                        let reason = error.to_string();
                        report_skipped(collection, name.as_str(), &reason);
                        gathered.entries.push((stamp.clone(), Err(reason.into_boxed_str())));
                    }
                }
            }
            let parsed = index_files(readable, collection, &self.zone);
            gathered.entries.extend(parsed.into_iter().map(|(s, p)| (s, held(p))));
            self.progress.indexed.fetch_add(batch.len(), Ordering::Relaxed);
        }
    }

    /// The index of what was gathered (pure work: the start builds several side by side).
    fn assemble(&self, collection: &Collection, gathered: Gathered) -> Built {
        let Gathered { entries, others, reused, exact, recorded_folder, .. } = gathered;
        let mut index = CollectionIndex::build_named(entries, self.now_secs(), collection.naming.clone());
        for (name, reason) in index.set_others(others) {
            report_skipped(collection, &name, &reason);
        }
        Built { index, reused, exact, recorded_folder }
    }

    /// Makes a built index the collection's.
    fn install(&self, collection: &Collection, built: Built) {
        let Built { index, reused, exact, recorded_folder } = built;
        tracing::info!(
            collection = collection.slug.as_str(),
            files = index.file_count(),
            items = index.usable_count(),
            skipped = index.skipped().len(),
            from_snapshot = reused,
            "indexed"
        );
        let cell = &self.indexes[collection.index];
        *super::lock(&cell.snapshotted) =
            exact.then(|| Snapshotted { fingerprint: index.fingerprint(), folder: recorded_folder });
        let mut family = self.family_locks(collection);
        let own = collection.language.as_ref().map_or(0, |language| language.at);
        *family[own] = Some(index);
        self.mark_family(collection, &mut family);
    }

    /// The folder's state and the entries of the collection's stored snapshot in filename
    /// order; empty when there is none or it cannot be used (logged: the start is then a
    /// full parse, nothing more).
    async fn load_snapshot(&self, collection: &Collection) -> (FolderState, snapshot::Decoded) {
        let Some(reader) = self.open_snapshot(collection).await else { return Default::default() };
        match snapshot::open(reader, &self.snapshot_header(collection)) {
            Ok(opened) => {
                let folder = opened.folder.clone();
                let decoded = self.decoded(collection, snapshot::decode_entries(opened));
                if decoded.entries.is_empty() { Default::default() } else { (folder, decoded) }
            }
            Err(reason) => {
                tracing::info!(collection = collection.slug.as_str(), reason, "not using the index snapshot");
                Default::default()
            }
        }
    }

    /// The collection's stored snapshot, if it has one that can be read (else logged).
    async fn open_snapshot(&self, collection: &Collection) -> Option<Box<dyn std::io::Read + Send>> {
        match self.ports.snapshots.open(collection).await {
            Ok(reader) => reader,
            Err(error) => {
                tracing::warn!(collection = collection.slug.as_str(), %error, "cannot read the index snapshot");
                None
            }
        }
    }

    /// A snapshot's decoded entries and orders; none when they do not decode (logged: the
    /// start is then a full parse, nothing more).
    fn decoded(
        &self,
        collection: &Collection,
        decoded: Result<snapshot::Decoded, String>,
    ) -> snapshot::Decoded {
        decoded.unwrap_or_else(|reason| {
            tracing::info!(collection = collection.slug.as_str(), reason, "not using the index snapshot");
            snapshot::Decoded::default()
        })
    }

    fn snapshot_header(&self, collection: &Collection) -> SnapshotHeader {
        SnapshotHeader::new(
            &collection.path,
            self.zone.name(),
            collection.model.as_deref(),
            collection.slugs(),
        )
    }

    /// Saves the snapshot of every built index that changed since its last one, so that
    /// the next start reads it instead of parsing every item. The composition root calls it
    /// after start-up, now and then, and when stopping. Returns how many were saved.
    pub(super) async fn save_snapshots(&self) -> CoreResult<usize> {
        let mut saved = 0;
        for collection in &self.collections {
            let cell = &self.indexes[collection.index];
            // Taken before the entries: a file added after this moves the folder's stamp
            // again, and the next start lists the folder rather than trust this snapshot.
            let folder = match self.ports.content.folder_stamp(collection).await {
                Ok(stamp) => stamp,
                Err(error) => {
                    tracing::debug!(collection = collection.slug.as_str(), %error, "no folder stamp");
                    None
                }
            };
            let (now, state, (entries, orders)) = match super::read(&cell.index).as_ref() {
                Some(index) => {
                    let now = Snapshotted { fingerprint: index.fingerprint(), folder };
                    let stored = *super::lock(&cell.snapshotted);
                    // An empty index's folder stamp is of no use: a start lists an empty
                    // folder rather than read a snapshot of nothing.
                    let folder_matters = index.file_count() > 0;
                    if stored == Some(now)
                        || (!folder_matters && stored.map(|s| s.fingerprint) == Some(now.fingerprint))
                    {
                        continue;
                    }
                    (now, FolderState { stamp: folder, others: index.others() }, index.entries_and_orders())
                }
                None => continue,
            };
            let parts = snapshot::encode_parts(&self.snapshot_header(collection), &state, entries, orders);
            self.ports.snapshots.save_parts(collection, Box::new(parts)).await?;
            *super::lock(&cell.snapshotted) = Some(now);
            saved += 1;
        }
        Ok(saved + self.save_search_snapshots().await?)
    }

    /// Records a file the facade wrote or a change report found, so the next request sees
    /// it.
    pub(super) fn index_written(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        file: &StoredFile,
        why: Why,
    ) {
        let parsed = IndexedItem::from_file_with_text(name, file, reading(&self.zone, collection));
        match parsed {
            Ok((item, text)) => {
                self.index_item(collection, name, file, Ok(item), SearchTerms::Text(text.into()), why)
            }
            Err(reason) => {
                report_skipped(collection, name.as_str(), &reason);
                self.index_item(collection, name, file, Err(reason), SearchTerms::None, why)
            }
        }
    }

    /// [`Self::index_written`] for a file the server has just encoded from `doc`.
    pub(super) fn index_encoded(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        file: &StoredFile,
        doc: &ItemDocument,
        why: Why,
    ) {
        let (item, text) =
            IndexedItem::from_document_with_text(name, doc, file, reading(&self.zone, collection));
        self.index_item(collection, name, file, Ok(item), SearchTerms::Text(text.into()), why);
    }

    /// [`Self::index_encoded`] for a rewrite of an item that kept the body of the file it
    /// read (`kept`, e.g. a `PATCH` of frontmatter alone): when the index still holds that
    /// file, and the title and tags are unchanged too, neither the index nor the search
    /// index renders the Markdown again (about a quarter of a write's own CPU time).
    pub(super) fn index_rewritten(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        file: &StoredFile,
        doc: &ItemDocument,
        kept: Option<KeptBody>,
        why: Why,
    ) {
        match kept.and_then(|kept| self.with_kept_body(collection, name, file, doc, &kept)) {
            Some(item) => {
                let terms = SearchTerms::Unchanged(doc.body.as_str().into());
                self.index_item(collection, name, file, Ok(item), terms, why)
            }
            None => self.index_encoded(collection, name, file, doc, why),
        }
    }

    /// The new version's item made with what the index holds of the body, when its search
    /// terms (title, tags, body) are those of the version it replaces.
    fn with_kept_body(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        file: &StoredFile,
        doc: &ItemDocument,
        kept: &KeptBody,
    ) -> Option<IndexedItem> {
        let previous = {
            let index = super::read(&self.indexes[collection.index].index);
            Arc::clone(index.as_ref()?.get(name.as_str()).and_then(Result::ok)?)
        };
        if previous.content != kept.read {
            return None;
        }
        let item = IndexedItem::with_body_of(
            name,
            doc,
            file,
            reading(&self.zone, collection),
            &previous,
            kept.wrote_excerpt,
        )?;
        (item.meta.title == previous.meta.title && item.meta.tags == previous.meta.tags).then_some(item)
    }

    fn index_item(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        file: &StoredFile,
        item: Parsed,
        terms: SearchTerms,
        why: Why,
    ) {
        self.change_entry(collection, name, Some((file.stamp.clone(), item)), terms, why);
    }

    pub(super) fn index_removed(&self, collection: &Collection, name: &ItemFilename, why: Why) {
        self.change_entry(collection, name, None, SearchTerms::None, why);
    }

    /// The one place an item file's entry in the kept index changes: sets it to `next`
    /// (`None`: the file is gone) and records the [`Change`] on the log, which hands it to
    /// the search index and the other subscribers (see `crate::changes`). Nothing is
    /// recorded for a found change that changed nothing.
    fn change_entry(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        next: Option<(FileStamp, Parsed)>,
        terms: SearchTerms,
        why: Why,
    ) {
        let at = self.now();
        let sooner = self.change_log.record(|| {
            // The whole family's locks on a site with languages: the marks of the items
            // linked to this one change with it (see `translation_marks`).
            let mut family = self.family_locks(collection);
            let own = collection.language.as_ref().map_or(0, |language| language.at);
            let (before, after, sooner) = match family[own].as_mut() {
                Some(index) => {
                    let before = known(index, name.as_str());
                    let previous_instant = index.next_instant();
                    let applied = match next {
                        Some((stamp, item)) => index.upsert(name, stamp, item),
                        None => index.remove(name.as_str()),
                    };
                    if applied == Applied::Unchanged && why.kind.is_none() {
                        return (Vec::new(), false);
                    }
                    let sooner = index
                        .next_instant()
                        .is_some_and(|at| previous_instant.is_none_or(|before| at < before));
                    let after = known(index, name.as_str());
                    let versions =
                        [&before, &after].map(|known| known.as_ref().and_then(Known::item).map(|i| &**i));
                    self.remark_linked(collection, &mut family, name.as_str(), versions);
                    (before, after, sooner)
                }
                // Not built yet: its build reads the file as it is now.
                None => (None, None, false),
            };
            drop(family);
            if why.kind.is_none() && shows_the_same(before.as_ref(), after.as_ref()) {
                // Found again as it was (a sync tool that rewrote a file with the same
                // bytes and time): the index took the new stamp; nothing to say.
                return (Vec::new(), sooner);
            }
            let Some(kind) = why.kind.or_else(|| ChangeKind::between(before.is_some(), after.is_some()))
            else {
                return (Vec::new(), sooner);
            };
            let filename = match (&after, &before) {
                (Some(Known::Item { item, .. }), _) | (_, Some(Known::Item { item, .. })) => {
                    Arc::clone(&item.meta.filename)
                }
                _ => name.as_str().into(),
            };
            let change = Change {
                sequence: 0,
                at,
                collection: collection.index,
                filename,
                kind,
                before,
                after,
                cause: why.cause,
                terms,
            };
            (vec![change], sooner)
        });
        if sooner {
            self.wake_schedule();
        }
    }

    /// Applies one batch of changes reported by the store. Each file is re-read only when
    /// its stamp differs from the indexed one, under the item's write lock, so a change
    /// report never overwrites a newer API write.
    pub(super) async fn apply_changes(&self, batch: Vec<StorageChange>) -> CoreResult<()> {
        for change in batch {
            match change {
                StorageChange::Items { collection, names, origin } => {
                    let Some(collection) = self.collections.get(collection) else { continue };
                    let names: Vec<ItemFilename> =
                        names.iter().filter_map(|n| collection.naming.parse(n)).collect();
                    for name in self.changed_files(collection, names).await? {
                        self.refresh_file(collection, &name, origin).await?;
                    }
                }
                StorageChange::Rescan { collection } => {
                    if let Some(collection) = self.collections.get(collection) {
                        self.rescan(collection).await?;
                    }
                }
                StorageChange::License => self.reload_license().await?,
            }
        }
        Ok(())
    }

    /// The reported files whose stamp differs from the indexed one (or that could not be
    /// checked), from one batch of stats and without the items' locks: a file found as
    /// indexed needs nothing now, and a change after the stat is reported again. Most
    /// reports on a busy server are of its own writes.
    async fn changed_files(
        &self,
        collection: &Collection,
        names: Vec<ItemFilename>,
    ) -> CoreResult<Vec<ItemFilename>> {
        let stamps = self.ports.content.stat_many(collection, &names).await;
        let index = self.index(collection).await?;
        Ok(names
            .into_iter()
            .zip(stamps)
            .filter(|(_, stamp)| !matches!(stamp, Ok(Some(now)) if index.holds(now)))
            .map(|(name, _)| name)
            .collect())
    }

    /// Compares a collection with a fresh scan and re-reads what differs; how many files
    /// differed.
    pub(super) async fn rescan(&self, collection: &Collection) -> CoreResult<usize> {
        Ok(self.rescan_together(&[collection]).await?.into_iter().sum())
    }

    /// [`Self::rescan`] of collections that read one folder (see [`by_folder`]), listed
    /// once and each given its own files; how many files differed in each.
    async fn rescan_together(&self, lanes: &[&Collection]) -> CoreResult<Vec<usize>> {
        for lane in lanes {
            self.ensure_indexed(lane).await?;
        }
        let mut parts: Vec<Vec<FileStamp>> = lanes.iter().map(|_| Vec::new()).collect();
        for stamp in self.ports.content.scan(lanes[0]).await? {
            let at = lanes.iter().position(|lane| lane.naming.owns(&stamp.name)).unwrap_or(0);
            parts[at].push(stamp);
        }
        let mut changed = Vec::with_capacity(lanes.len());
        for (lane, part) in lanes.iter().zip(parts) {
            changed.push(self.rescan_listed(lane, part).await?);
        }
        Ok(changed)
    }

    /// Compares a collection with `listing` (its folder's files that it owns) and re-reads
    /// what differs; how many files differed.
    async fn rescan_listed(&self, collection: &Collection, listing: Vec<FileStamp>) -> CoreResult<usize> {
        // This language's item files, and the files that are not items; another language's
        // files (translations by file name share the folder) are neither.
        let (items, others) = classify(listing, &collection.naming);
        let fresh = self.index_mut(collection).as_mut().map(|index| index.set_others(others));
        for (name, reason) in fresh.unwrap_or_default() {
            report_skipped(collection, &name, &reason);
        }
        let mut stale: Vec<String> = {
            let index = self.index(collection).await?;
            let scanned: std::collections::HashSet<&str> = items.iter().map(|s| s.name.as_str()).collect();
            let gone = index.names().filter(|name| !scanned.contains(name)).map(str::to_owned);
            let changed = items.iter().filter(|s| !index.holds(s)).map(|s| s.name.clone());
            gone.chain(changed).collect()
        };
        stale.sort();
        stale.dedup();
        for name in stale.iter().filter_map(|n| collection.naming.parse(n)) {
            // A rescan cannot tell who wrote what it finds: an outside edit, or a node's
            // write whose journal entry this node missed. Both are outside edits here,
            // which a store shared by several servers does not announce.
            self.refresh_file(collection, &name, ChangeOrigin::Outside).await?;
        }
        Ok(stale.len())
    }

    /// Rescans every collection and reloads the license: what a store without a change
    /// feed gets, periodically.
    /// Each folder is listed once (each language's collection of a site translated by
    /// file name reads the same one). One folder's failure does not keep the others (or
    /// the license) stale: every one is tried, and the first error is returned.
    pub(super) async fn rescan_all(&self) -> CoreResult<()> {
        let mut first_error = None;
        for lanes in by_folder(&self.collections) {
            if let Err(error) = self.rescan_together(&lanes).await {
                first_error.get_or_insert(error);
            }
        }
        if let Err(error) = self.reload_license().await {
            first_error.get_or_insert(error);
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Subscribes to the store's change reports for this site's collections; `None` when
    /// the store has no feed (then call [`Cms::rescan_all`] periodically).
    pub(super) fn subscribe(&self) -> CoreResult<Option<Box<dyn ChangeFeed>>> {
        self.ports.changes.subscribe(&self.collections)
    }

    /// Follows a change feed until it ends, applying each batch. Errors are logged and the
    /// next batch still applies; a batch that fails is retried as a rescan.
    pub(super) async fn follow_changes(&self, mut feed: Box<dyn ChangeFeed>) {
        while let Some(batch) = feed.next_batch().await {
            if let Err(error) = self.apply_changes(batch).await {
                tracing::warn!(%error, "applying storage changes failed; rescanning");
                if let Err(error) = self.rescan_all().await {
                    tracing::error!(%error, "rescan after a failed change failed");
                }
            }
            self.event_log.publish_pending().await;
        }
        tracing::warn!("the storage change feed ended");
    }

    async fn refresh_file(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        origin: ChangeOrigin,
    ) -> CoreResult<()> {
        let _guard = self.item_locks.lock(collection.index, name.slug()).await;
        let indexed: Option<FileStamp> = self.index(collection).await?.stamp(name.as_str());
        let current = self.ports.content.stat(collection, name).await?;
        if current.is_some() && current == indexed {
            return Ok(());
        }
        match self.ports.content.read(collection, name).await {
            Ok(Some(file)) => self.index_written(collection, name, &file, Why::found(origin)),
            Ok(None) => {
                self.index_removed(collection, name, Why::found(origin));
                // Deleted behind the facade's back: its links end as for a delete here.
                if indexed.is_some() {
                    self.end_preview_links(collection, name.slug()).await;
                }
            }
            Err(error) => {
                // Unreadable (too large, no permission): known, but not listed.
                let reason = error.to_string();
                report_skipped(collection, name.as_str(), &reason);
                let next = current.map(|stamp| (stamp, Err(reason)));
                self.change_entry(collection, name, next, SearchTerms::None, Why::found(origin));
            }
        }
        Ok(())
    }
}

/// Whether an item shows the same before and after a found change: the same item (meta,
/// content, kept fields) and the same visibility. A new `modified` time is a change (lists
/// show it and sort by it).
fn shows_the_same(before: Option<&Known>, after: Option<&Known>) -> bool {
    match (before, after) {
        (Some(Known::Item { item: a, live: a_live }), Some(Known::Item { item: b, live: b_live })) => {
            a_live == b_live && **a == **b
        }
        _ => false,
    }
}

/// An item file as the index holds it now.
fn known(index: &CollectionIndex, name: &str) -> Option<Known> {
    Some(match index.get(name)? {
        Ok(item) => Known::Item { item: Arc::clone(item), live: index.is_live(item) },
        Err(_) => Known::Unusable,
    })
}

/// Files read and parsed together while building an index.
const BUILD_BATCH: usize = 2048;

/// A file whose name is not an item's, and why.
type OtherFile = (String, String);

/// `collections` in the groups that read one folder, in index order: each language's
/// collection of a site translated by file name shares its folder with the others; every
/// other collection is alone.
fn by_folder<'a>(collections: impl IntoIterator<Item = &'a Collection>) -> Vec<Vec<&'a Collection>> {
    let mut groups: Vec<Vec<&Collection>> = Vec::new();
    for collection in collections {
        let shared = |group: &&mut Vec<&Collection>| {
            collection.language.is_some() && group[0].language.is_some() && group[0].path == collection.path
        };
        match groups.iter_mut().find(shared) {
            Some(group) => group.push(collection),
            None => groups.push(vec![collection]),
        }
    }
    groups
}

/// Splits a scan into item files (checked without making their `ItemFilename`s, which a
/// start from a snapshot does not need) and the other files, each with why it is not an
/// item (another language's files, in a folder that translations by file name share, are
/// neither: that language's collection has them).
fn classify(scan: Vec<FileStamp>, naming: &Naming) -> (Vec<FileStamp>, Vec<OtherFile>) {
    let mut items = Vec::with_capacity(scan.len());
    let mut others = Vec::new();
    for stamp in scan {
        // The usual case first: an item of this language (`file_slug` checks both).
        if naming.file_slug(&stamp.name).is_some() {
            items.push(stamp);
            continue;
        }
        if !naming.owns(&stamp.name) {
            continue;
        }
        match naming.classify(&stamp.name) {
            Ok(_) => items.push(stamp),
            Err(reason) => others.push((stamp.name, reason)),
        }
    }
    (items, others)
}

/// The names of listed item files, to be read.
fn to_read(collection: &Collection, listed: Vec<FileStamp>) -> Vec<(FileStamp, ItemFilename)> {
    listed
        .into_iter()
        .map(|stamp| {
            let name = collection.naming.parse(&stamp.name).expect("classified as an item");
            (stamp, name)
        })
        .collect()
}

/// How many changes since its snapshot a start makes to the snapshot's index, one by one,
/// rather than building the index again: each costs a shift of every order's ids (a few
/// MB at 1,000,000 items), a build about 3 µs per item.
fn few_changes(files: usize) -> usize {
    (files / 1000).max(64)
}

/// What the start does with a collection (see [`Cms::plan`]).
enum Plan {
    /// The snapshot's index, with the files to read into it (`read.entries` once read).
    Amend { index: Box<CollectionIndex>, read: Gathered },
    /// A build of what was gathered: the snapshot's entries still held, and the files read.
    Build(Gathered),
}

/// A collection's files as the start found them: the snapshot's entries for the files it
/// holds as they are, the files to read, and the folder's other files.
struct Gathered {
    entries: Vec<(FileStamp, Held)>,
    names_to_read: Vec<(FileStamp, ItemFilename)>,
    others: Vec<OtherFile>,
    /// Entries taken from the snapshot, and whether it held exactly the folder's files.
    reused: usize,
    exact: bool,
    /// The folder stamp the snapshot recorded (`None` without one).
    recorded_folder: Option<u64>,
}

/// A built index before it is the collection's.
struct Built {
    index: CollectionIndex,
    reused: usize,
    exact: bool,
    /// The folder stamp the snapshot it was made from recorded.
    recorded_folder: Option<u64>,
}

/// A snapshot's index, built while the folder is listed, and the folder stamp the
/// snapshot recorded.
struct Prebuilt {
    index: CollectionIndex,
    folder: Option<u64>,
}

/// Says once, in the log, that a file of a collection is not listed and why.
fn report_skipped(collection: &Collection, filename: &str, reason: &str) {
    tracing::warn!(collection = collection.slug.as_str(), filename, reason, "skipping a file");
}

/// How `collection`'s files are read (see [`Reading`]).
pub(super) fn reading<'a>(zone: &'a SiteZone, collection: &'a Collection) -> Reading<'a> {
    Reading { zone, model: collection.model.as_deref(), slugs: collection.slugs() }
}

/// Parses one file for the index, logging why it is skipped if it cannot be used.
fn index_one(collection: &Collection, name: &ItemFilename, file: &StoredFile, zone: &SiteZone) -> Parsed {
    IndexedItem::from_file(name, file, reading(zone, collection))
        .inspect_err(|reason| report_skipped(collection, name.as_str(), reason))
}

/// Polls `future` once, so that the work it hands to other threads or connections (a
/// store's reads) begins before the caller blocks this thread on other work. Its output,
/// if it is already done, stays in the [`MaybeDone`].
async fn begin<F: Future>(mut future: Pin<&mut MaybeDone<F>>) {
    std::future::poll_fn(|cx| {
        let _ = future.as_mut().poll(cx);
        Poll::Ready(())
    })
    .await;
}

/// Parses a collection's files on every core: parsing YAML and Markdown is the cost of a
/// start-up, and it is pure CPU work.
fn index_files(files: Vec<StoredFile>, collection: &Collection, zone: &SiteZone) -> Vec<(FileStamp, Parsed)> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 16);
    let chunk = files.len().div_ceil(threads).max(256);
    let parse = |files: &[StoredFile]| -> Vec<(FileStamp, Parsed)> {
        files
            .iter()
            .filter_map(|file| {
                let name = collection.naming.parse(&file.stamp.name)?;
                Some((file.stamp.clone(), index_one(collection, &name, file, zone)))
            })
            .collect()
    };
    if files.len() <= chunk {
        return parse(&files);
    }
    std::thread::scope(|scope| {
        let workers: Vec<_> = files.chunks(chunk).map(|part| scope.spawn(move || parse(part))).collect();
        workers.into_iter().flat_map(|w| w.join().expect("an index worker panicked")).collect()
    })
}
