//! The backup archive: a gzipped tar holding the site's files under `site/` and, as its
//! last entry, `cms-backup.json`, a manifest with every file's size and SHA-256. Writing
//! hashes each file as it goes in; reading checks every entry against the manifest, and
//! the gzip stream's own checksum to its end, so a truncated or altered archive is refused
//! whatever part was damaged. `tar xzf` opens it too.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};

use anyhow::{Context, bail};
use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use ring::digest;
use serde::{Deserialize, Serialize};

use crate::site_files::check_key;

/// The manifest's name, at the archive's root.
pub const MANIFEST: &str = "cms-backup.json";
/// The folder of the site's files in the archive.
const SITE_FOLDER: &str = "site/";
/// What this program writes and reads.
pub const FORMAT: &str = "cms-backup/1";
/// A manifest larger than this is not one (100,000 files take about 15 MB).
const MANIFEST_MAX_BYTES: u64 = 256 << 20;

/// What the archive holds, written last.
#[derive(Debug, Serialize, Deserialize)]
pub struct Manifest {
    /// [`FORMAT`].
    pub format: String,
    /// The `cms --version` that wrote it.
    pub cms: String,
    /// When the backup began (RFC 3339, UTC): every write acknowledged before is in it.
    pub began: String,
    /// The site's name (`site.name` of cms.yaml).
    pub site: String,
    /// Where the files were read from: the folder, or `s3://BUCKET/PREFIX (endpoint)`.
    pub source: String,
    /// Every file, by site-relative path, in the archive's order.
    pub files: Vec<FileEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    pub path: String,
    pub size: u64,
    /// Lowercase hex.
    pub sha256: String,
}

impl Manifest {
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|file| file.size).sum()
    }
}

/// Writes an archive to `out`: [`ArchiveWriter::add`] each file, then
/// [`ArchiveWriter::finish`] with the manifest.
pub struct ArchiveWriter<W: Write> {
    tar: tar::Builder<GzEncoder<W>>,
    files: Vec<FileEntry>,
    /// The manifest's time (the backup's start, in Unix seconds).
    began: u64,
}

impl<W: Write> ArchiveWriter<W> {
    pub fn new(out: W, began: u64) -> Self {
        let tar = tar::Builder::new(GzEncoder::new(out, Compression::default()));
        Self { tar, files: Vec::new(), began }
    }

    /// Adds a file by its site-relative path, with its time of last change (Unix
    /// seconds); the site's private state (`.cms/`) keeps mode 0600 in the archive, as in
    /// the folder.
    pub fn add(&mut self, path: &str, bytes: &[u8], mtime: u64) -> anyhow::Result<()> {
        self.add_reader(path, bytes.len() as u64, mtime, bytes)
    }

    /// [`Self::add`] of `size` bytes read from `content` (a file, never whole in memory).
    /// Fewer bytes than `size` (a file cut short in place while it was read) fail the
    /// backup: the archive is then unusable.
    pub fn add_reader(
        &mut self,
        path: &str,
        size: u64,
        mtime: u64,
        content: impl Read,
    ) -> anyhow::Result<()> {
        let mode = if path.starts_with(".cms/") { 0o600 } else { 0o644 };
        let mut header = tar::Header::new_gnu();
        header.set_size(size);
        header.set_mode(mode);
        header.set_mtime(mtime);
        header.set_entry_type(tar::EntryType::Regular);
        let mut hashing = Hashing::new(content.take(size));
        let name = format!("{SITE_FOLDER}{path}");
        self.tar
            .append_data(&mut header, &name, &mut hashing)
            .with_context(|| format!("writing {name} into the archive"))?;
        if hashing.size != size {
            bail!(
                "{path} shrank while it was read ({} of {size} bytes): something rewrote it in place; run the backup again",
                hashing.size
            );
        }
        self.files.push(hashing.finish(path));
        Ok(())
    }

    /// Writes the manifest (with the files added) as the last entry and ends the stream;
    /// returns the manifest and the underlying writer.
    pub fn finish(mut self, mut manifest: Manifest) -> anyhow::Result<(Manifest, W)> {
        manifest.files = std::mem::take(&mut self.files);
        let text = serde_json::to_vec_pretty(&manifest)?;
        self.append(MANIFEST, &text, 0o644, self.began)?;
        let out =
            self.tar.into_inner().context("ending the archive")?.finish().context("ending the archive")?;
        Ok((manifest, out))
    }

    fn append(&mut self, name: &str, bytes: &[u8], mode: u32, mtime: u64) -> anyhow::Result<()> {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(mode);
        header.set_mtime(mtime);
        header.set_entry_type(tar::EntryType::Regular);
        // Sets the path (long ones through GNU's extension) and the checksum.
        self.tar
            .append_data(&mut header, name, bytes)
            .with_context(|| format!("writing {name} into the archive"))
    }
}

/// Reads an archive from `input`, handing each site file to `each` (its site-relative path,
/// its time of last change in Unix seconds, and a reader of its bytes, to be read to the
/// end or not at all), and returns the
/// manifest once every entry matched it and the stream ended whole. `each` sees the files
/// before the manifest is checked: what it does with them must be undone on an error.
pub fn read(
    input: impl Read,
    mut each: impl FnMut(&str, u64, &mut dyn Read) -> anyhow::Result<()>,
) -> anyhow::Result<Manifest> {
    let mut archive = tar::Archive::new(GzDecoder::new(input));
    let mut found = BTreeMap::<String, FileEntry>::new();
    let mut manifest: Option<Manifest> = None;
    for entry in archive.entries().map_err(damaged)? {
        let mut entry = entry.map_err(damaged)?;
        let name = String::from_utf8(entry.path_bytes().into_owned()).map_err(|_| {
            anyhow::anyhow!("the archive holds an entry whose name is not UTF-8; it is not a cms backup")
        })?;
        if manifest.is_some() {
            bail!("the archive goes on after its manifest ({name}); it was changed after it was written");
        }
        if !entry.header().entry_type().is_file() {
            bail!(
                "{name} in the archive is not a regular file ({:?}); a cms backup holds only files",
                entry.header().entry_type()
            );
        }
        if name == MANIFEST {
            let mut text = Vec::new();
            (&mut entry).take(MANIFEST_MAX_BYTES).read_to_end(&mut text).map_err(damaged)?;
            let read: Manifest = serde_json::from_slice(&text).map_err(|error| {
                anyhow::anyhow!("{MANIFEST} in the archive cannot be read ({error}); it is damaged")
            })?;
            if read.format != FORMAT {
                bail!(
                    "the archive's format is {:?}, and this program reads {FORMAT:?}; use the cms version that wrote it ({})",
                    read.format,
                    read.cms
                );
            }
            manifest = Some(read);
            continue;
        }
        let Some(path) = name.strip_prefix(SITE_FOLDER) else {
            bail!("the archive holds {name}, outside {SITE_FOLDER}; it is not a cms backup");
        };
        check_key(path).with_context(|| format!("{name} in the archive"))?;
        let mtime = entry.header().mtime().map_err(damaged)?;
        let mut hashing = Hashing::new(&mut entry);
        each(path, mtime, &mut hashing).with_context(|| format!("restoring {path}"))?;
        // What `each` left unread still counts.
        io::copy(&mut hashing, &mut io::sink()).map_err(damaged)?;
        let file = hashing.finish(path);
        if found.insert(path.to_owned(), file).is_some() {
            bail!("{path} is twice in the archive; it was changed after it was written");
        }
    }
    // The gzip trailer (its CRC-32 and length) is checked when the stream is read to its end.
    io::copy(&mut archive.into_inner(), &mut io::sink()).map_err(damaged)?;
    let Some(manifest) = manifest else {
        bail!(
            "the archive has no {MANIFEST}: it was cut short (the manifest is written last) or is not a cms backup"
        );
    };
    for listed in &manifest.files {
        match found.remove(&listed.path) {
            None => bail!("{} is in the manifest but not in the archive; it is damaged", listed.path),
            Some(file) if file != *listed => bail!(
                "{} differs from the manifest ({} bytes, sha256 {}; expected {} bytes, sha256 {}); the archive is damaged",
                listed.path,
                file.size,
                file.sha256,
                listed.size,
                listed.sha256
            ),
            Some(_) => {}
        }
    }
    if let Some(extra) = found.keys().next() {
        bail!("{extra} is in the archive but not in its manifest; it was changed after it was written");
    }
    Ok(manifest)
}

fn damaged(error: io::Error) -> anyhow::Error {
    anyhow::anyhow!("the archive is damaged or cut short ({error}); nothing in it can be trusted")
}

pub fn sha256(bytes: &[u8]) -> String {
    hex::encode(digest::digest(&digest::SHA256, bytes))
}

/// A reader that hashes and counts what passes through it.
struct Hashing<R> {
    inner: R,
    context: digest::Context,
    size: u64,
}

impl<R: Read> Hashing<R> {
    fn new(inner: R) -> Self {
        Self { inner, context: digest::Context::new(&digest::SHA256), size: 0 }
    }

    fn finish(self, path: &str) -> FileEntry {
        FileEntry { path: path.to_owned(), size: self.size, sha256: hex::encode(self.context.finish()) }
    }
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        self.context.update(&buf[..read]);
        self.size += read as u64;
        Ok(read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> Manifest {
        Manifest {
            format: FORMAT.into(),
            cms: "test".into(),
            began: "2026-11-29T10:00:00Z".into(),
            site: "S".into(),
            source: "folder".into(),
            files: Vec::new(),
        }
    }

    fn archive(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut writer = ArchiveWriter::new(Vec::new(), 0);
        for (path, bytes) in files {
            writer.add(path, bytes, 1_700_000_000).unwrap();
        }
        writer.finish(manifest()).unwrap().1
    }

    fn read_all(bytes: &[u8]) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
        let mut files = Vec::new();
        read(bytes, |path, _, reader| {
            let mut content = Vec::new();
            reader.read_to_end(&mut content)?;
            files.push((path.to_owned(), content));
            Ok(())
        })?;
        Ok(files)
    }

    #[test]
    fn files_come_back_as_they_went_in() {
        let long = format!("media/{}/a.png", "x".repeat(150));
        let bytes = archive(&[("cms.yaml", b"site: {}\n"), (&long, b"png"), (".cms/users.yaml", b"")]);
        let files = read_all(&bytes).unwrap();
        assert_eq!(
            files,
            [
                ("cms.yaml".into(), b"site: {}\n".to_vec()),
                (long, b"png".to_vec()),
                (".cms/users.yaml".into(), vec![])
            ]
        );
    }

    #[test]
    fn a_cut_or_altered_archive_is_refused() {
        let bytes = archive(&[("cms.yaml", b"site: {}\n"), ("content/posts/a.md", &[b'x'; 5000])]);
        for cut in [bytes.len() - 1, bytes.len() - 9, bytes.len() / 2, 10] {
            let error = read_all(&bytes[..cut]).unwrap_err().to_string();
            assert!(error.contains("cut short") || error.contains("damaged"), "{cut}: {error}");
        }
        let mut altered = bytes.clone();
        let middle = altered.len() / 2;
        altered[middle] ^= 0x40;
        assert!(read_all(&altered).is_err());
    }

    /// An archive rebuilt by hand: a file that differs from the manifest, a file the
    /// manifest does not list, an entry that would leave the target, a symlink.
    #[test]
    fn entries_that_do_not_match_the_manifest_are_refused() {
        fn rebuilt(entries: &[(&str, &[u8], tar::EntryType)], listed: &[FileEntry]) -> Vec<u8> {
            let mut tar = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::fast()));
            // The name's bytes go in as they are: `set_path` itself refuses `..`.
            let mut add = |name: &str, bytes: &[u8], kind: tar::EntryType| {
                let mut header = tar::Header::new_gnu();
                header.set_size(bytes.len() as u64);
                header.set_entry_type(kind);
                header.set_mode(0o644);
                header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
                if kind == tar::EntryType::Symlink {
                    header.set_link_name("/etc/passwd").unwrap();
                }
                header.set_cksum();
                tar.append(&header, bytes).unwrap();
            };
            for (name, bytes, kind) in entries {
                add(name, bytes, *kind);
            }
            let manifest = Manifest { files: listed.to_vec(), ..manifest() };
            add(MANIFEST, &serde_json::to_vec(&manifest).unwrap(), tar::EntryType::Regular);
            tar.into_inner().unwrap().finish().unwrap()
        }
        let entry = |path: &str, bytes: &[u8]| FileEntry {
            path: path.into(),
            size: bytes.len() as u64,
            sha256: sha256(bytes),
        };
        let file = tar::EntryType::Regular;

        let good = rebuilt(&[("site/a.md", b"a", file)], &[entry("a.md", b"a")]);
        assert!(read_all(&good).is_ok());
        let cases = [
            (rebuilt(&[("site/a.md", b"b", file)], &[entry("a.md", b"a")]), "differs from the manifest"),
            (
                rebuilt(&[("site/a.md", b"a", file), ("site/b.md", b"b", file)], &[entry("a.md", b"a")]),
                "not in its manifest",
            ),
            (rebuilt(&[], &[entry("a.md", b"a")]), "not in the archive"),
            (rebuilt(&[("site/../../x", b"a", file)], &[entry("../../x", b"a")]), "outside the target"),
            (rebuilt(&[("site/a.md", b"", tar::EntryType::Symlink)], &[]), "not a regular file"),
            (rebuilt(&[("etc/a.md", b"a", file)], &[]), "outside site/"),
        ];
        for (bytes, expected) in cases {
            let error = format!("{:#}", read_all(&bytes).unwrap_err());
            assert!(error.contains(expected), "{expected}: {error}");
        }
    }
}
