//! A request's query parameters read by name, without building a map: the busiest routes
//! (a feed, a sitemap, a key in `?token=`) read two or three names, and a map of every
//! parameter cost an allocation per name and per value on each request.
//!
//! Decoding is `form_urlencoded`'s, as `web::Query` does it (`+` is a space, bad percent
//! escapes and bytes are kept as text), and a name given twice counts by its last value,
//! as in a map of the query.

use std::borrow::Cow;

/// The value of each of `names` (in their order; `None` for one not sent).
pub fn named<const N: usize>(query: &str, names: [&str; N]) -> [Option<String>; N] {
    let mut found: [Option<Cow<'_, str>>; N] = [const { None }; N];
    for (name, value) in form_urlencoded::parse(query.as_bytes()) {
        if let Some(at) = names.iter().position(|wanted| **wanted == *name) {
            found[at] = Some(value);
        }
    }
    found.map(|value| value.map(Cow::into_owned))
}

/// The value of `name`.
pub fn value<'a>(query: &'a str, name: &str) -> Option<Cow<'a, str>> {
    form_urlencoded::parse(query.as_bytes()).filter(|(n, _)| n == name).map(|(_, value)| value).last()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use actix_web::web;

    use super::*;

    /// Whatever the query, each name reads what a map of the query (`web::Query`) holds.
    #[test]
    fn names_read_what_a_map_of_the_query_holds() {
        for query in [
            "",
            "limit=200",
            "limit=1&limit=2",
            "title=A+b%20c&link=%2Fx&%74oken=k",
            "token=&token=k2&x",
            "bad=%zz%&title=%E2%82%AC&&=&limit",
            "title=%FF",
        ] {
            let map = web::Query::<HashMap<String, String>>::from_query(query).unwrap().into_inner();
            let names = ["title", "link", "limit", "token", "x", "bad"];
            let read = named(query, names);
            for (name, read) in names.iter().zip(read) {
                assert_eq!(read.as_ref(), map.get(*name), "{query:?}: {name}");
                assert_eq!(
                    value(query, name).map(Cow::into_owned).as_ref(),
                    map.get(*name),
                    "{query:?}: {name}"
                );
            }
        }
    }
}
