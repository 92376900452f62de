//! Model-based check of the kept index on the file adapter: random sequences of API writes
//! and outside file operations (editors, `rm`, a `git checkout` touching many files, a
//! folder replaced wholesale), and after each step settles, the long-lived facade (fed by
//! the inotify change feed) answers exactly what a facade built afresh from a scan answers.

use cms_core::policy::Caller;
use cms_core::testing::fixtures::item;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cms_core::config::SiteConfig;
use cms_core::query::{ListParams, ListQuery};
use cms_core::service::{Cms, ItemUpdate, NewItem, UpdateMode, Viewer};
use cms_core::testing::{FixedClock, RecordingEvents};
use serde_json::json;

const CONFIG: &str = "site: {name: S, url: 'https://e.com', max_per_page: 500}\ncollections:\n  - {label: Posts, path: content/posts}\n";

/// A facade over the file adapters of `site`.
fn facade(site: &Path) -> Cms {
    let ports = cms_fs::site_ports(
        site,
        Arc::new(RecordingEvents::default()),
        Arc::new(FixedClock::at_unix(1_767_225_600)),
        Arc::new(cms_core::testing::MemoryWebhooks::default()),
    );
    Cms::builder(&SiteConfig::from_yaml(CONFIG).unwrap(), ports).build()
}

/// A small deterministic generator (no dependency for one test).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) as usize) % n
    }
}

fn text(title: &str, tag: usize, draft: bool) -> String {
    let status = if draft { "draft" } else { "published" };
    format!(
        "---\ntitle: {title}\nstatus: {status}\ntags: [t{tag}]\ndate: 2026-01-{:02}\n---\nBody of {title}.\n",
        tag + 1
    )
}

/// What a client can see of the collection: every item (drafts too) in each kept order, a
/// tag list and the published items, each item as its filename, title, ETag, status and
/// excerpt.
async fn view(cms: &Cms) -> Vec<Vec<String>> {
    let posts = cms.collection("posts").unwrap();
    let key = Viewer::Key(cms_core::service::Principal {
        user: cms_core::account::User {
            email: "a@b.c".into(),
            role: cms_core::account::Role::Owner,
            created: 0,
        },
        key_id: "k".into(),
        key_name: None,
    });
    let mut views = Vec::new();
    let lists =
        [("all", "date", None), ("all", "title", None), ("all", "slug", None), ("all", "date", Some("t1"))];
    for (status, order, tags) in lists.into_iter().chain([("published", "date", None)]) {
        let params = ListParams {
            status: Some(status.into()),
            order_by: Some(order.into()),
            per_page: Some("500".into()),
            tags: tags.map(str::to_owned),
            ..ListParams::default()
        };
        let page = cms.list_items(posts, &ListQuery::parse(&params).unwrap(), &key).await.unwrap();
        views.push(
            page.items
                .iter()
                .map(|s| {
                    let item = &s.item;
                    let meta = &item.meta;
                    format!(
                        "{} {:?} {} {:?} {:?}",
                        meta.filename,
                        meta.title,
                        item.etag(),
                        meta.status,
                        item.excerpt()
                    )
                })
                .collect(),
        );
    }
    views
}

/// Waits (bounded) until the long-lived facade agrees with a fresh one.
async fn settles(cms: &Cms, site: &Path, step: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let expected = view(&facade(site)).await;
        let actual = view(cms).await;
        if actual == expected {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "after {step}: the index differs from a fresh scan\nindex: {actual:?}\nscan:  {expected:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Writes a file the way an editor saves: a temporary file renamed over the target.
fn save_by_rename(folder: &Path, name: &str, content: &str) {
    let temp = folder.join(format!(".{name}.swp"));
    fs::write(&temp, content).unwrap();
    fs::rename(&temp, folder.join(name)).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_index_equals_a_fresh_scan_after_any_sequence_of_changes() {
    let site = tempfile::tempdir().unwrap();
    let folder: PathBuf = site.path().join("content/posts");
    fs::create_dir_all(&folder).unwrap();
    for i in 0..10 {
        fs::write(
            folder.join(format!("seed-{i}.md")),
            text(&format!("Seed {i}"), i % 3, i.is_multiple_of(4)),
        )
        .unwrap();
    }
    let cms = Arc::new(facade(site.path()));
    cms.upkeep().start().await.unwrap();
    let feed = cms.upkeep().subscribe().unwrap().expect("the file adapter has a change feed");
    let follower = tokio::spawn({
        let cms = Arc::clone(&cms);
        async move { cms.upkeep().follow_changes(feed).await }
    });
    let posts = cms.collection("posts").unwrap().clone();
    let mut rng = Lcg(7);
    let mut done = std::collections::BTreeSet::new();
    let mut updates = 0;

    for step in 0..40 {
        let existing: Vec<String> = fs::read_dir(&folder)
            .map(|dir| {
                dir.filter_map(|e| e.ok()?.file_name().into_string().ok())
                    .filter(|n| n.ends_with(".md"))
                    .collect()
            })
            .unwrap_or_default();
        let pick = |rng: &mut Lcg| existing.get(rng.below(existing.len().max(1))).cloned();
        let n = rng.below(1000);
        let what = match rng.below(9) {
            0 => {
                let fm = json!({"title": format!("Api {n}"), "tags": [format!("t{}", n % 3)], "status": "published"});
                let new = NewItem {
                    slug: Some(format!("api-{n}")),
                    fm: fm.as_object().unwrap().clone(),
                    ..NewItem::default()
                };
                let _ = cms.create_item(Caller::Operator, &posts, new).await; // a slug taken already is fine
                "API create"
            }
            1 => {
                // Every other one changes the status alone: the index keeps what it took
                // from the body then, and must still equal a scan.
                updates += 1;
                let (fm, what) = if updates % 2 == 0 {
                    (json!({"title": format!("Patched {n}"), "tags": ["t1"]}), "API update")
                } else {
                    (json!({"status": if n % 4 == 1 { "draft" } else { "published" }}), "API status update")
                };
                if let Some(name) = pick(&mut rng) {
                    let update = ItemUpdate {
                        mode: UpdateMode::Patch,
                        fm: fm.as_object().unwrap().clone(),
                        body: None,
                    };
                    if cms.update_item(Caller::Operator, &posts, &item(&name), update, None).await.is_ok() {
                        done.insert(what); // it may have been broken or gone
                    }
                }
                what
            }
            2 => {
                if let Some(name) = pick(&mut rng) {
                    let _ = cms.delete_item(Caller::Operator, &posts, &item(&name), None).await;
                }
                "API delete"
            }
            3 => {
                if let Some(name) = pick(&mut rng) {
                    fs::write(folder.join(name), text(&format!("Edited {n}"), n % 3, n.is_multiple_of(5)))
                        .unwrap();
                }
                "edit in place"
            }
            4 => {
                save_by_rename(
                    &folder,
                    &format!("saved-{}.md", n % 7),
                    &text(&format!("Saved {n}"), n % 3, false),
                );
                "save by rename"
            }
            5 => {
                if let Some(name) = pick(&mut rng) {
                    let _ = fs::remove_file(folder.join(name));
                }
                "rm"
            }
            6 => {
                for i in 0..50 {
                    fs::write(
                        folder.join(format!("bulk-{i}.md")),
                        text(&format!("Bulk {i} {n}"), i % 3, i.is_multiple_of(9)),
                    )
                    .unwrap();
                }
                "checkout of 50 files"
            }
            7 => {
                let next = site.path().join("content/posts.next");
                fs::create_dir_all(&next).unwrap();
                for i in 0..5 {
                    fs::write(
                        next.join(format!("swap-{i}.md")),
                        text(&format!("Swapped {i} {n}"), i % 3, false),
                    )
                    .unwrap();
                }
                fs::remove_dir_all(&folder).unwrap();
                fs::rename(&next, &folder).unwrap();
                "folder replaced wholesale"
            }
            _ => {
                fs::write(folder.join(format!("broken-{}.md", n % 3)), "---\ntitle: [unclosed\n---\n")
                    .unwrap();
                "broken file"
            }
        };
        settles(&cms, site.path(), &format!("step {step} ({what})")).await;
    }
    follower.abort();
    assert_eq!(Vec::from_iter(done), ["API status update", "API update"], "the sequence tried both");
}
