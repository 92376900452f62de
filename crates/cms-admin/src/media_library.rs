//! Media into posts: the files of the resource folders as the edit page offers them (the
//! `datalist`s that the one media picker of `assets/admin.js` reads, for image fields and
//! for the body's *Insert image* alike), and the Markdown that puts a file into a post,
//! which the media page shows per file and per variant size, for its copy buttons.
//!
//! The script writes the same Markdown when it inserts an image (`markdownOf` in
//! `admin.js`): both follow [`image_markdown`] and [`link_markdown`].

use cms_core::policy::Principal;
use cms_core::resource::Subpath;
use cms_core::service::ResourceFile;

use crate::AdminState;

/// Files the library offers at most (the top of each folder and one level below).
const MEDIA_LIMIT: usize = 500;
/// Subfolders of a resource folder looked into.
const SUBFOLDER_LIMIT: usize = 20;

/// The id of the `datalist` of images.
pub const IMAGES_LIST: &str = "dl-images";
/// The id of the `datalist` of every file.
pub const FILES_LIST: &str = "dl-files";
/// The id of the `datalist` of the resource folders a picker may upload into (each option's
/// value the folder's index, its label the folder's).
pub const FOLDERS_LIST: &str = "dl-folders";

/// Suggestions for an input (`<datalist>`). The media picker reads its files from one
/// (each image with its thumbnail); a reference's input offers its items with one
/// (`model_view.rs`).
pub struct Datalist {
    pub id: String,
    pub options: Vec<Suggestion>,
}

/// One `<option>`: its value, a label (empty: none), and for an image the URL of its
/// thumbnail (`data-thumb`, read by the picker).
pub struct Suggestion {
    pub value: String,
    pub label: String,
    pub thumb: Option<String>,
}

impl Suggestion {
    pub fn labelled(value: String, label: String) -> Self {
        Self { value, label, thumb: None }
    }
}

/// The files of the resource folders, read once for an edit page.
#[derive(Debug, Default)]
pub struct MediaLibrary {
    /// Each file's URL path, and its thumbnail's when it is an image.
    files: Vec<(String, Option<String>)>,
    /// The resource folders that could be listed: index and label.
    folders: Vec<(usize, String)>,
    /// The resource folders could be listed (so files can be picked, or uploaded).
    pub listed: bool,
}

impl MediaLibrary {
    /// Reads the files `principal` may pick. What cannot be read (no resource folder, a
    /// role that may not list media) offers nothing: the inputs still take text.
    pub async fn load(state: &AdminState, principal: &Principal) -> Self {
        let mut library = Self::default();
        let sizes = &state.cms.images().sizes;
        let entry = |f: &ResourceFile| (f.url.clone(), f.is_image.then(|| thumbnail_url(f, sizes)));
        for index in 0..state.cms.resource_folders().len() {
            let Ok(top) = state.cms.list_resources(principal, index, &Subpath::root()).await else {
                continue;
            };
            library.listed = true;
            library.folders.push((index, state.cms.resource_folders()[index].label.clone()));
            library.files.extend(top.files.iter().map(entry));
            for dir in top.dirs.iter().take(SUBFOLDER_LIMIT) {
                if library.files.len() >= MEDIA_LIMIT {
                    break;
                }
                // A listed subfolder's name, so a subpath.
                let Ok(dir) = Subpath::parse(dir) else { continue };
                if let Ok(inner) = state.cms.list_resources(principal, index, &dir).await {
                    library.files.extend(inner.files.iter().map(entry));
                }
            }
        }
        library.files.truncate(MEDIA_LIMIT);
        library
    }

    /// What the edit page draws: the lists of images and of files, when listed.
    pub fn view(&self) -> Option<MediaView> {
        if !self.listed {
            return None;
        }
        let options = |images_only: bool| {
            self.files
                .iter()
                .filter(|(_, thumb)| thumb.is_some() || !images_only)
                .map(|(url, thumb)| Suggestion {
                    value: url.clone(),
                    label: String::new(),
                    thumb: thumb.clone(),
                })
                .collect()
        };
        let mut datalists = vec![
            Datalist { id: IMAGES_LIST.into(), options: options(true) },
            Datalist { id: FILES_LIST.into(), options: options(false) },
        ];
        if !self.folders.is_empty() {
            // The picker uploads into the first (with several, it asks which).
            let folders = self
                .folders
                .iter()
                .map(|(index, label)| Suggestion::labelled(index.to_string(), label.clone()));
            datalists.push(Datalist { id: FOLDERS_LIST.into(), options: folders.collect() });
        }
        Some(MediaView { images_list: IMAGES_LIST, datalists })
    }
}

/// The media library on the edit page.
pub struct MediaView {
    pub images_list: &'static str,
    pub datalists: Vec<Datalist>,
}

/// The text an image's alternative text starts as: its file name without the extension,
/// `-` and `_` as spaces (`team-photo_2026.jpg` → `team photo 2026`). The writer is
/// expected to change it; it is better than none.
pub fn alt_of(name: &str) -> String {
    let stem = name.rsplit_once('.').filter(|(stem, _)| !stem.is_empty()).map_or(name, |(stem, _)| stem);
    stem.replace(['-', '_'], " ").split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `![alt](url)`; the alt's brackets and backslashes escaped, and the URL in `<…>` when
/// it holds what would end it early (a space or a parenthesis).
pub fn image_markdown(alt: &str, url: &str) -> String {
    format!("!{}", link_markdown(alt, url))
}

/// `[text](url)`, escaped as [`image_markdown`].
pub fn link_markdown(text: &str, url: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '\\' | '[' | ']') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    let target = if url.contains([' ', '(', ')']) { format!("<{url}>") } else { url.to_owned() };
    format!("[{escaped}]({target})")
}

/// The smallest of `images.sizes` a thumbnail is drawn from: tiles are at most 80 CSS
/// pixels wide, so this is sharp on a screen of two device pixels per CSS pixel.
const THUMBNAIL_WIDTH: u32 = 160;

/// The URL of an image's thumbnail (the media page's tiles, the picker's buttons): the
/// variant of the smallest width of `images.sizes` that is at least [`THUMBNAIL_WIDTH`],
/// else of the largest (every such width is one the site renders), never the original,
/// which may be a photo of many megabytes.
pub fn thumbnail_url(file: &ResourceFile, sizes: &[u32]) -> String {
    let width =
        sizes.iter().copied().filter(|w| *w >= THUMBNAIL_WIDTH).min().or_else(|| sizes.iter().copied().max());
    let Some(width) = width else { return file.url.clone() };
    let join = if file.url.contains('?') { '&' } else { '?' };
    format!("{}{join}w={width}", file.url)
}

/// One size an image can go into a post at: a variant URL the site serves.
pub struct SizeChoice {
    pub label: String,
    pub url: String,
    pub markdown: String,
}

/// The sizes of `file` to choose from: the original, each preset's variant
/// (`images.presets`, with `v=` when known) and each width of `images.sizes` (`?w=`).
/// Only the values `cms.yaml` allows, so every URL is one the site answers.
pub fn size_choices(file: &ResourceFile, sizes: &[u32]) -> Vec<SizeChoice> {
    let alt = alt_of(&file.name);
    let choice = |label: String, url: String| SizeChoice { markdown: image_markdown(&alt, &url), label, url };
    let mut choices = vec![choice("Original".into(), file.url.clone())];
    if !file.is_image {
        return choices;
    }
    for variant in &file.variants {
        let label = match (variant.width, variant.height) {
            (Some(w), Some(h)) => format!("{} ({w} × {h})", variant.name),
            _ => variant.name.clone(),
        };
        choices.push(choice(label, variant.url.clone()));
    }
    let join = if file.url.contains('?') { '&' } else { '?' };
    for width in sizes {
        choices.push(choice(format!("{width} px wide"), format!("{}{join}w={width}", file.url)));
    }
    choices
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_of_a_file() {
        assert_eq!(alt_of("team-photo_2026.jpg"), "team photo 2026");
        assert_eq!(alt_of("README"), "README");
        assert_eq!(alt_of(".hidden"), ".hidden");
        assert_eq!(image_markdown("a [b]", "/media/u/x.png?w=800"), "![a \\[b\\]](/media/u/x.png?w=800)");
        assert_eq!(image_markdown("x", "/media/u/a(1).png"), "![x](</media/u/a(1).png>)");
        assert_eq!(link_markdown("report", "/media/u/report.pdf"), "[report](/media/u/report.pdf)");
    }

    /// An image of the library, with no preset's variant.
    fn hero() -> ResourceFile {
        ResourceFile {
            name: "hero.jpg".into(),
            size: 1,
            url: "/media/u/hero.jpg".into(),
            modified: 0,
            is_image: true,
            variants: vec![],
        }
    }

    #[test]
    fn sizes_are_the_original_the_presets_and_the_allowed_widths() {
        let file = ResourceFile {
            variants: vec![cms_core::service::VariantInfo {
                name: "thumb".into(),
                url: "/media/u/hero.jpg?preset=thumb&v=abc".into(),
                width: Some(320),
                height: Some(320),
                size: None,
            }],
            ..hero()
        };
        let choices = size_choices(&file, &[160, 800]);
        let urls: Vec<&str> = choices.iter().map(|c| c.url.as_str()).collect();
        assert_eq!(
            urls,
            [
                "/media/u/hero.jpg",
                "/media/u/hero.jpg?preset=thumb&v=abc",
                "/media/u/hero.jpg?w=160",
                "/media/u/hero.jpg?w=800"
            ]
        );
        assert_eq!(choices[1].label, "thumb (320 × 320)");
        assert_eq!(choices[3].markdown, "![hero](/media/u/hero.jpg?w=800)");
        let pdf = ResourceFile { name: "a.pdf".into(), is_image: false, variants: vec![], ..file };
        assert_eq!(size_choices(&pdf, &[160]).len(), 1);
    }

    #[test]
    fn a_thumbnail_is_a_width_the_site_renders() {
        let file = hero();
        let thumb = |sizes: &[u32]| thumbnail_url(&file, sizes);
        assert_eq!(thumb(&[1600, 160, 320]), "/media/u/hero.jpg?w=160");
        assert_eq!(thumb(&[1600, 240, 800]), "/media/u/hero.jpg?w=240", "the smallest from 160");
        assert_eq!(thumb(&[64, 100]), "/media/u/hero.jpg?w=100", "else the largest");
        assert_eq!(thumb(&[]), "/media/u/hero.jpg");
    }
}
