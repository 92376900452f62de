use cms_core::testing::{
    MemoryAccounts, MemoryContentStore, MemoryLicense, MemoryPreviewKeys, MemoryResources, MemorySettings,
    MemorySnapshots, MemoryStateDocuments, MemoryVariants, MemoryVersions, contract,
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

#[tokio::test]
async fn memory_settings_meet_the_contract() {
    contract::settings_store(&MemorySettings::default()).await;
}

#[tokio::test]
async fn memory_license_meets_the_contract() {
    contract::license_source(&MemoryLicense::default()).await;
}

#[tokio::test]
async fn memory_preview_keys_meet_the_contract() {
    contract::preview_keys(&MemoryPreviewKeys::default()).await;
}

#[tokio::test]
async fn memory_session_store_meets_the_contract() {
    contract::session_store(&cms_core::testing::MemorySessionStore::default()).await;
}

#[tokio::test]
async fn memory_snapshots_meet_the_contract() {
    contract::index_snapshots(&MemorySnapshots::default()).await;
}

#[test]
fn memory_state_documents_meet_the_contract() {
    contract::state_documents(&MemoryStateDocuments::default());
}

/// The memory store reports changes when a test hands them over, not through a feed.
#[tokio::test]
async fn the_memory_change_source_meets_the_contract() {
    contract::change_source(&MemoryContentStore::default(), async {}).await;
}
