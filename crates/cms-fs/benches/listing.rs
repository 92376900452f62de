//! `cargo xtask bench`: how long listing a collection takes on the file adapter, cold
//! and warm, and with a hostile frontmatter file present. Prints the figures and fails
//! when a target is missed.
//!
//! The facade keeps an index: the cold list builds it (scan, then every file read and
//! parsed once), a warm list reads only the index. An outside edit reaches the index
//! through the change feed in the server; here it is applied with `Cms::rescan` (a fresh
//! scan compared with the index, and the changed files re-read), and the figures after an
//! outside edit time that rescan together with the list.

use std::fs;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;

use cms_core::config::SiteConfig;
use cms_core::query::ListQuery;
use cms_core::service::{Cms, Viewer};
use cms_core::testing::{FixedClock, RecordingEvents};

const ITEMS: usize = 5_000;

struct Target {
    name: &'static str,
    measured: Duration,
    limit: Duration,
}

fn main() {
    let site = tempfile::tempdir().unwrap();
    let posts = site.path().join("content/posts");
    fs::create_dir_all(&posts).unwrap();
    for i in 0..ITEMS {
        let text = format!(
            "---\ntitle: Post number {i}\ndate: 2025-{:02}-{:02}\nstatus: published\ntags: [t{}, common]\nauthor: a{}\n---\n\n{}",
            i % 12 + 1,
            i % 28 + 1,
            i % 20,
            i % 7,
            "Some words of body text for the excerpt. ".repeat(20)
        );
        fs::write(posts.join(format!("post-{i}.md")), text).unwrap();
    }
    // The adapters move their file I/O to the runtime's blocking pool.
    let runtime = Runtime::new().unwrap();
    let cms = facade(site.path());
    let collection = cms.collection("posts").unwrap().clone();
    let query = ListQuery { per_page: Some(20), tags: vec!["t3".into()], ..Default::default() };
    let list = || async {
        let page = cms.list_items(&collection, &query, &Viewer::Anonymous).await.unwrap();
        assert!(page.total_items >= ITEMS / 20);
    };
    // An outside edit applied (what the change feed does in the server), then a list.
    let rescan_and_list = || async {
        cms.upkeep().rescan(&collection).await.unwrap();
        list().await;
    };

    let cold = time(&runtime, list);
    let warm = median((0..21).map(|_| time(&runtime, list)).collect());
    fs::write(posts.join("post-7.md"), "---\ntitle: Changed\ntags: [t3]\n---\n").unwrap();
    let one_changed = time(&runtime, rescan_and_list);

    let values = vec!["1"; 8000].join(",");
    let refs = vec!["*a"; 8000].join(",");
    fs::write(posts.join("quadratic.md"), format!("---\nanchor: &a [{values}]\nrefs: [{refs}]\n---\n"))
        .unwrap();
    let with_quadratic = time(&runtime, rescan_and_list);

    let targets = [
        Target {
            name: "cold list, 5,000 items (reads every file once)",
            measured: cold,
            limit: Duration::from_secs(3),
        },
        Target {
            name: "warm list, 5,000 items (index read only)",
            measured: warm,
            limit: Duration::from_millis(50),
        },
        Target {
            name: "rescan + list after one outside edit",
            measured: one_changed,
            limit: Duration::from_millis(60),
        },
        Target {
            name: "rescan + list, quadratic-alias item (N = M = 8000)",
            measured: with_quadratic,
            limit: Duration::from_secs(1),
        },
    ];
    let mut missed = false;
    for t in &targets {
        let ok = t.measured <= t.limit;
        missed |= !ok;
        println!(
            "{:<52} {:>9.2} ms  (target {:>6} ms) {}",
            t.name,
            t.measured.as_secs_f64() * 1000.0,
            t.limit.as_millis(),
            if ok { "ok" } else { "MISSED" }
        );
    }
    assert!(!missed, "a performance target was missed");
}

fn facade(site: &std::path::Path) -> Cms {
    let config = SiteConfig::from_yaml(
        "site: {name: B, url: 'https://e.com'}\ncollections:\n  - {label: Posts, path: content/posts}\n",
    )
    .unwrap();
    let ports = cms_fs::site_ports(
        site,
        Arc::new(RecordingEvents::default()),
        Arc::new(FixedClock::at_unix(0)),
        Arc::new(cms_core::testing::MemoryWebhooks::default()),
    );
    Cms::builder(&config, ports).build()
}

/// How long one run of `f` takes on the runtime.
fn time<F: Future<Output = ()>>(runtime: &Runtime, f: impl Fn() -> F) -> Duration {
    let started = Instant::now();
    runtime.block_on(f());
    started.elapsed()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}
