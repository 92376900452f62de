use cms_core::testing::contract;

use crate::site;

#[tokio::test]
async fn s3_content_store_meets_the_contract() {
    let Some(site) = site() else { return };
    contract::content_store(&site.content_store()).await;
}

#[tokio::test]
async fn s3_accounts_meet_the_contract() {
    let Some(site) = site() else { return };
    let accounts = site.accounts();
    contract::account_store(&accounts, &accounts).await;
}

#[tokio::test]
async fn s3_version_store_meets_the_contract() {
    let Some(site) = site() else { return };
    contract::version_store(&site.version_store()).await;
}

#[tokio::test]
async fn s3_resource_store_meets_the_contract() {
    let Some(site) = site() else { return };
    contract::resource_store(&site.resource_store()).await;
}
