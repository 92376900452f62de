//! The kept fields and the filters evaluated on them, over the content model of
//! `model::tests`.

use serde_json::{Map, Value, json};

use super::*;
use crate::model::ExtraFields;
use crate::model::tests::{fm, model, posts};

fn shelf() -> Vec<Map<String, Value>> {
    [
        json!({ "title": "a", "price": 5, "date": "2026-01-12 09:30:00 +0100", "tags": ["rust", "web"], "category": "news", "featured": true }),
        json!({ "title": "b", "price": 12.5, "date": "2026-01-12T08:00:00Z", "tags": "cms, rust", "category": "guide" }),
        json!({ "title": "c", "date": "2026-01-11", "tags": [], "category": "release", "featured": false }),
        json!({ "title": "d", "price": "ten", "summary": "Rust in Production" }),
    ]
    .into_iter()
    .map(fm)
    .collect()
}

fn titles_where(model: &Model, name: &str, value: &str) -> Vec<String> {
    let filter = model.parse_filter(name, value).unwrap();
    shelf()
        .iter()
        .filter(|item| filter.matches(model, item))
        .map(|item| item["title"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn filters_compare_as_their_fields_type() {
    let model = posts();
    let cases: [(&str, &str, &[&str]); 14] = [
        ("[price]", "5,12.5", &["a", "b"]),
        ("[price][gt]", "5", &["b"]),
        ("[price][lte]", "12.5", &["a", "b"]),
        ("[price][ne]", "5", &["b", "c", "d"]),
        ("[price][exists]", "false", &["c"]),
        // 09:30 +01:00 is 08:30 UTC: after 08:00 UTC although "09" and "08" were written.
        ("[date][gt]", "2026-01-12T08:00:00Z", &["a"]),
        ("[date][lt]", "2026-01-12T08:15:00Z", &["b", "c"]),
        ("[tags]", "rust", &["a", "b"]),
        ("[tags][contains]", "cms", &["b"]),
        ("[tags][exists]", "true", &["a", "b"]),
        ("[category]", "news,release", &["a", "c"]),
        ("[featured]", "false", &["c"]),
        ("[summary][contains]", "rust", &["d"]),
        ("[title][gte]", "c", &["c", "d"]),
    ];
    for (name, value, expected) in cases {
        assert_eq!(titles_where(&model, name, value), expected, "filter{name}={value}");
    }
}

/// What the index keeps of a field gives back the value as the file wrote it, whether it
/// keeps a second copy of it (a date-time, `4.0`, tags as one string) or not, and whether
/// its texts are kept inline or as references to the item's meta.
#[test]
fn kept_fields_give_back_each_value_as_written() {
    let model = posts();
    let tags: Vec<std::sync::Arc<str>> = vec!["a".into(), "b".into()];
    let shared = Shared {
        title: "A \"quoted\" title",
        author: Some("ann"),
        date: Some("2026-01-12 09:30:00 +0100"),
        tags: &tags,
    };
    for value in [
        json!({ "title": "A \"quoted\" title", "price": 4, "tags": ["a", "b"], "date": "2026-01-12 09:30:00 +0100", "author": "ann" }),
        json!({ "title": "B", "price": 4.0, "tags": "a, b", "featured": true, "summary": "ann" }),
        json!({ "title": "C", "price": 2.5, "tags": [], "summary": null, "rating": "five", "links": ["x", 2] }),
        json!({ "title": "", "event_day": "2026-01-12", "date": "not a date", "tags": ["b", "a"] }),
    ] {
        let written = fm(value);
        for shared in [Shared::NONE, shared] {
            let kept = model.keep(&written, shared);
            let all: Vec<KeptField<'_>> = kept.all(shared).collect();
            assert_eq!(all.len(), model.fields.len());
            for (at, (field, kept_field)) in model.fields.iter().zip(&all).enumerate() {
                assert_eq!(kept_field.json().as_ref(), written.get(&field.name), "{}", field.name);
                assert_eq!(kept.get(at, shared), Some(*kept_field), "{}", field.name);
            }
            assert_eq!(kept.get(model.fields.len(), shared), None);
        }
    }
}

/// Texts the item's meta holds are not kept twice: with the bench's five fields (four of
/// them the meta's), an item's kept fields are a few dozen bytes.
#[test]
fn kept_fields_refer_to_the_texts_the_meta_holds() {
    let model = model(
        "title: { type: string }\ndate: { type: datetime }\ntags: { type: tags }\nauthor: { type: string }\nrating: { type: integer }",
        ExtraFields::Allow,
    )
    .unwrap();
    let written = fm(json!({
        "title": "A title long enough to be worth sharing", "date": "2026-01-12T09:30:00+01:00",
        "tags": ["rust", "web"], "author": "Ann Example", "rating": 4,
    }));
    let tags: Vec<std::sync::Arc<str>> = vec!["rust".into(), "web".into()];
    let shared = Shared {
        title: "A title long enough to be worth sharing",
        author: Some("Ann Example"),
        date: Some("2026-01-12T09:30:00+01:00"),
        tags: &tags,
    };
    let packed = model.keep(&written, shared);
    // Heads 5, the title's, author's and tags' references 3, the instant 16, the date's
    // reference 1, the rating 8.
    assert_eq!(packed.len(), 33);
    assert!(model.keep(&written, Shared::NONE).len() > 100);
    let date = packed.get(1, shared).unwrap();
    assert_eq!(date.written_text(), Some("2026-01-12T09:30:00+01:00"));
    assert!(matches!(date.value, KeptValue::Scalar(Scalar::Instant(_))));
    let tags = packed.get(2, shared).unwrap();
    assert!(matches!(tags.value, KeptValue::Elements(Elements::Tags(_))));
}
