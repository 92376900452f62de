use super::*;

fn add(index: &mut SearchIndex, name: &str, title: &str, tags: &[&str], body: &str, published: bool) {
    let tags: Vec<Arc<str>> = tags.iter().map(|t| Arc::from(*t)).collect();
    index.upsert(name, published, &SearchText { title, tags: &tags, body, version: 0 });
}

fn hits_of(index: &SearchIndex, query: &Query, drafts: bool) -> Vec<Hit> {
    index.search(query, drafts, usize::MAX).0
}

fn names(hits: &[Hit]) -> Vec<&str> {
    hits.iter().map(|h| &*h.name).collect()
}

#[test]
fn ranks_title_above_tags_above_body() {
    let mut index = SearchIndex::default();
    add(&mut index, "body.md", "Other", &[], "All about gardening here.", true);
    add(&mut index, "tag.md", "Another", &["Gardening"], "Nothing.", true);
    add(&mut index, "title.md", "Gardening basics", &[], "Nothing.", true);
    add(&mut index, "none.md", "Cooking", &[], "Pots and pans.", true);
    let hits = hits_of(&index, &Query::parse("garden"), false);
    assert_eq!(names(&hits), ["title.md", "tag.md", "body.md"]);
}

#[test]
fn stems_prefixes_and_every_word() {
    let mut index = SearchIndex::default();
    add(&mut index, "a.md", "Running fast", &[], "Frontmatter is YAML.", true);
    add(&mut index, "b.md", "Runs", &[], "Slow walking.", true);
    assert_eq!(names(&hits_of(&index, &Query::parse("run"), false)), ["a.md", "b.md"]);
    assert_eq!(names(&hits_of(&index, &Query::parse("RUNNING"), false)), ["a.md", "b.md"]);
    assert_eq!(names(&hits_of(&index, &Query::parse("frontm"), false)), ["a.md"], "a prefix");
    assert_eq!(names(&hits_of(&index, &Query::parse("run yaml"), false)), ["a.md"], "every word");
    assert!(hits_of(&index, &Query::parse("run cooking"), false).is_empty());
    assert!(hits_of(&index, &Query::parse("  ...  "), false).is_empty());
}

#[test]
fn drafts_only_when_asked_and_changes_apply_in_place() {
    let mut index = SearchIndex::default();
    add(&mut index, "a.md", "Alpha", &[], "", false);
    assert!(hits_of(&index, &Query::parse("alpha"), false).is_empty());
    assert_eq!(names(&hits_of(&index, &Query::parse("alpha"), true)), ["a.md"]);
    add(&mut index, "a.md", "Beta", &[], "", true);
    assert!(hits_of(&index, &Query::parse("alpha"), true).is_empty(), "the old words are gone");
    assert_eq!(names(&hits_of(&index, &Query::parse("beta"), false)), ["a.md"]);
    index.remove("a.md");
    assert!(hits_of(&index, &Query::parse("beta"), true).is_empty());
    assert!(index.is_empty());
}

#[test]
fn compaction_keeps_what_is_live() {
    let mut index = SearchIndex::default();
    for round in 0..5 {
        for i in 0..200 {
            add(&mut index, &format!("{i}.md"), &format!("word{round} common"), &[], "", true);
        }
    }
    index.compact();
    assert_eq!(index.len(), 200);
    assert_eq!(hits_of(&index, &Query::parse("common"), false).len(), 200);
    assert_eq!(hits_of(&index, &Query::parse("word4"), false).len(), 200);
    assert!(hits_of(&index, &Query::parse("word0"), false).is_empty());
    // Retired ids are reused once compacted: the slots stay near the live count plus
    // what may be retired before a compaction.
    assert!(index.docs.len() <= 200 + 256 + 50 + 1, "ids are reused: {}", index.docs.len());
}

#[test]
fn postings_keep_ids_in_any_order_and_marks() {
    let mut postings = Postings::default();
    let added = [(0, 1), (1, IN_TITLE), (5_000_000, 63), (3, IN_TAGS | 2), (u32::MAX, 7), (0, 9)];
    for (id, marks) in added {
        postings.push(id, marks);
    }
    assert_eq!(postings.iter().collect::<Vec<_>>(), added);
    assert_eq!(postings.len(), added.len());
    // Ascending neighbours cost a byte for the id and one for the marks.
    let mut dense = Postings::default();
    (0..1000).for_each(|id| dense.push(id, 1));
    assert_eq!(dense.bytes.len(), 2000);
}

#[test]
fn repeated_searches_reuse_their_arrays_and_agree() {
    let mut index = SearchIndex::default();
    for i in 0..50 {
        let title = if i % 2 == 0 { "Even garden" } else { "Odd garden" };
        add(&mut index, &format!("{i:02}.md"), title, &[], "Plants and soil.", i % 5 != 0);
    }
    let query = Query::parse("garden even");
    let first = index.search(&query, false, 3);
    assert_eq!(first.1, 20, "even and published");
    for _ in 0..3 {
        assert_eq!(index.search(&query, false, 3), first, "the same answer from reused arrays");
    }
    assert_eq!(index.search(&Query::parse("odd"), true, 100).1, 25);
    assert!(index.search(&Query::parse("garden missing"), true, 10).0.is_empty());
    // An item added after the arrays were made is searched too.
    add(&mut index, "new.md", "Even garden", &[], "", true);
    assert_eq!(index.search(&query, false, 100).1, 21);
    // Every page boundary gives the same best hits as a full ranking.
    let all = index.search(&Query::parse("garden"), true, usize::MAX).0;
    for limit in [1, 7, 51] {
        assert_eq!(index.search(&Query::parse("garden"), true, limit).0, all[..limit.min(all.len())]);
    }
    // Past the point where the held hits are cut back to the limit.
    let mut large = SearchIndex::default();
    for i in 0..3000 {
        add(&mut large, &format!("{i:04}.md"), "Note", &[], &"garden ".repeat(i % 9 + 1), true);
    }
    let query = Query::parse("garden");
    let all = large.search(&query, false, usize::MAX);
    assert_eq!(all.1, 3000);
    for limit in [1, 10, 1500] {
        assert_eq!(large.search(&query, false, limit), (all.0[..limit].to_vec(), 3000));
    }
}

#[test]
fn snippets_highlight_and_escape() {
    let query = Query::parse("garden");
    let text = "Intro words. ".repeat(30) + "My <b>gardens</b> & gardening notes." + &" More.".repeat(40);
    let snippet = query.snippet(&text, 80);
    assert!(snippet.starts_with('…') && snippet.ends_with('…'), "{snippet}");
    assert!(
        snippet.contains("&lt;b&gt;<mark>gardens</mark>&lt;/b&gt; &amp; <mark>gardening</mark>"),
        "{snippet}"
    );
    let visible =
        snippet.replace("<mark>", "").replace("</mark>", "").replace("&lt;", "<").replace("&gt;", ">");
    assert!(visible.replace("&amp;", "&").chars().count() <= 82, "about 80 characters and two …: {snippet}");
    let short = query.snippet("A garden.", 80);
    assert_eq!(short, "A <mark>garden</mark>.");
    assert_eq!(query.snippet("No match here.", 80), "No match here.");
    assert_eq!(query.snippet("", 80), "");
}

/// A rough figure for 100,000 items of about 300 words from a small vocabulary (the
/// bench's shape): `cargo test -p cms-core --release --lib -- --ignored search_scale --nocapture`.
#[test]
#[ignore]
fn search_scale() {
    let vocabulary: Vec<String> = (0..5_000).map(|i| format!("word{i}")).collect();
    let mut index = SearchIndex::default();
    let mut seed = 7u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let started = std::time::Instant::now();
    for i in 0..100_000 {
        let body: Vec<&str> = (0..300).map(|_| vocabulary[(next() % 5_000) as usize].as_str()).collect();
        let body = format!("{} markdown render", body.join(" "));
        add(&mut index, &format!("{i}.md"), "Markdown notes", &["rust"], &body, true);
    }
    index.compact();
    let postings: usize = index.postings.iter().map(|p| p.len()).sum();
    let bytes: usize = index.postings.iter().map(|p| p.bytes.len()).sum();
    eprintln!(
        "built in {:?}; {} terms, {postings} postings in {bytes} bytes",
        started.elapsed(),
        index.postings.len()
    );
    for q in ["markdown render", "word42", "word4", "rust notes word7"] {
        let started = std::time::Instant::now();
        let (_, count) = index.search(&Query::parse(q), false, 20);
        eprintln!("{q:?}: {count} hits in {:?}", started.elapsed());
    }
}

#[test]
fn chinese_and_japanese_text_is_searched_by_pairs_of_characters() {
    let japanese = Stemming::of_language("ja");
    let mut index = SearchIndex::new(japanese);
    add(&mut index, "tokyo.md", "東京都の天気", &[], "今日の東京は晴れです。Rust も好き。", true);
    add(&mut index, "kyoto.md", "京都の天気", &[], "京都は雨です。", true);
    let search = |q: &str| names(&hits_of(&index, &Query::parse_in(q, japanese), false)).join(",");
    assert_eq!(search("東京"), "tokyo.md", "a word inside a run of characters");
    assert_eq!(search("京都"), "kyoto.md,tokyo.md", "東京都 holds 京都 too");
    assert_eq!(search("天気"), "kyoto.md,tokyo.md");
    assert_eq!(search("晴れ"), "tokyo.md");
    assert_eq!(search("rust"), "tokyo.md", "Latin words inside stay words");
    assert_eq!(search("雨"), "kyoto.md", "one character finds the pairs it starts");
    // Overlapping pairs are marked once.
    let snippet = Query::parse_in("東京都", japanese).snippet("今日の東京都は晴れ", 40);
    assert_eq!(snippet, "今日の<mark>東京都</mark>は晴れ");
    // Chinese too; another language keeps a run of characters as one word, as before.
    assert_eq!(Stemming::of_language("zh-Hans"), japanese);
    let mut plain = SearchIndex::new(Stemming::of_language("ko"));
    add(&mut plain, "a.md", "東京都", &[], "", true);
    assert!(hits_of(&plain, &Query::parse_in("京都", Stemming::of_language("ko")), false).is_empty());
    // A site without languages: one character is not a prefix, as before.
    let mut english = SearchIndex::default();
    add(&mut english, "a.md", "東京都", &[], "", true);
    assert!(hits_of(&english, &Query::parse("東"), false).is_empty());
    assert_eq!(names(&hits_of(&english, &Query::parse("東京都"), false)), ["a.md"]);
}

/// `add` with the file version the terms were read from.
fn add_at(index: &mut SearchIndex, name: &str, title: &str, body: &str, version: u64) {
    index.upsert(name, true, &SearchText { title, tags: &[], body, version });
}

#[test]
fn a_saved_index_keeps_the_items_whose_file_is_still_the_version_it_read() {
    let mut index = SearchIndex::new(Stemming::of_language("en"));
    add_at(&mut index, "same.md", "Gardening basics", "Tomatoes and beans.", 1);
    add_at(&mut index, "changed.md", "Gardening again", "Old words about roses.", 2);
    add_at(&mut index, "gone.md", "Gardening gone", "Nothing.", 3);
    add_at(&mut index, "retired.md", "Retired", "Removed before the save.", 4);
    index.remove("retired.md");
    let bytes = index.encode();

    assert!(SearchIndex::decode(&bytes, Stemming::of_language("fr")).is_err(), "another language's stems");
    assert!(SearchIndex::decode(&bytes[..bytes.len() / 2], Stemming::of_language("en")).is_err());
    assert!(SearchIndex::decode(b"\xff\xff\xff", Stemming::of_language("en")).is_err());

    let mut loaded = SearchIndex::decode(&bytes, Stemming::of_language("en")).unwrap();
    // As the kept index holds the files now: `same.md` unchanged (and now a draft),
    // `changed.md` at another version, `gone.md` deleted.
    let kept: Vec<Arc<str>> = ["same.md", "changed.md"].map(Arc::from).to_vec();
    loaded.keep_current(|name| match name {
        "same.md" => Some((&kept[0], 1, false)),
        "changed.md" => Some((&kept[1], 9, true)),
        _ => None,
    });
    assert!(loaded.contains("same.md"));
    assert!(!loaded.contains("changed.md") && !loaded.contains("gone.md") && !loaded.contains("retired.md"));
    assert_eq!(loaded.len(), 1);
    let garden = Query::parse("gardening");
    assert!(hits_of(&loaded, &garden, false).is_empty(), "published as the kept index says now");
    let hits = hits_of(&loaded, &garden, true);
    assert_eq!(names(&hits), ["same.md"]);
    assert!(Arc::ptr_eq(&hits[0].name, &kept[0]), "the name is the kept index's");
    assert_eq!(hits[0].score, hits_of(&index, &garden, true)[0].score, "scored as before the save");

    // What was read again goes in as a build would put it.
    add_at(&mut loaded, "changed.md", "Gardening again", "New words about tulips.", 9);
    assert_eq!(names(&hits_of(&loaded, &Query::parse("tulips"), true)), ["changed.md"]);
    assert!(hits_of(&loaded, &Query::parse("roses"), true).is_empty(), "the old version's words are gone");
    assert_eq!(names(&hits_of(&loaded, &Query::parse("tomato"), true)), ["same.md"]);
}
