//! Resource folders and the names inside them. A [`Subpath`] or [`FileName`] can only be
//! built from input that cannot leave the folder, so a path that reaches an adapter is
//! already safe.

use std::fmt;
use std::io;

use image::{ImageError, ImageFormat, ImageReader};

use crate::config::ResourceConfig;
use crate::error::{CoreError, CoreResult};

/// A configured resource folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceFolder {
    pub index: usize,
    pub label: String,
    /// Folder relative to the site folder, e.g. `media/uploads`.
    pub path: String,
    /// Public URL prefix of its files, e.g. `/media/uploads` (no trailing slash).
    pub url: String,
}

impl ResourceFolder {
    pub fn from_config(index: usize, config: &ResourceConfig) -> Self {
        Self {
            index,
            label: config.label.clone(),
            path: config.path.trim_end_matches('/').to_owned(),
            url: config.url.trim_end_matches('/').to_owned(),
        }
    }

    /// The public URL of a file: prefix, subpath and name, each segment percent-encoded.
    pub fn file_url(&self, dir: &Subpath, name: &FileName) -> String {
        let mut url = self.url.clone();
        for segment in dir.segments().chain([name.as_str()]) {
            url.push('/');
            url.push_str(&percent_encode(segment));
        }
        url
    }
}

const MAX_NAME_BYTES: usize = 255;
const MAX_SUBPATH_BYTES: usize = 1024;

/// Why a name is refused, or `None` when it is a safe single path segment.
fn segment_problem(segment: &str) -> Option<&'static str> {
    if segment.is_empty() {
        Some("it is empty")
    } else if segment == "." || segment == ".." {
        Some("'.' and '..' are not allowed")
    } else if segment.starts_with('.') {
        Some("names may not start with a dot")
    } else if segment.len() > MAX_NAME_BYTES {
        Some("it is longer than 255 bytes")
    } else if segment.contains(['/', '\\']) {
        Some("it contains a slash or backslash")
    } else if segment.contains('%') {
        Some("it contains '%' (send names decoded)")
    } else if segment.chars().any(char::is_control) {
        Some("it contains a control character")
    } else {
        None
    }
}

/// A folder inside a resource folder, relative to it: `""` (the folder itself) or
/// segments joined by `/`, none of them `.`, `..`, hidden, or containing `\`, `%` or NUL.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Subpath(String);

impl Subpath {
    pub fn parse(raw: &str) -> CoreResult<Self> {
        let bad = |why: &str| CoreError::invalid(format!("invalid subpath {raw:?}: {why}"));
        if raw.starts_with('/') || raw.starts_with('\\') || raw.contains(':') && raw.contains('\\') {
            return Err(bad("it must be relative to the resource folder"));
        }
        if raw.len() > MAX_SUBPATH_BYTES {
            return Err(bad("it is longer than 1024 bytes"));
        }
        let trimmed = raw.trim_end_matches('/');
        if trimmed.is_empty() {
            return Ok(Self::root());
        }
        for segment in trimmed.split('/') {
            if let Some(why) = segment_problem(segment) {
                return Err(bad(why));
            }
        }
        Ok(Self(trimmed.to_owned()))
    }

    /// The resource folder itself.
    pub fn root() -> Self {
        Self(String::new())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('/').filter(|s| !s.is_empty())
    }

    /// This subpath with `name` appended.
    pub fn join(&self, name: &FileName) -> Self {
        if self.is_root() { Self(name.0.clone()) } else { Self(format!("{}/{}", self.0, name.0)) }
    }
}

impl fmt::Display for Subpath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One safe path segment: a file or folder name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FileName(String);

impl FileName {
    pub fn parse(raw: &str) -> CoreResult<Self> {
        match segment_problem(raw) {
            Some(why) => Err(CoreError::invalid(format!("invalid file name {raw:?}: {why}"))),
            None => Ok(Self(raw.to_owned())),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `(stem, extension)`; the extension is what follows the last dot, if any.
    pub fn split_extension(&self) -> (&str, Option<&str>) {
        match self.0.rsplit_once('.') {
            Some((stem, ext)) if !stem.is_empty() && !ext.is_empty() => (stem, Some(ext)),
            _ => (&self.0, None),
        }
    }

    /// `hero.jpg` → `hero-2.jpg` for `n = 2`: how uploads avoid overwriting.
    pub fn numbered(&self, n: u32) -> Self {
        match self.split_extension() {
            (stem, Some(ext)) => Self(format!("{stem}-{n}.{ext}")),
            (stem, None) => Self(format!("{stem}-{n}")),
        }
    }

    /// The name a rename gives: `new` as sent, or with this file's extension added when
    /// `new` has none (`hero.jpg` renamed to `hero-v2` becomes `hero-v2.jpg`).
    pub fn renamed(&self, new: &FileName) -> CoreResult<Self> {
        match (new.split_extension(), self.split_extension()) {
            ((_, None), (_, Some(ext))) => FileName::parse(&format!("{}.{ext}", new.0)),
            _ => Ok(new.clone()),
        }
    }
}

impl fmt::Display for FileName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A file or subfolder in one of the site's resource folders, as every resource call that
/// names one takes it (as [`crate::slug::ItemRef`] names an item): the folder's index in
/// `resources:`, the subfolder, the name, each already checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceRef {
    pub folder: usize,
    pub dir: Subpath,
    pub name: FileName,
}

impl ResourceRef {
    pub fn new(folder: usize, dir: Subpath, name: FileName) -> Self {
        Self { folder, dir, name }
    }
}

/// A file inside a resource folder as a public URL names it after the folder's prefix
/// (`2024/photo.jpg`): its subfolder and its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePath {
    pub dir: Subpath,
    pub name: FileName,
}

impl FilePath {
    /// The file a URL's tail names; `NotFound` when it cannot name one (a URL names a
    /// file or nothing, it is not a malformed request).
    pub fn from_url_tail(tail: &str) -> CoreResult<Self> {
        let not_found = || CoreError::not_found(format!("no file at {tail:?}"));
        let (dir, name) = match tail.rsplit_once('/') {
            Some((dir, name)) => (Subpath::parse(dir).map_err(|_| not_found())?, name),
            None => (Subpath::root(), tail),
        };
        Ok(Self { dir, name: FileName::parse(name).map_err(|_| not_found())? })
    }
}

impl fmt::Display for FilePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.dir.join(&self.name).as_str())
    }
}

/// The stored name of an upload: the base name of what the client sent (anything up to
/// the last `/` or `\` dropped), characters other than ASCII letters, digits, `.`, `-`
/// and `_` replaced with `-`, leading dots and dashes removed, at most 120 bytes.
pub fn sanitize_upload_name(raw: &str) -> CoreResult<FileName> {
    let base = raw.rsplit(['/', '\\']).next().unwrap_or(raw);
    let mut name = String::with_capacity(base.len());
    for c in base.chars().flat_map(crate::slug::fold_accent) {
        let keep = c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
        let c = if keep { c } else { '-' };
        if !(c == '-' && name.ends_with('-')) {
            name.push(c);
        }
    }
    let mut name = name.trim_start_matches(['.', '-']).trim_end_matches(['-', '.']).to_owned();
    while name.contains("..") || name.contains("-.") {
        name = name.replace("..", ".").replace("-.", ".");
    }
    if name.len() > 120 {
        let ext = name.rsplit_once('.').map(|(_, e)| e.to_owned()).filter(|e| e.len() <= 10);
        name.truncate(120 - ext.as_ref().map_or(0, |e| e.len() + 1));
        if let Some(ext) = ext {
            name = format!("{}.{ext}", name.trim_end_matches(['.', '-']));
        }
    }
    if name.is_empty() || name.split('.').next().is_some_and(str::is_empty) {
        name = format!("upload{name}");
    }
    FileName::parse(&name)
}

/// Whether a file's first bytes are those of an image format browsers show: PNG, JPEG,
/// GIF, WebP, BMP, ICO, TIFF, AVIF/HEIC or SVG.
///
/// A magic number is not enough (a text file may start with `BM`, `GIF89a`...): each
/// format's own decoder reads the header from `head` and must find nothing wrong. When
/// `head` is a full [`SNIFF_BYTES`] window and the decoder wants more (a photo's EXIF or
/// a PNG's text chunks come before the part that holds the size), what it read so far
/// decides.
pub fn is_image(head: &[u8]) -> bool {
    let truncated = head.len() >= SNIFF_BYTES;
    match image::guess_format(head) {
        Ok(ImageFormat::Jpeg) => is_jpeg(head, truncated),
        Ok(ImageFormat::Gif) => is_gif(head, truncated),
        Ok(
            format @ (ImageFormat::Png
            | ImageFormat::WebP
            | ImageFormat::Bmp
            | ImageFormat::Ico
            | ImageFormat::Tiff),
        ) => match ImageReader::with_format(Window::new(head, truncated), format).into_dimensions() {
            Ok(_) => true,
            Err(error) => ran_out(&error),
        },
        // No decoder here for these: the ISO-BMFF `ftyp` box (size, type, brands) is
        // their header.
        _ => is_heif(head) || is_svg(head),
    }
}

/// zune-jpeg is lenient about bytes between segments, so the marker after the start of
/// image is checked here first: a JPEG continues with a table, an application segment,
/// a comment or a frame header.
fn is_jpeg(head: &[u8], truncated: bool) -> bool {
    if !matches!(head.get(3), Some(0xc0..=0xcf | 0xdb..=0xdd | 0xe0..=0xef | 0xfe)) {
        return false;
    }
    let options = zune_core::options::DecoderOptions::default().set_strict_mode(true);
    let mut decoder =
        zune_jpeg::JpegDecoder::new_with_options(zune_core::bytestream::ZCursor::new(head), options);
    match decoder.decode_headers() {
        Ok(()) => true,
        // Only reading past the end of the bytes is an I/O error on a slice.
        Err(zune_jpeg::errors::DecodeErrors::IoErrors(_)) => truncated,
        Err(_) => false,
    }
}

/// The `gif` decoder reads the blocks up to the first frame (the `image` crate stops
/// after the screen descriptor, which any 13 bytes pass).
fn is_gif(head: &[u8], truncated: bool) -> bool {
    let mut options = gif::DecodeOptions::new();
    options.skip_frame_decoding(true);
    let first_frame = options
        .read_info(Window::new(head, truncated))
        .and_then(|mut decoder| decoder.next_frame_info().map(|f| f.is_some()));
    match first_frame {
        Ok(has_frame) => has_frame,
        Err(gif::DecodingError::Io(error)) => is_window_end(&error),
        Err(_) => false,
    }
}

/// AVIF and HEIC: an ISO-BMFF file whose first box is a sane `ftyp` with an image brand.
fn is_heif(head: &[u8]) -> bool {
    let Some(size) = head.get(..4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize) else {
        return false;
    };
    head.get(4..8) == Some(b"ftyp")
        && (16..=4096).contains(&size)
        && size % 4 == 0
        && matches!(head.get(8..12), Some(b"avif" | b"avis" | b"heic" | b"heix" | b"mif1"))
}

/// SVG is XML whose root element is `<svg>`: after an optional byte-order mark, XML
/// declaration, comments, processing instructions and an SVG doctype, the first element
/// must be `svg`. HTML with an inline `<svg>` has `html` (or another element) first.
fn is_svg(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let mut rest = text.trim_start_matches('\u{feff}');
    loop {
        rest = rest.trim_start();
        let skip_past = |end: &str| rest.find(end).map(|at| &rest[at + end.len()..]);
        let next = if rest.starts_with("<?") {
            skip_past("?>")
        } else if rest.starts_with("<!--") {
            skip_past("-->")
        } else if rest.get(..9).is_some_and(|d| d.eq_ignore_ascii_case("<!doctype")) {
            let name = rest[9..].trim_start();
            if !name.get(..3).is_some_and(|n| n.eq_ignore_ascii_case("svg")) {
                return false;
            }
            // An internal subset (`[...]`) may hold `>`: skip it whole.
            match (rest.find('['), rest.find('>')) {
                (Some(open), Some(close)) if open < close => {
                    skip_past("]").and_then(|r| r.find('>').map(|at| &r[at + 1..]))
                }
                _ => skip_past(">"),
            }
        } else {
            let Some(after) = rest.strip_prefix("<svg") else { return false };
            return after.starts_with(|c: char| c.is_ascii_whitespace() || c == '>' || c == '/');
        };
        match next {
            Some(next) => rest = next,
            None => return false,
        }
    }
}

/// Stands for the rest of a file beyond the sniffed head: a decoder that asks for it has
/// found nothing wrong so far.
#[derive(Debug)]
struct WindowEnd;

impl fmt::Display for WindowEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the sniffed head of the file ends here")
    }
}

impl std::error::Error for WindowEnd {}

fn is_window_end(error: &io::Error) -> bool {
    error.get_ref().is_some_and(|inner| inner.is::<WindowEnd>())
}

/// Whether a decoder failed only because it wanted more than the head.
fn ran_out(error: &ImageError) -> bool {
    if let ImageError::IoError(io) = error {
        return is_window_end(io);
    }
    let mut cause = std::error::Error::source(error);
    while let Some(error) = cause {
        if error.is::<WindowEnd>() || error.downcast_ref::<io::Error>().is_some_and(is_window_end) {
            return true;
        }
        cause = error.source();
    }
    false
}

/// The head as a decoder reads it. When the head is a full window (the file goes on),
/// reading past its end is the [`WindowEnd`] error, not the end of the file.
struct Window<'a> {
    bytes: io::Cursor<&'a [u8]>,
    file_goes_on: bool,
}

impl<'a> Window<'a> {
    fn new(head: &'a [u8], file_goes_on: bool) -> Self {
        Self { bytes: io::Cursor::new(head), file_goes_on }
    }

    fn check_end(&self) -> io::Result<()> {
        let at_end = self.bytes.position() >= self.bytes.get_ref().len() as u64;
        if self.file_goes_on && at_end {
            Err(io::Error::new(io::ErrorKind::UnexpectedEof, WindowEnd))
        } else {
            Ok(())
        }
    }
}

impl io::Read for Window<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if !buf.is_empty() {
            self.check_end()?;
        }
        self.bytes.read(buf)
    }
}

impl io::BufRead for Window<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.check_end()?;
        self.bytes.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        self.bytes.consume(amount);
    }
}

impl io::Seek for Window<'_> {
    fn seek(&mut self, to: io::SeekFrom) -> io::Result<u64> {
        if self.file_goes_on && matches!(to, io::SeekFrom::End(_)) {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, WindowEnd));
        }
        self.bytes.seek(to)
    }
}

/// Bytes of a file's head that [`is_image`] reads.
pub const SNIFF_BYTES: usize = 1024;

/// The `Content-Type` of a served file, from its extension.
pub fn content_type(name: &FileName) -> &'static str {
    let ext = name.split_extension().1.map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        Some("avif") => "image/avif",
        Some("svg") => "image/svg+xml",
        Some("ico") => "image/x-icon",
        Some("bmp") => "image/bmp",
        Some("tif" | "tiff") => "image/tiff",
        Some("pdf") => "application/pdf",
        Some("mp4") => "video/mp4",
        Some("webm") => "video/webm",
        Some("mov") => "video/quicktime",
        Some("mp3") => "audio/mpeg",
        Some("ogg") => "audio/ogg",
        Some("wav") => "audio/wav",
        Some("txt") => "text/plain; charset=utf-8",
        Some("md") => "text/markdown; charset=utf-8",
        Some("csv") => "text/csv; charset=utf-8",
        Some("json") => "application/json",
        Some("css") => "text/css; charset=utf-8",
        Some("html" | "htm") => "text/html; charset=utf-8",
        Some("xml") => "application/xml",
        Some("zip") => "application/zip",
        Some("woff2") => "font/woff2",
        Some("woff") => "font/woff",
        _ => "application/octet-stream",
    }
}

/// How a served file may be shown by a browser, from its extension (which also gives its
/// `Content-Type`; files are served with `nosniff`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// Shown as it is: images, PDFs, media, plain text.
    Inline,
    /// Could run script in the site's origin if shown (SVG, JavaScript): shown, sandboxed.
    Sandboxed,
    /// HTML and XML documents: downloaded, never shown as a page of the site (and
    /// sandboxed too, should a browser show one anyway).
    Attachment,
}

pub fn disposition(name: &FileName) -> Disposition {
    let ext = name.split_extension().1.map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("html" | "htm" | "xhtml" | "xml" | "xsl") => Disposition::Attachment,
        Some("svg" | "svgz" | "js" | "mjs") => Disposition::Sandboxed,
        _ => Disposition::Inline,
    }
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
fn percent_encode(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subpaths() {
        assert!(Subpath::parse("").unwrap().is_root());
        assert_eq!(Subpath::parse("2026/heroes/").unwrap().as_str(), "2026/heroes");
        for bad in [
            "..",
            "a/../b",
            "/etc",
            "a//b",
            "./a",
            "a\\b",
            "a\0b",
            "%2e%2e",
            ".hidden",
            "\\\\server\\x",
            &"a/".repeat(600),
        ] {
            assert!(Subpath::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn file_names() {
        assert!(FileName::parse("hero image.jpg").is_ok());
        for bad in ["", ".", "..", "../x", "a/b", ".htaccess", "a\0", "%2e%2e", &"x".repeat(256)] {
            assert!(FileName::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_url_tail_names_a_file_or_nothing() {
        let path = FilePath::from_url_tail("2024/06/hero.jpg").unwrap();
        assert_eq!((path.dir.as_str(), path.name.as_str()), ("2024/06", "hero.jpg"));
        assert_eq!(path.to_string(), "2024/06/hero.jpg");
        let top = FilePath::from_url_tail("logo.png").unwrap();
        assert!(top.dir.is_root() && top.name.as_str() == "logo.png");
        for nothing in ["", "a/", "../x.png", "a/../b.png", ".env", "a/.git/config", "%2e%2e/x"] {
            let error = FilePath::from_url_tail(nothing).unwrap_err();
            assert!(matches!(error, CoreError::NotFound(_)), "{nothing:?}: {error:?}");
        }
    }

    #[test]
    fn upload_names_are_sanitized() {
        let cases = [
            ("../../x", "x"),
            ("C:\\Users\\ann\\My Photo (1).JPG", "My-Photo-1.JPG"),
            ("résumé.pdf", "resume.pdf"),
            (".env", "env"),
            ("...", "upload"),
            ("a..b.png", "a.b.png"),
            ("", "upload"),
            ("/", "upload"),
        ];
        for (raw, expected) in cases {
            assert_eq!(sanitize_upload_name(raw).unwrap().as_str(), expected, "{raw:?}");
        }
        let long = sanitize_upload_name(&format!("{}.jpeg", "x".repeat(300))).unwrap();
        assert!(long.as_str().len() <= 120 && long.as_str().ends_with(".jpeg"), "{long}");
    }

    #[test]
    fn numbering_and_renames() {
        let hero = FileName::parse("hero.jpg").unwrap();
        assert_eq!(hero.numbered(2).as_str(), "hero-2.jpg");
        assert_eq!(FileName::parse("README").unwrap().numbered(1).as_str(), "README-1");
        let renamed = hero.renamed(&FileName::parse("hero-v2").unwrap()).unwrap();
        assert_eq!(renamed.as_str(), "hero-v2.jpg");
        assert_eq!(hero.renamed(&FileName::parse("x.png").unwrap()).unwrap().as_str(), "x.png");
    }

    /// A real image of `format`, as its encoder writes it.
    fn encoded(format: image::ImageFormat) -> Vec<u8> {
        let mut out = std::io::Cursor::new(Vec::new());
        image::RgbImage::new(3, 2).write_to(&mut out, format).unwrap();
        out.into_inner()
    }

    /// The first [`SNIFF_BYTES`] of a file, as the listing reads them.
    fn head(file: &[u8]) -> &[u8] {
        &file[..file.len().min(SNIFF_BYTES)]
    }

    #[test]
    fn real_image_headers_are_images() {
        use image::ImageFormat::*;
        for format in [Png, Jpeg, Gif, WebP, Bmp, Ico, Tiff] {
            let file = encoded(format);
            assert!(is_image(head(&file)), "{format:?}");
            assert!(!is_image(&file[..12]), "{format:?} cut short is not an image");
        }
        assert!(is_image(b"\x00\x00\x00\x1cftypavif\x00\x00\x00\x00avifmif1miaf"));
        assert!(is_image(
            b"\xef\xbb\xbf<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"/>".as_slice()
        ));
        assert!(is_image(
            b"<!-- logo -->\n<!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\" \"x.dtd\">\n<svg>"
        ));
    }

    /// Photos carry metadata (EXIF, ICC profiles, text chunks) before the part of the
    /// header that holds the size: a head that ends inside it is still an image.
    #[test]
    fn metadata_longer_than_the_sniffed_head_is_still_an_image() {
        let jpeg = encoded(image::ImageFormat::Jpeg);
        let mut exif = b"\xff\xd8\xff\xe1\xff\xf0Exif\x00\x00".to_vec();
        exif.resize(4 + 0xfff0, 0);
        exif.extend_from_slice(&jpeg[2..]);
        assert!(is_image(head(&exif)));

        let png = encoded(image::ImageFormat::Png);
        let text = vec![b'a'; 5000];
        let mut long = png[..33].to_vec(); // signature and IHDR
        long.extend_from_slice(&(text.len() as u32).to_be_bytes());
        long.extend_from_slice(b"tEXt");
        long.extend_from_slice(&text);
        long.extend_from_slice(&crc32(b"tEXt", &text).to_be_bytes());
        long.extend_from_slice(&png[33..]);
        assert!(is_image(head(&long)));
    }

    /// The PNG chunk checksum (CRC-32 of type and data).
    fn crc32(kind: &[u8], data: &[u8]) -> u32 {
        let mut crc = !0u32;
        for byte in kind.iter().chain(data) {
            crc ^= u32::from(*byte);
            for _ in 0..8 {
                crc = if crc & 1 == 1 { (crc >> 1) ^ 0xedb8_8320 } else { crc >> 1 };
            }
        }
        !crc
    }

    #[test]
    fn magic_numbers_alone_do_not_make_an_image() {
        let text = |start: &str| format!("{start} {}", "plain text, not an image. ".repeat(80)).into_bytes();
        for start in ["BM", "BMP notes", "GIF89a", "GIF87a", "RIFF1234WEBPVP8 "] {
            let file = text(start);
            assert!(!is_image(head(&file)), "{start:?}, long");
            assert!(!is_image(&file[..40]), "{start:?}, short");
        }
        let mut png_magic = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR-not-really-an-image".to_vec();
        assert!(!is_image(&png_magic));
        png_magic.resize(4096, b'x');
        assert!(!is_image(head(&png_magic)));
        assert!(!is_image(b"\xff\xd8\xff not a JPEG marker"));
        assert!(!is_image(b"%PDF-1.7"));
        assert!(!is_image(b"just text that mentions <svg later"));
        assert!(!is_image(b""));
    }

    #[test]
    fn html_with_an_inline_svg_is_not_an_image() {
        for html in [
            "<!DOCTYPE html>\n<html><body><svg viewBox=\"0 0 1 1\"></svg></body></html>",
            "<html><svg></svg></html>",
            "<?xml version=\"1.0\"?><html xmlns=\"http://www.w3.org/1999/xhtml\"><svg/></html>",
            "<!-- <svg> --><p>text</p>",
            "<svgfoo/>",
        ] {
            assert!(!is_image(html.as_bytes()), "{html}");
        }
    }

    #[test]
    fn documents_are_served_as_attachments_and_svg_sandboxed() {
        let of = |name: &str| disposition(&FileName::parse(name).unwrap());
        for name in ["page.html", "PAGE.HTM", "a.xhtml", "feed.xml", "style.xsl"] {
            assert_eq!(of(name), Disposition::Attachment, "{name}");
        }
        for name in ["icon.svg", "icon.SVGZ", "app.js", "mod.mjs"] {
            assert_eq!(of(name), Disposition::Sandboxed, "{name}");
        }
        for name in ["logo.png", "doc.pdf", "notes.txt", "README"] {
            assert_eq!(of(name), Disposition::Inline, "{name}");
        }
    }

    #[test]
    fn urls_are_encoded() {
        let folder =
            ResourceFolder { index: 0, label: "U".into(), path: "media/u".into(), url: "/media/u".into() };
        let url =
            folder.file_url(&Subpath::parse("2026").unwrap(), &FileName::parse("my photo#1.jpg").unwrap());
        assert_eq!(url, "/media/u/2026/my%20photo%231.jpg");
    }
}
