//! Lists of a collection with a content model: `filter[...]`, `orderBy` on a field,
//! `fields=` and `expand=`, each checked against a reference computed here from the items'
//! values (not with the core's filter code), including date-times with offsets, missing
//! values and a hand-edited file that breaks the model.

use cms_core::policy::Caller;
use cms_core::query::{ListParams, ListQuery};
use cms_core::service::Viewer;
use cms_core::testing::fixtures::item;
use cms_core::testing::{MemoryWorld, SITE_YAML};
use serde_json::{Value, json};

const ITEMS: usize = 30;

fn site() -> String {
    SITE_YAML.replacen(
        "    date_prefix: true\n",
        "    date_prefix: false\n    fields:\n      title: { type: string, required: true }\n      price: { type: number, min: 0 }\n      rating: { type: integer }\n      featured: { type: boolean }\n      category: { type: select, options: [news, guide, release] }\n      topics: { type: multiselect, options: [rust, web, cms] }\n      when: { type: datetime }\n      author: { type: reference, collection: pages }\n",
        1,
    )
}

/// One post's values as the test wrote them.
#[derive(Debug, Clone)]
struct Post {
    slug: String,
    title: String,
    published: bool,
    price: Option<f64>,
    rating: Option<i64>,
    featured: Option<bool>,
    category: Option<&'static str>,
    topics: Vec<&'static str>,
    /// Seconds since 2026-01-01T00:00:00Z, and the text written.
    when: Option<(i64, String)>,
    author: &'static str,
}

fn posts() -> Vec<Post> {
    (0..ITEMS)
        .map(|i| {
            let offsets = [("+01:00", 60), ("-05:00", -300), ("Z", 0)];
            let (offset, minutes) = offsets[i % 3];
            let (day, hour) = (1 + (i % 9) as i64, (i * 5 % 24) as i64);
            Post {
                slug: format!("p{i:02}"),
                title: format!("Post {i}"),
                published: i % 10 != 9,
                price: (i % 5 != 0).then(|| ((i * 7) % 13) as f64 + if i % 2 == 0 { 0.5 } else { 0.0 }),
                rating: (i % 6 != 0).then_some((i % 4 + 1) as i64),
                featured: (i % 7 != 0).then_some(i % 2 == 0),
                category: (i % 4 != 3).then_some(["news", "guide", "release"][i % 3]),
                topics: ["rust", "web", "cms"]
                    .into_iter()
                    .enumerate()
                    .filter(|(k, _)| (i >> k) & 1 == 1)
                    .map(|(_, t)| t)
                    .collect(),
                when: (i % 8 != 0).then(|| {
                    let text = format!("2026-01-{day:02}T{hour:02}:00:00{offset}");
                    ((day - 1) * 86_400 + hour * 3600 - minutes * 60, text)
                }),
                author: if i % 2 == 0 { "ann" } else { "bob" },
            }
        })
        .collect()
}

fn file_of(post: &Post) -> String {
    let mut fm = serde_json::Map::new();
    fm.insert("title".into(), json!(post.title));
    fm.insert("status".into(), json!(if post.published { "published" } else { "draft" }));
    if let Some(price) = post.price {
        fm.insert("price".into(), json!(price));
    }
    if let Some(rating) = post.rating {
        fm.insert("rating".into(), json!(rating));
    }
    if let Some(featured) = post.featured {
        fm.insert("featured".into(), json!(featured));
    }
    if let Some(category) = post.category {
        fm.insert("category".into(), json!(category));
    }
    if !post.topics.is_empty() {
        fm.insert("topics".into(), json!(post.topics));
    }
    if let Some((_, text)) = &post.when {
        fm.insert("when".into(), json!(text));
    }
    fm.insert("author".into(), json!(post.author));
    format!("---\n{}---\nBody.\n", serde_json::to_string(&fm).unwrap() + "\n")
}

fn world() -> (MemoryWorld, cms_core::service::Cms) {
    let world = MemoryWorld::new();
    for post in posts() {
        world.content.put_raw("content/posts", &format!("{}.md", post.slug), file_of(&post).as_bytes());
    }
    // Edited by hand: a price that is not a number. It is served, and counted.
    world.content.put_raw(
        "content/posts",
        "zz-broken.md",
        b"---\ntitle: Broken\nstatus: published\nprice: cheap\n---\nBody.\n",
    );
    for (slug, title) in [("ann", "Ann"), ("bob", "Bob")] {
        world.content.put_raw(
            "content/pages",
            &format!("{slug}.md"),
            format!("---\ntitle: {title}\n---\n").as_bytes(),
        );
    }
    let cms = world.cms_with(&site());
    (world, cms)
}

fn query(pairs: &[(&str, &str)], cms: &cms_core::service::Cms) -> Result<ListQuery, String> {
    let mut all = vec![("per_page", "50")];
    all.extend_from_slice(pairs);
    let model = cms.collection("posts").unwrap().model.clone();
    ListQuery::parse_for(&ListParams::from_pairs(all), model.as_deref()).map_err(|e| e.to_string())
}

async fn slugs(cms: &cms_core::service::Cms, pairs: &[(&str, &str)]) -> Vec<String> {
    let posts = cms.collection("posts").unwrap();
    let query = query(pairs, cms).unwrap();
    let page = cms.list_items(posts, &query, &Viewer::Anonymous).await.unwrap();
    page.items.iter().map(|s| s.item.meta.slug.to_string()).collect()
}

/// The published posts meeting `keep`, in the default order (no dates: filenames, newest
/// first means last filename first).
fn expected(keep: impl Fn(&Post) -> bool) -> Vec<String> {
    let mut slugs: Vec<String> =
        posts().into_iter().filter(|p| p.published && keep(p)).map(|p| p.slug).collect();
    slugs.sort();
    slugs.reverse();
    slugs
}

/// Query parameters, and which posts they keep.
type Case = (Vec<(&'static str, &'static str)>, Box<dyn Fn(&Post) -> bool>);

#[tokio::test]
async fn field_filters_match_the_reference() {
    let (_world, cms) = world();
    let cases: Vec<Case> = vec![
        (vec![("filter[price][gte]", "5")], Box::new(|p| p.price.is_some_and(|v| v >= 5.0))),
        (vec![("filter[price][lt]", "4.5")], Box::new(|p| p.price.is_some_and(|v| v < 4.5))),
        (vec![("filter[price]", "6.5")], Box::new(|p| p.price == Some(6.5))),
        (
            vec![("filter[category]", "news,guide")],
            Box::new(|p| matches!(p.category, Some("news" | "guide"))),
        ),
        (vec![("filter[category][ne]", "news")], Box::new(|p| p.category != Some("news"))),
        (vec![("filter[topics][contains]", "rust")], Box::new(|p| p.topics.contains(&"rust"))),
        (
            vec![("filter[topics]", "web,cms")],
            Box::new(|p| p.topics.iter().any(|t| *t == "web" || *t == "cms")),
        ),
        (
            vec![("filter[featured]", "true"), ("filter[rating][lte]", "2")],
            Box::new(|p| p.featured == Some(true) && p.rating.is_some_and(|r| r <= 2)),
        ),
        // 2026-01-04T00:00:00Z is 3 days in; offsets move items across it.
        (
            vec![("filter[when][gt]", "2026-01-04T00:00:00Z")],
            Box::new(|p| p.when.as_ref().is_some_and(|(at, _)| *at > 3 * 86_400)),
        ),
        (
            vec![("filter[when][lte]", "2026-01-03T20:00:00-04:00")],
            Box::new(|p| p.when.as_ref().is_some_and(|(at, _)| *at <= 3 * 86_400)),
        ),
        (vec![("filter[price][exists]", "false")], Box::new(|p| p.price.is_none())),
        (
            vec![("filter[title][contains]", "post 1")],
            Box::new(|p| p.title.to_lowercase().contains("post 1")),
        ),
        (vec![("filter[author]", "ann"), ("tags", "")], Box::new(|p| p.author == "ann")),
    ];
    for (pairs, keep) in cases {
        let mut want = expected(keep);
        // The hand-edited file has a price that is no number (set, so not listed by
        // `exists=false`, and never equal, greater or less), and no category.
        let broken_listed = pairs.iter().any(|(name, value)| {
            (*name == "filter[category][ne]")
                || (*name == "filter[title][contains]" && "broken".contains(&value.to_lowercase()))
        });
        if broken_listed {
            want.insert(0, "zz-broken".into());
        }
        assert_eq!(slugs(&cms, &pairs).await, want, "{pairs:?}");
    }
}

#[tokio::test]
async fn orders_by_a_field_sort_missing_values_last_and_page_through_the_matches() {
    let (_world, cms) = world();
    let mut by_price: Vec<Post> = posts().into_iter().filter(|p| p.published).collect();
    by_price.sort_by(|a, b| match (a.price, b.price) {
        (Some(x), Some(y)) => x.total_cmp(&y).then(a.slug.cmp(&b.slug)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.slug.cmp(&b.slug),
    });
    // Those with a price first, by price; then, by filename, those without one (the
    // hand-edited file's price is no number).
    let (present, absent): (Vec<&Post>, Vec<&Post>) = by_price.iter().partition(|p| p.price.is_some());
    let mut missing: Vec<String> =
        absent.iter().map(|p| p.slug.clone()).chain(["zz-broken".to_owned()]).collect();
    missing.sort();
    let want: Vec<String> = present.iter().map(|p| p.slug.clone()).chain(missing).collect();
    assert_eq!(slugs(&cms, &[("orderBy", "price"), ("direction", "asc")]).await, want);
    let reversed: Vec<String> = want.iter().rev().cloned().collect();
    assert_eq!(slugs(&cms, &[("orderBy", "price")]).await, reversed, "desc reverses the whole order");

    // Instants, not text: `-05:00` sorts after a later-looking `+01:00`.
    let mut by_when: Vec<Post> = posts().into_iter().filter(|p| p.published && p.when.is_some()).collect();
    by_when.sort_by_key(|p| (p.when.as_ref().unwrap().0, p.slug.clone()));
    let first: Vec<String> = by_when.iter().map(|p| p.slug.clone()).collect();
    let got = slugs(&cms, &[("orderBy", "when"), ("direction", "asc")]).await;
    assert_eq!(got[..first.len()], first[..]);

    // A page of a filtered, field-ordered list, and its total.
    let posts_collection = cms.collection("posts").unwrap();
    let q =
        query(&[("filter[category]", "guide"), ("orderBy", "rating"), ("direction", "asc")], &cms).unwrap();
    let all = cms.list_items(posts_collection, &q, &Viewer::Anonymous).await.unwrap();
    let mut paged =
        query(&[("filter[category]", "guide"), ("orderBy", "rating"), ("direction", "asc")], &cms).unwrap();
    paged.per_page = Some(2);
    paged.page = 2;
    let page = cms.list_items(posts_collection, &paged, &Viewer::Anonymous).await.unwrap();
    assert_eq!(page.total_items, all.items.len());
    let slugs_of = |items: &[cms_core::service::ItemSummary]| {
        items.iter().map(|s| s.item.meta.slug.to_string()).collect::<Vec<_>>()
    };
    assert_eq!(slugs_of(&page.items), slugs_of(&all.items[2..4]));
}

#[tokio::test]
async fn fields_and_expand_show_the_asked_fields_and_follow_the_referred_items() {
    let (_world, cms) = world();
    let posts = cms.collection("posts").unwrap();
    let q = query(&[("fields", "price,when,author"), ("expand", "author"), ("filter[price]", "6.5")], &cms)
        .unwrap();
    let page = cms.list_items(posts, &q, &Viewer::Anonymous).await.unwrap();
    let entry = serde_json::to_value(cms_core::answers::ItemEntry::from(&page.items[0])).unwrap();
    let post = posts_by_slug(entry["slug"].as_str().unwrap());
    assert_eq!(entry["fm"]["price"], json!(6.5));
    assert_eq!(entry["fm"]["when"], post.when.map_or(Value::Null, |(_, text)| json!(text)));
    assert_eq!(entry["fm"]["author"]["slug"], json!(post.author));
    assert_eq!(entry["fm"]["author"]["title"], json!(if post.author == "ann" { "Ann" } else { "Bob" }));
    assert_eq!(entry["fm"].as_object().unwrap().len(), 3, "only the fields asked for: {entry}");
    let plain = cms.list_items(posts, &query(&[], &cms).unwrap(), &Viewer::Anonymous).await.unwrap();
    assert!(
        serde_json::to_value(cms_core::answers::ItemEntry::from(&plain.items[0]))
            .unwrap()
            .get("fm")
            .is_none()
    );

    // The referred item goes: the list's version changes, and the reference shows null.
    let version = cms.list_items_version(posts, &q, &Viewer::Anonymous).await.unwrap();
    let pages = cms.collection("pages").unwrap();
    cms.delete_item(Caller::Operator, pages, &item("ann"), None).await.unwrap();
    cms.delete_item(Caller::Operator, pages, &item("bob"), None).await.unwrap();
    assert_ne!(cms.list_items_version(posts, &q, &Viewer::Anonymous).await.unwrap(), version);
    let page = cms.list_items(posts, &q, &Viewer::Anonymous).await.unwrap();
    let entry = serde_json::to_value(cms_core::answers::ItemEntry::from(&page.items[0])).unwrap();
    assert_eq!(entry["fm"]["author"], Value::Null);
}

fn posts_by_slug(slug: &str) -> Post {
    posts().into_iter().find(|p| p.slug == slug).unwrap()
}

#[tokio::test]
async fn unknown_fields_operators_and_values_are_refused_by_name() {
    let (_world, cms) = world();
    for (pairs, says) in [
        (vec![("filter[colour]", "red")], "filter[colour]: this collection has no field \"colour\""),
        (vec![("filter[price][between]", "1")], "unknown operator \"between\""),
        (vec![("filter[price]", "ten")], "filter[price]: \"ten\" is not a number"),
        (vec![("filter[when][gt]", "tomorrow")], "is not a date and time"),
        (vec![("orderBy", "topics")], "orderBy: topics is a multiselect field, which has no order"),
        (vec![("orderBy", "colour")], "orderBy: this collection has no field \"colour\""),
        (vec![("fields", "price,colour")], "fields: \"colour\" is not one of this collection's fields"),
        (
            vec![("expand", "title")],
            "expand: \"title\" is not one of this collection's reference fields (author)",
        ),
    ] {
        let error = query(&pairs, &cms).unwrap_err();
        assert!(error.contains(says), "{pairs:?}: {error}");
    }
    let error = ListQuery::parse(&ListParams::from_pairs([("filter[price]", "1")])).unwrap_err().to_string();
    assert!(error.contains("this collection has none: declare its fields in cms.yaml"), "{error}");
}

#[tokio::test]
async fn the_index_counts_the_items_that_break_the_model() {
    let (_world, cms) = world();
    let posts = cms.collection("posts").unwrap().clone();
    assert_eq!(cms.items_breaking_model_count(&posts), None, "not before the index is built");
    slugs(&cms, &[]).await;
    assert_eq!(cms.items_breaking_model_count(&posts), Some(1));
    assert_eq!(cms.items_breaking_model_count(cms.collection("pages").unwrap()), None, "no model");
    cms.delete_item(Caller::Operator, &posts, &item("zz-broken"), None).await.unwrap();
    assert_eq!(cms.items_breaking_model_count(&posts), Some(0));
}
