//! Values the tests of every crate build the same way: one definition, so that an
//! adapter's tests and the contract cases mean the same collection.

use crate::collection::Collection;
use crate::config::CollectionConfig;
use crate::slug::{ItemFilename, ItemRef};

/// Collection 0, `Posts` at `content/posts`: no page path, no dated filenames.
pub fn posts() -> Collection {
    Collection::from_config(
        0,
        &CollectionConfig {
            label: "Posts".into(),
            path: "content/posts".into(),
            page_path: None,
            date_prefix: false,
            fields: None,
            extra_fields: Default::default(),
        },
    )
}

/// Collection 1, `Pages` at `content/pages`.
pub fn pages() -> Collection {
    Collection::from_config(
        1,
        &CollectionConfig {
            label: "Pages".into(),
            path: "content/pages".into(),
            page_path: None,
            date_prefix: false,
            fields: None,
            extra_fields: Default::default(),
        },
    )
}

/// An item filename the test knows is valid (`hello.md`).
pub fn item_name(filename: &str) -> ItemFilename {
    ItemFilename::parse(filename).expect("valid item filename")
}

/// An item reference the test knows is valid (`hello`, `2024-01-15-hello.md`), as an
/// adapter parses it before a facade call.
pub fn item(raw: &str) -> ItemRef {
    ItemRef::parse(raw).expect("valid item reference")
}
