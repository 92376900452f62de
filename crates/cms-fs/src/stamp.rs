use std::fs::Metadata;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::os::unix::fs::MetadataExt;

use cms_core::ports::FileStamp;

/// A folder's stamp (see `ContentStore::folder_stamp`): its modification and change times,
/// inode and device.
pub fn of_folder(meta: &Metadata) -> u64 {
    let mut hasher = DefaultHasher::new();
    (meta.mtime(), meta.mtime_nsec(), meta.ctime(), meta.ctime_nsec(), meta.ino(), meta.dev())
        .hash(&mut hasher);
    hasher.finish()
}

/// A stamp from metadata alone. The change token covers modification and change times
/// (nanoseconds), inode and size, so an in-place edit, a rename over the file and a
/// restored modification time all count as changes.
pub fn from_metadata(name: &str, meta: &Metadata) -> FileStamp {
    let mut hasher = DefaultHasher::new();
    (meta.mtime(), meta.mtime_nsec(), meta.ctime(), meta.ctime_nsec(), meta.ino(), meta.dev(), meta.size())
        .hash(&mut hasher);
    FileStamp {
        name: name.to_owned(),
        size: meta.size(),
        modified: meta.mtime(),
        change_token: hasher.finish(),
    }
}
