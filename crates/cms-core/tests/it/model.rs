//! Writes to a collection with a content model: defaults, every failing field at once,
//! references and media that must exist; a collection without one is unchanged.

use cms_core::CoreError;
use cms_core::document::Frontmatter;
use cms_core::policy::Caller;
use cms_core::service::{ItemUpdate, NewItem, UpdateMode};
use cms_core::testing::fixtures::item;
use cms_core::testing::{MemoryWorld, SITE_YAML};
use serde_json::{Value, json};

fn fm(value: Value) -> Frontmatter {
    value.as_object().unwrap().clone()
}

/// The test site with a model on `posts` (its first collection).
fn modelled_site() -> String {
    SITE_YAML.replacen(
        "    date_prefix: true\n",
        "    date_prefix: false\n    fields:\n      title: { type: string, required: true, max_length: 20 }\n      price: { type: number, min: 0 }\n      featured: { type: boolean, default: false }\n      related: { type: reference, collection: pages }\n      cover: { type: image }\n",
        1,
    )
}

fn field_errors(error: CoreError) -> Vec<(String, String)> {
    assert_eq!(error.status(), 400, "{error}");
    error.field_errors().iter().map(|e| (e.field.clone(), e.message.clone())).collect()
}

#[tokio::test]
async fn a_modelled_write_gets_its_defaults_and_a_broken_one_names_every_field() {
    let world = MemoryWorld::new();
    let cms = world.cms_with(&modelled_site());
    let posts = cms.collection("posts").unwrap().clone();
    let new = |value: Value| NewItem { slug: Some("a".into()), fm: fm(value), ..Default::default() };

    let refused = cms
        .create_item(
            Caller::Operator,
            &posts,
            new(json!({ "price": -1, "related": "nowhere", "cover": "/media/uploads/none.jpg" })),
        )
        .await
        .unwrap_err();
    assert!(
        refused.to_string().starts_with("4 fields break the collection's model: fm.title, fm.price"),
        "{refused}"
    );
    assert_eq!(
        field_errors(refused),
        [
            ("fm.title".into(), "is required".into()),
            ("fm.price".into(), "must be a number ≥ 0, got -1".into()),
            ("fm.related".into(), "names \"nowhere\", but pages has no item with that slug".into()),
            ("fm.cover".into(), "names /media/uploads/none.jpg, but there is no file there".into()),
        ]
    );
    assert!(world.content.get_raw("content/posts", "a.md").is_none(), "nothing was written");

    world.resources.put_file("media/uploads", "cover.jpg", b"\xff\xd8\xff not really a jpeg");
    world.resources.put_file("media/uploads", "notes.txt", b"text");
    let about =
        NewItem { slug: Some("about".into()), fm: fm(json!({ "title": "About" })), ..Default::default() };
    cms.create_item(Caller::Operator, cms.collection("pages").unwrap(), about).await.unwrap();
    let image_wanted = cms
        .create_item(
            Caller::Operator,
            &posts,
            new(json!({ "title": "T", "related": "about", "cover": "/media/uploads/notes.txt" })),
        )
        .await
        .unwrap_err();
    assert_eq!(
        field_errors(image_wanted),
        [(
            "fm.cover".into(),
            "must be an image; /media/uploads/notes.txt is text/plain; charset=utf-8".into()
        )]
    );

    cms.create_item(
        Caller::Operator,
        &posts,
        new(json!({ "title": "T", "related": "about", "cover": "/media/uploads/cover.jpg" })),
    )
    .await
    .unwrap();
    let text = String::from_utf8(world.content.get_raw("content/posts", "a.md").unwrap()).unwrap();
    assert!(text.contains("featured: false"), "the default is written: {text}");
}

#[tokio::test]
async fn updates_are_checked_after_merging() {
    let world = MemoryWorld::new();
    let cms = world.cms_with(&modelled_site());
    let posts = cms.collection("posts").unwrap().clone();
    let created =
        NewItem { slug: Some("a".into()), fm: fm(json!({ "title": "T", "price": 3 })), ..Default::default() };
    cms.create_item(Caller::Operator, &posts, created).await.unwrap();
    let patch = |value: Value| ItemUpdate { mode: UpdateMode::Patch, fm: fm(value), body: None };

    let refused = cms
        .update_item(Caller::Operator, &posts, &item("a"), patch(json!({ "price": "ten" })), None)
        .await
        .unwrap_err();
    assert_eq!(field_errors(refused), [("fm.price".into(), "must be a number ≥ 0, got a string".into())]);
    // A patch that leaves the title out keeps it: the merged item is what is checked.
    cms.update_item(Caller::Operator, &posts, &item("a"), patch(json!({ "price": 4 })), None).await.unwrap();
    let cleared = cms
        .update_item(Caller::Operator, &posts, &item("a"), patch(json!({ "title": null })), None)
        .await
        .unwrap_err();
    assert_eq!(field_errors(cleared), [("fm.title".into(), "is required".into())]);
}

#[tokio::test]
async fn a_collection_without_a_model_takes_any_frontmatter() {
    let world = MemoryWorld::new();
    let cms = world.cms_with(&modelled_site());
    let pages = cms.collection("pages").unwrap().clone();
    let anything = NewItem {
        slug: Some("x".into()),
        fm: fm(json!({ "price": "ten", "colour": [1, 2] })),
        ..Default::default()
    };
    cms.create_item(Caller::Operator, &pages, anything).await.unwrap();
}
