//! A request's query parameters read by name, without building a map: the busiest routes
//! (a list, a feed, a sitemap, a key in `?token=`) read a few names, and a map of every
//! parameter cost an allocation per name and per value, and a hash of each, on each
//! request (with `serde_urlencoded` in between, 7% of a kept list page's CPU).
//!
//! Decoding is `form_urlencoded`'s, as `web::Query` does it (`+` is a space, bad percent
//! escapes and bytes are kept as text), and a name given twice counts by its last value,
//! as in a map of the query.

use std::borrow::Cow;

use cms_core::query::ListParams;

/// The value of each of `names` (in their order; `None` for one not sent).
pub fn named<const N: usize>(query: &str, names: [&str; N]) -> [Option<String>; N] {
    let mut found: [Option<&str>; N] = [None; N];
    for (name, value) in raw_pairs(query) {
        if let Some(at) = names.iter().position(|wanted| *wanted == decoded(name)) {
            found[at] = Some(value);
        }
    }
    found.map(|value| value.map(|value| decoded(value).into_owned()))
}

/// The value of `name`. Only the names are decoded on the way (most are plain text, read
/// in place); the value found, once.
pub fn value<'a>(query: &'a str, name: &str) -> Option<Cow<'a, str>> {
    raw_pairs(query).filter(|(raw, _)| decoded(raw) == name).map(|(_, value)| value).last().map(decoded)
}

/// The decoded pairs of a query string, in their order, for a route that reads many
/// names: one allocation for the list, none for a name or value without escapes.
pub struct Pairs<'a> {
    pairs: Vec<(Cow<'a, str>, Cow<'a, str>)>,
}

impl<'a> Pairs<'a> {
    pub fn of(query: &'a str) -> Self {
        Self { pairs: raw_pairs(query).map(|(name, value)| (decoded(name), decoded(value))).collect() }
    }

    /// The value of `name` (its last, as in a map of the query).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs.iter().rev().find(|(n, _)| n == name).map(|(_, value)| &**value)
    }

    /// A list's parameters (see [`list_params`]).
    pub fn list_params(&self) -> ListParams {
        list_params(self.pairs.iter().map(|(name, value)| (&**name, &**value)))
    }
}

/// A query read by name: a map of it, or its [`Pairs`].
pub trait ByName {
    /// The value of `name` (its last).
    fn value_of(&self, name: &str) -> Option<&str>;
}

impl ByName for Pairs<'_> {
    fn value_of(&self, name: &str) -> Option<&str> {
        self.get(name)
    }
}

impl<S: std::hash::BuildHasher> ByName for std::collections::HashMap<String, String, S> {
    fn value_of(&self, name: &str) -> Option<&str> {
        self.get(name).map(String::as_str)
    }
}

/// A list's parameters from a query's `(name, value)` pairs, as a map of the query holds
/// them: a later pair wins, also among filters, which are kept in the order of their
/// names (so that the same filters name the same kept page, whatever their order).
pub fn list_params<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> ListParams {
    let mut params = ListParams::from_pairs(pairs);
    // A stable sort keeps each name's values in the order sent: the last one stays.
    params.filters.sort_by(|a, b| a.0.cmp(&b.0));
    params.filters.dedup_by(|later, kept| {
        let same = later.0 == kept.0;
        if same {
            std::mem::swap(&mut later.1, &mut kept.1);
        }
        same
    });
    params
}

/// The pairs of `query` as sent: split at `&` (empty ones skipped), then at the first `=`
/// (a pair without one has an empty value), as `form_urlencoded::parse` splits them.
fn raw_pairs(query: &str) -> impl Iterator<Item = (&str, &str)> {
    query.split('&').filter(|pair| !pair.is_empty()).map(|pair| pair.split_once('=').unwrap_or((pair, "")))
}

/// A name or value decoded as `form_urlencoded` decodes it: `+` is a space, then percent
/// escapes, then UTF-8 with bad bytes replaced. Borrowed when there is nothing to decode.
fn decoded(raw: &str) -> Cow<'_, str> {
    if !raw.bytes().any(|byte| byte == b'%' || byte == b'+') {
        return Cow::Borrowed(raw);
    }
    let spaced = raw.replace('+', " ");
    let bytes: Vec<u8> = percent_encoding::percent_decode(spaced.as_bytes()).collect();
    Cow::Owned(String::from_utf8_lossy(&bytes).into_owned())
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
            "title=a=b&=x&link==&limit=%2&x=%%41",
            "ti%74le=1&title=2&t+itle=3&x=a+%2B+b",
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

    /// A list's parameters read from the pairs are those of a map of the query: the last
    /// value of a name, filters in the order of their names.
    #[test]
    fn a_lists_parameters_are_those_of_a_map_of_the_query() {
        for query in [
            "per_page=20&page=50&orderBy=title&direction=asc",
            "filter%5Brating%5D%5Bgte%5D=4&per_page=20&filter[a]=1&filter[rating][gte]=5",
            "tags=rust&tags=go&page=2&page=3&lang=fr&fallback=none&x=1",
            "filter[b]=2&filter[a]=1&filter[b]=3&fields=title,slug&expand=author&offset=%31",
            "",
        ] {
            let map = web::Query::<HashMap<String, String>>::from_query(query).unwrap().into_inner();
            let pairs = Pairs::of(query);
            let from_map = list_params(map.iter().map(|(name, value)| (name.as_str(), value.as_str())));
            assert_eq!(format!("{:?}", pairs.list_params()), format!("{from_map:?}"), "{query:?}");
            for name in ["lang", "fallback", "page", "tags", "x", "missing"] {
                assert_eq!(pairs.get(name), map.get(name).map(String::as_str), "{query:?}: {name}");
            }
        }
    }
}
