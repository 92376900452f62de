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
