//! Two connections to one bucket behave as two nodes of one site.

use std::time::{Duration, Instant};

use cms_core::CoreError;
use cms_core::account::KeyRecord;
use cms_core::ports::{ChangeOrigin, ChangeSource, ContentStore, KeyStore, StorageChange};
use cms_core::testing::fixtures::{item_name as name, posts};

use crate::node;

async fn two_nodes() -> Option<(cms_s3::S3Site, cms_s3::S3Site)> {
    let config = cms_s3::testing::fresh_bucket()?;
    Some((node(&config), node(&config)))
}

#[tokio::test]
async fn a_write_on_one_node_reaches_the_other_through_the_journal_not_its_own() {
    let Some((a, b)) = two_nodes().await else { return };
    let collections = [posts()];
    let mut feed_a = a.change_source().subscribe(&collections).unwrap().expect("a feed");
    let mut feed_b = b.change_source().subscribe(&collections).unwrap().expect("a feed");

    let started = Instant::now();
    a.content_store().create(&posts(), &name("hello.md"), b"---\ntitle: Hi\n---\n").await.unwrap();
    let batch = tokio::time::timeout(Duration::from_secs(5), feed_b.next_batch()).await.expect("within 5 s");
    assert_eq!(
        batch,
        Some(vec![StorageChange::Items {
            collection: 0,
            names: vec!["hello.md".into()],
            origin: ChangeOrigin::OtherNode
        }])
    );
    assert!(started.elapsed() < Duration::from_secs(2), "seen after {:?}", started.elapsed());

    // The writer's own feed stays quiet: its index has the write already.
    let own = tokio::time::timeout(Duration::from_millis(600), feed_a.next_batch()).await;
    assert!(own.is_err(), "the writing node was told of its own write: {own:?}");
}

#[tokio::test]
async fn a_replace_based_on_an_old_read_is_refused_on_every_node() {
    let Some((a, b)) = two_nodes().await else { return };
    let (store_a, store_b) = (a.content_store(), b.content_store());
    let (c, item) = (posts(), name("race.md"));
    store_a.create(&c, &item, b"v1").await.unwrap();
    let read_a = store_a.read(&c, &item).await.unwrap().unwrap();
    let read_b = store_b.read(&c, &item).await.unwrap().unwrap();
    assert_eq!(read_a.stamp.change_token, read_b.stamp.change_token, "both nodes name a version alike");

    store_b.replace(&c, &item, b"v2 from b", &read_b.stamp).await.unwrap();
    let late = store_a.replace(&c, &item, b"v2 from a", &read_a.stamp).await;
    assert!(matches!(late, Err(CoreError::Stale(_))), "{late:?}");
    assert_eq!(store_a.read(&c, &item).await.unwrap().unwrap().bytes, b"v2 from b", "b's write is kept");

    // Concurrent replaces from one read: exactly one wins.
    let base = store_a.read(&c, &item).await.unwrap().unwrap().stamp;
    let attempts = (0..8).map(|i| {
        let store = if i % 2 == 0 { store_a.clone() } else { store_b.clone() };
        let (c, item, base) = (c.clone(), item.clone(), base.clone());
        tokio::spawn(async move { store.replace(&c, &item, format!("w{i}").as_bytes(), &base).await })
    });
    let mut won = 0;
    for attempt in attempts {
        match attempt.await.unwrap() {
            Ok(_) => won += 1,
            Err(CoreError::Stale(_)) => {}
            Err(other) => panic!("{other}"),
        }
    }
    assert_eq!(won, 1, "one conditional write wins, the rest are refused");
}

#[tokio::test]
async fn a_key_revoked_on_one_node_stops_working_on_the_other_within_the_bound() {
    let Some((a, b)) = two_nodes().await else { return };
    let (keys_a, keys_b) = (a.accounts(), b.accounts());
    let key = KeyRecord {
        id: "k1".into(),
        name: "ci".into(),
        email: "ann@example.com".into(),
        hash: "ab".repeat(32),
        created: 1,
    };
    keys_a.add_key(key.clone()).await.unwrap();
    assert_eq!(keys_b.find_key_by_hash(&key.hash).await.unwrap().map(|k| k.id), Some("k1".into()));

    let revoked = Instant::now();
    assert_eq!(keys_a.remove_keys(&|k: &KeyRecord| k.id == "k1").await.unwrap(), 1);
    while keys_b.find_key_by_hash(&key.hash).await.unwrap().is_some() {
        assert!(revoked.elapsed() < Duration::from_secs(2), "still accepted after {:?}", revoked.elapsed());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // state_max_age_ms is 200 in the test configuration.
    assert!(revoked.elapsed() < Duration::from_millis(1000), "took {:?}", revoked.elapsed());
}

#[tokio::test]
async fn keys_added_on_two_nodes_at_once_are_all_kept() {
    let Some((a, b)) = two_nodes().await else { return };
    let tasks = (0..12).map(|i| {
        let accounts = if i % 2 == 0 { a.accounts() } else { b.accounts() };
        tokio::spawn(async move {
            let key = KeyRecord {
                id: format!("k{i}"),
                name: "n".into(),
                email: "ann@example.com".into(),
                hash: format!("{i:064}"),
                created: 1,
            };
            accounts.add_key(key).await
        })
    });
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    assert_eq!(a.accounts().list_keys().await.unwrap().len(), 12, "no add was lost");
}

#[tokio::test]
async fn a_license_installed_on_one_node_is_read_again_by_the_other_when_the_journal_says_so() {
    use cms_core::ports::LicenseSource;
    let Some((a, b)) = two_nodes().await else { return };
    let mut feed_b = b.change_source().subscribe(&[posts()]).unwrap().expect("a feed");
    assert!(b.license().current().await.unwrap().is_none(), "kept in memory: none yet");
    a.license().install("licensee: Example\nfeatures: [json_api]\n").await.unwrap();
    let batch = tokio::time::timeout(Duration::from_secs(5), feed_b.next_batch()).await.expect("within 5 s");
    assert_eq!(batch, Some(vec![StorageChange::License]));
    // At once, not after state_max_age: the feed forgot what b kept before telling.
    let license = b.license().current().await.unwrap().expect("the new license");
    assert_eq!(license.licensee, "Example");
}

#[tokio::test]
async fn two_nodes_keeping_one_version_at_once_agree_and_other_bytes_conflict() {
    use cms_core::ports::VersionStore;
    let Some((a, b)) = two_nodes().await else { return };
    let item = name("kept.md");
    a.version_store().save_version(&posts(), &item, 100, b"same", None).await.unwrap();
    b.version_store()
        .save_version(&posts(), &item, 100, b"same", None)
        .await
        .expect("the same snapshot is no conflict");
    let other = b.version_store().save_version(&posts(), &item, 100, b"other", None).await;
    assert!(matches!(other, Err(CoreError::Conflict(_))), "{other:?}");
    assert_eq!(a.version_store().list_versions(&posts(), &item).await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_folder_holding_an_empty_folder_is_not_empty() {
    use cms_core::ports::ResourceStore;
    use cms_core::resource::{FileName, ResourceFolder, Subpath};
    let Some((a, _)) = two_nodes().await else { return };
    let store = a.resource_store();
    let folder = ResourceFolder {
        index: 0,
        label: "Uploads".into(),
        path: "media/uploads".into(),
        url: "/media".into(),
    };
    let (root, outer, inner) =
        (Subpath::root(), FileName::parse("a").unwrap(), FileName::parse("b").unwrap());
    store.create_dir(&folder, &root, &outer).await.unwrap();
    store.create_dir(&folder, &Subpath::parse("a").unwrap(), &inner).await.unwrap();
    let refused = store.delete(&folder, &root, &outer).await;
    assert!(matches!(refused, Err(CoreError::Conflict(_))), "{refused:?}");
    assert!(
        store.stat(&folder, &Subpath::parse("a").unwrap(), &inner).await.unwrap().is_some(),
        "b is still there"
    );
    store.delete(&folder, &Subpath::parse("a").unwrap(), &inner).await.unwrap();
    store.delete(&folder, &root, &outer).await.unwrap();
    assert!(store.stat(&folder, &root, &outer).await.unwrap().is_none());
}
