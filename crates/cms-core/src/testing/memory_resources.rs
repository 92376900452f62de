use async_trait::async_trait;
use bytes::Bytes;
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use crate::error::{CoreError, CoreResult};
use crate::ports::{ByteStream, ResourceReader, ResourceStat, ResourceStore, UploadSink};
use crate::resource::{FileName, ResourceFolder, Subpath};

#[derive(Debug, Clone)]
enum Node {
    Dir,
    File(Vec<u8>),
}

/// How many bytes a memory read hands on at once: small, so that the cases of the
/// contract read a file of several chunks as the disk and the bucket do.
const MEMORY_CHUNK: usize = 16 * 1024;

/// A file's bytes as they were when it was opened, read by range in [`MEMORY_CHUNK`]s.
pub(crate) struct MemoryReader(Bytes);

impl MemoryReader {
    pub(crate) fn boxed(bytes: &[u8]) -> Box<dyn ResourceReader> {
        Box::new(Self(Bytes::copy_from_slice(bytes)))
    }
}

impl ResourceReader for MemoryReader {
    fn range(&self, range: Range<u64>) -> ByteStream {
        let size = self.0.len() as u64;
        let (start, end) = (range.start.min(size) as usize, range.end.min(size) as usize);
        let part = self.0.slice(start..end.max(start));
        let chunks: Vec<CoreResult<Bytes>> = (0..part.len())
            .step_by(MEMORY_CHUNK)
            .map(|at| Ok(part.slice(at..(at + MEMORY_CHUNK).min(part.len()))))
            .collect();
        Box::pin(futures_util::stream::iter(chunks))
    }
}

/// (folder path, path inside the folder) → node. Each folder's root always exists.
type Tree = BTreeMap<(String, String), Node>;

/// Resource folders in memory.
#[derive(Default, Clone)]
pub struct MemoryResources {
    tree: Arc<Mutex<Tree>>,
}

fn key(folder: &ResourceFolder, path: &Subpath) -> (String, String) {
    (folder.path.clone(), path.as_str().to_owned())
}

fn dir_exists(tree: &Tree, folder: &ResourceFolder, dir: &Subpath) -> bool {
    dir.is_root() || matches!(tree.get(&key(folder, dir)), Some(Node::Dir))
}

fn stat_of(name: &FileName, node: &Node) -> ResourceStat {
    match node {
        Node::Dir => ResourceStat { name: name.clone(), is_dir: true, size: 0, modified: 0 },
        Node::File(bytes) => {
            ResourceStat { name: name.clone(), is_dir: false, size: bytes.len() as u64, modified: 0 }
        }
    }
}

impl MemoryResources {
    /// Puts a file in place as another program would.
    pub fn put_file(&self, folder_path: &str, path: &str, bytes: &[u8]) {
        self.tree.lock().unwrap().insert((folder_path.into(), path.into()), Node::File(bytes.to_vec()));
    }

    /// Every file and folder, for "nothing changed" assertions.
    pub fn paths(&self) -> Vec<String> {
        self.tree.lock().unwrap().keys().map(|(f, p)| format!("{f}/{p}")).collect()
    }
}

#[async_trait]
impl ResourceStore for MemoryResources {
    async fn list(&self, folder: &ResourceFolder, dir: &Subpath) -> CoreResult<Vec<ResourceStat>> {
        let tree = self.tree.lock().unwrap();
        if !dir_exists(&tree, folder, dir) {
            return Err(CoreError::not_found(format!("no folder {:?}", dir.as_str())));
        }
        let prefix = if dir.is_root() { String::new() } else { format!("{}/", dir.as_str()) };
        Ok(tree
            .iter()
            .filter(|((f, p), _)| {
                *f == folder.path && p.starts_with(&prefix) && !p[prefix.len()..].contains('/')
            })
            .filter_map(|((_, p), node)| {
                FileName::parse(&p[prefix.len()..]).ok().map(|name| stat_of(&name, node))
            })
            .collect())
    }

    async fn stat(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
    ) -> CoreResult<Option<ResourceStat>> {
        Ok(self.tree.lock().unwrap().get(&key(folder, &dir.join(name))).map(|node| stat_of(name, node)))
    }

    async fn read_head(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
        max: usize,
    ) -> CoreResult<Vec<u8>> {
        match self.tree.lock().unwrap().get(&key(folder, &dir.join(name))) {
            Some(Node::File(bytes)) => Ok(bytes[..bytes.len().min(max)].to_vec()),
            _ => Err(CoreError::not_found(format!("no file {name}"))),
        }
    }

    async fn read_all(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
        max: u64,
    ) -> CoreResult<Option<Vec<u8>>> {
        match self.tree.lock().unwrap().get(&key(folder, &dir.join(name))) {
            Some(Node::File(bytes)) if bytes.len() as u64 > max => {
                Err(CoreError::TooLarge(format!("{name} is over {max} bytes")))
            }
            Some(Node::File(bytes)) => Ok(Some(bytes.clone())),
            _ => Ok(None),
        }
    }

    async fn open(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
    ) -> CoreResult<Option<(Box<dyn ResourceReader>, ResourceStat)>> {
        Ok(match self.tree.lock().unwrap().get(&key(folder, &dir.join(name))) {
            Some(node @ Node::File(bytes)) => Some((MemoryReader::boxed(bytes), stat_of(name, node))),
            _ => None,
        })
    }

    async fn begin_upload(&self) -> CoreResult<Box<dyn UploadSink>> {
        Ok(Box::new(MemoryUpload { tree: Arc::clone(&self.tree), bytes: Vec::new() }))
    }

    async fn rename(
        &self,
        folder: &ResourceFolder,
        from: (&Subpath, &FileName),
        to: (&Subpath, &FileName),
    ) -> CoreResult<()> {
        let mut tree = self.tree.lock().unwrap();
        let (source, target) = (key(folder, &from.0.join(from.1)), key(folder, &to.0.join(to.1)));
        if !matches!(tree.get(&source), Some(Node::File(_))) {
            return Err(CoreError::not_found(format!("no file {} in {:?}", from.1, from.0.as_str())));
        }
        if !dir_exists(&tree, folder, to.0) {
            return Err(CoreError::not_found(format!("no folder {:?}", to.0.as_str())));
        }
        if tree.contains_key(&target) {
            return Err(CoreError::Conflict(format!("{} already exists in {:?}", to.1, to.0.as_str())));
        }
        let node = tree.remove(&source).expect("checked above");
        tree.insert(target, node);
        Ok(())
    }

    async fn delete(&self, folder: &ResourceFolder, dir: &Subpath, name: &FileName) -> CoreResult<()> {
        let mut tree = self.tree.lock().unwrap();
        let path = dir.join(name);
        let children = format!("{}/", path.as_str());
        match tree.get(&key(folder, &path)) {
            None => Err(CoreError::not_found(format!("no file or folder {name} in {:?}", dir.as_str()))),
            Some(Node::Dir) if tree.keys().any(|(f, p)| *f == folder.path && p.starts_with(&children)) => {
                Err(CoreError::Conflict(format!("folder {name} is not empty")))
            }
            Some(_) => {
                tree.remove(&key(folder, &path));
                Ok(())
            }
        }
    }

    async fn create_dir(&self, folder: &ResourceFolder, dir: &Subpath, name: &FileName) -> CoreResult<()> {
        let mut tree = self.tree.lock().unwrap();
        if !dir_exists(&tree, folder, dir) {
            return Err(CoreError::not_found(format!("no folder {:?}", dir.as_str())));
        }
        let path = key(folder, &dir.join(name));
        if tree.contains_key(&path) {
            return Err(CoreError::Conflict(format!("{name} already exists in {:?}", dir.as_str())));
        }
        tree.insert(path, Node::Dir);
        Ok(())
    }
}

struct MemoryUpload {
    tree: Arc<Mutex<Tree>>,
    bytes: Vec<u8>,
}

#[async_trait]
impl UploadSink for MemoryUpload {
    async fn write(&mut self, chunk: &[u8]) -> CoreResult<()> {
        self.bytes.extend_from_slice(chunk);
        Ok(())
    }

    async fn commit(
        self: Box<Self>,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
    ) -> CoreResult<ResourceStat> {
        let mut tree = self.tree.lock().unwrap();
        if !dir_exists(&tree, folder, dir) {
            return Err(CoreError::not_found(format!("no folder {:?}", dir.as_str())));
        }
        let free = (0..)
            .map(|n| if n == 0 { name.clone() } else { name.numbered(n) })
            .find(|candidate| !tree.contains_key(&key(folder, &dir.join(candidate))))
            .expect("some number is free");
        let node = Node::File(self.bytes);
        let stat = stat_of(&free, &node);
        tree.insert(key(folder, &dir.join(&free)), node);
        Ok(stat)
    }
}
