use cms_core::testing::contract;
use cms_fs::{FsAccounts, FsContentStore, FsResourceStore, FsVariantStore, FsVersionStore};

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
