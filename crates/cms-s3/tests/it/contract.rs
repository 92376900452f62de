use std::time::Duration;

use cms_core::ports::ContentStore;
use cms_core::slug::ItemFilename;
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

/// An upload past one part (8 MiB) goes up as a multipart upload and is read back, with
/// ranged reads, byte for byte; one dropped halfway leaves no object.
#[tokio::test]
async fn large_uploads_go_up_in_parts_and_come_back_whole() {
    use cms_core::ports::{ResourceReader, ResourceStore};
    use cms_core::resource::{FileName, ResourceFolder, Subpath};
    use futures_util::TryStreamExt;
    let Some(site) = site() else { return };
    let store = site.resource_store();
    let folder = ResourceFolder {
        index: 0,
        label: "Uploads".into(),
        path: "media/uploads".into(),
        url: "/media".into(),
    };
    let bytes: Vec<u8> = (0..9 * 1024 * 1024 + 123).map(|i: u32| (i % 251) as u8).collect();
    let mut upload = store.begin_upload().await.unwrap();
    for chunk in bytes.chunks(1024 * 1024) {
        upload.write(chunk).await.unwrap();
    }
    let stored =
        upload.commit(&folder, &Subpath::root(), &FileName::parse("big.bin").unwrap()).await.unwrap();
    assert_eq!(stored.size, bytes.len() as u64);

    let (reader, stat) =
        store.open(&folder, &Subpath::root(), &FileName::parse("big.bin").unwrap()).await.unwrap().unwrap();
    let read = async |reader: &dyn ResourceReader, range| {
        reader.range(range).try_collect::<Vec<_>>().await.unwrap().concat()
    };
    assert!(read(&*reader, 0..stat.size).await == bytes, "read back whole");
    let across = 8 * 1024 * 1024 - 5..8 * 1024 * 1024 + 5;
    assert_eq!(
        read(&*reader, across.clone()).await,
        bytes[across.start as usize..across.end as usize],
        "a range across the parts"
    );

    let mut dropped = store.begin_upload().await.unwrap();
    dropped.write(&bytes).await.unwrap();
    drop(dropped);
    let keys: Vec<String> = site.list_objects_blocking().unwrap().into_iter().map(|o| o.key).collect();
    assert_eq!(keys, ["media/uploads/big.bin"], "nothing of the dropped upload, no staging object");
}

#[tokio::test]
async fn s3_settings_meet_the_contract() {
    let Some(site) = site() else { return };
    contract::settings_store(&site.settings_store()).await;
}

#[tokio::test]
async fn s3_license_meets_the_contract() {
    let Some(site) = site() else { return };
    contract::license_source(site.license().as_ref()).await;
}

#[tokio::test]
async fn s3_preview_keys_meet_the_contract() {
    let Some(site) = site() else { return };
    contract::preview_keys(&site.preview_keys()).await;
}

#[tokio::test]
async fn s3_session_store_meets_the_contract() {
    let Some(site) = site() else { return };
    contract::session_store(&site.session_store()).await;
}

/// Plain threads: the state documents block on the bucket's round trips.
#[test]
fn s3_state_documents_meet_the_contract() {
    let Some(site) = site() else { return };
    contract::state_documents(&cms_s3::S3StateDocuments::new(&site));
}

/// An item another node writes is reported through the change journal.
#[tokio::test(flavor = "multi_thread")]
async fn the_s3_change_source_meets_the_contract() {
    let Some(config) = cms_s3::testing::fresh_bucket() else { return };
    let (this, other) = (crate::node(&config), crate::node(&config));
    let other = other.content_store();
    let write = async move {
        let name = ItemFilename::parse(contract::WRITTEN_ELSEWHERE).unwrap();
        other.create(&contract::posts_collection(), &name, b"---\ntitle: T\n---\n").await.unwrap();
    };
    let source = this.change_source();
    let followed = contract::change_source(&source, write);
    tokio::time::timeout(Duration::from_secs(20), followed).await.expect("reported within 20 s");
}
