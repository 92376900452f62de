//! Cases every adapter of a port must pass. Each adapter crate calls these from its own
//! tests with a factory for a fresh, empty adapter.

use crate::account::{KeyRecord, Role, User};
use crate::collection::Collection;
use crate::error::CoreError;
use crate::images::{ImagesConfig, VariantKey, content_hash};
use crate::ports::{
    ContentStore, KeepSnapshot, KeyStore, ResourceStore, UserStore, VariantSource, VariantStore,
    VersionStamp, VersionStore,
};
use crate::resource::{FileName, ResourceFolder, Subpath};
use crate::testing::fixtures::{item_name as name, posts};

/// Runs every `ContentStore` case.
pub async fn content_store(store: &dyn ContentStore) {
    let c = posts();
    assert!(store.scan(&c).await.unwrap().is_empty(), "a new store is empty");

    let hello = name("2024-01-02-hello.md");
    let stamp = store.create(&c, &hello, b"one").await.unwrap();
    assert_eq!((stamp.name.as_str(), stamp.size), ("2024-01-02-hello.md", 3));
    assert!(
        matches!(store.create(&c, &hello, b"two").await, Err(CoreError::Conflict(_))),
        "create never overwrites"
    );
    assert_eq!(store.read(&c, &hello).await.unwrap().unwrap().bytes, b"one");

    let scanned = store.scan(&c).await.unwrap();
    assert_eq!(scanned.len(), 1);
    assert_eq!(scanned[0], stamp, "a scan reports the stamp the write returned");

    let replaced = store.replace(&c, &hello, b"three!", &stamp).await.unwrap();
    assert_ne!(replaced.change_token, stamp.change_token, "a replace changes the token");
    assert_eq!(store.read(&c, &hello).await.unwrap().unwrap().bytes, b"three!");
    assert_eq!(store.scan(&c).await.unwrap()[0].size, 6);
    assert_eq!(store.read(&c, &hello).await.unwrap().unwrap().stamp, replaced, "a read gives the stamp");

    // Conditional: a stamp from before the last write is stale, and nothing is written.
    assert!(
        matches!(store.replace(&c, &hello, b"lost", &stamp).await, Err(CoreError::Stale(_))),
        "a replace with a stale stamp is refused"
    );
    assert_eq!(store.read(&c, &hello).await.unwrap().unwrap().bytes, b"three!");
    let current = store.read(&c, &hello).await.unwrap().unwrap().stamp;
    let again = store.replace(&c, &hello, b"four", &current).await.unwrap();
    assert_eq!(store.read(&c, &hello).await.unwrap().unwrap().bytes, b"four");

    assert!(store.read(&c, &name("missing.md")).await.unwrap().is_none());
    assert!(matches!(store.delete(&c, &name("missing.md")).await, Err(CoreError::NotFound(_))));
    store.delete(&c, &hello).await.unwrap();
    assert!(store.read(&c, &hello).await.unwrap().is_none());
    assert!(store.scan(&c).await.unwrap().is_empty());
    assert!(
        matches!(store.replace(&c, &hello, b"back", &again).await, Err(CoreError::Stale(_))),
        "a replace of a file deleted since it was read is stale"
    );
    assert!(store.read(&c, &hello).await.unwrap().is_none(), "a replace never creates");

    let other = Collection { index: 1, path: "content/pages".into(), ..posts() };
    let about = name("about.md");
    let about_stamp = store.create(&other, &about, b"x").await.unwrap();
    assert!(store.scan(&c).await.unwrap().is_empty(), "collections do not see each other's files");

    // A batch of stats is each file's stat, in the order asked.
    let kept = store.create(&other, &name("kept.md"), b"yz").await.unwrap();
    let batch = [name("kept.md"), name("missing.md"), about];
    let stamps: Vec<_> = store.stat_many(&other, &batch).await.into_iter().map(Result::unwrap).collect();
    assert_eq!(stamps, [Some(kept), None, Some(about_stamp)]);
    assert!(store.stat_many(&other, &[]).await.is_empty());
}

/// Runs every `UserStore` + `KeyStore` case.
pub async fn account_store(users: &dyn UserStore, keys: &dyn KeyStore) {
    assert!(users.list_users().await.unwrap().is_empty());
    let ann = User { email: "ann@example.com".into(), role: Role::Editor, created: 1 };
    users.put_user(ann.clone()).await.unwrap();
    users.put_user(User { role: Role::Owner, ..ann.clone() }).await.unwrap();
    assert_eq!(users.list_users().await.unwrap().len(), 1, "put replaces by email");
    assert_eq!(users.find_user("ann@example.com").await.unwrap().unwrap().role, Role::Owner);
    assert!(users.find_user("bob@example.com").await.unwrap().is_none());

    let key = |id: &str, email: &str| KeyRecord {
        id: id.into(),
        name: "ci".into(),
        email: email.into(),
        hash: format!("hash-{id}"),
        created: 2,
    };
    keys.add_key(key("k1", "ann@example.com")).await.unwrap();
    keys.add_key(key("k2", "ann@example.com")).await.unwrap();
    keys.add_key(key("k3", "bob@example.com")).await.unwrap();
    assert_eq!(keys.find_key_by_hash("hash-k2").await.unwrap().unwrap().id, "k2");
    assert_eq!(keys.remove_keys(&|k| k.id == "k2").await.unwrap(), 1);
    assert!(keys.find_key_by_hash("hash-k2").await.unwrap().is_none(), "revocation is immediate");
    assert_eq!(keys.remove_keys(&|k| k.email == "ann@example.com").await.unwrap(), 1);
    assert_eq!(keys.list_keys().await.unwrap().len(), 1);

    assert!(users.remove_user("ann@example.com").await.unwrap());
    assert!(!users.remove_user("ann@example.com").await.unwrap());
}

/// Runs every `VersionStore` case.
pub async fn version_store(store: &dyn VersionStore) {
    let c = posts();
    let item = name("2024-01-02-hello.md");
    assert!(store.list_versions(&c, &item).await.unwrap().is_empty());
    assert!(store.items_with_history(&c).await.unwrap().is_empty());

    store.save_version(&c, &item, 100, b"first").await.unwrap();
    store.save_version(&c, &item, 101, b"second!").await.unwrap();
    assert!(
        matches!(store.save_version(&c, &item, 101, b"again").await, Err(CoreError::Conflict(_))),
        "a timestamp is never overwritten"
    );
    let mut versions = store.list_versions(&c, &item).await.unwrap();
    versions.sort_by_key(|v| v.timestamp);
    assert_eq!(
        versions,
        [VersionStamp { timestamp: 100, size: 5 }, VersionStamp { timestamp: 101, size: 7 }]
    );
    assert_eq!(store.read_version(&c, &item, 101).await.unwrap().unwrap(), b"second!");
    assert!(store.read_version(&c, &item, 999).await.unwrap().is_none());
    assert_eq!(store.items_with_history(&c).await.unwrap(), ["2024-01-02-hello.md"]);

    store.remove_version(&c, &item, 100).await.unwrap();
    assert_eq!(store.list_versions(&c, &item).await.unwrap().len(), 1);

    // Keeping snapshots: a repeat of the newest adds none, a second one within the same
    // second takes the next free timestamp, and the oldest beyond `keep` go.
    let kept = name("2024-01-03-kept.md");
    let keep = |bytes: &'static [u8], now| KeepSnapshot { bytes, now, keep: 2 };
    store.keep_snapshot(&c, &kept, keep(b"one", 200)).await.unwrap();
    store.keep_snapshot(&c, &kept, keep(b"one", 205)).await.unwrap();
    store.keep_snapshot(&c, &kept, keep(b"two", 200)).await.unwrap();
    assert_eq!(sorted(store.version_timestamps(&c, &kept).await.unwrap()), [200, 201]);
    assert_eq!(store.read_version(&c, &kept, 201).await.unwrap().unwrap(), b"two");
    store.keep_snapshot(&c, &kept, keep(b"three", 300)).await.unwrap();
    assert_eq!(
        sorted(store.version_timestamps(&c, &kept).await.unwrap()),
        [201, 300],
        "the oldest beyond `keep` went"
    );
    assert_eq!(store.read_version(&c, &kept, 300).await.unwrap().unwrap(), b"three");
    let other = Collection { index: 1, path: "content/pages".into(), ..posts() };
    assert!(store.list_versions(&other, &item).await.unwrap().is_empty(), "histories are per collection");
    assert!(store.items_with_history(&other).await.unwrap().is_empty());
}

fn sorted(mut timestamps: Vec<i64>) -> Vec<i64> {
    timestamps.sort_unstable();
    timestamps
}

/// Runs every `ResourceStore` case.
pub async fn resource_store(store: &dyn ResourceStore) {
    let folder = ResourceFolder {
        index: 0,
        label: "Uploads".into(),
        path: "media/uploads".into(),
        url: "/media".into(),
    };
    let root = Subpath::root();
    let file = |n: &str| FileName::parse(n).unwrap();
    let dir = |d: &str| Subpath::parse(d).unwrap();
    let upload = async |d: &Subpath, n: &str, bytes: &[u8]| {
        let mut sink = store.begin_upload().await.unwrap();
        sink.write(&bytes[..bytes.len() / 2]).await.unwrap();
        sink.write(&bytes[bytes.len() / 2..]).await.unwrap();
        sink.commit(&folder, d, &file(n)).await.unwrap()
    };

    assert!(store.list(&folder, &root).await.unwrap_or_default().is_empty());
    let first = upload(&root, "hero.jpg", b"one").await;
    assert_eq!((first.name.as_str(), first.size, first.is_dir), ("hero.jpg", 3, false));
    let second = upload(&root, "hero.jpg", b"two!").await;
    assert_eq!(second.name.as_str(), "hero-1.jpg", "an upload never overwrites");
    assert_eq!(upload(&root, "hero.jpg", b"3").await.name.as_str(), "hero-2.jpg");
    let abandoned = store.begin_upload().await.unwrap();
    drop(abandoned);

    store.create_dir(&folder, &root, &file("2026")).await.unwrap();
    assert!(matches!(store.create_dir(&folder, &root, &file("2026")).await, Err(CoreError::Conflict(_))));
    assert!(matches!(store.create_dir(&folder, &dir("nope"), &file("x")).await, Err(CoreError::NotFound(_))));
    let mut names: Vec<(String, bool)> = store
        .list(&folder, &root)
        .await
        .unwrap()
        .into_iter()
        .map(|s| (s.name.as_str().to_owned(), s.is_dir))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            ("2026".into(), true),
            ("hero-1.jpg".into(), false),
            ("hero-2.jpg".into(), false),
            ("hero.jpg".into(), false)
        ]
    );
    assert!(matches!(store.list(&folder, &dir("missing")).await, Err(CoreError::NotFound(_))));

    assert_eq!(store.read_head(&folder, &root, &file("hero-1.jpg"), 2).await.unwrap(), b"tw");
    let (mut reader, stat) = store.open(&folder, &root, &file("hero-1.jpg")).await.unwrap().unwrap();
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut reader, &mut bytes).unwrap();
    assert_eq!((bytes.as_slice(), stat.size), (b"two!".as_slice(), 4));
    assert_eq!(store.read_all(&folder, &root, &file("hero-1.jpg"), 4).await.unwrap().unwrap(), b"two!");
    assert!(matches!(
        store.read_all(&folder, &root, &file("hero-1.jpg"), 3).await,
        Err(CoreError::TooLarge(_))
    ));
    assert!(store.read_all(&folder, &root, &file("missing.jpg"), 9).await.unwrap().is_none());
    assert!(store.open(&folder, &root, &file("missing.jpg")).await.unwrap().is_none());
    assert!(store.open(&folder, &root, &file("2026")).await.unwrap().is_none(), "a folder is not a file");

    store.rename(&folder, (&root, &file("hero.jpg")), (&dir("2026"), &file("moved.jpg"))).await.unwrap();
    assert!(store.stat(&folder, &root, &file("hero.jpg")).await.unwrap().is_none());
    assert_eq!(store.stat(&folder, &dir("2026"), &file("moved.jpg")).await.unwrap().unwrap().size, 3);
    let onto_existing =
        store.rename(&folder, (&root, &file("hero-1.jpg")), (&root, &file("hero-2.jpg"))).await;
    assert!(matches!(onto_existing, Err(CoreError::Conflict(_))));
    let missing = store.rename(&folder, (&root, &file("gone.jpg")), (&root, &file("x.jpg"))).await;
    assert!(matches!(missing, Err(CoreError::NotFound(_))));

    assert!(
        matches!(store.delete(&folder, &root, &file("2026")).await, Err(CoreError::Conflict(_))),
        "not empty"
    );
    store.delete(&folder, &dir("2026"), &file("moved.jpg")).await.unwrap();
    store.delete(&folder, &root, &file("2026")).await.unwrap();
    assert!(matches!(store.delete(&folder, &root, &file("2026")).await, Err(CoreError::NotFound(_))));
}

/// Runs every `VariantStore` case.
pub async fn variant_store(store: &dyn VariantStore) {
    let folder = ResourceFolder {
        index: 0,
        label: "Uploads".into(),
        path: "media/uploads".into(),
        url: "/media".into(),
    };
    let (root, year) = (Subpath::root(), Subpath::parse("2026").unwrap());
    let (hero, moved) = (FileName::parse("hero.jpg").unwrap(), FileName::parse("moved.jpg").unwrap());
    let source = VariantSource { folder: &folder, dir: &root, name: &hero };
    let config = ImagesConfig::default();
    let transform = |query: &str| {
        let (k, v) = query.split_once('=').unwrap();
        config.parse_transform(&[(k.to_owned(), v.to_owned())]).unwrap().unwrap()
    };
    let spec = |query: &str| config.render_spec(&transform(query), "image/jpeg", None);
    let (old, new) = (content_hash(b"old"), content_hash(b"new"));
    let key = |hash: &str, query: &str| VariantKey::new(hash, &spec(query));
    let read = async |source: VariantSource<'_>, key: &VariantKey| {
        let (mut reader, size) = store.open(source, key).await.unwrap()?;
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut reader, &mut bytes).unwrap();
        assert_eq!(bytes.len() as u64, size);
        Some(bytes)
    };

    assert!(store.list(source).await.unwrap().is_empty());
    assert_eq!(read(source, &key(&old, "w=320")).await, None);
    store.put(source, &key(&old, "w=320"), b"small").await.unwrap();
    store.put(source, &key(&old, "w=640"), b"larger").await.unwrap();
    assert_eq!(read(source, &key(&old, "w=320")).await.as_deref(), Some(b"small".as_slice()));
    let mut listed = store.list(source).await.unwrap();
    listed.sort();
    assert_eq!(listed, [(key(&old, "w=320"), 5), (key(&old, "w=640"), 6)]);

    // A variant of new content replaces every variant of the old.
    store.put(source, &key(&new, "w=320"), b"fresh").await.unwrap();
    assert_eq!(store.list(source).await.unwrap(), [(key(&new, "w=320"), 5)]);

    // Variants follow their source, and go with it.
    let target = VariantSource { folder: &folder, dir: &year, name: &moved };
    store.rename(source, target).await.unwrap();
    assert!(store.list(source).await.unwrap().is_empty());
    assert_eq!(read(target, &key(&new, "w=320")).await.as_deref(), Some(b"fresh".as_slice()));
    store.rename(source, target).await.unwrap();
    assert_eq!(
        store.list(target).await.unwrap().len(),
        1,
        "renaming a source without variants changes nothing"
    );
    store.remove_all(target).await.unwrap();
    assert!(store.list(target).await.unwrap().is_empty());
    store.remove_all(target).await.unwrap();
}
