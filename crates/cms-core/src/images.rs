//! Responsive images: the `images:` section of `cms.yaml`, the transform parameters of a
//! public media URL (`?w=&h=&fit=&format=&q=&preset=`), the output geometry, and the key a
//! rendered variant is cached under. Pure: decoding and encoding are the
//! [`crate::ports::ImageCodec`]'s job, storage the [`crate::ports::VariantStore`]'s.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::Deserialize;

use crate::error::{CoreError, CoreResult};

/// `images:` in `cms.yaml`. Only these sizes, qualities and presets are rendered, so that
/// nobody can make the server render (and keep) an unbounded number of variants.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImagesConfig {
    /// The values `w` and `h` may take.
    #[serde(default = "default_sizes")]
    #[schemars(length(min = 1), inner(range(min = 1, max = MAX_SIDE)))]
    pub sizes: Vec<u32>,
    /// The largest source image decoded (width × height); larger ones are refused from
    /// their header, before any pixel is decoded.
    #[serde(default = "default_max_pixels")]
    #[schemars(range(min = 1))]
    pub max_pixels: u64,
    /// The values `q` may take.
    #[serde(default = "default_qualities")]
    #[schemars(length(min = 1), inner(range(min = 1, max = 100)))]
    pub qualities: Vec<u8>,
    /// The quality used when `q` is absent (one of `qualities`).
    #[serde(default = "default_quality")]
    #[schemars(range(min = 1, max = 100))]
    pub quality: u8,
    /// Named transforms, made at upload time and served at `?preset=<name>`.
    #[serde(default)]
    pub presets: BTreeMap<String, PresetConfig>,
    /// Whether a variant may keep the source's size when `w` or `h` is absent. Off, every
    /// side of a variant is at most the largest of `sizes` (the aspect ratio kept), so
    /// that `?format=avif` of a 50 MP photo does not encode 50 MP.
    #[serde(default)]
    pub render_source_size: bool,
    /// The time one render may take (decode, resize, encode); past it the request is
    /// answered `503` and the render abandoned.
    #[serde(default = "default_render_timeout_secs")]
    #[schemars(range(min = 1, max = 600))]
    pub render_timeout_secs: u64,
    /// How long a request waits for a free image worker before it is answered `503`.
    #[serde(default = "default_queue_timeout_secs")]
    #[schemars(range(min = 1, max = 300))]
    pub queue_timeout_secs: u64,
}

/// One named transform.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PresetConfig {
    /// The width; `w`, `h` or both.
    #[schemars(range(min = 1, max = MAX_SIDE))]
    pub w: Option<u32>,
    /// The height.
    #[schemars(range(min = 1, max = MAX_SIDE))]
    pub h: Option<u32>,
    /// How the image fills `w` × `h`.
    #[serde(default)]
    pub fit: Fit,
    /// Absent: the source's own format.
    pub format: Option<OutputFormat>,
    /// The quality (1 to 100); absent: `images.quality`.
    #[schemars(range(min = 1, max = 100))]
    pub q: Option<u8>,
}

fn default_sizes() -> Vec<u32> {
    vec![160, 320, 480, 640, 800, 1024, 1280, 1600, 1920, 2560]
}
fn default_max_pixels() -> u64 {
    50_000_000
}
fn default_qualities() -> Vec<u8> {
    vec![50, 75, 90]
}
fn default_quality() -> u8 {
    75
}
fn default_render_timeout_secs() -> u64 {
    15
}
fn default_queue_timeout_secs() -> u64 {
    5
}

/// The range of `images.render_timeout_secs`.
const RENDER_TIMEOUT_SECS: std::ops::RangeInclusive<u64> = 1..=600;
/// The range of `images.queue_timeout_secs`.
const QUEUE_TIMEOUT_SECS: std::ops::RangeInclusive<u64> = 1..=300;

impl Default for ImagesConfig {
    fn default() -> Self {
        Self {
            sizes: default_sizes(),
            max_pixels: default_max_pixels(),
            qualities: default_qualities(),
            quality: default_quality(),
            presets: BTreeMap::new(),
            render_source_size: false,
            render_timeout_secs: default_render_timeout_secs(),
            queue_timeout_secs: default_queue_timeout_secs(),
        }
    }
}

/// The largest `w` or `h` any configuration may allow.
pub const MAX_SIDE: u32 = 8192;

/// How the image fills the requested box.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Fit {
    /// Exactly `w` × `h`, the image scaled to cover it and the overflow cropped (centred).
    Cover,
    /// Exactly `w` × `h`, the whole image scaled into it and the rest padded.
    Contain,
    /// The aspect ratio kept, within `w` × `h`, never enlarged.
    #[default]
    Inside,
}

impl Fit {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cover => "cover",
            Self::Contain => "contain",
            Self::Inside => "inside",
        }
    }
}

/// An encoding a variant can be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OutputFormat {
    Webp,
    Avif,
    Jpeg,
    Png,
}

impl OutputFormat {
    pub fn extension(self) -> &'static str {
        match self {
            Self::Webp => "webp",
            Self::Avif => "avif",
            Self::Jpeg => "jpg",
            Self::Png => "png",
        }
    }

    /// The format's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::Webp => "WebP",
            Self::Avif => "AVIF",
            Self::Jpeg => "JPEG",
            Self::Png => "PNG",
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Self::Webp => "image/webp",
            Self::Avif => "image/avif",
            Self::Jpeg => "image/jpeg",
            Self::Png => "image/png",
        }
    }

    /// What a variant without `format` is written in: the source's own format when it is
    /// one of ours, PNG otherwise (a GIF, whose single frame loses nothing in PNG).
    pub fn for_source(content_type: &str) -> Self {
        match content_type {
            "image/jpeg" => Self::Jpeg,
            "image/webp" => Self::Webp,
            "image/avif" => Self::Avif,
            _ => Self::Png,
        }
    }

    /// `auto`: AVIF, then WebP, when the `Accept` header names them (with a quality above
    /// zero); else what a browser that accepts neither shows: JPEG for photos, else PNG.
    pub fn negotiate(accept: Option<&str>, source_content_type: &str) -> Self {
        let accepts = |wanted: &str| {
            accept.unwrap_or("").split(',').any(|part| {
                let mut params = part.split(';').map(str::trim);
                let matches = params.next().is_some_and(|t| t.eq_ignore_ascii_case(wanted));
                let refused = params.any(|p| {
                    p.strip_prefix("q=").and_then(|q| q.parse::<f32>().ok()).is_some_and(|q| q <= 0.0)
                });
                matches && !refused
            })
        };
        if accepts("image/avif") {
            Self::Avif
        } else if accepts("image/webp") {
            Self::Webp
        } else if source_content_type == "image/jpeg" {
            Self::Jpeg
        } else {
            Self::Png
        }
    }
}

/// The format parameter as asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormatChoice {
    /// No `format`: the source's own.
    Source,
    /// `format=auto`: chosen from `Accept` (the answer then varies by `Accept`).
    Auto,
    Exact(OutputFormat),
}

/// A validated transform: what a public media URL's parameters ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transform {
    pub width: Option<u32>,
    pub height: Option<u32>,
    pub fit: Fit,
    pub format: FormatChoice,
    pub quality: u8,
}

/// A transform with its format decided: what the codec is asked to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderSpec {
    pub width: Option<u32>,
    pub height: Option<u32>,
    pub fit: Fit,
    pub format: OutputFormat,
    pub quality: u8,
    /// The longest side of the output where `width` or `height` is absent (the largest of
    /// `images.sizes`); `None` with `images.render_source_size`.
    pub max_side: Option<u32>,
    /// What the render may cost.
    pub limits: RenderLimits,
}

/// The bounds of one render, from `images:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderLimits {
    /// The largest source (width × height) the codec may decode.
    pub max_pixels: u64,
    /// How long the render may take once a worker has it.
    pub render_timeout: Duration,
    /// How long the request may wait for a worker.
    pub queue_timeout: Duration,
}

impl RenderSpec {
    /// The part of the cache key that names the parameters: `w800-h_-inside-q75-max2560.webp`
    /// (the bound of an absent side is part of the key, so that changing `images.sizes`
    /// never serves a variant made under the old bound).
    pub fn key_suffix(&self) -> String {
        let side = |v: Option<u32>| v.map_or_else(|| "_".to_owned(), |v| v.to_string());
        let bound = match self.max_side {
            Some(max) if self.width.is_none() || self.height.is_none() => format!("-max{max}"),
            _ => String::new(),
        };
        format!(
            "w{}-h{}-{}-q{}{bound}.{}",
            side(self.width),
            side(self.height),
            self.fit.as_str(),
            self.quality,
            self.format.extension()
        )
    }

    /// The geometry of this variant of a `source_width` × `source_height` image
    /// (orientation applied).
    pub fn geometry(&self, source_width: u32, source_height: u32) -> Geometry {
        geometry(source_width, source_height, self.width, self.height, self.fit, self.max_side)
    }
}

/// The parameters a public media URL may carry to ask for a variant.
pub const TRANSFORM_PARAMS: [&str; 6] = ["w", "h", "fit", "format", "q", "preset"];

fn join<T: fmt::Display>(values: &[T]) -> String {
    values.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

fn valid_preset_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 40
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

impl ImagesConfig {
    /// Checks the section; messages name the key.
    pub fn validate(&self) -> Result<(), String> {
        if self.sizes.is_empty() || self.sizes.iter().any(|s| !(1..=MAX_SIDE).contains(s)) {
            return Err(format!("images.sizes must list widths/heights from 1 to {MAX_SIDE}"));
        }
        if self.max_pixels == 0 {
            return Err("images.max_pixels must be greater than 0".into());
        }
        if self.qualities.is_empty() || self.qualities.iter().any(|q| !(1..=100).contains(q)) {
            return Err("images.qualities must list qualities from 1 to 100".into());
        }
        if !RENDER_TIMEOUT_SECS.contains(&self.render_timeout_secs) {
            return Err(format!(
                "images.render_timeout_secs must be from {} to {} (seconds)",
                RENDER_TIMEOUT_SECS.start(),
                RENDER_TIMEOUT_SECS.end()
            ));
        }
        if !QUEUE_TIMEOUT_SECS.contains(&self.queue_timeout_secs) {
            return Err(format!(
                "images.queue_timeout_secs must be from {} to {} (seconds)",
                QUEUE_TIMEOUT_SECS.start(),
                QUEUE_TIMEOUT_SECS.end()
            ));
        }
        if !self.qualities.contains(&self.quality) {
            return Err(format!(
                "images.quality {} must be one of images.qualities ({})",
                self.quality,
                join(&self.qualities)
            ));
        }
        for (name, preset) in &self.presets {
            let key = format!("images.presets.{name}");
            if !valid_preset_name(name) {
                return Err(format!("{key}: preset names are lowercase letters, digits, '-' and '_'"));
            }
            if preset.w.is_none() && preset.h.is_none() {
                return Err(format!("{key} needs w, h or both"));
            }
            if [preset.w, preset.h].into_iter().flatten().any(|s| !(1..=MAX_SIDE).contains(&s)) {
                return Err(format!("{key}: w and h must be from 1 to {MAX_SIDE}"));
            }
            if preset.q.is_some_and(|q| !(1..=100).contains(&q)) {
                return Err(format!("{key}.q must be from 1 to 100"));
            }
        }
        Ok(())
    }

    /// The transform a URL's query parameters ask for; `None` when they name none of
    /// [`TRANSFORM_PARAMS`] (other parameters, such as cache busters, are ignored).
    /// A value outside what `cms.yaml` allows is `Invalid`, with the allowed values.
    pub fn parse_transform(&self, query: &[(String, String)]) -> CoreResult<Option<Transform>> {
        let mut given: BTreeMap<&str, &str> = BTreeMap::new();
        for (key, value) in query {
            if let Some(known) = TRANSFORM_PARAMS.iter().find(|p| **p == key)
                && given.insert(known, value.as_str()).is_some()
            {
                return Err(CoreError::invalid(format!("{key} is given more than once")));
            }
        }
        if given.is_empty() {
            return Ok(None);
        }
        // A preset is the starting point; the other parameters override its values.
        let base = match given.get("preset") {
            Some(name) => self.preset(name)?,
            None => Transform {
                width: None,
                height: None,
                fit: Fit::Inside,
                format: FormatChoice::Source,
                quality: self.quality,
            },
        };
        let side = |key: &str| -> CoreResult<Option<u32>> {
            let Some(raw) = given.get(key) else { return Ok(None) };
            match raw.parse::<u32>() {
                Ok(v) if self.sizes.contains(&v) => Ok(Some(v)),
                _ => Err(CoreError::invalid(format!(
                    "{key}={raw:?} is not an allowed size; images.sizes allows {}",
                    join(&self.sizes)
                ))),
            }
        };
        let (width, height) = (side("w")?.or(base.width), side("h")?.or(base.height));
        let fit = match given.get("fit").copied() {
            None => base.fit,
            Some("cover") => Fit::Cover,
            Some("contain") => Fit::Contain,
            Some("inside") => Fit::Inside,
            Some(other) => {
                return Err(CoreError::invalid(format!(
                    "fit={other:?} is not one of cover, contain, inside"
                )));
            }
        };
        let format = match given.get("format").copied() {
            None => base.format,
            Some("auto") => FormatChoice::Auto,
            Some("webp") => FormatChoice::Exact(OutputFormat::Webp),
            Some("avif") => FormatChoice::Exact(OutputFormat::Avif),
            Some("jpeg" | "jpg") => FormatChoice::Exact(OutputFormat::Jpeg),
            Some("png") => FormatChoice::Exact(OutputFormat::Png),
            Some(other) => {
                return Err(CoreError::invalid(format!(
                    "format={other:?} is not one of auto, webp, avif, jpeg, png"
                )));
            }
        };
        let quality = match given.get("q") {
            None => base.quality,
            Some(raw) => match raw.parse::<u8>() {
                Ok(q) if self.qualities.contains(&q) => q,
                _ => {
                    return Err(CoreError::invalid(format!(
                        "q={raw:?} is not an allowed quality; images.qualities allows {}",
                        join(&self.qualities)
                    )));
                }
            },
        };
        Ok(Some(Transform { width, height, fit, format, quality }))
    }

    /// The transform a preset names.
    pub fn preset(&self, name: &str) -> CoreResult<Transform> {
        let preset = self.presets.get(name).ok_or_else(|| {
            let names: Vec<&str> = self.presets.keys().map(String::as_str).collect();
            CoreError::invalid(if names.is_empty() {
                format!("preset={name:?}: this site has no presets (images.presets in cms.yaml)")
            } else {
                format!("preset={name:?} is not a preset; images.presets has {}", names.join(", "))
            })
        })?;
        Ok(Transform {
            width: preset.w,
            height: preset.h,
            fit: preset.fit,
            format: preset.format.map_or(FormatChoice::Source, FormatChoice::Exact),
            quality: preset.q.unwrap_or(self.quality),
        })
    }

    /// The spec the codec renders: the format decided from the source and `Accept`.
    pub fn render_spec(&self, transform: &Transform, source_type: &str, accept: Option<&str>) -> RenderSpec {
        let format = match transform.format {
            FormatChoice::Source => OutputFormat::for_source(source_type),
            FormatChoice::Auto => OutputFormat::negotiate(accept, source_type),
            FormatChoice::Exact(format) => format,
        };
        RenderSpec {
            width: transform.width,
            height: transform.height,
            fit: transform.fit,
            format,
            quality: transform.quality,
            max_side: self.max_side(),
            limits: self.limits(),
        }
    }

    /// The bound of a side the request leaves open: the largest allowed size, unless
    /// `images.render_source_size` lets it keep the source's.
    pub fn max_side(&self) -> Option<u32> {
        if self.render_source_size { None } else { self.sizes.iter().copied().max() }
    }

    /// What one render may cost.
    pub fn limits(&self) -> RenderLimits {
        RenderLimits {
            max_pixels: self.max_pixels,
            render_timeout: Duration::from_secs(self.render_timeout_secs),
            queue_timeout: Duration::from_secs(self.queue_timeout_secs),
        }
    }
}

/// Whether a file of this content type can be transformed.
pub fn is_transformable(content_type: &str) -> bool {
    matches!(content_type, "image/jpeg" | "image/png" | "image/webp" | "image/gif")
}

/// Where a variant's pixels come from and go.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Geometry {
    /// The output's size.
    pub width: u32,
    pub height: u32,
    /// The part of the (oriented) source that is scaled: left, top, width, height.
    pub crop: (f64, f64, f64, f64),
    /// Where the scaled image lands in the output: left, top, width, height (smaller than
    /// the output only for `contain`, whose border is padding).
    pub placed: (u32, u32, u32, u32),
}

/// The geometry of a variant of a `source_width` × `source_height` image (orientation
/// applied). With only one side given, every fit keeps the aspect ratio; a side not given
/// is at most `max_side` (when there is one). The crop is always centred, so it is the
/// same rectangle, turned, in the source as stored (which is how the codec uses it).
pub fn geometry(
    source_width: u32,
    source_height: u32,
    spec_width: Option<u32>,
    spec_height: Option<u32>,
    fit: Fit,
    max_side: Option<u32>,
) -> Geometry {
    let (sw, sh) = (f64::from(source_width.max(1)), f64::from(source_height.max(1)));
    let round = |v: f64| (v.round() as u32).max(1);
    let full = (0.0, 0.0, sw, sh);
    match (spec_width, spec_height, fit) {
        (Some(w), Some(h), Fit::Cover) => {
            let scale = (f64::from(w) / sw).max(f64::from(h) / sh);
            let (cw, ch) = ((f64::from(w) / scale).min(sw), (f64::from(h) / scale).min(sh));
            Geometry {
                width: w,
                height: h,
                crop: ((sw - cw) / 2.0, (sh - ch) / 2.0, cw, ch),
                placed: (0, 0, w, h),
            }
        }
        (Some(w), Some(h), Fit::Contain) => {
            let scale = (f64::from(w) / sw).min(f64::from(h) / sh);
            let (pw, ph) = (round(sw * scale).min(w), round(sh * scale).min(h));
            Geometry { width: w, height: h, crop: full, placed: ((w - pw) / 2, (h - ph) / 2, pw, ph) }
        }
        (w, h, _) => {
            let scale_w = w.or(max_side).map_or(f64::INFINITY, |w| f64::from(w) / sw);
            let scale_h = h.or(max_side).map_or(f64::INFINITY, |h| f64::from(h) / sh);
            let scale = scale_w.min(scale_h).min(1.0);
            let (ow, oh) = (round(sw * scale), round(sh * scale));
            Geometry { width: ow, height: oh, crop: full, placed: (0, 0, ow, oh) }
        }
    }
}

/// The name a variant is stored under: the first 16 hex digits of the source's SHA-256,
/// then [`RenderSpec::key_suffix`]. Only `[a-z0-9_.-]`, so adapters can use it as a file name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VariantKey(String);

const HASH_DIGITS: usize = 16;

impl VariantKey {
    pub fn new(source_hash: &str, spec: &RenderSpec) -> Self {
        Self(format!("{}-{}", &source_hash[..HASH_DIGITS.min(source_hash.len())], spec.key_suffix()))
    }

    /// A stored name read back (from a listing); `None` for anything else.
    pub fn parse(raw: &str) -> Option<Self> {
        let ok = raw.len() > HASH_DIGITS + 1
            && raw.len() <= 100
            && raw.as_bytes()[HASH_DIGITS] == b'-'
            && raw[..HASH_DIGITS].bytes().all(|b| b.is_ascii_hexdigit())
            && raw.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_.-".contains(&b));
        ok.then(|| Self(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The `v=` of this variant's URL: it names the source's content and every parameter
    /// of the render (a preset redefined in `cms.yaml` makes another variant, another `v=`).
    pub fn version(&self) -> String {
        let digest = ring::digest::digest(&ring::digest::SHA256, self.0.as_bytes());
        hex::encode(digest)[..VERSION_DIGITS].to_owned()
    }

    /// The source-content part: variants with another one are of an older source.
    pub fn source_hash(&self) -> &str {
        &self.0[..HASH_DIGITS]
    }

    /// The parameters part ([`RenderSpec::key_suffix`]).
    pub fn suffix(&self) -> &str {
        &self.0[HASH_DIGITS + 1..]
    }
}

impl fmt::Display for VariantKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The SHA-256 of a source, hex.
pub fn content_hash(bytes: &[u8]) -> String {
    hex::encode(ring::digest::digest(&ring::digest::SHA256, bytes))
}

/// Hex digits of a variant's version that its URL carries as `v=`: enough that two
/// contents of one variant never share them by chance.
pub const VERSION_DIGITS: usize = 12;

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(query: &str) -> Vec<(String, String)> {
        query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                (k.to_owned(), v.to_owned())
            })
            .collect()
    }

    fn config() -> ImagesConfig {
        let mut c = ImagesConfig::default();
        c.presets.insert(
            "thumb".into(),
            PresetConfig {
                w: Some(320),
                h: Some(320),
                fit: Fit::Cover,
                format: Some(OutputFormat::Webp),
                q: None,
            },
        );
        c
    }

    #[test]
    fn parameters_are_limited_to_the_configured_values() {
        let c = config();
        assert_eq!(c.parse_transform(&pairs("v=3")).unwrap(), None);
        let t = c.parse_transform(&pairs("w=800&format=webp")).unwrap().unwrap();
        assert_eq!((t.width, t.height, t.fit, t.quality), (Some(800), None, Fit::Inside, 75));
        let err = c.parse_transform(&pairs("w=801")).unwrap_err().to_string();
        assert!(err.contains("160, 320"), "{err}");
        for bad in ["q=76", "fit=fill&w=800", "format=gif", "w=800&w=320", "preset=big"] {
            assert!(c.parse_transform(&pairs(bad)).is_err(), "{bad}");
        }
        let thumb = c.parse_transform(&pairs("preset=thumb")).unwrap().unwrap();
        assert_eq!(thumb.format, FormatChoice::Exact(OutputFormat::Webp));
        let smaller = c.parse_transform(&pairs("preset=thumb&w=160&format=auto")).unwrap().unwrap();
        assert_eq!((smaller.width, smaller.height, smaller.fit), (Some(160), Some(320), Fit::Cover));
        assert_eq!(smaller.format, FormatChoice::Auto);
    }

    #[test]
    fn auto_format_follows_accept() {
        let chrome = Some("image/avif,image/webp,image/apng,image/*,*/*;q=0.8");
        assert_eq!(OutputFormat::negotiate(chrome, "image/jpeg"), OutputFormat::Avif);
        assert_eq!(OutputFormat::negotiate(Some("image/webp,*/*"), "image/png"), OutputFormat::Webp);
        assert_eq!(OutputFormat::negotiate(Some("image/avif;q=0, */*"), "image/jpeg"), OutputFormat::Jpeg);
        assert_eq!(OutputFormat::negotiate(None, "image/gif"), OutputFormat::Png);
    }

    #[test]
    fn geometry_of_each_fit() {
        let inside = geometry(4000, 3000, Some(800), None, Fit::Inside, None);
        assert_eq!((inside.width, inside.height), (800, 600));
        let small = geometry(100, 50, Some(800), Some(800), Fit::Inside, None);
        assert_eq!((small.width, small.height), (100, 50), "never enlarged");
        let cover = geometry(4000, 3000, Some(320), Some(320), Fit::Cover, None);
        assert_eq!((cover.width, cover.height), (320, 320));
        assert_eq!(cover.crop, (500.0, 0.0, 3000.0, 3000.0));
        let contain = geometry(4000, 2000, Some(320), Some(320), Fit::Contain, None);
        assert_eq!(contain.placed, (0, 80, 320, 160));
    }

    #[test]
    fn an_open_side_is_bounded_by_the_largest_size_unless_the_site_allows_the_source_size() {
        let c = config();
        let spec = |query: &str, c: &ImagesConfig| {
            c.render_spec(&c.parse_transform(&pairs(query)).unwrap().unwrap(), "image/png", None)
        };
        // Without w or h: within 2560 × 2560, the aspect ratio kept (the 7000 × 7000
        // PNG asked as `?format=avif&q=90` was encoded at 49 MP).
        let whole = spec("format=avif&q=90", &c);
        let g = whole.geometry(7000, 7000);
        assert_eq!((g.width, g.height), (2560, 2560));
        let g = whole.geometry(4000, 3000);
        assert_eq!((g.width, g.height), (2560, 1920));
        assert_eq!(whole.geometry(640, 480).width, 640, "never enlarged");
        // One side given: the other is bounded too (1 × 40,000,000 at w=160 was 40 MP tall).
        let narrow = spec("w=160&format=avif", &c).geometry(1, 40_000_000);
        assert_eq!((narrow.width, narrow.height), (1, 2560));
        let flat = spec("h=160", &c).geometry(40_000_000, 1);
        assert_eq!((flat.width, flat.height), (2560, 1));
        // Both sides given: the box is the request's.
        let boxed = spec("w=160&h=160&fit=contain", &c).geometry(40_000_000, 1);
        assert_eq!((boxed.width, boxed.height, boxed.placed), (160, 160, (0, 79, 160, 1)));
        // The bound is part of the key, so a change of images.sizes renders anew.
        assert_eq!(whole.key_suffix(), "w_-h_-inside-q90-max2560.avif");
        assert_eq!(spec("w=160&h=160", &c).key_suffix(), "w160-h160-inside-q75.png");
        let mut source_size = config();
        source_size.render_source_size = true;
        let whole = spec("format=avif&q=90", &source_size);
        let g = whole.geometry(7000, 7000);
        assert_eq!((g.width, g.height), (7000, 7000));
        assert_eq!(whole.key_suffix(), "w_-h_-inside-q90.avif");
    }

    #[test]
    fn keys_round_trip() {
        let spec = config().render_spec(&config().preset("thumb").unwrap(), "image/jpeg", None);
        let key = VariantKey::new(&content_hash(b"x"), &spec);
        assert_eq!(key.suffix(), "w320-h320-cover-q75.webp");
        assert_eq!(VariantKey::parse(key.as_str()), Some(key.clone()));
        assert_eq!(VariantKey::parse("../etc"), None);
    }

    #[test]
    fn a_variant_url_version_names_the_source_and_the_render() {
        let thumb = config().render_spec(&config().preset("thumb").unwrap(), "image/jpeg", None);
        let other_spec = config().render_spec(
            &config().parse_transform(&[("w".into(), "160".into())]).unwrap().unwrap(),
            "image/jpeg",
            None,
        );
        let version = VariantKey::new(&content_hash(b"x"), &thumb).version();
        assert_eq!(version.len(), VERSION_DIGITS);
        assert_eq!(version, VariantKey::new(&content_hash(b"x"), &thumb).version(), "stable");
        assert_ne!(version, VariantKey::new(&content_hash(b"y"), &thumb).version(), "other content");
        assert_ne!(version, VariantKey::new(&content_hash(b"x"), &other_spec).version(), "another render");
    }
}
