//! The same adapters on object_store's in-memory store (no server needed), and what
//! happens on a store that ignores conditional writes (as Garage 2.5 does).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use cms_core::collection::Collection;
use cms_core::config::CollectionConfig;
use cms_core::ports::ContentStore;
use cms_core::slug::ItemFilename;
use cms_core::testing::contract;
use cms_s3::S3Site;
use cms_s3::S3StorageConfig;
use futures_util::stream::BoxStream;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMode,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

fn config() -> S3StorageConfig {
    S3StorageConfig {
        bucket: "memory".into(),
        endpoint: None,
        prefix: "site".into(),
        region: None,
        poll_ms: 100,
        rescan_secs: 60,
        state_max_age_ms: 200,
    }
}

fn site_on(store: Arc<dyn ObjectStore>) -> S3Site {
    S3Site::with_store(store, &config(), "memory".into()).unwrap()
}

#[tokio::test]
async fn the_adapters_meet_the_contract_on_an_in_memory_object_store() {
    let site = site_on(Arc::new(InMemory::new()));
    contract::content_store(&site.content_store()).await;
    let accounts = site.accounts();
    contract::account_store(&accounts, &accounts).await;
    contract::version_store(&site.version_store()).await;
    contract::resource_store(&site.resource_store()).await;
}

/// A store that takes every write, as Garage does with `If-Match`/`If-None-Match`.
#[derive(Debug)]
struct IgnoresConditions(InMemory);

impl fmt::Display for IgnoresConditions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("IgnoresConditions")
    }
}

#[async_trait]
impl ObjectStore for IgnoresConditions {
    async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> Result<PutResult> {
        self.0.put_opts(location, payload, PutOptions { mode: PutMode::Overwrite, ..opts }).await
    }
    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.0.put_multipart_opts(location, opts).await
    }
    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.0.get_opts(location, options).await
    }
    fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
        self.0.delete_stream(locations)
    }
    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.0.list(prefix)
    }
    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.0.list_with_delimiter(prefix).await
    }
    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.0.copy_opts(from, to, options).await
    }
}

/// Stated in docs/deploying.md: without conditional writes, the last of two writes based
/// on one read wins, and the first is lost without an error. This test pins that down, so
/// that the documentation stays true.
#[tokio::test]
async fn without_conditional_writes_the_last_writer_wins_silently() {
    let store: Arc<dyn ObjectStore> = Arc::new(IgnoresConditions(InMemory::new()));
    let (a, b) = (site_on(store.clone()).content_store(), site_on(store).content_store());
    let posts = Collection::from_config(
        0,
        &CollectionConfig {
            label: "Posts".into(),
            path: "content/posts".into(),
            page_path: None,
            date_prefix: false,
            fields: None,
            extra_fields: Default::default(),
        },
    );
    let item = ItemFilename::parse("race.md").unwrap();
    a.create(&posts, &item, b"v1").await.unwrap();
    let read_a = a.read(&posts, &item).await.unwrap().unwrap();
    let read_b = b.read(&posts, &item).await.unwrap().unwrap();
    b.replace(&posts, &item, b"from b", &read_b.stamp).await.unwrap();
    a.replace(&posts, &item, b"from a", &read_a.stamp)
        .await
        .expect("not refused: the store ignores If-Match");
    assert_eq!(a.read(&posts, &item).await.unwrap().unwrap().bytes, b"from a", "b's write is gone");
}

/// The in-memory store, counting the ranged GETs it answers.
#[derive(Debug, Default)]
struct CountsRangedGets(InMemory, AtomicUsize);

impl fmt::Display for CountsRangedGets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CountsRangedGets")
    }
}

#[async_trait]
impl ObjectStore for CountsRangedGets {
    async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> Result<PutResult> {
        self.0.put_opts(location, payload, opts).await
    }
    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.0.put_multipart_opts(location, opts).await
    }
    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        if options.range.is_some() {
            self.1.fetch_add(1, Ordering::SeqCst);
        }
        self.0.get_opts(location, options).await
    }
    fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
        self.0.delete_stream(locations)
    }
    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.0.list(prefix)
    }
    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.0.list_with_delimiter(prefix).await
    }
    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.0.copy_opts(from, to, options).await
    }
}

/// A read of an open resource is one ranged GET, sent when its stream is first polled: a
/// `HEAD` or a `304`, which never poll the body, fetch nothing; a range past the end
/// fetches nothing either.
#[tokio::test]
async fn a_resource_read_is_one_ranged_get_sent_when_first_polled() {
    use cms_core::ports::ResourceStore;
    use cms_core::resource::{FileName, ResourceFolder, Subpath};
    use futures_util::TryStreamExt;

    let store = Arc::new(CountsRangedGets::default());
    let resources = site_on(store.clone()).resource_store();
    let folder =
        ResourceFolder { index: 0, label: "Uploads".into(), path: "media".into(), url: "/media".into() };
    let (root, name) = (Subpath::root(), FileName::parse("a.bin").unwrap());
    let bytes: Vec<u8> = (0..100).collect();
    let mut upload = resources.begin_upload().await.unwrap();
    upload.write(&bytes).await.unwrap();
    upload.commit(&folder, &root, &name).await.unwrap();
    let gets = || store.1.load(Ordering::SeqCst);

    let (reader, stat) = resources.open(&folder, &root, &name).await.unwrap().unwrap();
    drop(reader.range(0..stat.size));
    let part = reader.range(10..20);
    let past_the_end = reader.range(stat.size..stat.size + 5);
    assert_eq!(gets(), 0, "nothing is fetched before a stream is polled");
    assert_eq!(part.try_collect::<Vec<_>>().await.unwrap().concat(), bytes[10..20]);
    assert!(past_the_end.try_collect::<Vec<_>>().await.unwrap().is_empty());
    assert_eq!(gets(), 1);
}
