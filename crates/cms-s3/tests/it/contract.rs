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

/// Names are keys as they are (not object_store's percent-encoding), so an upload named
/// with `~`, brackets or spaces is listed back under its name and sits at the key a
/// folder sync would give it.
#[tokio::test]
async fn names_with_unusual_characters_are_kept_as_keys() {
    use cms_core::ports::ResourceStore;
    use cms_core::resource::{FileName, ResourceFolder, Subpath};
    let Some(site) = site() else { return };
    let store = site.resource_store();
    let folder = ResourceFolder {
        index: 0,
        label: "Uploads".into(),
        path: "media/uploads".into(),
        url: "/media".into(),
    };
    let name = FileName::parse("photo~1 [draft] #2.jpg").unwrap();
    let mut upload = store.begin_upload().await.unwrap();
    upload.write(b"jpeg").await.unwrap();
    let stored = upload.commit(&folder, &Subpath::root(), &name).await.unwrap();
    assert_eq!(stored.name, name);
    let listed = store.list(&folder, &Subpath::root()).await.unwrap();
    assert_eq!(listed.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), [name.as_str()]);
    let keys: Vec<String> = site.list_objects_blocking().unwrap().into_iter().map(|o| o.key).collect();
    assert!(keys.contains(&"media/uploads/photo~1 [draft] #2.jpg".to_owned()), "{keys:?}");
}
