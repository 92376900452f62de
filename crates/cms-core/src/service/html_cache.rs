//! Rendered single items (HTML and frontmatter), kept per file version within a byte
//! budget.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use crate::document::Frontmatter;

/// What a single read needs beyond the index: the body as HTML and the whole frontmatter.
#[derive(Debug)]
pub(super) struct Rendered {
    pub(super) html: String,
    pub(super) fm: Frontmatter,
    /// Roughly what it takes in memory, for the budget.
    pub(super) size: usize,
}

impl Rendered {
    /// `source_len`: the file's size, a fair upper bound of the parsed frontmatter's.
    pub(super) fn new(html: String, fm: Frontmatter, source_len: usize) -> Self {
        Self { size: html.len() + source_len, html, fm }
    }
}

/// Which file: collection number and filename.
type Key = (usize, Arc<str>);

/// A first-in, first-out cache: entries are keyed by file and carry the ETag they were
/// rendered from, so a changed file is never answered from an old rendering.
pub(super) struct HtmlCache {
    entries: HashMap<Key, (String, Arc<Rendered>)>,
    /// Insertion order, for eviction.
    order: VecDeque<Key>,
    bytes: usize,
    budget: usize,
}

impl HtmlCache {
    pub(super) fn new(budget: usize) -> Self {
        Self { entries: HashMap::new(), order: VecDeque::new(), bytes: 0, budget }
    }

    pub(super) fn get(&self, collection: usize, name: &str, etag: &str) -> Option<Arc<Rendered>> {
        let (cached_etag, html) = self.entries.get(&(collection, Arc::from(name)))?;
        (cached_etag == etag).then(|| Arc::clone(html))
    }

    pub(super) fn put(&mut self, collection: usize, name: &str, etag: &str, rendered: Arc<Rendered>) {
        let size = rendered.size + name.len() + etag.len();
        if size > self.budget {
            return;
        }
        let key: Key = (collection, Arc::from(name));
        match self.entries.insert(key.clone(), (etag.to_owned(), rendered)) {
            Some((old_etag, old)) => self.bytes -= old.size + name.len() + old_etag.len(),
            None => self.order.push_back(key),
        }
        self.bytes += size;
        while self.bytes > self.budget {
            let Some(oldest) = self.order.pop_front() else { break };
            if let Some((etag, rendered)) = self.entries.remove(&oldest) {
                self.bytes -= rendered.size + oldest.1.len() + etag.len();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn html(text: &str) -> Arc<Rendered> {
        Arc::new(Rendered { html: text.to_owned(), fm: Frontmatter::new(), size: text.len() })
    }

    fn got(cache: &HtmlCache, name: &str, etag: &str) -> Option<String> {
        cache.get(0, name, etag).map(|r| r.html.clone())
    }

    #[test]
    fn stale_versions_miss_and_the_budget_holds() {
        let mut cache = HtmlCache::new(100);
        cache.put(0, "a.md", "e1", html("<p>a</p>"));
        assert_eq!(got(&cache, "a.md", "e1").as_deref(), Some("<p>a</p>"));
        assert!(cache.get(0, "a.md", "e2").is_none(), "another version misses");
        assert!(cache.get(1, "a.md", "e1").is_none(), "another collection misses");
        cache.put(0, "a.md", "e2", html("<p>b</p>"));
        assert_eq!(got(&cache, "a.md", "e2").as_deref(), Some("<p>b</p>"));
        for i in 0..20 {
            cache.put(0, &format!("{i}.md"), "e", html(&"x".repeat(20)));
        }
        assert!(cache.bytes <= 100);
        assert!(cache.get(0, "19.md", "e").is_some(), "the newest stays");
        assert!(cache.get(0, "a.md", "e2").is_none(), "the oldest went");
    }
}
