use cms_core::testing::{
    MemoryAccounts, MemoryContentStore, MemoryResources, MemoryVariants, MemoryVersions, contract,
};

#[tokio::test]
async fn memory_content_store_meets_the_contract() {
    contract::content_store(&MemoryContentStore::default()).await;
}

#[tokio::test]
async fn memory_accounts_meet_the_contract() {
    let accounts = MemoryAccounts::default();
    contract::account_store(&accounts, &accounts).await;
}

#[tokio::test]
async fn memory_version_store_meets_the_contract() {
    contract::version_store(&MemoryVersions::default()).await;
}

#[tokio::test]
async fn memory_resource_store_meets_the_contract() {
    contract::resource_store(&MemoryResources::default()).await;
}

#[tokio::test]
async fn memory_variant_store_meets_the_contract() {
    contract::variant_store(&MemoryVariants::default()).await;
}
