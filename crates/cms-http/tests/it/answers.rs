//! The shapes REST and MCP answer alike (`cms_core::answers`) against the API reference:
//! each shape's fields are the fields `docs/openapi.yaml` documents for that answer (REST
//! may add its own after them, as `schedule` on a list entry), so the OpenAPI document and
//! the MCP tools' output schemas, made from these shapes, describe the same answers.

use std::collections::BTreeSet;

use cms_core::answers::{
    Acknowledged, CollectionInfo, Done, ItemEntry, ItemHead, ItemWritten, PageMeta, ResourceFileEntry,
    ResourceFolderInfo, SearchResultEntry, TagEntry, VersionListing, VersionStamp, VersionText,
};
use schemars::{JsonSchema, schema_for};

fn fields_of<T: JsonSchema>() -> BTreeSet<String> {
    let schema = schema_for!(T);
    let properties = schema.as_value()["properties"].as_object().expect("an object shape");
    properties.keys().cloned().collect()
}

fn documented(pointer: &str) -> BTreeSet<String> {
    let document = cms_http::openapi::document();
    let schema = document.pointer(pointer).unwrap_or_else(|| panic!("{pointer} is in the document"));
    let properties = schema["properties"].as_object().unwrap_or_else(|| panic!("{pointer} has properties"));
    properties.keys().cloned().collect()
}

#[test]
fn shared_answer_shapes_have_the_documented_fields() {
    let schemas = "/components/schemas";
    let same: [(&str, BTreeSet<String>); 10] = [
        ("RestoreResult", fields_of::<ItemWritten>()),
        ("ResourceDone", fields_of::<Acknowledged>()),
        ("Collection", fields_of::<CollectionInfo>()),
        ("PageMeta", fields_of::<PageMeta>()),
        ("VersionStamp", fields_of::<VersionStamp>()),
        ("VersionList", fields_of::<VersionListing>()),
        ("Version", fields_of::<VersionText>()),
        ("SearchHit", fields_of::<SearchResultEntry>()),
        ("TagList/properties/data/items", fields_of::<TagEntry>()),
        ("ResourceListing/properties/folder", fields_of::<ResourceFolderInfo>()),
    ];
    for (name, fields) in same {
        assert_eq!(fields, documented(&format!("{schemas}/{name}")), "{name}");
    }
    // REST adds its own fields to these (`schedule`; `variants`; the rendered body...).
    let within: [(&str, BTreeSet<String>); 3] = [
        ("ItemEntry", fields_of::<ItemEntry<'static>>()),
        ("ResourceFile", fields_of::<ResourceFileEntry>()),
        ("Item/properties/data", fields_of::<ItemHead>()),
    ];
    for (name, fields) in within {
        let documented = documented(&format!("{schemas}/{name}"));
        assert!(
            fields.is_subset(&documented),
            "{name}: {:?} are not documented",
            fields.difference(&documented)
        );
    }
}

/// Every write's message is one the API reference documents for some write answer, and
/// each answer's documented messages are among them.
#[test]
fn write_messages_are_the_documented_ones() {
    let schemas = "/components/schemas";
    let document = cms_http::openapi::document();
    let mut documented = BTreeSet::new();
    for name in ["WriteResult", "Deleted", "ResourceDone", "RestoreResult"] {
        let message = &document.pointer(&format!("{schemas}/{name}/properties/message")).unwrap();
        let values = message
            .get("enum")
            .and_then(|e| e.as_array())
            .cloned()
            .unwrap_or_else(|| vec![message["const"].clone()]);
        documented.extend(values.iter().map(|v| v.as_str().expect("a message").to_owned()));
    }
    let ours: BTreeSet<String> = Done::ALL.iter().map(|done| done.message().to_owned()).collect();
    assert_eq!(ours, documented);
    let answer = serde_json::to_value(Acknowledged::named(Done::FolderCreated, "photos".into())).unwrap();
    assert_eq!(answer, serde_json::json!({"ok": true, "message": "Folder created.", "name": "photos"}));
    assert_eq!(
        serde_json::to_value(Acknowledged::new(Done::FileDeleted)).unwrap(),
        serde_json::json!({"ok": true, "message": "File deleted."})
    );
}
