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
        Self {
            label: collection.label.clone(),
            href: format!("/admin/collections/{}", collection.slug),
            new_href: format!("/admin/collections/{}/new", collection.slug),
        }
    }
}

/// An item's edit page.
pub(super) fn item_href(collection: &Collection, filename: &str) -> String {
    format!("/admin/collections/{}/items/{}", collection.slug, path_escape(filename))
}

/// The Deleted view of a collection.
pub(super) fn list_href(collection: &Collection) -> String {
    format!("/admin/collections/{}/deleted", collection.slug)
}

/// Who made a version, as the pages show it.
pub(super) fn author_text(author: Option<&str>) -> String {
    author.unwrap_or("unknown").to_owned()
}
