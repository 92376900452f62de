//! Where the item pages link to one another, and what they share in words: a leaf that
//! the item list, the Deleted view and the history all use, so that none of them imports
//! another for a link.

use cms_core::collection::Collection;

use crate::view::path_escape;

/// A collection as the pages link to it.
pub(super) struct CollectionLink {
    pub label: String,
    pub href: String,
    pub new_href: String,
}

impl CollectionLink {
    pub(super) fn of(collection: &Collection) -> Self {
        let segment = segment(collection);
        let label = match &collection.language {
            Some(language) if language.at > 0 => format!("{} ({})", collection.label, language.code),
            _ => collection.label.clone(),
        };
        Self {
            label,
            href: format!("/admin/collections/{segment}"),
            new_href: format!("/admin/collections/{segment}/new"),
        }
    }
}

/// How the editor's paths name a collection: its slug, and for a translation's collection
/// (a language other than the default) its slug, a dot and the language in lower case
/// (`blog-posts.fr`; a slug never holds a dot). See [`super::collection_at`].
pub(super) fn segment(collection: &Collection) -> String {
    match &collection.language {
        Some(language) if language.at > 0 => {
            format!("{}.{}", collection.slug, language.code.to_ascii_lowercase())
        }
        _ => collection.slug.clone(),
    }
}

/// An item's edit page.
pub(super) fn item_href(collection: &Collection, filename: &str) -> String {
    format!("/admin/collections/{}/items/{}", segment(collection), path_escape(filename))
}

/// The Deleted view of a collection.
pub(super) fn list_href(collection: &Collection) -> String {
    format!("/admin/collections/{}/deleted", segment(collection))
}

/// Who made a version, as the pages show it.
pub(super) fn author_text(author: Option<&str>) -> String {
    author.unwrap_or("unknown").to_owned()
}
