//! The shapes REST and MCP answer alike (`cms_core::answers`) against the API reference:
//! each shape's fields are the fields `docs/openapi.yaml` documents for that answer (REST
//! may add its own after them, as `schedule` on a list entry), so the OpenAPI document and
//! the MCP tools' output schemas, made from these shapes, describe the same answers.

use std::collections::BTreeSet;

use cms_core::answers::{
    CollectionInfo, ItemEntry, ItemHead, PageMeta, ResourceFileEntry, ResourceFolderInfo, SearchResultEntry,
    TagEntry, VersionListing, VersionStamp, VersionText,
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
    let same: [(&str, BTreeSet<String>); 8] = [
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
