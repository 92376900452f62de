//! Translations through the facade alone, on in-memory ports (the HTTP, MCP and editor
//! surfaces are tested in crates/cms/tests/it/translations.rs).

use cms_core::events::{EventData, EventKind};
use cms_core::policy::Caller;
use cms_core::service::{NewItem, Viewer};
use cms_core::slug::ItemRef;
use cms_core::testing::{MemoryWorld, Rng};

const MULTILINGUAL: &str = "\
site:
  name: Test Site
  url: https://example.com
languages:
  - code: en
  - code: fr
collections:
  - label: Pages
    path: content/pages
  - label: Posts
    path: content/posts
";

fn new_item(slug: &str, title: &str) -> NewItem {
    let mut fm = cms_core::document::Frontmatter::new();
    fm.insert("title".into(), title.into());
    fm.insert("status".into(), "published".into());
    NewItem { slug: Some(slug.into()), fm, body: "Text.\n".into(), ..NewItem::default() }
}

#[tokio::test]
async fn a_translations_events_name_its_configured_collection_and_its_language() {
    let world = MemoryWorld::new();
    let cms = world.cms_with(MULTILINGUAL);
    let posts = cms.collection("posts").unwrap();
    let french = cms.in_language(posts, 1);
    assert_eq!((posts.index, french.index), (1, 3), "each language's collections after the configured ones");
    cms.create_item(Caller::Operator, posts, new_item("hello", "Hello")).await.unwrap();
    let written = cms.create_item(Caller::Operator, french, new_item("hello", "Bonjour")).await.unwrap();
    assert_eq!((written.filename.as_str(), written.folder), ("hello.fr.md", 1));
    let events = world.events.take();
    let files: Vec<_> = events
        .iter()
        .filter_map(|event| match &event.data {
            EventData::File(file) => {
                Some((event.kind, file.folder, file.lang.clone(), file.filename.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        files,
        [
            (EventKind::FileCreated, 1, Some("en".into()), "hello.md".into()),
            (EventKind::FileCreated, 1, Some("fr".into()), "hello.fr.md".into()),
        ]
    );
    let body = String::from_utf8(events[1].body()).unwrap();
    assert!(body.contains(r#""folder":1"#) && body.contains(r#""lang":"fr""#), "{body}");

    // Each language's list and read; the other language's file is never this one's item.
    let view = cms.read_item(french, &ItemRef::parse("hello").unwrap(), &Viewer::Anonymous).await.unwrap();
    assert_eq!(&*view.meta.title, "Bonjour");
    assert_eq!(cms.indexed_items(posts).await.unwrap().len(), 1);
    assert_eq!(cms.indexed_items(french).await.unwrap().len(), 1);
    assert!(cms.skipped_files().await.is_empty(), "a translation is not a skipped file");
}

/// As on a site in one language (`event_log.rs`): a server that read another server's
/// event of a translation reads that language's file before it answers a read of it.
#[tokio::test]
async fn a_translation_read_on_its_event_from_another_server_is_what_the_event_announced() {
    let world = MemoryWorld::new();
    let shared = || cms_core::service::Ports { sharing: cms_core::ports::Sharing::Servers, ..world.ports() };
    let (a, b) = (world.cms_with_ports(MULTILINGUAL, shared()), world.cms_with_ports(MULTILINGUAL, shared()));
    let french_on_b = b.in_language(b.collection("posts").unwrap(), 1).clone();
    let hello = ItemRef::parse("hello").unwrap();
    assert!(b.read_item(&french_on_b, &hello, &Viewer::Anonymous).await.is_err(), "no French yet");
    b.event_log().head().await.unwrap(); // B follows the log from here, as a running server does

    let posts_on_a = a.collection("posts").unwrap();
    a.create_item(Caller::Operator, posts_on_a, new_item("hello", "Hello")).await.unwrap();
    a.create_item(Caller::Operator, a.in_language(posts_on_a, 1), new_item("hello", "Bonjour"))
        .await
        .unwrap();
    b.upkeep().catch_up_events().await.unwrap();
    let view = b.read_item(&french_on_b, &hello, &Viewer::Anonymous).await.unwrap();
    assert_eq!(&*view.meta.title, "Bonjour");
}

#[tokio::test]
async fn a_site_without_languages_sends_no_lang_and_reads_dotted_names_as_before() {
    let world = MemoryWorld::new();
    let cms = world.cms();
    let pages = cms.collection("pages").unwrap();
    cms.create_item(Caller::Operator, pages, new_item("v1.fr", "A dotted slug")).await.unwrap();
    let event = world.events.take().pop().unwrap();
    let EventData::File(file) = &event.data else { panic!("a file event") };
    assert_eq!((file.lang.as_deref(), file.filename.as_str()), (None, "v1.fr.md"));
    assert!(!String::from_utf8(event.body()).unwrap().contains("lang"));
}

#[tokio::test]
async fn a_translation_whose_code_is_written_in_capitals_is_linked_both_ways() {
    let world = MemoryWorld::new();
    world.content.put_raw("content/posts", "hello.md", b"---\ntitle: Hello\n---\nHi.\n");
    world.content.put_raw("content/posts", "hello.FR.md", b"---\ntitle: Bonjour\n---\nSalut.\n");
    let cms = world.cms_with(MULTILINGUAL);
    let posts = cms.collection("posts").unwrap();
    let french = cms.in_language(posts, 1);
    let viewer = Viewer::Anonymous;
    cms.read_item(french, &ItemRef::parse("hello").unwrap(), &viewer).await.unwrap();
    cms.read_item(posts, &ItemRef::parse("hello").unwrap(), &viewer).await.unwrap();
    let english = cms.language_of_file(posts, "hello.md", true).unwrap();
    let found: Vec<(&str, &str)> = english.translations.iter().map(|t| (&*t.lang, &*t.filename)).collect();
    assert_eq!(found, [("fr", "hello.FR.md")]);
    let french = cms.language_of_file(french, "hello.FR.md", true).unwrap();
    assert_eq!(french.translations.iter().map(|t| &*t.filename).collect::<Vec<_>>(), ["hello.md"]);
}

/// Keeps what `render_ahead` hands over.
#[derive(Default)]
struct Ahead(std::sync::Mutex<Vec<cms_core::service::ItemView>>);

impl cms_core::service::AheadSink for Ahead {
    fn wants(&self, version: u64) -> bool {
        !self.0.lock().unwrap().iter().any(|view| view.version == version)
    }
    fn is_full(&self) -> bool {
        false
    }
    fn keep(&self, view: cms_core::service::ItemView) {
        self.0.lock().unwrap().push(view);
    }
}

#[tokio::test]
async fn answers_made_ahead_are_each_languages_as_its_reads_ask_for_them() {
    let world = MemoryWorld::new();
    world.content.put_raw("content/posts", "hello.md", b"---\ntitle: Hello\n---\nHi.\n");
    world.content.put_raw(
        "content/posts",
        "hello.fr.md",
        b"---\ntitle: Bonjour\nslug: bonjour\n---\nSalut.\n",
    );
    world.content.put_raw("content/posts", "alone.md", b"---\ntitle: Alone\n---\nOne.\n");
    let cms = world.cms_with(MULTILINGUAL);
    let posts = cms.collection("posts").unwrap();
    let sink = Ahead::default();
    assert_eq!(cms.render_ahead(&sink).await.unwrap(), 3, "every language's live items");
    let views = sink.0.lock().unwrap().clone();
    let anon = Viewer::Anonymous;
    for (at, slug) in [(0, "hello"), (1, "bonjour"), (0, "alone")] {
        let lane = cms.in_language(posts, at);
        let item_ref = ItemRef::parse(slug).unwrap();
        let read = cms.read_item_in(lane, &item_ref, &anon, Some(at)).await.unwrap();
        let made = views.iter().find(|view| *view.meta.slug == *slug).unwrap();
        assert_eq!((made.version, &made.etag, &made.html), (read.version, &read.etag, &read.html), "{slug}");
        assert_eq!(made.language, read.language, "{slug}: the same translations");
        let asked = cms.item_version_in(lane, &item_ref, &anon, Some(at)).await.unwrap().unwrap();
        assert_eq!(asked.version, made.version, "{slug}: kept by the version a read asks for first");
    }
    assert_eq!(cms.render_ahead(&sink).await.unwrap(), 0, "all kept");
}

/// Translations by file name share a folder: a restart answers from each language's
/// snapshot alone, and the check behind it compares each language's own files, so that
/// another language's files are not counted (or looked at) as changed.
#[tokio::test]
async fn a_restart_checks_each_languages_own_files_against_its_snapshot() {
    let world = MemoryWorld::new();
    let first = world.cms_with(MULTILINGUAL);
    let posts = first.collection("posts").unwrap();
    let french = first.in_language(posts, 1);
    for i in 0..3 {
        first.create_item(Caller::Operator, posts, new_item(&format!("p{i}"), "Hello")).await.unwrap();
        first.create_item(Caller::Operator, french, new_item(&format!("p{i}"), "Bonjour")).await.unwrap();
    }
    first.upkeep().save_snapshots().await.unwrap();
    world.content.put_raw("content/posts", "p1.fr.md", b"---\ntitle: Salut\nstatus: published\n---\nText.\n");
    world.content.take_changes();

    let reads_before = world.content.reads.load(std::sync::atomic::Ordering::Relaxed);
    let second = world.cms_with(MULTILINGUAL);
    second.upkeep().start().await.unwrap();
    assert_eq!(
        world.content.reads.load(std::sync::atomic::Ordering::Relaxed),
        reads_before,
        "from the snapshots"
    );
    let scans = || world.content.scans.load(std::sync::atomic::Ordering::Relaxed);
    let scans_before = scans();
    assert_eq!(second.upkeep().check_snapshot_starts().await.unwrap(), 1, "only p1.fr.md changed");
    // The posts of both languages share a folder: one listing checks both (the pages,
    // which have no items and so no snapshot, were listed at the start).
    assert_eq!(scans() - scans_before, 1, "content/posts once for both languages");
    let french = second.in_language(second.collection("posts").unwrap(), 1);
    let view = second.read_item(french, &ItemRef::parse("p1").unwrap(), &Viewer::Anonymous).await.unwrap();
    assert_eq!(&*view.meta.title, "Salut");
}

const THREE_LANGUAGES: &str = "\
site:
  name: Test Site
  url: https://example.com
languages:
  - code: en
  - code: fr
  - code: de
collections:
  - label: Posts
    path: content/posts
";

/// Every language's `missing=` and `outdated=` list of every other language, as file
/// names in list order (every status, as an editor sees them).
async fn translation_lists(cms: &cms_core::Cms, viewer: &Viewer) -> Vec<Vec<String>> {
    use cms_core::service::TranslationFilter;
    let posts = cms.collection("posts").unwrap();
    let query = cms_core::query::ListQuery {
        status: cms_core::query::StatusFilter::All,
        per_page: Some(100),
        ..Default::default()
    };
    let mut lists = Vec::new();
    for lane_at in 0..3 {
        let lane = cms.in_language(posts, lane_at);
        for target in (0..3).filter(|t| *t != lane_at) {
            for filter in [TranslationFilter::Missing(target), TranslationFilter::Outdated(target)] {
                let page = cms.list_items_where(lane, &query, viewer, Some(filter)).await.unwrap();
                lists.push(page.items.iter().map(|s| s.item.meta.filename.to_string()).collect());
            }
        }
    }
    lists
}

/// The same lists made the long way, from what each item's answer says of its
/// translations (and, for a missing one, from whether any file of it exists).
async fn translation_lists_by_walk(cms: &cms_core::Cms, viewer: &Viewer) -> Vec<Vec<String>> {
    let posts = cms.collection("posts").unwrap();
    let query = cms_core::query::ListQuery {
        status: cms_core::query::StatusFilter::All,
        per_page: Some(100),
        ..Default::default()
    };
    let codes = ["en", "fr", "de"];
    let mut lists = Vec::new();
    for lane_at in 0..3 {
        let lane = cms.in_language(posts, lane_at);
        let all: Vec<String> = cms
            .list_items(lane, &query, viewer)
            .await
            .unwrap()
            .items
            .iter()
            .map(|s| s.item.meta.filename.to_string())
            .collect();
        for target in (0..3).filter(|t| *t != lane_at) {
            let (mut missing, mut outdated) = (Vec::new(), Vec::new());
            for name in &all {
                let item_ref = ItemRef::parse(name).unwrap();
                let other = cms.in_language(posts, target);
                if cms.counterpart(lane, &item_ref, other).await.unwrap().is_none() {
                    missing.push(name.clone());
                }
                let language = cms.language_of_file(lane, name, true).unwrap();
                let translation = language.translations.iter().find(|t| &*t.lang == codes[target]);
                if translation.is_some_and(|t| t.outdated) {
                    outdated.push(name.clone());
                }
            }
            lists.push(missing);
            lists.push(outdated);
        }
    }
    lists
}

/// `missing=` and `outdated=` read sets that the index keeps as files change (issue 46,
/// part 8), and single answers read each item's linked state from it: after every change
/// of a random run (files added, rewritten with and without a `translationKey`, made from
/// the source as it is or as it was, scheduled, broken, removed; the clock moving
/// scheduled translations live), each list equals the one made by asking every item, every
/// kept linked state is the one the other languages make now, and a restart's index,
/// which decides both in one walk, has the same sets.
#[tokio::test]
async fn missing_and_outdated_lists_follow_every_change_as_a_walk_would_find_them() {
    // Translations by file name: `p0.fr.md` beside `p0.md`.
    let suffixes = ["", ".fr", ".de"];
    let by_name =
        |lang: usize, base: &str| ("content/posts".to_owned(), format!("{base}{}.md", suffixes[lang]));
    run_translations_at_random(THREE_LANGUAGES, &by_name, 0x5eed_1234_abcd_0042).await;
}

/// The same with a content folder per language: `content/fr/posts/p0.md`.
#[tokio::test]
async fn missing_and_outdated_lists_follow_every_change_in_folders_per_language() {
    let config = THREE_LANGUAGES
        .replace("path: content/posts", "path: content/{lang}/posts")
        .replace("collections:", "translations: folder\ncollections:");
    let codes = ["en", "fr", "de"];
    let by_folder =
        |lang: usize, base: &str| (format!("content/{}/posts", codes[lang]), format!("{base}.md"));
    run_translations_at_random(&config, &by_folder, 0x0bad_5eed_7777_0001).await;
}

/// A random run of the test above: `file_of` names the folder and file of a language's
/// (0, 1, 2) translation of an item.
async fn run_translations_at_random(
    config: &str,
    file_of: &dyn Fn(usize, &str) -> (String, String),
    seed: u64,
) {
    let world = MemoryWorld::new();
    let cms = world.cms_with(config);
    cms.upkeep().start().await.unwrap();
    cms.add_user(Caller::Operator, "ed@example.com", cms_core::account::Role::Editor).await.unwrap();
    let key = cms.create_key(Caller::Operator, "ed@example.com", "t", [7; 32]).await.unwrap();
    let editor = Viewer::Key(cms.authenticate(&key.plaintext).await.unwrap());
    let mut rng = Rng(seed);
    let mut changed = 0;
    for step in 0..120 {
        let (base, lang) = (format!("p{}", rng.below(5)), rng.below(3));
        let (folder, name) = file_of(lang, &base);
        match rng.below(12) {
            0 => world.content.remove_raw(&folder, &name),
            1 => world.content.put_raw(&folder, &name, b"---\ntitle: [broken\n---\n"),
            // An hour passes: scheduled translations go live (their siblings' answers
            // name them from then on).
            2 | 3 => {
                world.clock.advance(3600);
                cms.upkeep().advance_schedule();
            }
            _ => {
                let mut fm = format!("title: T{step}\ndate: 2024-01-{:02}\n", 1 + rng.below(28));
                fm += ["status: published\n", "status: draft\n"][rng.below(2)];
                if rng.below(3) == 0 {
                    // Within the next three hours of the memory world's clock (from
                    // 2026-01-01T00:00:00Z).
                    let hour = (world.clock.now_unix() - 1_767_225_600) / 3600 + 1 + rng.below(3) as i64;
                    fm += &format!("publish_date: 2026-01-{:02}T{:02}:00:00Z\n", 1 + hour / 24, hour % 24);
                }
                match rng.below(4) {
                    0 => fm += "translationKey: k1\n",
                    1 => fm += "translationKey: k2\n",
                    _ => {}
                }
                // Made from the source as it is now, from another version, or not said.
                let (source_folder, source_name) = file_of(0, &base);
                let source = world.content.get_raw(&source_folder, &source_name);
                match (rng.below(3), source) {
                    (0, Some(bytes)) => {
                        fm += &format!("translated_from: {}\n", cms_core::item_file::ContentTag::of(&bytes))
                    }
                    (1, _) => {
                        fm += &format!("translated_from: {}\n", cms_core::item_file::ContentTag::of(b"old"))
                    }
                    _ => {}
                }
                world.content.put_raw(&folder, &name, format!("---\n{fm}---\nText {step}.\n").as_bytes());
            }
        }
        world.settle(&cms).await;
        assert_eq!(cms.stale_linked_states(), Vec::<String>::new(), "step {step}: {folder}/{name}");
        let kept = translation_lists(&cms, &editor).await;
        assert_eq!(kept, translation_lists_by_walk(&cms, &editor).await, "step {step}: {folder}/{name}");
        changed += kept.iter().filter(|list| !list.is_empty()).count();
    }
    assert!(changed > 200, "the run made lists to compare: {changed}");

    let restarted = world.cms_with(config);
    restarted.upkeep().start().await.unwrap();
    assert_eq!(
        translation_lists(&restarted, &editor).await,
        translation_lists(&cms, &editor).await,
        "a fresh build decides the same sets"
    );
    assert_eq!(restarted.stale_linked_states(), Vec::<String>::new());
}
