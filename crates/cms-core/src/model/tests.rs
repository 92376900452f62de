use serde_json::{Map, Value, json};

use super::*;

/// The model of the issue's example, as `cms.yaml` writes it.
const POSTS: &str = r#"
title:    { type: string, required: true, max_length: 120 }
summary:  { type: text, max_length: 300 }
price:    { type: number, min: 0 }
rating:   { type: integer, min: 1, max: 5 }
featured: { type: boolean, default: false }
category: { type: select, options: [news, guide, release] }
topics:   { type: multiselect, options: [rust, web, cms] }
tags:     { type: tags }
date:     { type: datetime }
event_day: { type: date }
cover:    { type: image }
attachment: { type: file }
author:   { type: reference, collection: authors }
homepage: { type: url }
contact:  { type: email }
links:    { type: list, of: { type: url }, max_items: 2 }
seo:      { type: object, fields: { title: { type: string, pattern: "[A-Z].*" }, noindex: { type: boolean } } }
"#;

fn fields(yaml: &str) -> FieldsConfig {
    serde_saphyr::from_str(yaml).unwrap()
}

pub(crate) fn model(yaml: &str, extra: ExtraFields) -> Result<Model, String> {
    Model::build("collections[0].fields", &fields(yaml), extra, &["posts".into(), "authors".into()])
}

pub(crate) fn posts() -> Model {
    model(POSTS, ExtraFields::Allow).unwrap()
}

pub(crate) fn fm(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

/// The paths of the failing fields, in order.
fn failing(model: &Model, value: Value) -> Vec<String> {
    model.validate(&fm(value)).into_iter().map(|e| e.field).collect()
}

#[test]
fn fields_keep_the_order_they_are_written_in() {
    let names: Vec<String> = posts().fields.iter().map(|f| f.name.clone()).collect();
    assert_eq!(names[..4], ["title", "summary", "price", "rating"]);
    assert_eq!(names.last().unwrap(), "seo");
}

#[test]
fn a_valid_item_passes_and_an_empty_optional_field_is_as_good_as_absent() {
    let model = posts();
    let item = json!({
        "title": "Hello", "summary": "Two\nlines", "price": 9.5, "rating": 5, "featured": true,
        "category": "news", "topics": ["rust", "cms"], "tags": "a, b", "date": "2026-01-12 09:30:00 +0100",
        "event_day": "2026-01-12", "cover": "/media/uploads/a.jpg", "attachment": "/media/files/a.pdf",
        "author": "jane-doe", "homepage": "https://example.com/x", "contact": "jane@example.com",
        "links": ["http://a.example"], "seo": { "title": "Big", "noindex": false, "other": 1 },
        "summary_extra": "kept: extra fields are allowed by default", "status": "draft",
    });
    assert_eq!(model.validate(&fm(item)), vec![]);
    assert_eq!(
        failing(&model, json!({ "title": "T", "summary": null, "date": "", "links": [] })),
        Vec::<String>::new()
    );
}

#[test]
fn every_failing_field_is_reported_at_once_each_with_its_rule() {
    let errors = posts().validate(&fm(json!({
        "price": -1, "rating": 2.5, "featured": "yes", "category": "other", "topics": ["rust", "go"],
        "date": "tomorrow", "event_day": "2026-1-2", "cover": "../etc/passwd", "author": "Not A Slug!",
        "homepage": "ftp://x", "contact": "nobody", "links": ["https://a.example", "nope", "https://c.example"],
        "seo": { "title": "lower" }, "tags": [1],
    })));
    let by_field: Vec<(&str, &str)> = errors.iter().map(|e| (e.field.as_str(), e.message.as_str())).collect();
    let expect = [
        ("fm.title", "is required"),
        ("fm.price", "must be a number ≥ 0, got -1"),
        ("fm.rating", "must be a whole number from 1 to 5, got 2.5"),
        ("fm.featured", "must be true or false, got a string"),
        ("fm.category", "must be one of news, guide, release; got \"other\""),
        ("fm.topics[1]", "must be one of rust, web, cms; got \"go\""),
        ("fm.tags", "must be a list of tags (strings), got a list"),
        (
            "fm.date",
            "must be a date and time like 2026-01-12T09:30:00+01:00 or 2026-01-12 09:30:00 +0100, got \"tomorrow\"",
        ),
        ("fm.event_day", "must be a date like 2026-01-12, got \"2026-1-2\""),
        (
            "fm.cover",
            "must be the URL path of a file in a resource folder, like /media/uploads/cover.jpg, got \"../etc/passwd\"",
        ),
        ("fm.author", "must be the slug of an item of authors, got \"Not A Slug!\""),
        ("fm.homepage", "must be an absolute http(s) URL, got \"ftp://x\""),
        ("fm.contact", "must be an email address, got \"nobody\""),
        ("fm.links", "must have at most 2 elements (it has 3)"),
        ("fm.links[1]", "must be an absolute http(s) URL, got \"nope\""),
        ("fm.seo.title", "must match the pattern [A-Z].*"),
    ];
    assert_eq!(by_field, expect);
}

#[test]
fn text_rules_count_characters_and_a_string_is_one_line() {
    let model = model(
        "name: { type: string, min_length: 2, max_length: 3 }\nbody: { type: text, max_length: 4 }",
        ExtraFields::Allow,
    )
    .unwrap();
    assert_eq!(failing(&model, json!({ "name": "äöü", "body": "a\nbc" })), Vec::<String>::new());
    let errors = model.validate(&fm(json!({ "name": "a\nb", "body": "abcde" })));
    assert_eq!(errors[0].message, "must be one line (use a text field for several)");
    assert_eq!(errors[1].message, "must be at most 4 characters (it has 5)");
    assert_eq!(
        model.validate(&fm(json!({ "name": "x" })))[0].message,
        "must be at least 2 characters (it has 1)"
    );
    assert_eq!(model.validate(&fm(json!({ "name": 3 })))[0].message, "must be a string, got a number");
}

#[test]
fn extra_fields_refuse_names_the_key_but_keeps_the_servers_own() {
    let model = model("title: { type: string }", ExtraFields::Refuse).unwrap();
    let errors = model.validate(&fm(
        json!({ "title": "T", "status": "draft", "publish_date": "2026-01-01", "colour": "red" }),
    ));
    assert_eq!(
        errors,
        vec![FieldError {
            field: "fm.colour".into(),
            message: "is not a field of this collection (its fields: title)".into()
        }]
    );
}

#[test]
fn defaults_fill_what_a_new_item_leaves_out_and_nothing_else() {
    let model = model(
        "featured: { type: boolean, default: false }\nkind: { type: select, options: [a, b], default: b }\nseo: { type: object, fields: { noindex: { type: boolean, default: true } } }",
        ExtraFields::Allow,
    )
    .unwrap();
    let mut item = fm(json!({ "featured": true, "kind": null, "seo": {} }));
    model.apply_defaults(&mut item);
    assert_eq!(Value::Object(item), json!({ "featured": true, "kind": "b", "seo": { "noindex": true } }));
}

#[test]
fn links_name_the_items_and_media_to_check() {
    let links = posts()
        .links(&fm(json!({ "author": "jane", "cover": "/media/a.png", "attachment": "/files/b.pdf" })));
    assert_eq!(
        links,
        vec![
            Link {
                field: "fm.cover".into(),
                target: LinkTarget::Media { path: "/media/a.png".into(), image: true }
            },
            Link {
                field: "fm.attachment".into(),
                target: LinkTarget::Media { path: "/files/b.pdf".into(), image: false }
            },
            Link {
                field: "fm.author".into(),
                target: LinkTarget::Item { collection: "authors".into(), slug: "jane".into() }
            },
        ]
    );
}

#[test]
fn a_broken_model_stops_the_load_naming_its_key() {
    let refused = [
        (
            "a: { type: reference, collection: people }",
            "collections[0].fields.a.collection: no collection has the slug \"people\"; the collections are posts, authors",
        ),
        ("a: { type: reference }", "collections[0].fields.a.collection: a field of type reference needs it"),
        ("a: { type: number, min: 5, max: 1 }", "collections[0].fields.a.min: 5 is more than max (1)"),
        (
            "a: { type: number, options: [x] }",
            "collections[0].fields.a.options: a field of type number takes min, max",
        ),
        (
            "a: { type: boolean, max_items: 3 }",
            "collections[0].fields.a.max_items: a field of type boolean takes no settings of its own",
        ),
        ("a: { type: select, options: [] }", "collections[0].fields.a.options: name at least one value"),
        (
            "a: { type: string, pattern: \"(\" }",
            "collections[0].fields.a.pattern: is not a regular expression",
        ),
        (
            "a: { type: integer, min: 1, default: 0 }",
            "collections[0].fields.a.default must be a whole number ≥ 1, got 0",
        ),
        ("a: { type: list }", "collections[0].fields.a.of: a field of type list needs it"),
        (
            "a: { type: list, of: { type: reference, collection: x } }",
            "collections[0].fields.a.of.collection: no collection",
        ),
        (
            "a: { type: object, fields: { b: { type: date, default: soon } } }",
            "collections[0].fields.a.fields.b.default must be a date",
        ),
    ];
    for (yaml, expected) in refused {
        let error = model(yaml, ExtraFields::Allow).unwrap_err();
        assert!(error.starts_with(expected), "{yaml}: {error}");
    }
    let unknown = serde_saphyr::from_str::<FieldsConfig>("a: { type: strng }").unwrap_err().to_string();
    assert!(unknown.contains("strng") && unknown.contains("string"), "{unknown}");
    let twice = serde_saphyr::from_str::<FieldsConfig>("a: { type: date }\nb: { type: date, colour: red }")
        .unwrap_err();
    assert!(twice.to_string().contains("colour"), "{twice}");
}

#[test]
fn the_json_schema_describes_each_type() {
    let schema = posts().json_schema("Blog Posts");
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert_eq!(schema["title"], "Blog Posts");
    assert_eq!(schema["required"], json!(["title"]));
    let p = &schema["properties"];
    assert_eq!(p["title"], json!({ "type": "string", "maxLength": 120 }));
    assert_eq!(p["price"], json!({ "type": ["number", "null"], "minimum": 0.0 }));
    assert_eq!(p["featured"], json!({ "type": ["boolean", "null"], "default": false }));
    assert_eq!(p["category"], json!({ "enum": ["news", "guide", "release", null] }));
    assert_eq!(p["links"]["items"], json!({ "type": "string", "format": "uri", "pattern": "^https?://" }));
    assert_eq!(p["links"]["maxItems"], 2);
    assert_eq!(p["author"]["x-cms-reference"], "authors");
    assert_eq!(p["seo"]["properties"]["title"]["pattern"], "^(?:[A-Z].*)$");
    assert!(schema.get("additionalProperties").is_none());
    let strict = model("title: { type: string }", ExtraFields::Refuse).unwrap().json_schema("T");
    assert_eq!(strict["additionalProperties"], false);
    assert!(strict["properties"]["status"].is_object());
}

#[test]
fn the_typescript_type_names_each_field() {
    let model = model(
        "title: { type: string, required: true, description: The headline }\nrating: { type: integer }\ncategory: { type: select, options: [news, \"it's\"] }\nlinks: { type: list, of: { type: url } }\nseo: { type: object, fields: { noindex: { type: boolean } } }\n\"og:image\": { type: image }",
        ExtraFields::Allow,
    )
    .unwrap();
    assert_eq!(
        model.typescript("BlogPosts"),
        "export interface BlogPosts {\n  /** The headline */\n  title: string;\n  rating?: number | null;\n  category?: \"news\" | \"it's\" | null;\n  links?: Array<string> | null;\n  seo?: {\n    noindex?: boolean | null;\n    [key: string]: unknown;\n  } | null;\n  \"og:image\"?: string | null;\n  [key: string]: unknown;\n}\n"
    );
    assert_eq!(
        [type_name("blog-posts"), type_name("2024"), type_name("pages")],
        ["BlogPosts", "Collection2024", "Pages"]
    );
}

/// Items for the filter tests: prices, dates with offsets, tags, a missing value.
#[test]
fn unknown_fields_operators_and_values_are_refused_by_name() {
    let model = posts();
    let refused = [
        (
            "[colour]",
            "red",
            "filter[colour]: this collection has no field \"colour\"; its fields are title, summary",
        ),
        (
            "[price][near]",
            "5",
            "filter[price][near]: unknown operator \"near\"; the operators are ne, gt, gte, lt, lte, contains, exists",
        ),
        ("[price][gt]", "ten", "filter[price][gt]: \"ten\" is not a number"),
        ("[tags][gt]", "a", "filter[tags][gt]: tags is a tags field, which has no order; use contains"),
        ("[date]", "soon", "filter[date]: \"soon\" is not a date and time"),
        ("price", "5", "filterprice: write filter[FIELD]=VALUE"),
    ];
    for (name, value, expected) in refused {
        let error = model.parse_filter(name, value).unwrap_err();
        assert!(error.starts_with(expected), "{name}: {error}");
    }
    assert_eq!(model.fields[model.sort_field("price").unwrap()].name, "price");
    assert!(model.sort_field("tags").unwrap_err().starts_with("orderBy: tags is a tags field"));
    assert!(
        model.sort_field("nope").unwrap_err().contains("the fields it can sort by are title, summary, price")
    );
}
