use super::*;
use crate::dates::SiteZone;
use crate::ports::StoredFile;

/// A rough measure of a write's cost at 10,000 items (run with `--release --ignored`):
/// each file rewritten with a later `modified`, as an API write does.
#[test]
#[ignore = "a measure, not a check"]
fn rewrite_cost_at_10000_items() {
    let zone = SiteZone::utc();
    let parsed = |i: usize, token: u64| {
        let name = ItemFilename::parse(&format!("2024-01-{:02}-post-{i}.md", i % 28 + 1)).unwrap();
        let bytes = format!(
            "---\ntitle: Post {i}\ndate: 2024-{:02}-{:02}\ntags: [t{}, t{}]\n---\nbody {token}\n",
            i % 12 + 1,
            i % 28 + 1,
            i % 20,
            (i * 7) % 20
        )
        .into_bytes();
        let stamp = FileStamp {
            name: name.as_str().into(),
            size: bytes.len() as u64,
            modified: token as i64,
            change_token: token,
        };
        let item =
            IndexedItem::from_file(&name, &StoredFile { bytes, stamp: stamp.clone() }, Reading::plain(&zone));
        (name, stamp, item)
    };
    let n = 10_000;
    let entries = (0..n).map(|i| parsed(i, i as u64)).map(|(_, s, p)| (s, held(p))).collect();
    let mut index = CollectionIndex::build(entries, 0);
    let writes: Vec<_> = (0..20_000).map(|k| parsed((k * 7919) % n, (n + k) as u64)).collect();
    let started = std::time::Instant::now();
    for (name, stamp, item) in writes {
        index.upsert(&name, stamp, item);
    }
    let per = started.elapsed() / 20_000;
    eprintln!("upsert of an existing item at {n} items: {per:?} each");
}
