//! Items as MCP resources: `cms://{collection}/{slug}`, their Markdown source with the
//! frontmatter (`text/markdown`), one resource template per collection, and the
//! collections themselves as the resource list.

use cms_core::Cms;
use cms_core::CoreError;
use cms_core::collection::Collection;
use rmcp::model::{Resource, ResourceContents, ResourceTemplate};

pub const SCHEME: &str = "cms://";
pub const MARKDOWN: &str = "text/markdown";

/// `cms://blog-posts/hello-world`
pub fn item_uri(collection_slug: &str, item_slug: &str) -> String {
    format!("{SCHEME}{collection_slug}/{item_slug}")
}

/// Each collection, as a resource whose reading lists its items' URIs.
pub fn collection_resources(cms: &Cms) -> Vec<Resource> {
    cms.collections()
        .iter()
        .map(|c| {
            Resource::new(format!("{SCHEME}{}", c.slug), c.label.clone())
                .with_description(format!(
                    "The collection {:?} (folder {}): reading it lists its items as cms://{}/{{slug}}",
                    c.label, c.path, c.slug
                ))
                .with_mime_type("application/json")
        })
        .collect()
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
    ]
}

/// What a resource URI names.
pub enum Target<'a> {
    Collection(&'a Collection),
    Item(&'a Collection, String),
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
        Some((collection, slug)) => Ok(Target::Item(cms.collection(collection)?, slug.to_owned())),
    }
}

pub fn markdown(uri: &str, text: String) -> ResourceContents {
    ResourceContents::text(text, uri).with_mime_type(MARKDOWN)
}
