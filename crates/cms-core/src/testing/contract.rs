//! Cases every adapter of a port must pass. Each adapter crate calls these from its own
//! tests with a factory for a fresh, empty adapter.

use futures_util::TryStreamExt;
use std::io::Read as _;

use crate::account::{KeyRecord, Role, User};
use crate::collection::Collection;
use crate::error::CoreError;
use crate::images::{ImagesConfig, VariantKey, content_hash};
use crate::ports::{
    ChangeSource, ContentStore, IndexSnapshots, KeyStore, LicenseSource, PreviewKeys, ResourceReader,
    ResourceStore, SettingsStore, StateDocuments, StorageChange, UserStore, VariantSource, VariantStore,
    VersionStamp, VersionStore, VersionToSave,
};
use crate::resource::{FileName, ResourceFolder, Subpath};
use crate::testing::fixtures::{item_name as name, pages, posts};

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

    // A folder's stamp, where the store has one, stays while nothing is added or removed,
    // and moves when a file is (a start trusts its snapshot while it is the same). On a
    // disk, times move by the kernel's tick unless the folder was looked at since its last
    // change (Linux 6.13 and later): looked at here before each change.
    if let Some(empty) = store.folder_stamp(&c).await.unwrap() {
        assert_eq!(store.folder_stamp(&c).await.unwrap(), Some(empty), "nothing changed");
        store.create(&c, &hello, b"five").await.unwrap();
        let with_file = store.folder_stamp(&c).await.unwrap().expect("a stamp still");
        assert_ne!(with_file, empty, "a file added");
        store.delete(&c, &hello).await.unwrap();
        assert_ne!(store.folder_stamp(&c).await.unwrap(), Some(with_file), "a file removed");
    }

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

    // 100 as kept before authors were recorded.
    store.save_version(&c, &item, 100, b"first", None).await.unwrap();
    store.save_version(&c, &item, 101, b"second!", Some("ed@example.com")).await.unwrap();
    assert!(
        matches!(store.save_version(&c, &item, 101, b"again", None).await, Err(CoreError::Conflict(_))),
        "a timestamp is never overwritten"
    );
    let mut versions = store.list_versions(&c, &item).await.unwrap();
    versions.sort_by_key(|v| v.timestamp);
    let author = Some("ed@example.com".to_owned());
    assert_eq!(
        versions,
        [
            VersionStamp { timestamp: 100, size: 5, author: None, commit: None },
            VersionStamp { timestamp: 101, size: 7, author: author.clone(), commit: None }
        ]
    );
    assert_eq!(store.version_author(&c, &item, 101).await.unwrap(), author);
    assert_eq!(store.version_author(&c, &item, 100).await.unwrap(), None, "an older version's is unknown");
    assert_eq!(store.version_author(&c, &item, 999).await.unwrap(), None);
    assert_eq!(store.read_version(&c, &item, 101).await.unwrap().unwrap(), b"second!");
    assert!(store.read_version(&c, &item, 999).await.unwrap().is_none());
    assert_eq!(store.items_with_history(&c).await.unwrap(), ["2024-01-02-hello.md"]);

    store.remove_version(&c, &item, 100).await.unwrap();
    assert_eq!(store.list_versions(&c, &item).await.unwrap().len(), 1);
    // A version's author goes with it.
    store.remove_version(&c, &item, 101).await.unwrap();
    store.save_version(&c, &item, 101, b"second!", None).await.unwrap();
    assert_eq!(store.list_versions(&c, &item).await.unwrap()[0].author, None);

    // Keeping snapshots: a repeat of the newest adds none, a second one within the same
    // second takes the next free timestamp, and the oldest beyond `keep` go.
    let kept = name("2024-01-03-kept.md");
    let keep = |bytes: &'static [u8], now| VersionToSave { bytes, now, keep: 2, author: Some("Deploy bot") };
    store.save_current(&c, &kept, keep(b"one", 200)).await.unwrap();
    store.save_current(&c, &kept, keep(b"one", 205)).await.unwrap();
    store.save_current(&c, &kept, keep(b"two", 200)).await.unwrap();
    assert_eq!(sorted(store.version_timestamps(&c, &kept).await.unwrap()), [200, 201]);
    assert_eq!(store.read_version(&c, &kept, 201).await.unwrap().unwrap(), b"two");
    store.save_current(&c, &kept, keep(b"three", 300)).await.unwrap();
    assert_eq!(
        sorted(store.version_timestamps(&c, &kept).await.unwrap()),
        [201, 300],
        "the oldest beyond `keep` went"
    );
    assert_eq!(store.read_version(&c, &kept, 300).await.unwrap().unwrap(), b"three");
    let authors: Vec<Option<String>> =
        store.list_versions(&c, &kept).await.unwrap().into_iter().map(|v| v.author).collect();
    assert_eq!(authors, [Some("Deploy bot".to_owned()), Some("Deploy bot".to_owned())]);
    // An author is one line of plain text, however it came.
    let odd = VersionToSave { bytes: b"four", now: 400, keep: 2, author: Some(" two\nlines\u{7} ") };
    store.save_current(&c, &kept, odd).await.unwrap();
    assert_eq!(store.version_author(&c, &kept, 400).await.unwrap().as_deref(), Some("twolines"));
    // The version dropped beyond `keep` took its author with it.
    store.save_version(&c, &kept, 201, b"two", None).await.unwrap();
    assert_eq!(store.version_author(&c, &kept, 201).await.unwrap(), None);
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
    let (reader, stat) = store.open(&folder, &root, &file("hero-1.jpg")).await.unwrap().unwrap();
    assert_eq!((read(&*reader, 0..stat.size).await.as_slice(), stat.size), (b"two!".as_slice(), 4));
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

    resource_reads(store, &folder).await;
}

/// All of `range` of an open file, its chunks joined.
async fn read(reader: &dyn ResourceReader, range: std::ops::Range<u64>) -> Vec<u8> {
    let chunks: Vec<_> = reader.range(range).try_collect().await.unwrap();
    chunks.concat()
}

/// The reads of an open file by range: whole, a middle part, the last byte, a range cut at
/// the end and one past it, an empty file, and a file of many chunks (larger than any
/// adapter reads at once), each read again from the same handle.
async fn resource_reads(store: &dyn ResourceStore, folder: &ResourceFolder) {
    let root = Subpath::root();
    let store_file = async |name: &str, bytes: &[u8]| {
        let mut sink = store.begin_upload().await.unwrap();
        sink.write(bytes).await.unwrap();
        let name = FileName::parse(name).unwrap();
        sink.commit(folder, &root, &name).await.unwrap();
        store.open(folder, &root, &name).await.unwrap().unwrap()
    };

    let large: Vec<u8> = (0..300 * 1024 + 7).map(|i: u32| (i * 31 % 251) as u8).collect();
    let (reader, stat) = store_file("large.bin", &large).await;
    let size = stat.size;
    assert_eq!(size, large.len() as u64);
    assert!(read(&*reader, 0..size).await == large, "the whole file");
    assert!(read(&*reader, 1000..70_000).await == large[1000..70_000], "a middle range across chunks");
    assert_eq!(read(&*reader, size - 1..size).await, large[large.len() - 1..]);
    assert_eq!(read(&*reader, size - 10..size + 100).await, large[large.len() - 10..], "cut at the end");
    assert!(read(&*reader, size..size + 10).await.is_empty(), "from the end on");
    assert!(read(&*reader, size + 5..size + 10).await.is_empty(), "past the end");
    assert!(read(&*reader, 5..5).await.is_empty());
    assert!(read(&*reader, 0..size).await == large, "the handle reads again");

    let (reader, stat) = store_file("small.txt", b"0123456789").await;
    assert_eq!(read(&*reader, 3..7).await, b"3456");
    assert_eq!(read(&*reader, 0..1).await, b"0");
    assert_eq!(read(&*reader, 9..10).await, b"9");
    assert_eq!(read(&*reader, 0..stat.size).await, b"0123456789");

    let (reader, stat) = store_file("empty.txt", b"").await;
    assert_eq!(stat.size, 0);
    assert!(read(&*reader, 0..0).await.is_empty());
    assert!(read(&*reader, 0..10).await.is_empty());

    // Deleted and uploaded again under the same name after the handle was opened: the
    // handle reads the bytes it opened, or fails; never the new file's.
    let (reader, _) = store_file("replaced.txt", b"the first file").await;
    store.delete(folder, &root, &FileName::parse("replaced.txt").unwrap()).await.unwrap();
    store_file("replaced.txt", b"THE SECOND FILE, LONGER").await;
    let chunks: Result<Vec<_>, _> = reader.range(0..14).try_collect().await;
    if let Ok(chunks) = chunks {
        assert_eq!(chunks.concat(), b"the first file", "a replaced file read through an old handle");
    }

    for name in ["large.bin", "small.txt", "empty.txt", "replaced.txt"] {
        store.delete(folder, &root, &FileName::parse(name).unwrap()).await.unwrap();
    }
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
        let (reader, size) = store.open(source, key).await.unwrap()?;
        let bytes = read(&*reader, 0..size).await;
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

/// Runs every `SettingsStore` case: nothing saved is no theme; a save is read back whole
/// and replaces the one before.
pub async fn settings_store(store: &dyn SettingsStore) {
    assert_eq!(store.load_theme().await.unwrap(), None, "a new store has no theme");
    let theme = |json: serde_json::Value| json.as_object().unwrap().clone();
    let first = theme(serde_json::json!({"accent": "#ff0000", "nested": {"a": [1, 2]}}));
    store.save_theme(&first).await.unwrap();
    assert_eq!(store.load_theme().await.unwrap(), Some(first));
    let second = theme(serde_json::json!({"font": "serif"}));
    store.save_theme(&second).await.unwrap();
    assert_eq!(store.load_theme().await.unwrap(), Some(second), "a save replaces the theme whole");
}

/// Runs every `LicenseSource` case: none at first; an install is read back at once; an
/// unreadable license is refused and changes nothing.
pub async fn license_source(source: &dyn LicenseSource) {
    assert_eq!(source.current().await.unwrap(), None, "a new site has no license");
    source.install("licensee: Demo\nfeatures: [json_api]\n").await.unwrap();
    let installed = source.current().await.unwrap().expect("the installed license");
    assert_eq!(
        (installed.licensee.as_str(), installed.features.clone()),
        ("Demo", vec!["json_api".to_owned()])
    );
    assert!(source.install("features: [").await.is_err(), "an unreadable license is refused");
    assert_eq!(source.current().await.unwrap().unwrap().licensee, "Demo", "and changes nothing");
    source.install("licensee: Other\nfeatures: [json_api, webhooks]\n").await.unwrap();
    let replaced = source.current().await.unwrap().unwrap();
    assert_eq!(
        (replaced.licensee.as_str(), replaced.features.len()),
        ("Other", 2),
        "a new install is seen at once"
    );
}

/// Runs every `PreviewKeys` case: a key is made once and kept; a rotation replaces it;
/// the ends of an item's links are kept per item, the latest instant winning.
pub async fn preview_keys(keys: &dyn PreviewKeys) {
    let first = keys.current().await.unwrap();
    assert!(!first.is_empty(), "a key is made on first use");
    assert_eq!(keys.current().await.unwrap(), first, "the key is kept");
    keys.rotate().await.unwrap();
    let second = keys.current().await.unwrap();
    assert_ne!(second, first, "a rotation makes a new key");
    assert_eq!(keys.current().await.unwrap(), second);

    assert_eq!(keys.item_links_ended("0a1b2c").await.unwrap(), None);
    keys.end_item_links("0a1b2c", 1_000).await.unwrap();
    assert_eq!(keys.item_links_ended("0a1b2c").await.unwrap(), Some(1_000));
    assert_eq!(keys.item_links_ended("3d4e5f").await.unwrap(), None, "per item");
    keys.end_item_links("0a1b2c", 2_000).await.unwrap();
    assert_eq!(keys.item_links_ended("0a1b2c").await.unwrap(), Some(2_000), "a later end moves it on");
}

/// Runs every `SessionStore` case: none at first; a record is read back with a version;
/// a replace at that version lands and one at an old version (or of a removed record)
/// writes nothing; records are listed with when they were written; removing is idempotent.
pub async fn session_store(store: &dyn crate::ports::SessionStore) {
    let key = "a".repeat(64);
    let other = "b".repeat(64);
    assert_eq!(store.get(&key).await.unwrap(), None);
    assert!(store.list().await.unwrap().is_empty());
    store.put(&key, "{\"n\":1}").await.unwrap();
    let first = store.get(&key).await.unwrap().expect("a record is read back");
    assert_eq!(first.text, "{\"n\":1}");
    assert!(store.replace(&key, "{\"n\":2}", &first.version).await.unwrap(), "a replace at its version");
    let second = store.get(&key).await.unwrap().unwrap();
    assert_eq!(second.text, "{\"n\":2}");
    assert_ne!(second.version, first.version, "a write changes the version");
    assert!(!store.replace(&key, "{\"n\":3}", &first.version).await.unwrap(), "an old version is refused");
    assert_eq!(store.get(&key).await.unwrap().unwrap().text, "{\"n\":2}");

    store.put(&other, "{}").await.unwrap();
    let mut listed = store.list().await.unwrap();
    listed.sort();
    assert_eq!(listed.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), [key.as_str(), other.as_str()]);
    assert!(listed.iter().all(|(_, written)| *written > 1_600_000_000), "written times are Unix seconds");

    store.remove(&key).await.unwrap();
    store.remove(&key).await.unwrap();
    assert_eq!(store.get(&key).await.unwrap(), None);
    assert!(!store.replace(&key, "{}", &second.version).await.unwrap(), "a removed record stays removed");
    assert_eq!(store.get(&key).await.unwrap(), None);
    assert_eq!(store.list().await.unwrap().len(), 1);
}

/// Runs every `IndexSnapshots` case: none at first; a save is loaded back byte for byte,
/// per collection, and replaced by the next.
pub async fn index_snapshots(store: &dyn IndexSnapshots) {
    let (posts, pages) = (posts(), pages());
    assert_eq!(store.load(&posts).await.unwrap(), None, "a new store keeps nothing");
    let bytes: Vec<u8> = (0..=255).cycle().take(10_000).collect();
    assert!(store.open(&posts).await.unwrap().is_none(), "nothing to read either");
    store.save(&posts, bytes.clone()).await.unwrap();
    assert_eq!(store.load(&posts).await.unwrap(), Some(bytes.clone()));
    let mut read = Vec::new();
    store.open(&posts).await.unwrap().expect("a reader").read_to_end(&mut read).unwrap();
    assert_eq!(read, bytes, "a reader gives the bytes a load gives");
    assert_eq!(store.load(&pages).await.unwrap(), None, "per collection");
    store.save(&posts, b"newer".to_vec()).await.unwrap();
    assert_eq!(store.load(&posts).await.unwrap().as_deref(), Some(&b"newer"[..]), "a save replaces");
    let parts = vec![b"made ".to_vec(), b"in ".to_vec(), b"parts".to_vec()];
    store.save_parts(&posts, Box::new(parts.into_iter())).await.unwrap();
    assert_eq!(store.load(&posts).await.unwrap().as_deref(), Some(&b"made in parts"[..]), "parts in order");
    store.save(&posts, b"newer".to_vec()).await.unwrap();
    store.save(&pages, b"pages".to_vec()).await.unwrap();
    assert_eq!(store.load(&posts).await.unwrap().as_deref(), Some(&b"newer"[..]));

    // The search index's snapshot is kept apart from the index's.
    assert_eq!(store.load_search(&posts).await.unwrap(), None, "no search snapshot yet");
    store.save_search(&posts, b"terms".to_vec()).await.unwrap();
    assert_eq!(store.load_search(&posts).await.unwrap().as_deref(), Some(&b"terms"[..]));
    assert_eq!(store.load(&posts).await.unwrap().as_deref(), Some(&b"newer"[..]), "apart");
    assert_eq!(store.load_search(&pages).await.unwrap(), None, "per collection");
    store.save_search(&posts, b"more terms".to_vec()).await.unwrap();
    assert_eq!(store.load_search(&posts).await.unwrap().as_deref(), Some(&b"more terms"[..]));
}

/// Runs every `StateDocuments` case (call it from a plain thread: the port blocks): none
/// at first; an update sees the current text and writes what its change answers (nothing
/// for `None`); updates from several threads at once all land.
pub fn state_documents(docs: &(dyn StateDocuments + 'static)) {
    assert_eq!(docs.read("contract.yaml").unwrap(), None, "a new store has no documents");
    docs.update(
        "contract.yaml",
        Box::new(|text| {
            assert_eq!(text, None);
            Ok(Some("a: 1\n".to_owned()))
        }),
    )
    .unwrap();
    assert_eq!(docs.read("contract.yaml").unwrap().as_deref(), Some("a: 1\n"));
    docs.update(
        "contract.yaml",
        Box::new(|text| {
            assert_eq!(text, Some("a: 1\n"), "a change sees the current text");
            Ok(None)
        }),
    )
    .unwrap();
    assert_eq!(docs.read("contract.yaml").unwrap().as_deref(), Some("a: 1\n"), "None writes nothing");
    assert_eq!(docs.read("other.yaml").unwrap(), None, "per document");
    assert!(docs.describe("contract.yaml").contains("contract.yaml"), "{}", docs.describe("contract.yaml"));
    let failed = docs.update("contract.yaml", Box::new(|_| Err(CoreError::invalid("refused"))));
    assert!(matches!(failed, Err(CoreError::Invalid(_))), "a change's error is the update's: {failed:?}");

    // Read-modify-writes from several threads: none is lost.
    std::thread::scope(|scope| {
        for thread in 0..4 {
            scope.spawn(move || {
                for n in 0..5 {
                    let line = format!("- {thread}.{n}\n");
                    docs.update(
                        "lines.yaml",
                        Box::new(move |text| Ok(Some(format!("{}{line}", text.unwrap_or_default())))),
                    )
                    .unwrap();
                }
            });
        }
    });
    let lines = docs.read("lines.yaml").unwrap().unwrap();
    assert_eq!(lines.lines().count(), 20, "every update landed:\n{lines}");
}

/// The item file [`change_source`]'s `write` puts into `content/posts`.
pub const WRITTEN_ELSEWHERE: &str = "2024-05-06-from-elsewhere.md";

/// The collection `content/posts` (number 0) the cases use.
pub fn posts_collection() -> Collection {
    posts()
}

/// Runs the `ChangeSource` case: a store that can follow its collections reports the file
/// [`WRITTEN_ELSEWHERE`] that `write` puts into `content/posts` (as another program or
/// server would) as a change of that collection; one that cannot answers `None` (its
/// caller rescans), which passes too. The caller bounds the wait.
pub async fn change_source(source: &dyn ChangeSource, write: impl std::future::Future<Output = ()>) {
    let posts = posts();
    let Some(mut feed) = source.subscribe(std::slice::from_ref(&posts)).unwrap() else { return };
    write.await;
    loop {
        let batch = feed.next_batch().await.expect("the feed goes on while the store is there");
        let reported = batch.iter().any(|change| match change {
            StorageChange::Items { collection, names, .. } => {
                *collection == posts.index && names.iter().any(|n| n == WRITTEN_ELSEWHERE)
            }
            StorageChange::Rescan { collection } => *collection == posts.index,
            StorageChange::License => false,
        });
        if reported {
            return;
        }
    }
}
