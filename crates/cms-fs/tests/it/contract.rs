use cms_core::testing::contract;
use std::time::Duration;

use cms_fs::{
    FsAccounts, FsChangeSource, FsContentStore, FsLicense, FsPreviewKeys, FsResourceStore, FsSettings,
    FsSnapshots, FsStateDocuments, FsVariantStore, FsVersionStore,
};

#[tokio::test]
async fn fs_content_store_meets_the_contract() {
    let site = tempfile::tempdir().unwrap();
    contract::content_store(&FsContentStore::new(site.path())).await;
}

#[tokio::test]
async fn fs_accounts_meet_the_contract() {
    let site = tempfile::tempdir().unwrap();
    let accounts = FsAccounts::new(&site.path().join(".cms"));
    contract::account_store(&accounts, &accounts).await;
}

#[tokio::test]
async fn fs_version_store_meets_the_contract() {
    let site = tempfile::tempdir().unwrap();
    contract::version_store(&FsVersionStore::new(&site.path().join(".cms"))).await;
}

/// A history folder as older versions of the server left it (snapshots only) still reads,
/// its versions' authors unknown; a version kept through the item's own file (a link)
/// names its author too.
#[tokio::test]
async fn an_older_history_reads_with_unknown_authors_and_a_linked_version_names_its_author() {
    use cms_core::ports::{VersionStore, VersionToSave};
    let site = tempfile::tempdir().unwrap();
    let posts = cms_core::testing::fixtures::posts();
    let history = site.path().join(".cms/versions/content/posts/hello.md");
    std::fs::create_dir_all(&history).unwrap();
    std::fs::write(history.join("100.md"), "old").unwrap();
    std::fs::create_dir_all(site.path().join("content/posts")).unwrap();
    std::fs::write(site.path().join("content/posts/hello.md"), "now").unwrap();
    let store =
        FsVersionStore::new(&site.path().join(".cms")).linking_items_of(FsContentStore::new(site.path()));
    let item = cms_core::slug::ItemFilename::parse("hello.md").unwrap();
    let versions = store.list_versions(&posts, &item).await.unwrap();
    assert_eq!((versions.len(), versions[0].author.as_deref()), (1, None));
    let snapshot = VersionToSave { bytes: b"now", now: 200, keep: 5, author: Some("ed@example.com") };
    let kept = store.save_current(&posts, &item, snapshot).await.unwrap();
    assert!(kept.item_stamp.is_some(), "kept through the item's file");
    assert_eq!(store.version_author(&posts, &item, 200).await.unwrap().as_deref(), Some("ed@example.com"));
    assert_eq!(std::fs::read_to_string(history.join("authors")).unwrap(), "200 ed@example.com\n");
}

#[tokio::test]
async fn fs_resource_store_meets_the_contract() {
    let site = tempfile::tempdir().unwrap();
    contract::resource_store(&FsResourceStore::new(site.path(), &site.path().join(".cms"))).await;
}

#[tokio::test]
async fn fs_variant_store_meets_the_contract() {
    let site = tempfile::tempdir().unwrap();
    contract::variant_store(&FsVariantStore::new(&site.path().join(".cms"))).await;
}

#[tokio::test]
async fn fs_settings_meet_the_contract() {
    let site = tempfile::tempdir().unwrap();
    contract::settings_store(&FsSettings::new(&site.path().join(".cms"))).await;
}

#[tokio::test]
async fn fs_license_meets_the_contract() {
    let site = tempfile::tempdir().unwrap();
    contract::license_source(&FsLicense::new(&site.path().join(".cms"))).await;
}

#[tokio::test]
async fn fs_preview_keys_meet_the_contract() {
    let site = tempfile::tempdir().unwrap();
    contract::preview_keys(&FsPreviewKeys::new(&site.path().join(".cms"))).await;
}

#[tokio::test]
async fn fs_session_store_meets_the_contract() {
    let site = tempfile::tempdir().unwrap();
    contract::session_store(&cms_fs::FsSessionStore::new(&site.path().join(".cms"))).await;
}

#[tokio::test]
async fn fs_snapshots_meet_the_contract() {
    let site = tempfile::tempdir().unwrap();
    contract::index_snapshots(&FsSnapshots::new(&site.path().join(".cms"))).await;
}

#[test]
fn fs_state_documents_meet_the_contract() {
    let site = tempfile::tempdir().unwrap();
    contract::state_documents(&FsStateDocuments::new(&site.path().join(".cms")));
}

/// A file another program writes into the collection's folder is reported.
#[tokio::test(flavor = "multi_thread")]
async fn the_fs_change_source_meets_the_contract() {
    let site = tempfile::tempdir().unwrap();
    let folder = site.path().join("content/posts");
    std::fs::create_dir_all(&folder).unwrap();
    let write =
        async { std::fs::write(folder.join(contract::WRITTEN_ELSEWHERE), "---\ntitle: T\n---\n").unwrap() };
    let source = FsChangeSource::new(site.path());
    let followed = contract::change_source(&source, write);
    tokio::time::timeout(Duration::from_secs(20), followed).await.expect("reported within 20 s");
}
