//! Text made safe for a URL's parts (a leaf: the error pages use it too).

/// A query-string component.
pub fn query_escape(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// A path segment (item names and slugs are already URL-safe, but names of media files
/// need not be).
pub fn path_escape(text: &str) -> String {
    query_escape(text).replace('+', "%20")
}
