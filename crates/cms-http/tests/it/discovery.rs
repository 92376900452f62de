//! The discovery routes and the legacy item routes, in-process.

use std::sync::atomic::Ordering;

use actix_web::test::TestRequest;
use serde_json::{Value, json};

use crate::{Harness, Reply};

const POSTS: &str = "content/posts";
const PAGES: &str = "content/pages";

fn put(h: &Harness, folder: &str, name: &str, text: &str) {
    h.world.content.put_raw(folder, name, text.as_bytes());
}

/// Four published posts (one undated), a draft, and a page.
fn seed(h: &Harness) {
    h.world.content.now.store(1_709_287_200, Ordering::Relaxed); // 2024-03-01T10:00:00Z
    put(
        h,
        POSTS,
        "2024-01-01-first.md",
        "---\ntitle: First\ntags: [Rust, Web]\n---\n# Ownership\n\nThe borrow checker keeps **ownership** honest.\n",
    );
    put(
        h,
        POSTS,
        "2024-02-01-second.md",
        "---\ntitle: 'Tom & \"Jerry\" <3'\ntags: [Rust Lang, rust]\nexcerpt: Some **bold** <b>html</b> &amp; more\nauthor: Ann Lee\nimage: hero.jpg\n---\nBody of the second.\n",
    );
    put(
        h,
        POSTS,
        "2024-03-01-third.md",
        "---\ntitle: Third\ntags: [rust-lang, Go]\nstatus: published\n---\nGo and Rust side by side.\n",
    );
    put(h, POSTS, "undated.md", "---\ntitle: Undated\ntags: [web]\n---\nNo date here.\n");
    put(
        h,
        POSTS,
        "2024-04-01-secret.md",
        "---\ntitle: Secret\nstatus: draft\ntags: [Rust, secret-tag]\n---\nThe borrow checker keeps ownership honest.\n",
    );
    put(h, PAGES, "about.md", "---\ntitle: About\ntags: [Rust]\n---\nAbout us.\n");
}

fn get(uri: &str) -> TestRequest {
    TestRequest::get().uri(uri)
}

async fn json_of(h: &Harness, uri: &str) -> Value {
    let reply = h.send(get(uri)).await;
    assert_eq!(reply.status, 200, "{uri}: {}", String::from_utf8_lossy(&reply.body));
    reply.json()
}

fn text(reply: &Reply) -> String {
    String::from_utf8(reply.body.clone()).unwrap()
}

fn slugs(list: &Value) -> Vec<String> {
    list.as_array().unwrap().iter().map(|e| e["slug"].as_str().unwrap().to_owned()).collect()
}

// ---- search index -------------------------------------------------------------------------

#[actix_web::test]
async fn search_index_is_a_bare_array_of_published_items_with_every_field() {
    let h = Harness::setup().await;
    seed(&h);
    let index = json_of(&h, "/cms/collections/search-index?collectionPath=content/posts").await;
    assert_eq!(slugs(&index), ["third", "second", "first", "undated"], "newest first, no draft");
    assert_eq!(
        index[1],
        json!({
            "slug": "second",
            "title": "Tom & \"Jerry\" <3",
            "url": "/blog/second",
            "canonicalUrl": "https://example.com/blog/second",
            "excerpt": "Some bold html & more",
            "tags": ["Rust Lang", "rust"],
            "date": "2024-02-01",
            "collection": "posts",
            "filename": "2024-02-01-second.md",
            "author": "Ann Lee",
            "authorUrl": "/authors/ann-lee",
            "tagLinks": [
                {"tag": "Rust Lang", "slug": "rust-lang", "url": "/tags/rust-lang"},
                {"tag": "rust", "slug": "rust", "url": "/tags/rust"}
            ],
            "image": "hero.jpg"
        })
    );
    assert_eq!(index[2]["excerpt"], "Ownership The borrow checker keeps ownership honest.", "plain text");
    assert_eq!(index[3]["date"], Value::Null);
    assert_eq!(index[3]["authorUrl"], Value::Null);

    let with_resources =
        json_of(&h, "/cms/collections/search-index?collectionPath=content/posts&resourcesPath=media/uploads")
            .await;
    assert_eq!(with_resources[1]["image"], "/media/uploads/hero.jpg");
    h.send(get("/cms/collections/search-index?collectionPath=content/posts&resourcesPath=content/pages"))
        .await
        .assert_envelope_error(404, "not a configured resource folder");
}

#[actix_web::test]
async fn search_index_excerpts_are_plain_and_cut_on_a_word_boundary() {
    let h = Harness::setup().await;
    let body = "Some *emphasis* and [a link](https://x.example) then <em>inline html</em>. ".repeat(10);
    put(&h, POSTS, "long.md", &format!("---\ntitle: Long\n---\n{body}"));
    let index = json_of(&h, "/cms/collections/search-index?collectionPath=content/posts").await;
    let excerpt = index[0]["excerpt"].as_str().unwrap();
    assert!(excerpt.starts_with("Some emphasis and a link then inline html. Some"), "{excerpt}");
    assert!(excerpt.ends_with('…') && excerpt.chars().count() <= 161, "{excerpt}");
    assert!(!excerpt.contains(['*', '<', '[', '(']), "{excerpt}");
    let cut = excerpt.trim_end_matches('…');
    let last_word = cut.rsplit(' ').next().unwrap();
    assert!(
        ["Some", "emphasis", "and", "a", "link", "then", "inline", "html"].contains(&last_word),
        "{last_word}"
    );
}

#[actix_web::test]
async fn search_index_urls_pretty_and_not() {
    let h = Harness::setup().await;
    seed(&h);
    let base = "/cms/collections/search-index?collectionPath=content/posts";
    let cases = [
        ("", "/blog/second", "https://example.com/blog/second"),
        ("&pretty_urls=true", "/blog/second", "https://example.com/blog/second"),
        ("&pretty_urls=false", "/blog/?item=second", "https://example.com/blog/?item=second"),
        (
            "&pretty_urls=0&page_path=/post/index.php",
            "/post/index.php?item=second",
            "https://example.com/post/index.php?item=second",
        ),
        (
            "&pretty_urls=false&page_path=/news/",
            "/news/?item=second",
            "https://example.com/news/?item=second",
        ),
        (
            "&page_path=/news/&site_url=https://www.example.org/",
            "/news/second",
            "https://www.example.org/news/second",
        ),
        ("&site_url=http://localhost:3000", "/blog/second", "http://localhost:3000/blog/second"),
    ];
    for (extra, url, canonical) in cases {
        let index = json_of(&h, &format!("{base}{extra}")).await;
        assert_eq!(
            (index[1]["url"].as_str(), index[1]["canonicalUrl"].as_str()),
            (Some(url), Some(canonical)),
            "{extra}"
        );
    }
    let index =
        json_of(&h, &format!("{base}&pretty_urls=false&tag_page_path=/tag.php&author_page_path=/people"))
            .await;
    assert_eq!(index[1]["tagLinks"][0]["url"], "/tag.php?tag=rust-lang");
    assert_eq!(index[1]["authorUrl"], "/people/?author=ann-lee");

    for (extra, needle) in [
        ("&pretty_urls=maybe", "pretty_urls must be true or false"),
        ("&site_url=example.org", "site_url must be an absolute http(s) URL"),
        ("&page_path=//evil.example", "page_path"),
        ("&page_path=blog", "must start with '/'"),
        ("&tag_page_path=/a%3Fb", "tag_page_path"),
    ] {
        h.send(get(&format!("{base}{extra}"))).await.assert_envelope_error(400, needle);
    }
    h.send(get("/cms/collections/search-index"))
        .await
        .assert_envelope_error(400, "collectionPath is required");
}

// ---- tags -----------------------------------------------------------------------------------

#[actix_web::test]
async fn tags_are_counted_by_slug_most_used_first() {
    let h = Harness::setup().await;
    seed(&h);
    let body = json_of(&h, "/cms/tags?content_path=content/posts").await;
    assert_eq!(body["success"], true);
    assert_eq!(body["count"], 4);
    assert_eq!(
        body["data"],
        json!([
            {"tag": "Rust", "slug": "rust", "count": 2, "url": "/tags/rust"},
            {"tag": "Rust Lang", "slug": "rust-lang", "count": 2, "url": "/tags/rust-lang"},
            {"tag": "Web", "slug": "web", "count": 2, "url": "/tags/web"},
            {"tag": "Go", "slug": "go", "count": 1, "url": "/tags/go"}
        ]),
        "the draft's secret-tag is not there"
    );
    let query_urls =
        json_of(&h, "/cms/tags?content_path=content/posts&pretty_urls=false&tag_page_path=/tag.php").await;
    assert_eq!(query_urls["data"][0]["url"], "/tag.php?tag=rust");
    let folder_urls = json_of(&h, "/cms/tags?content_path=./content/posts/&pretty_urls=false").await;
    assert_eq!(folder_urls["data"][0]["url"], "/tags/?tag=rust");
    let pages = json_of(&h, "/cms/tags?content_path=/srv/site/content/pages").await;
    assert_eq!(pages["data"], json!([{"tag": "Rust", "slug": "rust", "count": 1, "url": "/tags/rust"}]));
    h.send(get("/cms/tags")).await.assert_envelope_error(400, "content_path is required");
}

#[actix_web::test]
async fn tag_items_are_paginated_list_entries_matched_by_slug() {
    let h = Harness::setup().await;
    seed(&h);
    let first = json_of(&h, "/cms/tags/Rust%20Lang/items?per_page=1").await;
    assert_eq!(slugs(&first["data"]), ["third"]);
    assert_eq!(
        first["meta"],
        json!({"currentPage": 1, "lastPage": 2, "totalItems": 2, "perPage": 1, "has_prev": false, "has_next": true})
    );
    let entry = &first["data"][0];
    for field in
        ["slug", "title", "url", "canonicalUrl", "date", "status", "filename", "tags", "excerpt", "modified"]
    {
        assert!(entry.get(field).is_some(), "{field} missing: {entry}");
    }
    assert_eq!(entry["url"], "/blog/third");
    let second = json_of(&h, "/cms/tags/rust-lang/items?per_page=1&page=2").await;
    assert_eq!(slugs(&second["data"]), ["second"]);
    assert_eq!(second["meta"]["has_prev"], true);
    let past = json_of(&h, "/cms/tags/rust-lang/items?per_page=1&page=3").await;
    assert_eq!((past["data"].clone(), past["meta"]["lastPage"].clone()), (json!([]), json!(2)));

    let everywhere = json_of(&h, "/cms/tags/RUST/items").await;
    assert_eq!(slugs(&everywhere["data"]), ["second", "first", "about"], "all collections, no draft");
    assert_eq!(everywhere["data"][2]["url"], "/pages/about");
    assert_eq!(everywhere["meta"]["perPage"], 10, "site.per_page by default");
    let pages_only = json_of(&h, "/cms/tags/rust/items?content_path=content/pages").await;
    assert_eq!(slugs(&pages_only["data"]), ["about"]);
    let draft_only = json_of(&h, "/cms/tags/secret-tag/items").await;
    assert_eq!(draft_only["meta"]["totalItems"], 0);
    let keyed = h.send(get("/cms/tags/secret-tag/items").insert_header(h.bearer())).await.json();
    assert_eq!(keyed["meta"]["totalItems"], 0, "not even with a key");

    h.send(get("/cms/tags/rust/items?per_page=0")).await.assert_envelope_error(400, "per_page");
    h.send(get("/cms/tags/%21%21/items")).await.assert_envelope_error(400, "names no tag");
}

// ---- feeds ----------------------------------------------------------------------------------

#[actix_web::test]
async fn rss_feed_fields_escaping_and_defaults() {
    let h = Harness::setup().await;
    seed(&h);
    let reply = h.send(get("/cms/collections/posts/rss")).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("application/rss+xml; charset=utf-8"));
    let xml = text(&reply);
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rss version=\"2.0\">"), "{xml}");
    assert!(xml.contains("  <title>Test Site</title>\n  <link>https://example.com/blog</link>\n  <description>Posts from Test Site</description>\n  <lastBuildDate>Fri, 01 Mar 2024 10:00:00 +0000</lastBuildDate>"), "{xml}");
    let second = "  <item>\n    <title>Tom &amp; &quot;Jerry&quot; &lt;3</title>\n    <link>https://example.com/blog/second</link>\n    <guid isPermaLink=\"true\">https://example.com/blog/second</guid>\n    <pubDate>Thu, 01 Feb 2024 00:00:00 +0000</pubDate>\n    <description>Some bold html &amp; more</description>\n    <category>Rust Lang</category>\n    <category>rust</category>\n  </item>\n";
    assert!(xml.contains(second), "{xml}");
    let titles: Vec<&str> =
        xml.match_indices("<item>\n    <title>").map(|(i, _)| &xml[i + 18..i + 23]).collect();
    assert_eq!(titles, ["Third", "Tom &", "First", "Undat"], "newest first, undated last");
    assert!(xml.contains("<pubDate>Fri, 01 Mar 2024 10:00:00 +0000</pubDate>"), "undated: file time: {xml}");
    assert!(!xml.contains("Secret") && !xml.contains("secret-tag"), "no draft");

    let custom = text(
        &h.send(get("/cms/collections/0/rss?title=A%20%26%20B&description=%3Cnews%3E&link=https://example.com/news/&limit=2"))
            .await,
    );
    assert!(custom.contains("<title>A &amp; B</title>\n  <link>https://example.com/news</link>\n  <description>&lt;news&gt;</description>"), "{custom}");
    assert_eq!(custom.matches("<item>").count(), 2);

    h.send(get("/cms/collections/posts/rss?limit=0")).await.assert_envelope_error(400, "limit");
    h.send(get("/cms/collections/posts/rss?link=ftp://x")).await.assert_envelope_error(400, "link");
    h.send(get("/cms/collections/nope/rss")).await.assert_envelope_error(404, "no collection");
    let head = h
        .send(TestRequest::default().method(actix_web::http::Method::HEAD).uri("/cms/collections/posts/rss"))
        .await;
    assert_eq!(
        (head.status.as_u16(), head.header("content-type")),
        (200, Some("application/rss+xml; charset=utf-8"))
    );
}

#[actix_web::test]
async fn rss_default_limit_is_20() {
    let h = Harness::setup().await;
    for i in 1..=25 {
        put(&h, POSTS, &format!("2024-01-{i:02}-p{i}.md"), "---\ntitle: P\n---\nx\n");
    }
    let xml = text(&h.send(get("/cms/collections/posts/rss")).await);
    assert_eq!(xml.matches("<item>").count(), 20);
    assert!(xml.contains("/blog/p25</link>") && !xml.contains("/blog/p5</link>"), "the newest 20");
}

#[actix_web::test]
async fn sitemap_fields_limits_and_escaping() {
    let h = Harness::setup().await;
    seed(&h);
    let reply = h.send(get("/cms/collections/posts/sitemap")).await;
    assert_eq!(reply.header("content-type"), Some("application/xml; charset=utf-8"));
    let xml = text(&reply);
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n"), "{xml}");
    assert!(xml.contains("  <url>\n    <loc>https://example.com/blog/third</loc>\n    <lastmod>2024-03-01T10:00:00+00:00</lastmod>\n  </url>\n"), "{xml}");
    assert_eq!(xml.matches("<url>").count(), 4, "no draft: {xml}");
    assert!(!xml.contains("secret"));

    let based =
        text(&h.send(get("/cms/collections/posts/sitemap?baseUrl=https://cdn.example.com/&limit=1")).await);
    assert_eq!(based.matches("<loc>").count(), 1);
    assert!(based.contains("<loc>https://cdn.example.com/blog/third</loc>"), "{based}");
    let escaped =
        text(&h.send(get("/cms/collections/posts/sitemap?baseUrl=https://example.com/o%27brien%26co")).await);
    assert!(escaped.contains("<loc>https://example.com/o&apos;brien&amp;co/blog/first</loc>"), "{escaped}");
    let clamped = text(&h.send(get("/cms/collections/posts/sitemap?limit=999999")).await);
    assert_eq!(clamped.matches("<url>").count(), 4);
    h.send(get("/cms/collections/posts/sitemap?limit=-1")).await.assert_envelope_error(400, "limit");
    h.send(get("/cms/collections/posts/sitemap?baseUrl=/relative"))
        .await
        .assert_envelope_error(400, "baseUrl");

    let empty = Harness::setup().await;
    let xml = text(&empty.send(get("/cms/collections/pages/sitemap")).await);
    assert!(
        xml.contains("<url>\n    <loc>https://example.com/pages</loc>\n  </url>"),
        "an empty collection lists its page: {xml}"
    );
}

// ---- related --------------------------------------------------------------------------------

#[actix_web::test]
async fn related_items_by_tags_and_content() {
    let h = Harness::setup().await;
    seed(&h);
    let base = "/cms/items/related?contentPath=content/posts/2024-02-01-second.md";
    let body = json_of(&h, base).await;
    assert_eq!(
        body["data"],
        json!([
            {"slug": "third", "title": "Third", "url": "/blog/third", "canonicalUrl": "https://example.com/blog/third", "score": 0.333, "shared_tags": ["Rust Lang"], "date": "2024-03-01", "excerpt": "Go and Rust side by side."},
            {"slug": "first", "title": "First", "url": "/blog/first", "canonicalUrl": "https://example.com/blog/first", "score": 0.333, "shared_tags": ["rust"], "date": "2024-01-01", "excerpt": "Ownership The borrow checker keeps ownership honest."}
        ]),
        "by tags by default; undated shares nothing; never the source, never the draft"
    );
    assert_eq!(body["count"], 2);

    // The draft shares every word with `first`; it never shows up.
    let by_content = json_of(&h, "/cms/items/related?contentPath=content/posts/first&by=content").await;
    assert!(!slugs(&by_content["data"]).contains(&"secret".to_owned()));
    assert!(!slugs(&by_content["data"]).contains(&"first".to_owned()));
    let both = json_of(
        &h,
        &format!(
            "{base}&by=tags,content&limit=1&pretty_urls=false&page_path=/p.php&site_url=https://x.example"
        ),
    )
    .await;
    assert_eq!(slugs(&both["data"]), ["third"]);
    assert_eq!(both["data"][0]["url"], "/p.php?item=third");
    assert_eq!(both["data"][0]["canonicalUrl"], "https://x.example/p.php?item=third");
    assert!(both["data"][0]["score"].as_f64().unwrap() > 0.0);

    h.send(get(&format!("{base}&by=tags,author")))
        .await
        .assert_envelope_error(400, "unknown criterion \"author\"");
    h.send(get(&format!("{base}&limit=none"))).await.assert_envelope_error(400, "limit");
    h.send(get("/cms/items/related")).await.assert_envelope_error(400, "contentPath is required");
    // A collection folder is a well-formed path that names no item file: 404, like any
    // other path that is not an item of a collection (a client cannot know the folders
    // from the path's form, and the OpenAPI document cannot either).
    h.send(get("/cms/items/related?contentPath=content/posts"))
        .await
        .assert_envelope_error(404, "collection folder itself");
    h.send(get("/cms/items/related?contentPath=content/posts/2024-04-01-secret.md"))
        .await
        .assert_envelope_error(404, "no published item");
    h.send(get("/cms/items/related?contentPath=content/posts/secret").insert_header(h.bearer()))
        .await
        .assert_envelope_error(404, "no published item");
}

// ---- legacy routes --------------------------------------------------------------------------

/// A JSON number with a zero fraction (`2.0`) is the whole number it names, as in JSON
/// Schema; other fractions stay refused.
#[actix_web::test]
async fn legacy_post_takes_whole_numbers_written_with_a_fraction() {
    let h = Harness::setup().await;
    seed(&h);
    let post = |body: Value| TestRequest::post().uri("/cms/collections/items").set_json(body);
    let reply = h
        .send(post(json!({"collectionPath": "content/posts", "per_page": 2.0, "page": 2.0, "offset": 0.0})))
        .await;
    assert_eq!(reply.status, 200, "{}", reply.json());
    assert_eq!(slugs(&reply.json()["data"]), ["first", "undated"]);
    h.send(post(json!({"collectionPath": "content/posts", "page": 1.5})))
        .await
        .assert_envelope_error(400, "page");
    h.send(post(json!({"collectionPath": "content/posts", "offset": -1.0})))
        .await
        .assert_envelope_error(400, "offset");
}

#[actix_web::test]
async fn legacy_list_by_collection_path_get_and_post() {
    let h = Harness::setup().await;
    seed(&h);
    let body = json_of(&h, "/cms/collections/items?collectionPath=content/posts&per_page=2").await;
    assert_eq!(slugs(&body["data"]), ["third", "second"]);
    assert_eq!(body["meta"]["totalItems"], 4);
    assert_eq!(body["data"][0]["status"], "published");

    let post_json = TestRequest::post()
        .uri("/cms/collections/items")
        .set_json(json!({"collectionPath": "content/posts", "per_page": 2, "page": 2, "orderBy": "date_published", "author": null}));
    let body = h.send(post_json).await.json();
    assert_eq!(slugs(&body["data"]), ["first", "undated"], "{body}");
    let post_form = TestRequest::post()
        .uri("/cms/collections/items?collectionPath=content/pages")
        .insert_header(("content-type", "application/x-www-form-urlencoded"))
        .set_payload("collectionPath=content%2Fposts&tags=go");
    let body = h.send(post_form).await.json();
    assert_eq!(slugs(&body["data"]), ["third"], "the body wins over the query: {body}");
    let post_query_only = TestRequest::post().uri("/cms/collections/items?collectionPath=content/pages");
    assert_eq!(slugs(&h.send(post_query_only).await.json()["data"]), ["about"]);

    let keyed = h
        .send(get("/cms/collections/items?collectionPath=content/posts&status=all").insert_header(h.bearer()))
        .await;
    keyed.assert_envelope_error(400, "published items only");
    let post_text = TestRequest::post()
        .uri("/cms/collections/items")
        .insert_header(("content-type", "text/plain"))
        .set_payload("collectionPath=content/posts");
    h.send(post_text).await.assert_envelope_error(415, "as a form");
    let post_nested =
        TestRequest::post().uri("/cms/collections/items").set_json(json!({"collectionPath": ["x"]}));
    h.send(post_nested).await.assert_envelope_error(400, "collectionPath must be a string");
    h.send(get("/cms/collections/items")).await.assert_envelope_error(400, "collectionPath is required");
    h.send(get("/cms/collections/items?collectionPath=content/posts&orderBy=colour"))
        .await
        .assert_envelope_error(400, "orderBy");
}

#[actix_web::test]
async fn legacy_single_reads() {
    let h = Harness::setup().await;
    seed(&h);
    put(&h, POSTS, "dup.md", "---\ntitle: Dup in posts\n---\nx\n");
    put(&h, PAGES, "dup.md", "---\ntitle: Dup in pages\n---\nx\n");
    put(&h, POSTS, "shadow.md", "---\ntitle: Draft shadow\nstatus: draft\n---\nx\n");
    put(&h, PAGES, "shadow.md", "---\ntitle: Published shadow\n---\nx\n");

    let reply = h.send(get("/cms/collections/items/second?collectionPath=content/posts")).await;
    assert_eq!(reply.status, 200);
    assert!(reply.header("etag").is_some());
    let data = reply.json()["data"].clone();
    assert_eq!((data["slug"].as_str(), data["folder"].as_u64()), (Some("second"), Some(0)));
    assert_eq!(data["body_html"], "<p>Body of the second.</p>\n");
    let by_file =
        json_of(&h, "/cms/collections/items/2024-02-01-second.md?collectionPath=/srv/site/content/posts")
            .await;
    assert_eq!(by_file["data"]["slug"], "second");
    h.send(get("/cms/collections/items/secret?collectionPath=content/posts").insert_header(h.bearer()))
        .await
        .assert_envelope_error(404, "no published item");
    h.send(get("/cms/collections/items/second"))
        .await
        .assert_envelope_error(400, "collectionPath is required");

    assert_eq!(json_of(&h, "/cms/items/about").await["data"]["folder"], 1);
    assert_eq!(json_of(&h, "/cms/items/second").await["data"]["title"], "Tom & \"Jerry\" <3");
    assert_eq!(json_of(&h, "/cms/items/dup").await["data"]["title"], "Dup in posts", "configuration order");
    assert_eq!(json_of(&h, "/cms/items/shadow").await["data"]["title"], "Published shadow", "drafts never");
    h.send(get("/cms/items/secret").insert_header(h.bearer()))
        .await
        .assert_envelope_error(404, "no published item");
    h.send(get("/cms/items/a..b")).await.assert_envelope_error(400, "invalid slug");
}

#[actix_web::test]
async fn fixed_paths_are_not_captured_by_patterns() {
    let h = Harness::setup().await;
    seed(&h);
    // `/cms/collections/items/items` is the legacy read of slug `items`, not collection `items`.
    h.send(get("/cms/collections/items/items?collectionPath=content/posts"))
        .await
        .assert_envelope_error(404, "no published item \"items\"");
    // Also when a client percent-encodes it, and for methods the legacy read does not have.
    h.send(get("/cms/collections/items/%69tems?collectionPath=content/posts"))
        .await
        .assert_envelope_error(404, "no published item \"items\"");
    let post =
        h.send(TestRequest::post().uri("/cms/collections/items/items").insert_header(h.bearer())).await;
    post.assert_envelope_error(405, "allowed: GET, HEAD");
    // Nor are slugs named like the feeds and the schema, which are matched right after it.
    for slug in ["rss", "sitemap", "schema"] {
        h.send(get(&format!("/cms/collections/items/{slug}?collectionPath=content/posts")))
            .await
            .assert_envelope_error(404, &format!("no published item \"{slug}\""));
    }
    // `/cms/items/related` is the related route, not an item called `related`.
    h.send(get("/cms/items/related")).await.assert_envelope_error(400, "contentPath");
    assert!(json_of(&h, "/cms/collections/search-index?collectionPath=content/posts").await.is_array());
    assert!(json_of(&h, "/cms/collections/items?collectionPath=content/posts").await["meta"].is_object());
    // The collection routes still work beside them.
    assert_eq!(json_of(&h, "/cms/collections/posts/items").await["meta"]["totalItems"], 4);
    let post = h.send(TestRequest::post().uri("/cms/collections/search-index")).await;
    post.assert_envelope_error(405, "allowed: GET, HEAD");
}

// ---- safety ---------------------------------------------------------------------------------

#[actix_web::test]
async fn every_path_parameter_outside_the_configured_folders_is_refused_without_a_read() {
    let h = Harness::setup().await;
    seed(&h);
    // The index is cold: a refused request that loaded any collection would read its files.
    let reads = h.world.content.reads.load(Ordering::Relaxed);

    let folders = [
        ("..", 400),
        ("../content/posts", 400),
        ("content/../../etc", 400),
        ("%2e%2e/content/posts", 400),
        ("content%2F..%2F..%2Fetc", 400),
        ("/etc", 400),
        ("/etc/passwd", 400),
        ("/srv/site/../other/content/posts", 400),
        ("/srv/sitex/content/posts", 400),
        ("/", 400),
        ("content%5Cposts", 400),
        ("content/posts%00", 400),
        ("%252e%252e/etc", 404),
        (".cms", 404),
        (".cms/users.yaml", 404),
        ("media/uploads", 404),
        ("content", 404),
        ("content/posts/2024-01-01-first.md", 404),
        ("/srv/site", 404),
        ("~/content/posts", 404),
    ];
    for (path, status) in folders {
        for uri in [
            format!("/cms/collections/search-index?collectionPath={path}"),
            format!("/cms/tags?content_path={path}"),
            format!("/cms/tags/rust/items?content_path={path}"),
            format!("/cms/collections/items?collectionPath={path}"),
            format!("/cms/collections/items/first?collectionPath={path}"),
        ] {
            let reply = h.send(get(&uri)).await;
            assert_eq!(reply.status.as_u16(), status, "{uri}: {}", String::from_utf8_lossy(&reply.body));
            assert_eq!(reply.json()["success"], false);
        }
    }
    let items = [
        ("content/posts/../../../etc/passwd", 400),
        ("/etc/passwd", 400),
        ("content/posts/..%2F..%2F.cms%2Fusers.yaml", 404),
        ("%2e%2e/%2e%2e/etc/passwd", 400),
        ("content/posts/sub/x.md", 404),
        ("content/posts/.hidden.md", 404),
        ("media/uploads/x.md", 404),
        (".cms/users.yaml", 404),
    ];
    for (path, status) in items {
        let uri = format!("/cms/items/related?contentPath={path}");
        let reply = h.send(get(&uri)).await;
        assert_eq!(reply.status.as_u16(), status, "{uri}: {}", String::from_utf8_lossy(&reply.body));
    }
    h.send(get("/cms/collections/search-index?collectionPath=content/posts&resourcesPath=../media/uploads"))
        .await
        .assert_envelope_error(400, "outside the site folder");
    assert_eq!(h.world.content.reads.load(Ordering::Relaxed), reads, "nothing was read");
    // A bare slug inside a configured collection is looked up in that collection's index
    // (which reads its files, and only those).
    h.send(get("/cms/items/related?contentPath=content/posts/notes.txt"))
        .await
        .assert_envelope_error(404, "notes.txt");
    let resources =
        json_of(&h, "/cms/collections/search-index?collectionPath=content/posts&resourcesPath=media/uploads")
            .await;
    assert!(resources.is_array());
    assert!(h.world.content.reads.load(Ordering::Relaxed) > reads, "the count does see reads");

    // The same folders, named well, work in both forms.
    for ok in ["content/posts", "./content/posts/", "/srv/site/content/posts", "content/pages/../posts"] {
        let index = json_of(&h, &format!("/cms/collections/search-index?collectionPath={ok}")).await;
        assert_eq!(index.as_array().unwrap().len(), 4, "{ok}");
    }
    // Collection segments in paths never reach the disk either.
    h.send(get("/cms/collections/%2e%2e/rss")).await.assert_envelope_error(404, "no collection");
    h.send(get("/cms/collections/..%2F.cms/sitemap")).await.assert_envelope_error(404, "no collection");
}

#[actix_web::test]
async fn answers_come_from_the_index_not_from_rereading_files() {
    let h = Harness::setup().await;
    seed(&h);
    json_of(&h, "/cms/collections/search-index?collectionPath=content/posts").await;
    json_of(&h, "/cms/collections/search-index?collectionPath=content/pages").await;
    let reads = h.world.content.reads.load(Ordering::Relaxed);
    for uri in [
        "/cms/collections/search-index?collectionPath=content/posts",
        "/cms/tags?content_path=content/posts",
        "/cms/tags/rust/items",
        "/cms/collections/posts/rss",
        "/cms/collections/posts/sitemap",
        "/cms/items/related?contentPath=content/posts/first&by=tags",
        "/cms/collections/items?collectionPath=content/posts",
    ] {
        assert_eq!(h.send(get(uri)).await.status, 200, "{uri}");
    }
    assert_eq!(h.world.content.reads.load(Ordering::Relaxed), reads);
    // Related by content walks the search index's postings of the source's words: it
    // reads the source file (the indexes keep no text), and nothing else once the
    // search index is built; asked again, it is answered as kept.
    let by_content = "/cms/items/related?contentPath=content/posts/first&by=tags,content";
    assert_eq!(h.send(get("/cms/search?q=x")).await.status, 200, "the search index is built");
    let before_content = h.world.content.reads.load(Ordering::Relaxed);
    assert_eq!(h.send(get(by_content)).await.status, 200);
    assert_eq!(h.world.content.reads.load(Ordering::Relaxed), before_content + 1, "the source file only");
    assert_eq!(h.send(get(by_content)).await.status, 200);
    let reads = before_content + 1;
    assert_eq!(h.world.content.reads.load(Ordering::Relaxed), reads, "kept: nothing read");
    // An edit behind the facade's back is seen once the store reports it (one changed
    // file re-read); until then the index answers the previous state.
    put(&h, POSTS, "undated.md", "---\ntitle: Undated\ntags: [web, Go]\n---\nx\n");
    let before = json_of(&h, "/cms/tags?content_path=content/posts").await;
    assert_eq!(before["data"][3], json!({"tag": "Go", "slug": "go", "count": 1, "url": "/tags/go"}));
    h.settle().await;
    let tags = json_of(&h, "/cms/tags?content_path=content/posts").await;
    assert_eq!(tags["data"][0], json!({"tag": "Go", "slug": "go", "count": 2, "url": "/tags/go"}));
    assert_eq!(h.world.content.reads.load(Ordering::Relaxed), reads + 1);
}

#[actix_web::test]
async fn discovery_routes_are_opt_routes() {
    let h = Harness::setup().await;
    seed(&h);
    for uri in ["/cms/tags?content_path=content/posts", "/cms/collections/posts/rss", "/cms/items/dup"] {
        h.send(get(uri).insert_header(("Origin", "https://evil.example")))
            .await
            .assert_envelope_error(403, "not allowed");
        h.send(get(uri).insert_header(("Authorization", "Bearer api_nope")))
            .await
            .assert_envelope_error(401, "API key");
    }
    let allowed =
        h.send(get("/cms/collections/posts/rss").insert_header(("Origin", "https://app.example.com"))).await;
    assert_eq!(allowed.status, 200);
    assert_eq!(allowed.header("access-control-allow-origin"), Some("https://app.example.com"));
}

/// The legacy single read and the read across collections answer like the single item
/// route, `304` for a current If-None-Match included (docs/api-conventions.md).
#[actix_web::test]
async fn legacy_single_reads_answer_304_to_a_current_etag() {
    let h = Harness::setup().await;
    seed(&h);
    for uri in ["/cms/collections/items/second?collectionPath=content/posts", "/cms/items/second"] {
        let reply = h.send(get(uri)).await;
        assert_eq!(reply.status, 200, "{uri}");
        let etag = reply.header("etag").unwrap_or_else(|| panic!("{uri} has no ETag")).to_owned();
        let cached = h.send(get(uri).insert_header(("If-None-Match", etag.clone()))).await;
        assert_eq!((cached.status.as_u16(), cached.header("etag")), (304, Some(etag.as_str())), "{uri}");
        assert!(cached.body.is_empty(), "{uri}");
        let stale = h.send(get(uri).insert_header(("If-None-Match", "\"stale\""))).await;
        assert_eq!(stale.status, 200, "{uri}");
    }
}

#[actix_web::test]
async fn tag_item_and_legacy_lists_carry_etags() {
    let h = Harness::setup().await;
    seed(&h);
    for uri in ["/cms/tags/rust/items?per_page=2", "/cms/collections/items?collectionPath=content/posts"] {
        let reply = h.send(get(uri)).await;
        assert_eq!(reply.status, 200, "{uri}");
        let etag = reply.header("etag").unwrap_or_else(|| panic!("{uri} has no ETag")).to_owned();
        assert_eq!(h.send(get(uri)).await.header("etag"), Some(etag.as_str()), "{uri}");
        let cached = h.send(get(uri).insert_header(("If-None-Match", etag.clone()))).await;
        assert_eq!((cached.status.as_u16(), cached.header("etag")), (304, Some(etag.as_str())), "{uri}");
        assert!(cached.body.is_empty());
    }

    // The legacy POST list sends the same ETag as its GET; a POST is not answered `304`
    // (RFC 9110: a matching If-None-Match on another method is `412`).
    let get_etag = h
        .send(get("/cms/collections/items?collectionPath=content/posts"))
        .await
        .header("etag")
        .unwrap()
        .to_owned();
    let post = || {
        TestRequest::post().uri("/cms/collections/items").set_json(json!({"collectionPath": "content/posts"}))
    };
    assert_eq!(h.send(post()).await.header("etag"), Some(get_etag.as_str()));
    h.send(post().insert_header(("If-None-Match", get_etag.clone())))
        .await
        .assert_envelope_error(412, "If-None-Match");
    assert_eq!(h.send(post().insert_header(("If-None-Match", "\"stale\""))).await.status, 200);

    // An edit behind the facade's back changes the ETag once the store reports it.
    put(&h, POSTS, "2024-05-01-fifth.md", "---\ntitle: Fifth\ntags: [Rust]\n---\nx\n");
    h.settle().await;
    let changed = h
        .send(
            get("/cms/collections/items?collectionPath=content/posts")
                .insert_header(("If-None-Match", get_etag.clone())),
        )
        .await;
    assert_eq!(changed.status, 200);
    assert_ne!(changed.header("etag"), Some(get_etag.as_str()));
    assert_eq!(slugs(&changed.json()["data"])[0], "fifth");
}
