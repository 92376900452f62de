use super::item::plain_excerpt_of;
use super::orders::{NEWEST_RUN_LIMIT, ORDERS, Selection, compare};
use super::*;
use crate::dates::SiteZone;
use crate::document::ItemDocument;
use crate::ports::StoredFile;
use crate::query::ListParams;
use crate::query::{Direction, ListQuery, StatusFilter};

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
    file_read(name, token, fm, Reading::plain(&SiteZone::utc()))
}

/// [`file`] read as `reading` says (with a model, say).
fn file_read(name: &str, token: u64, fm: &str, reading: Reading<'_>) -> (ItemFilename, FileStamp, Parsed) {
    let name = ItemFilename::parse(name).unwrap();
    let bytes = format!("---\n{fm}\n---\nbody\n").into_bytes();
    let stamp = FileStamp {
        name: name.as_str().into(),
        size: bytes.len() as u64,
        modified: token as i64,
        change_token: token,
    };
    let item = IndexedItem::from_file(&name, &StoredFile { bytes, stamp: stamp.clone() }, reading);
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
    let (from_doc, doc_text) =
        IndexedItem::from_document_with_text(&name, &doc, &file, Reading::plain(&zone));
    let (from_bytes, bytes_text) =
        IndexedItem::from_file_with_text(&name, &file, Reading::plain(&zone)).unwrap();
    assert_eq!(from_doc, from_bytes);
    assert_eq!(doc_text, bytes_text);
}

#[test]
fn a_new_version_with_the_same_body_is_the_item_made_from_scratch() {
    let name = ItemFilename::parse("2024-05-01-hello.md").unwrap();
    let zone = SiteZone::utc();
    let version = |fm: &str| {
        let text = format!("---\n{fm}\n---\n# Hi\n\nSome *body* text, <b>bold</b>.\n");
        let stamp =
            FileStamp { name: name.as_str().into(), size: text.len() as u64, modified: 7, change_token: 7 };
        let file = StoredFile { bytes: text.into_bytes(), stamp };
        let doc = ItemDocument::parse(std::str::from_utf8(&file.bytes).unwrap()).unwrap();
        let (item, _) = IndexedItem::from_document_with_text(&name, &doc, &file, Reading::plain(&zone));
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
        let kept = IndexedItem::with_body_of(&name, &doc, &file, Reading::plain(&zone), &previous, wrote);
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
fn reference(index: &CollectionIndex, q: &ListQuery, page: usize, per_page: usize) -> (Vec<String>, usize) {
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
    assert_eq!(index.other_names.len(NameMap::Slug), 0);
}

/// The maps of other names are keyed by a hash: names that share one are told apart by
/// the names the files carry (here every name has the same key).
#[test]
fn names_with_the_same_key_are_told_apart() {
    let mut index = CollectionIndex::default();
    index.other_names.collide = true;
    let names =
        [("y.md", "title: Y"), ("2024-02-01-x.md", "title: X\nslug: ex"), ("x.md", "title: X"), ("z.md", "")];
    for (token, (name, fm)) in names.into_iter().enumerate() {
        let (name, stamp, item) = file(name, token as u64, fm);
        index.upsert(&name, stamp, item);
    }
    let located = |index: &CollectionIndex, slug: &str| {
        let slug_ref = ItemRef::parse(slug).unwrap();
        let name = index.locate(&slug_ref).map(|name| name.as_str().to_owned());
        let found = index.find(&slug_ref).map(|item| item.map(|item| item.meta.filename.to_string()));
        assert_eq!(found, name.clone().map(Ok), "{slug}");
        assert_eq!(index.file_with_slug(slug).map(|name| name.as_str().to_owned()), name, "{slug}");
        name
    };
    for (slug, file) in [("x", "2024-02-01-x.md"), ("y", "y.md"), ("z", "z.md"), ("w", "")] {
        assert_eq!(located(&index, slug).unwrap_or_default(), file, "{slug}");
    }
    assert_eq!(index.other_names.len(NameMap::Slug), 4, "every file's slug");
    index.remove("2024-02-01-x.md");
    assert_eq!(located(&index, "x").as_deref(), Some("x.md"));
    assert_eq!(located(&index, "ex"), None, "its own slug went with it");
    for name in ["x.md", "y.md", "z.md"] {
        index.remove(name);
    }
    assert_eq!(index.other_names.len(NameMap::Slug), 0);
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
    let (name, stamp, item) = file("2024-01-05-post-4.md", 100, "title: Zed\nstatus: published\ntags: [t2]");
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
    assert_eq!(index.locate(&ItemRef::parse("post-4").unwrap()).unwrap().as_str(), "2024-01-05-post-4.md");
    assert!(index.locate(&ItemRef::parse("post-7").unwrap()).is_none());
    assert!(index.find(&ItemRef::parse("post-7").unwrap()).is_none());
    assert_eq!(index.find(&ItemRef::parse("post-9").unwrap()), Some(Err("broken")), "known, unusable");
    let by_file = index.find(&ItemRef::parse("2024-01-05-post-4.md").unwrap());
    assert_eq!(by_file.and_then(Result::ok).map(|item| &*item.meta.slug), Some("post-4"));
}

use crate::testing::Rng;

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
///
/// `marked`: the files each of two marks ([`Mark`]) was given, as a marker outside the
/// index decided them; the fresh index is given them in one walk ([`CollectionIndex::marked_by`]).
fn assert_same_as_fresh(
    index: &CollectionIndex,
    files: &HashMap<String, (FileStamp, Held)>,
    marked: &[std::collections::BTreeSet<String>; 2],
    step: usize,
) {
    let mut fresh = CollectionIndex::build(files.values().cloned().collect(), index.now());
    let made = fresh.marked_by(2, |item, answers| {
        for (answer, names) in answers.iter_mut().zip(marked) {
            *answer = names.contains(&*item.meta.filename);
        }
    });
    for (mark, items) in made.into_iter().enumerate() {
        fresh.set_marked(Mark(mark as u32), items);
    }
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
        assert_eq!(named(index, &index.sorted_all[k]), named(&fresh, &fresh.sorted_all[k]), "step {step}");
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
    let mut marks: Vec<_> = index.by_mark.keys().copied().collect();
    marks.sort();
    let mut fresh_marks: Vec<_> = fresh.by_mark.keys().copied().collect();
    fresh_marks.sort();
    assert_eq!(marks, fresh_marks, "step {step}: no empty mark is left");
    for (mark, lists) in &fresh.by_mark {
        let kept = &index.by_mark[mark];
        assert_eq!(named(index, &kept.all), named(&fresh, &lists.all), "step {step}: {mark:?}");
        assert_eq!(named(index, &kept.published), named(&fresh, &lists.published), "step {step}: {mark:?}");
    }
    for (name, (stamp, held)) in files {
        for (at, names) in marked.iter().enumerate() {
            let marked = names.contains(name) && held.is_ok();
            assert_eq!(index.is_marked(name, Mark(at as u32)), marked, "step {step}: {name}");
        }
        assert_eq!(index.stamp(name).as_ref(), Some(stamp), "step {step}");
        assert!(index.holds(stamp), "step {step}");
        assert_eq!(index.get(name), held.as_ref().map_err(|r| &**r).into(), "step {step}: {name}");
        let slug = ItemFilename::parse(name).unwrap().slug().to_owned();
        assert_eq!(index.file_with_slug(&slug), fresh.file_with_slug(&slug), "step {step}: {slug}");
    }
    // One copy of each filename, shared by the slot and its item; `by_name` files every
    // slot, under its name.
    assert_eq!(index.by_name.len(), index.slots.iter().flatten().count(), "step {step}");
    for id in index.by_name.ids() {
        let slot = index.slot(id);
        assert_eq!(index.id_of(&slot.name), Some(id), "step {step}");
        if let Ok(item) = &slot.item {
            assert!(Arc::ptr_eq(&item.meta.filename, &slot.name), "step {step}: {}", slot.name);
        }
    }
    if step % 15 != 14 {
        return;
    }
    for order in ["date_published", "title", "slug", "modified"] {
        for direction in ["asc", "desc"] {
            for status in ["published", "draft", "scheduled", "all"] {
                for tags in ["", "a", "b", "c-d", "a,b"] {
                    let mut pairs = vec![("orderBy", order), ("direction", direction), ("status", status)];
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
                    // The marked items alone: from the marks' lists, as a filter of the full sort.
                    for (at, names_marked) in marked.iter().enumerate() {
                        let got = names(index.select_where(&q, 1, 50, Some(Mark(at as u32))));
                        let (all, _) = reference(index, &q, 1, usize::MAX);
                        let wanted: Vec<String> =
                            all.into_iter().filter(|name| names_marked.contains(name)).collect();
                        let total = wanted.len();
                        assert_eq!(
                            got,
                            (wanted.into_iter().take(50).collect(), total),
                            "step {step}: {pairs:?}"
                        );
                    }
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
    let mut files: HashMap<String, (FileStamp, Held)> = HashMap::default();
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
    // What two marks mark: a mark stays with an item through its new versions and the
    // clock, and leaves with it (a marker decides a new file's marks itself).
    let mut marked: [std::collections::BTreeSet<String>; 2] = Default::default();
    // 300 steps: every 15th (and the last) checks every list query too.
    for step in 0..300 {
        let name = rng.pick(&names);
        let token = 100 + step as u64;
        match rng.below(24) {
            0 => {
                index.remove(name);
                files.remove(name);
                marked.iter_mut().for_each(|names| {
                    names.remove(name);
                });
            }
            1 => {
                let (name, stamp, _) = file(name, token, "");
                index.upsert(&name, stamp.clone(), Err("broken".to_owned()));
                files.insert(name.as_str().to_owned(), (stamp, Err(Box::from("broken"))));
                marked.iter_mut().for_each(|names| {
                    names.remove(name.as_str());
                });
            }
            20..24 => {
                let (at, on) = (rng.below(2), rng.below(3) > 0);
                index.set_mark(name, Mark(at as u32), on);
                if on && matches!(files.get(name), Some((_, Ok(_)))) {
                    marked[at].insert(name.to_owned());
                } else {
                    marked[at].remove(name);
                }
            }
            2 => {
                now += [0, 3_600, 43_200, 86_400][rng.below(4)];
                index.advance(now);
            }
            _ => {
                let (name, stamp, item) = write(&mut rng, name, token);
                let before = index.id_of(name.as_str());
                let was_usable = matches!(index.get(name.as_str()), Some(Ok(_)));
                let usable = item.is_ok();
                assert_eq!(index.upsert(&name, stamp.clone(), item.clone()), Applied::Updated);
                if was_usable && usable {
                    assert_eq!(index.id_of(name.as_str()), before, "the slot is kept");
                    in_place += 1;
                } else {
                    marked.iter_mut().for_each(|names| {
                        names.remove(name.as_str());
                    });
                }
                files.insert(name.as_str().to_owned(), (stamp, held(item)));
            }
        }
        assert_same_as_fresh(&index, &files, &marked, step);
    }
    assert!(marked.iter().all(|names| !names.is_empty()), "some items stayed marked");
    assert!(in_place > 120, "the in-place path ran {in_place} times");
}

/// A listing looked up on several threads (more than 8,192 files) finds what one thread
/// finds: the files held as listed, and the new and changed ones to read.
#[test]
fn a_large_listing_compares_as_a_small_one_does() {
    let files: Vec<(ItemFilename, FileStamp, Parsed)> =
        (0..9000).map(|i| file(&format!("p{i:05}.md"), 1, &format!("title: P{i}"))).collect();
    let index =
        CollectionIndex::build(files.iter().map(|(_, s, p)| (s.clone(), held(p.clone()))).collect(), 0);
    let mut listed: Vec<FileStamp> = files.iter().map(|(_, stamp, _)| stamp.clone()).collect();
    listed[10].change_token = 2; // changed
    listed[8999].size += 1; // changed
    listed.remove(4500); // removed
    listed.push(file("new.md", 1, "title: New").1); // added
    let diff = index.compare_listing(listed);
    let to_read: Vec<&str> = diff.to_read.iter().map(|stamp| stamp.name.as_str()).collect();
    assert_eq!(to_read, ["p00010.md", "p08999.md", "new.md"]);
    assert_eq!(diff.held_count(), 8997);
    assert_eq!(diff.changes(), 3 + 3, "three to read, three held no more");
    let kept = index.into_held_entries(&diff);
    assert_eq!(kept.len(), 8997);
    assert!(
        !kept.iter().any(|(stamp, _)| ["p00010.md", "p04500.md", "p08999.md"].contains(&stamp.name.as_str()))
    );
}

/// An index built at once from enough files to be added up on two threads (64 in tests)
/// equals one made file by file (the same lists, tags, schedule, fingerprint and lookups).
#[test]
fn a_large_build_side_by_side_equals_one_made_file_by_file() {
    let now = 1_717_977_600;
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut index = CollectionIndex::build(Vec::new(), now);
    let mut files: HashMap<String, (FileStamp, Held)> = HashMap::default();
    for i in 0..500 {
        let name = if i % 5 == 0 { format!("2024-01-{:02}-p{i}.md", 1 + i % 28) } else { format!("p{i}.md") };
        let (name, stamp, item) = file(&name, i as u64, &random_frontmatter(&mut rng));
        index.upsert(&name, stamp.clone(), item.clone());
        files.insert(name.as_str().to_owned(), (stamp, held(item)));
    }
    assert_same_as_fresh(&index, &files, &Default::default(), 0);
}

/// A snapshot keeps the index's orders as places in its entries (in filename order): an
/// index built from them with those orders takes them without sorting, and equals a fresh
/// build, also for an index whose ids no longer ascend with filenames (files added one by
/// one, some removed). Orders that are not every usable item ascending are sorted again.
#[test]
fn kept_orders_are_taken_when_they_hold_and_sorted_again_when_not() {
    let now = 1_717_977_600;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut index = CollectionIndex::build(Vec::new(), now);
    let mut files: HashMap<String, (FileStamp, Held)> = HashMap::default();
    for i in (0..300).rev() {
        let (name, stamp, item) = file(&format!("p{i:03}.md"), i as u64, &random_frontmatter(&mut rng));
        index.upsert(&name, stamp.clone(), item.clone());
        files.insert(name.as_str().to_owned(), (stamp, held(item)));
    }
    for i in (0..300).step_by(7) {
        let name = format!("p{i:03}.md");
        index.remove(&name);
        files.remove(&name);
    }
    let (entries, orders) = index.entries_and_orders();
    let names: Vec<&str> = entries.iter().map(|(stamp, _)| stamp.name.as_str()).collect();
    assert!(names.is_sorted(), "entries in filename order");

    let (rebuilt, took) =
        CollectionIndex::build_with_orders(entries.clone(), now, Naming::default(), Some(orders.clone()));
    assert!(took, "the kept orders hold");
    assert_same_as_fresh(&rebuilt, &files, &Default::default(), 0);

    let mut swapped = orders.clone();
    swapped[1].swap(3, 4);
    let mut short = orders.clone();
    short[0].pop();
    let mut beyond = orders.clone();
    beyond[2][0] = entries.len() as Id;
    let mut twice = orders.clone();
    twice[3][1] = twice[3][0];
    for (case, bad) in
        [("swapped", swapped), ("short", short), ("beyond", beyond), ("twice", twice), ("none", Vec::new())]
    {
        let (rebuilt, took) =
            CollectionIndex::build_with_orders(entries.clone(), now, Naming::default(), Some(bad));
        assert!(!took, "{case}");
        assert_same_as_fresh(&rebuilt, &files, &Default::default(), 1);
    }
}

/// A marked item keeps its mark as it changes and as the clock moves, and a list of the
/// marked items follows its date and its visibility.
#[test]
fn a_mark_follows_its_item_through_new_versions_and_the_clock() {
    let now = 1_717_977_600; // 2024-06-10 UTC
    let (_, a_stamp, a) = file("a.md", 1, "title: A\ndate: 2024-01-01\nstatus: published");
    let (_, b_stamp, b) =
        file("b.md", 2, "title: B\ndate: 2024-02-01\nstatus: published\npublish_date: '2024-06-11'");
    let (_, c_stamp, c) = file("c.md", 3, "title: C\ndate: 2024-03-01\nstatus: published");
    let mut index =
        CollectionIndex::build(vec![(a_stamp, held(a)), (b_stamp, held(b)), (c_stamp, held(c))], now);
    let mark = Mark(3);
    for name in ["a.md", "b.md"] {
        index.set_mark(name, mark, true);
    }
    let listed = |index: &CollectionIndex, status: &str| -> Vec<String> {
        let q = query(&[("status", status), ("direction", "asc")]);
        index.select_where(&q, 1, 10, Some(mark)).items.iter().map(|i| i.meta.filename.to_string()).collect()
    };
    assert_eq!(listed(&index, "all"), ["a.md", "b.md"]);
    assert_eq!(listed(&index, "published"), ["a.md"], "b is scheduled");
    index.advance(now + 2 * 86_400);
    assert_eq!(listed(&index, "published"), ["a.md", "b.md"], "b went live, still marked");
    // A new version dated later moves in the mark's list; one made a draft leaves its
    // published list.
    let (a_name, stamp, a) = file("a.md", 4, "title: A\ndate: 2024-05-01\nstatus: published");
    index.upsert(&a_name, stamp, a);
    assert_eq!(listed(&index, "all"), ["b.md", "a.md"]);
    let (b_name, stamp, b) = file("b.md", 5, "title: B\ndate: 2024-02-01\nstatus: draft");
    index.upsert(&b_name, stamp, b);
    assert_eq!(listed(&index, "published"), ["a.md"]);
    assert_eq!(listed(&index, "draft"), ["b.md"]);
    assert_eq!(index.marked_count(mark), 2);
    index.set_mark("b.md", mark, false);
    index.remove("a.md");
    assert_eq!(index.marked_count(mark), 0);
    assert!(index.by_mark.is_empty(), "no empty mark is kept");
}

/// A frontmatter of the model of `model::tests`, varying what its number, boolean and
/// date-time columns hold: values, texts in their place, nulls, absences, and instants
/// out of a column's range.
fn random_modelled(rng: &mut Rng) -> String {
    let mut fm = format!("title: {}", rng.pick(&["Alpha", "beta", "Zed"]));
    fm += rng.pick(&["", "\nstatus: draft", "\nstatus: published"]);
    if rng.below(4) == 0 {
        fm += &format!("\npublish_date: '{}'", rng.pick(&["2024-06-05", "2024-06-12 12:00"]));
    }
    fm += rng.pick(&["", "\nprice: 5", "\nprice: 12.5", "\nprice: -0.0", "\nprice: 0", "\nprice: '5'"]);
    fm += rng.pick(&["", "\nprice: ten", "\nprice: null", "\nprice: ''", "\nprice: [1]"]);
    fm += rng.pick(&["", "\nrating: 1", "\nrating: 4", "\nrating: 5", "\nrating: '4'", "\nrating: four"]);
    fm += rng.pick(&["", "\nfeatured: true", "\nfeatured: false", "\nfeatured: 'true'", "\nfeatured: yes"]);
    let dates = [
        "",
        "2024-01-01",
        "2024-01-01T10:00:00+02:00",
        "9999-12-31T00:00:00Z",
        "1066-10-14T12:00:00Z",
        "soon",
    ];
    let date = rng.pick(&dates);
    if !date.is_empty() {
        fm += &format!("\ndate: '{date}'");
    }
    fm +=
        rng.pick(&["", "\ncategory: news", "\ncategory: guide", "\ncategory: release", "\ncategory: other"]);
    fm +=
        rng.pick(&["", "\nauthor: ada", "\nauthor: bob", "\nauthor: cy", "\nauthor: dee", "\nauthor: [ada]"]);
    let tags: Vec<&str> = ["a", "b"].into_iter().filter(|_| rng.below(2) == 0).collect();
    fm + &format!("\ntags: [{}]", tags.join(", "))
}

/// Filters read from the columns give what each item's own fields give, through new
/// versions, removals, broken files and the clock, with the columns made early and kept
/// by every change since; texts among them, more than a dictionary holds in tests (3).
#[test]
fn column_filters_equal_the_items_own_fields_through_changes() {
    let model = crate::model::tests::posts();
    let zone = SiteZone::utc();
    let reading = Reading { zone: &zone, model: Some(&model), slugs: crate::item::SlugSource::FileName };
    let make = |name: &str, token: u64, fm: &str| file_read(name, token, fm, reading);
    let filters = [
        ("filter[price][gt]", "4"),
        ("filter[price][lte]", "0"),
        ("filter[price]", "5,0"),
        ("filter[price][ne]", "5"),
        ("filter[price][exists]", "false"),
        ("filter[price][contains]", "5"),
        ("filter[rating][gte]", "4"),
        ("filter[featured]", "true"),
        ("filter[featured][ne]", "true"),
        ("filter[date][lt]", "2024-01-01T09:00:00Z"),
        ("filter[date][gte]", "1900-01-01T00:00:00Z"),
        ("filter[date][gt]", "2299-01-01T00:00:00Z"),
        ("filter[date][lte]", "2024-01-01T08:00:00Z"),
        ("filter[date]", "2024-01-01T08:00:00Z"),
        ("filter[category]", "news"),
        ("filter[category]", "news,guide"),
        ("filter[category][ne]", "news"),
        ("filter[category]", "other"),
        ("filter[category][gt]", "guide"),
        ("filter[title]", "Alpha"),
        ("filter[title][ne]", "Zed"),
        ("filter[author]", "dee"),
        ("filter[author][ne]", "ada,cy"),
        ("filter[author]", "zz"),
        ("filter[category][exists]", "true"),
        ("filter[tags][exists]", "false"),
        ("filter[date][exists]", "true"),
    ];
    let names: Vec<String> = (0..24).map(|n| format!("2024-01-{:02}-item-{n}.md", n % 9 + 1)).collect();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut now = 1_717_977_600;
    let mut files: HashMap<String, (FileStamp, Held)> = HashMap::default();
    for (k, name) in names.iter().enumerate() {
        let (_, stamp, item) = make(name, k as u64, &random_modelled(&mut rng));
        files.insert(name.clone(), (stamp, held(item)));
    }
    let mut index = CollectionIndex::build(files.values().cloned().collect(), now);
    let mut marked: std::collections::BTreeSet<String> = Default::default();
    let names_of =
        |s: Selection| (s.items.iter().map(|i| i.meta.filename.to_string()).collect::<Vec<_>>(), s.total);
    for step in 0..400 {
        let name = names[rng.below(names.len())].clone();
        let token = 100 + step as u64;
        match rng.below(12) {
            0 => {
                index.remove(&name);
                files.remove(&name);
                marked.remove(&name);
            }
            1 => {
                let (name, stamp, _) = make(&name, token, "");
                index.upsert(&name, stamp.clone(), Err("broken".to_owned()));
                files.insert(name.as_str().to_owned(), (stamp, Err(Box::from("broken"))));
                marked.remove(name.as_str());
            }
            2 => {
                now += 86_400;
                index.advance(now);
            }
            3 => {
                index.set_mark(&name, Mark(0), true);
                if matches!(files.get(&name), Some((_, Ok(_)))) {
                    marked.insert(name.clone());
                }
            }
            _ => {
                let (item_name, stamp, item) = make(&name, token, &random_modelled(&mut rng));
                // A mark stays with a usable item's new versions alone.
                if item.is_err() || !matches!(files.get(&name), Some((_, Ok(_)))) {
                    marked.remove(&name);
                }
                index.upsert(&item_name, stamp.clone(), item.clone());
                files.insert(name.clone(), (stamp, held(item)));
            }
        }
        // A query every step, so that columns are made early and then kept.
        let (filter, value) = filters[rng.below(filters.len())];
        let status = rng.pick(&["published", "all", "draft", "scheduled"]);
        let mut pairs = vec![(filter, value), ("status", status)];
        match rng.below(4) {
            0 => pairs.push(("tags", "a")),
            1 => pairs.extend([("tags", "a,b"), ("orderBy", "title")]),
            2 => pairs.push(("direction", "asc")),
            _ => {}
        }
        let q = ListQuery::parse_for(&ListParams::from_pairs(pairs.iter().copied()), Some(&model)).unwrap();
        let got = names_of(index.select(&q, 1, 5));
        assert_eq!(got, reference(&index, &q, 1, 5), "step {step}: {pairs:?}");
        let fresh = CollectionIndex::build(files.values().cloned().collect(), now);
        assert_eq!(got, names_of(fresh.select(&q, 1, 5)), "step {step}: {pairs:?}");
        let marked_only = names_of(index.select_where(&q, 1, 5, Some(Mark(0))));
        let (all, _) = reference(&index, &q, 1, usize::MAX);
        let wanted: Vec<String> = all.into_iter().filter(|name| marked.contains(name)).collect();
        assert_eq!(
            marked_only,
            (wanted.iter().take(5).cloned().collect(), wanted.len()),
            "step {step}: {pairs:?}"
        );
    }
}

/// The index keeps an `IndexedItem` per item, in an `Arc`: 208 bytes and its 16 bytes of
/// counts fill mimalloc's 224-byte class (216 took the 256-byte one: 32 MB at 1,000,000 items).
#[test]
#[cfg(target_pointer_width = "64")]
fn an_indexed_item_stays_small() {
    assert!(std::mem::size_of::<IndexedItem>() <= 208, "{}", std::mem::size_of::<IndexedItem>());
}

/// On a site with languages the maps of other names file own slugs, keys and names written
/// otherwise, and read each back from its slot as they grow: every name still finds its
/// file (once) after growth and removals, built file by file or all at once, or with every
/// name under one hash.
#[test]
fn other_names_find_their_files_through_growth_and_removals() {
    use crate::item::SlugSource;
    let zone = SiteZone::utc();
    let reading = || Reading { zone: &zone, model: None, slugs: SlugSource::Frontmatter };
    let name_of =
        |n: usize| if n.is_multiple_of(3) { format!("post-{n}.FR.md") } else { format!("post-{n}.fr.md") };
    let files: Vec<(ItemFilename, FileStamp, Parsed)> = (0..300)
        .map(|n: usize| {
            let key = if n.is_multiple_of(2) { format!("\ntranslationKey: k-{n}") } else { String::new() };
            file_read(&name_of(n), n as u64, &format!("title: P{n}\nslug: own-{n}{key}"), reading())
        })
        .collect();
    let naming = || Naming::new(Some("fr".into()), Vec::new());
    let mut one_by_one = CollectionIndex::build_named(Vec::new(), 0, naming());
    // Every name under one hash: each lookup passes over the others' entries.
    let mut colliding = CollectionIndex::build_named(Vec::new(), 0, naming());
    colliding.other_names.collide = true;
    for (name, stamp, item) in files.clone() {
        one_by_one.upsert(&name, stamp.clone(), item.clone());
        colliding.upsert(&name, stamp, item);
    }
    let entries = files.iter().map(|(_, stamp, item)| (stamp.clone(), held(item.clone()))).collect();
    let at_once = CollectionIndex::build_named(entries, 0, naming());
    let check = |index: &CollectionIndex, removed: &dyn Fn(usize) -> bool| {
        for n in 0..300 {
            let wanted = (!removed(n)).then(|| name_of(n));
            let located =
                |slug: &str| index.locate(&ItemRef::parse(slug).unwrap()).map(|f| f.as_str().to_owned());
            assert_eq!(located(&format!("own-{n}")), wanted, "own slug of {n}");
            assert_eq!(located(&format!("post-{n}")), wanted, "file slug of {n}");
            for slug in [format!("own-{n}"), format!("post-{n}")] {
                assert_eq!(
                    index.named(NameMap::Slug, &slug).count(),
                    usize::from(!removed(n)),
                    "{slug}: once"
                );
            }
            let by_link = |key: Option<String>| {
                let link = Link { key: key.map(Box::from), base: format!("post-{n}.md") };
                index.linked(&link).map(|found| found.unwrap().meta.filename.to_string())
            };
            if n.is_multiple_of(2) {
                assert_eq!(by_link(Some(format!("k-{n}"))), wanted, "key of {n}");
            } else {
                assert_eq!(by_link(None), wanted, "name of {n}");
            }
        }
    };
    for mut index in [one_by_one, at_once, colliding] {
        check(&index, &|_| false);
        for n in (0..300).step_by(4) {
            assert_eq!(index.remove(&name_of(n)), Applied::Removed);
        }
        check(&index, &|n| n.is_multiple_of(4));
    }
}
