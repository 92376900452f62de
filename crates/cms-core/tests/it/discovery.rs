//! Discovery through the facade: path parameters, the index's plain excerpts and words,
//! related items and feeds, over in-memory ports.

use cms_core::CoreError;
use cms_core::config::SiteConfig;
use cms_core::query::ListQuery;
use cms_core::related::Criterion;
use cms_core::service::{
    RelatedParams, RelatedText, RssParams, SearchIndexParams, SitemapParams, TagItemsParams, Viewer,
};
use cms_core::testing::{MemoryWorld, SITE_YAML};

const POSTS: &str = "content/posts";

fn put(world: &MemoryWorld, name: &str, text: &str) {
    world.content.put_raw(POSTS, name, text.as_bytes());
}

fn path_params(path: &str) -> SearchIndexParams {
    SearchIndexParams { collection_path: Some(path.into()), ..Default::default() }
}

#[tokio::test]
async fn absolute_paths_need_the_site_root_relative_ones_do_not() {
    let world = MemoryWorld::new();
    let without_root = world.cms();
    assert!(without_root.search_index(&path_params("content/posts")).await.is_ok());
    let error = without_root.search_index(&path_params("/srv/site/content/posts")).await.unwrap_err();
    assert!(
        matches!(&error, CoreError::Invalid(m) if m.contains("send a path relative to the site folder")),
        "{error}"
    );

    let with_root = cms_core::Cms::builder(&SiteConfig::from_yaml(SITE_YAML).unwrap(), world.ports())
        .site_root("/srv/site/")
        .build();
    assert!(with_root.search_index(&path_params("/srv/site/content/posts")).await.is_ok());
    assert_eq!(with_root.collection_at_path("p", Some("/srv/site/content/pages")).unwrap().index, 1);
    let error = with_root.collection_at_path("collectionPath", Some("content/drafts")).unwrap_err();
    assert!(
        matches!(&error, CoreError::NotFound(m) if m.contains("the collection folders are content/posts, content/pages")),
        "{error}"
    );
}

#[tokio::test]
async fn the_index_keeps_a_plain_excerpt() {
    let world = MemoryWorld::new();
    put(
        &world,
        "a.md",
        "---\ntitle: Rust Ownership\ndescription: '*Why* <i>it</i> matters'\n---\nThe borrow checker.\n",
    );
    let cms = world.cms();
    let items = cms.indexed_items(cms.collection("posts").unwrap()).await.unwrap();
    assert_eq!(items[0].excerpt(), "*Why* <i>it</i> matters", "lists keep the written excerpt as written");
    assert_eq!(&*items[0].plain_excerpt, "Why it matters");
}

#[tokio::test]
async fn related_by_content_compares_stems_of_significant_title_and_body_words() {
    let world = MemoryWorld::new();
    // Content terms: rust, ownership, borrow, checker (`The` is a stop word).
    put(&world, "2024-01-01-src.md", "---\ntitle: Rust Ownership\n---\nThe borrow checker.\n");
    // borrow and checker by their stems; `the`, `and` and `ok` say nothing; a tag is not content.
    put(
        &world,
        "2024-01-02-stems.md",
        "---\ntitle: Borrowing\ntags: [ownership]\n---\nthe and ok checkers\n",
    );
    put(&world, "2024-01-03-stop.md", "---\ntitle: The\n---\nthe and of 2024\n");
    let cms = world.cms();
    let params = RelatedParams {
        content_path: Some("content/posts/src".into()),
        by: vec![Criterion::Content],
        ..Default::default()
    };
    let found: Vec<(String, f64)> = cms
        .related(&params)
        .await
        .unwrap()
        .into_iter()
        .map(|r| (r.item.meta.slug.to_string(), r.score))
        .collect();
    assert_eq!(found, [("stems".to_owned(), 0.5)], "2 shared of 4 distinct");
}

#[tokio::test]
async fn related_scores_combine_criteria_and_skip_the_source_and_drafts() {
    let world = MemoryWorld::new();
    put(&world, "2024-01-01-src.md", "---\ntitle: Source\ntags: [a, b]\n---\nalpha beta gamma\n");
    put(&world, "2024-01-02-tags.md", "---\ntitle: Tags\ntags: [A, b]\n---\nnothing shared\n");
    put(&world, "2024-01-03-words.md", "---\ntitle: Words\n---\nalpha beta gamma\n");
    put(&world, "2024-01-04-none.md", "---\ntitle: None\ntags: [c]\n---\nzeta\n");
    put(
        &world,
        "2024-01-05-draft.md",
        "---\ntitle: Draft\nstatus: draft\ntags: [a, b]\n---\nalpha beta gamma\n",
    );
    let cms = world.cms();
    let related = async |by: &str| {
        let params = RelatedParams::parse(RelatedText {
            content_path: Some("content/posts/src".into()),
            by: Some(by.into()),
            ..Default::default()
        })
        .unwrap();
        cms.related(&params)
            .await
            .unwrap()
            .into_iter()
            .map(|r| (r.item.meta.slug.to_string(), r.score, r.shared_tags))
            .collect::<Vec<_>>()
    };
    assert_eq!(related("tags").await, [("tags".to_owned(), 1.0, vec!["a".to_owned(), "b".to_owned()])]);
    // "Source alpha beta gamma" vs "Words alpha beta gamma": 3 shared of 5 distinct.
    assert_eq!(related("content").await, [("words".to_owned(), 0.6, vec![])]);
    assert_eq!(
        related("tags,content").await,
        [("tags".to_owned(), 0.5, vec!["a".to_owned(), "b".to_owned()]), ("words".to_owned(), 0.3, vec![])]
    );
}

#[tokio::test]
async fn feeds_and_tag_items_show_published_items_only() {
    let world = MemoryWorld::new();
    put(&world, "2024-01-01-pub.md", "---\ntitle: Pub\ntags: [x]\n---\nx\n");
    put(&world, "2024-01-02-draft.md", "---\ntitle: Hidden\nstatus: draft\ntags: [x]\n---\nx\n");
    put(&world, "2024-01-03-odd.md", "---\ntitle: Odd\nstatus: Published\ntags: [x]\n---\nx\n");
    let cms = world.cms();
    let posts = cms.collection("posts").unwrap();
    let rss = cms.rss(posts, &RssParams::default()).await.unwrap();
    let sitemap = cms.sitemap(posts, &SitemapParams::default()).await.unwrap();
    for xml in [&rss, &sitemap] {
        assert!(xml.contains("/blog/pub<") && !xml.contains("draft") && !xml.contains("odd"), "{xml}");
    }
    let page = cms.tag_items("X", &TagItemsParams::default()).await.unwrap();
    assert_eq!(page.total_items, 1);
    assert_eq!(cms.search_index(&path_params(POSTS)).await.unwrap().len(), 1);
}

/// Jekyll and Hugo write `date` with a time and an offset: feeds keep both, "newest first"
/// compares instants (not strings), and a date alone is midnight in `site.timezone`.
#[tokio::test]
async fn dates_with_times_and_offsets_are_instants() {
    let world = MemoryWorld::new();
    // As strings "2024-03-02 01:00 +0100" sorts after "2024-03-01 23:00 -0500"; as
    // instants it is four hours earlier.
    put(&world, "late.md", "---\ntitle: Late\ndate: 2024-03-01 23:00:00 -0500\n---\nx\n");
    put(&world, "early.md", "---\ntitle: Early\ndate: \"2024-03-02 01:00:00 +0100\"\n---\nx\n");
    put(&world, "jekyll.md", "---\ntitle: Jekyll\ndate: \"2018-04-19 16:07:00 +0100\"\n---\nx\n");
    put(&world, "2024-01-05-plain.md", "---\ntitle: Plain\n---\nx\n");
    let berlin = cms_core::testing::SITE_YAML
        .replace("  per_page: 10\n", "  per_page: 10\n  timezone: Europe/Berlin\n");
    for (cms, midnight) in [
        (world.cms(), "Fri, 05 Jan 2024 00:00:00 +0000"),
        (world.cms_with(&berlin), "Fri, 05 Jan 2024 00:00:00 +0100"),
    ] {
        let posts = cms.collection("posts").unwrap();
        let rss = cms.rss(posts, &RssParams::default()).await.unwrap();
        let mut by_position = ["Jekyll", "Plain", "Early", "Late"];
        by_position.sort_by_key(|t| rss.find(&format!("<title>{t}<")).expect("every item is in the feed"));
        assert_eq!(by_position, ["Late", "Early", "Plain", "Jekyll"], "newest first by instant: {rss}");
        assert!(rss.contains("<pubDate>Thu, 19 Apr 2018 16:07:00 +0100</pubDate>"), "{rss}");
        assert!(rss.contains("<pubDate>Fri, 01 Mar 2024 23:00:00 -0500</pubDate>"), "{rss}");
        assert!(rss.contains(&format!("<pubDate>{midnight}</pubDate>")), "{rss}");
    }
    let cms = world.cms();
    let newest = cms
        .list_items(cms.collection("posts").unwrap(), &ListQuery::default(), &Viewer::Anonymous)
        .await
        .unwrap();
    let titles: Vec<&str> = newest.items.iter().map(|s| s.item.meta.title.as_ref()).collect();
    assert_eq!(titles, ["Late", "Early", "Plain", "Jekyll"], "lists order by instant too");
    assert_eq!(
        newest.items[0].item.meta.date.as_deref(),
        Some("2024-03-01 23:00:00 -0500"),
        "shown as written"
    );
}
