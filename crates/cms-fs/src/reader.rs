//! Serving an open file (a resource or a stored variant) by byte range: positional reads
//! of [`READ_CHUNK`] bytes, each one short task on the blocking pool, so that a response
//! waiting on a slow client holds no thread and a large file is never read whole.

use std::fs::File;
use std::io;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use cms_core::ports::{ByteStream, ResourceReader};
use futures_util::stream;

use crate::blocking;
use crate::error::io_error;

/// How many bytes one read takes from the disk.
const READ_CHUNK: u64 = 64 * 1024;

/// An open file. Reads are positional (`pread`), so several ranges of one handle may be
/// read at once, and the file stays the one opened even if its name is replaced.
pub(crate) struct FsReader {
    file: Arc<File>,
    /// For the error message only.
    path: Arc<PathBuf>,
}

impl FsReader {
    pub(crate) fn boxed(file: File, path: PathBuf) -> Box<dyn ResourceReader> {
        Box::new(Self { file: Arc::new(file), path: Arc::new(path) })
    }
}

impl ResourceReader for FsReader {
    fn range(&self, range: Range<u64>) -> ByteStream {
        let (file, path) = (self.file.clone(), self.path.clone());
        Box::pin(stream::try_unfold(range, move |left| {
            let (file, path) = (file.clone(), path.clone());
            async move {
                if left.start >= left.end {
                    return Ok(None);
                }
                let (at, want) = (left.start, (left.end - left.start).min(READ_CHUNK) as usize);
                let chunk = blocking::run(move || {
                    let mut buffer = vec![0; want];
                    let n = read_at(&file, &mut buffer, at).map_err(io_error(&path))?;
                    buffer.truncate(n);
                    Ok(buffer)
                })
                .await?;
                // Nothing read: the end of the file (it may be shorter than the range).
                if chunk.is_empty() {
                    return Ok(None);
                }
                let next = at + chunk.len() as u64..left.end;
                Ok(Some((Bytes::from(chunk), next)))
            }
        }))
    }
}

/// One positional read, retried when a signal interrupts it.
fn read_at(file: &File, buffer: &mut [u8], at: u64) -> io::Result<usize> {
    loop {
        match file.read_at(buffer, at) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use futures_util::TryStreamExt;

    use super::*;

    #[tokio::test]
    async fn a_range_comes_in_chunks_and_stops_where_the_file_ends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("file.bin");
        let bytes: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let reader = FsReader::boxed(File::open(&path).unwrap(), path.clone());

        let chunks: Vec<Bytes> = reader.range(10..150_000).try_collect().await.unwrap();
        assert_eq!(chunks.iter().map(Bytes::len).collect::<Vec<_>>(), [65_536, 65_536, 18_918]);
        assert!(chunks.concat() == bytes[10..150_000]);

        // Shortened after it was opened: the read ends where the file now does (the web
        // layer, which promised a length, then cuts the connection).
        File::options().write(true).open(&path).unwrap().set_len(100).unwrap();
        let chunks: Vec<Bytes> = reader.range(0..150_000).try_collect().await.unwrap();
        assert_eq!(chunks.concat(), bytes[..100]);
    }
}
