//! Resource folders on a real disk: symlinks planted inside them, hidden and temporary
//! files, and what an abandoned upload leaves behind.

use std::fs;
use std::os::unix::fs::symlink;

use cms_core::ports::ResourceStore;
use cms_core::resource::{FileName, ResourceFolder, Subpath};
use cms_fs::FsResourceStore;

fn uploads() -> ResourceFolder {
    ResourceFolder { index: 0, label: "Uploads".into(), path: "media/uploads".into(), url: "/media".into() }
}

fn name(n: &str) -> FileName {
    FileName::parse(n).unwrap()
}

#[tokio::test]
async fn symlinks_planted_in_a_resource_folder_are_never_followed() {
    let site = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    let root = site.path().join("media/uploads");
    fs::create_dir_all(&root).unwrap();
    symlink(outside.path().join("secret.txt"), root.join("leak.txt")).unwrap();
    symlink(outside.path(), root.join("escape")).unwrap();
    let store = FsResourceStore::new(site.path(), &site.path().join(".cms"));
    let folder = uploads();
    let root_dir = Subpath::root();

    assert!(store.list(&folder, &root_dir).await.unwrap().is_empty(), "symlinks are not listed");
    assert!(store.open(&folder, &root_dir, &name("leak.txt")).await.unwrap().is_none());
    assert!(store.read_head(&folder, &root_dir, &name("leak.txt"), 10).await.is_err());
    let through = Subpath::parse("escape").unwrap();
    assert!(store.list(&folder, &through).await.is_err(), "a symlinked folder is not a folder");
    assert!(store.open(&folder, &through, &name("secret.txt")).await.unwrap().is_none());
    assert!(
        store.rename(&folder, (&through, &name("secret.txt")), (&root_dir, &name("x.txt"))).await.is_err()
    );
    assert!(
        store.rename(&folder, (&root_dir, &name("leak.txt")), (&root_dir, &name("x.txt"))).await.is_err()
    );
    assert!(store.delete(&folder, &root_dir, &name("leak.txt")).await.is_err());
    assert!(store.create_dir(&folder, &through, &name("new")).await.is_err());
    let sink = store.begin_upload().await.unwrap();
    assert!(sink.commit(&folder, &through, &name("planted.txt")).await.is_err());

    assert_eq!(fs::read_to_string(outside.path().join("secret.txt")).unwrap(), "secret");
    assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 1, "nothing was written outside");
}

#[tokio::test]
async fn abandoned_uploads_leave_nothing_and_hidden_files_are_not_resources() {
    let site = tempfile::tempdir().unwrap();
    let store = FsResourceStore::new(site.path(), &site.path().join(".cms"));
    let mut sink = store.begin_upload().await.unwrap();
    sink.write(b"partial").await.unwrap();
    drop(sink);
    assert_eq!(fs::read_dir(site.path().join(".cms/uploads")).unwrap().count(), 0);

    let root = site.path().join("media/uploads");
    fs::create_dir_all(&root).unwrap();
    fs::write(root.join(".htaccess"), "x").unwrap();
    assert!(store.list(&uploads(), &Subpath::root()).await.unwrap().is_empty());
}
