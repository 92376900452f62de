//! Items as MCP resources: `cms://{collection}/{slug}`, their Markdown source with the
//! frontmatter (`text/markdown`); a collection's JSON Schema at `cms://{collection}/schema`
//! (`application/schema+json`); the two resource templates; and the collections (and the
//! schemas of those with a model) as the resource list.

use cms_core::Cms;
use cms_core::CoreError;
use cms_core::collection::Collection;
use cms_core::slug::ItemRef;
use rmcp::model::{Resource, ResourceContents, ResourceTemplate};

pub const SCHEME: &str = "cms://";
pub const MARKDOWN: &str = "text/markdown";
pub const SCHEMA: &str = "application/schema+json";
/// The last segment of a collection's schema URI, which an item's slug cannot take.
const SCHEMA_SEGMENT: &str = "schema";

/// `cms://blog-posts/hello-world`; an item whose slug is `schema` by its filename, since
/// `cms://blog-posts/schema` is the collection's schema.
pub fn item_uri(collection_slug: &str, item_slug: &str, filename: &str) -> String {
    let name = if item_slug == SCHEMA_SEGMENT { filename } else { item_slug };
    format!("{SCHEME}{collection_slug}/{name}")
}

/// `cms://blog-posts/schema`
pub fn schema_uri(collection_slug: &str) -> String {
    format!("{SCHEME}{collection_slug}/{SCHEMA_SEGMENT}")
}

/// Each collection, as a resource whose reading lists its items' URIs, followed by the
/// JSON Schema of each collection with a model.
pub fn collection_resources(cms: &Cms) -> Vec<Resource> {
    let collections = cms.collections().iter().map(|c| {
        Resource::new(format!("{SCHEME}{}", c.slug), c.label.clone())
            .with_description(format!(
                "The collection {:?} (folder {}): reading it lists its items as cms://{}/{{slug}}",
                c.label, c.path, c.slug
            ))
            .with_mime_type("application/json")
    });
    let schemas = cms.collections().iter().filter(|c| c.model.is_some()).map(|c| {
        Resource::new(schema_uri(&c.slug), format!("{} schema", c.label))
            .with_description(format!(
                "The JSON Schema (2020-12) of the frontmatter of the collection {:?}: the fields \
                 its model asks for (describe_collection lists them one by one)",
                c.label
            ))
            .with_mime_type(SCHEMA)
    });
    collections.chain(schemas).collect()
}

/// `cms://{collection}/{slug}` for every collection (the collection is an index or a label
/// slug, as everywhere).
pub fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(format!("{SCHEME}{{collection}}/{{slug}}"), "item")
            .with_title("An item's Markdown")
            .with_description(
                "An item of a collection as stored: YAML frontmatter between --- lines, then the \
                 Markdown body. {collection} is a collection's index or label slug; {slug} an \
                 item's slug or filename.",
            )
            .with_mime_type(MARKDOWN),
        ResourceTemplate::new(format!("{SCHEME}{{collection}}/{SCHEMA_SEGMENT}"), "schema")
            .with_title("A collection's JSON Schema")
            .with_description(
                "The JSON Schema (2020-12) of a collection's frontmatter, from its content model; \
                 for a collection without one, a schema of any object. {collection} is a \
                 collection's index or label slug. (An item whose slug is `schema` is read by \
                 its filename.)",
            )
            .with_mime_type(SCHEMA),
    ]
}

/// What a resource URI names.
pub enum Target<'a> {
    Collection(&'a Collection),
    Schema(&'a Collection),
    Item(&'a Collection, ItemRef),
}

/// Parses a `cms://` URI; `Invalid`/`NotFound` errors say what is wrong with it.
pub fn parse<'a>(cms: &'a Cms, uri: &str) -> Result<Target<'a>, CoreError> {
    let rest = uri.strip_prefix(SCHEME).ok_or_else(|| {
        CoreError::invalid(format!(
            "resource URIs start with {SCHEME} (cms://{{collection}}/{{slug}}), got {uri:?}"
        ))
    })?;
    match rest.split_once('/') {
        None => Ok(Target::Collection(cms.collection(rest)?)),
        Some((collection, "")) => Ok(Target::Collection(cms.collection(collection)?)),
        Some((collection, SCHEMA_SEGMENT)) => Ok(Target::Schema(cms.collection(collection)?)),
        Some((collection, item)) => {
            let collection = cms.collection(collection)?;
            Ok(Target::Item(collection, ItemRef::parse(item)?))
        }
    }
}

pub fn markdown(uri: &str, text: String) -> ResourceContents {
    ResourceContents::text(text, uri).with_mime_type(MARKDOWN)
}
