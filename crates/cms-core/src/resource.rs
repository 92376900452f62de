//! Resource folders and the names inside them. A [`Subpath`] or [`FileName`] can only be
//! built from input that cannot leave the folder, so a path that reaches an adapter is
//! already safe.

use std::fmt;

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
/// GIF, WebP, AVIF/HEIC, BMP, ICO, TIFF or SVG.
pub fn is_image(head: &[u8]) -> bool {
    let starts = |magic: &[u8]| head.starts_with(magic);
    starts(b"\x89PNG\r\n\x1a\n")
        || starts(b"\xff\xd8\xff")
        || starts(b"GIF87a")
        || starts(b"GIF89a")
        || (starts(b"RIFF") && head.get(8..12) == Some(b"WEBP"))
        || (head.get(4..8) == Some(b"ftyp")
            && matches!(head.get(8..12), Some(b"avif" | b"avis" | b"heic" | b"heix" | b"mif1")))
        || starts(b"BM")
        || starts(b"\x00\x00\x01\x00")
        || starts(b"II*\x00")
        || starts(b"MM\x00*")
        || looks_like_svg(head)
}

/// SVG is text: an `<svg` element near the start, after an optional XML declaration,
/// doctype or comments.
fn looks_like_svg(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(&head[..head.len().min(1024)]).to_ascii_lowercase();
    let text = text.trim_start_matches('\u{feff}').trim_start();
    text.starts_with('<') && text.contains("<svg")
}

/// Bytes of a file's head that [`is_image`] needs.
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

/// Whether a browser could run script from this file if it were shown inline in the
/// site's origin (HTML, SVG, XML): such files are served sandboxed.
pub fn is_active_content(name: &FileName) -> bool {
    let ext = name.split_extension().1.map(str::to_ascii_lowercase);
    matches!(ext.as_deref(), Some("html" | "htm" | "xhtml" | "svg" | "svgz" | "xml" | "xsl" | "js" | "mjs"))
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

    #[test]
    fn images_are_known_by_content() {
        assert!(is_image(b"\x89PNG\r\n\x1a\n...."));
        assert!(is_image(b"\xff\xd8\xff\xe0"));
        assert!(is_image(b"RIFF\x00\x00\x00\x00WEBPVP8 "));
        assert!(is_image(
            b"\xef\xbb\xbf<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"/>".as_slice()
        ));
        assert!(!is_image(b"%PDF-1.7"));
        assert!(!is_image(b"just text that mentions <svg later"));
        assert!(!is_image(b""));
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
