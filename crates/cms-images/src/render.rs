//! One variant: decode (bounded), reduce, resize, orient, pad, encode.
//!
//! Memory: the decoded source, plus a working copy (3 or 4 bytes a pixel) that is smaller
//! by the reduction factors, plus the output. A source much larger than its variant is
//! first shrunk by whole factors with a box filter (each output pixel the mean of a block),
//! down to at most [`REDUCING_GAP`] times the variant per side, and only that is resized
//! with Lanczos3: the filter's weights are counted per source pixel (about 48 bytes each,
//! 2.4 GB for one 40,000,000-pixel row), so they must never see a long source side. The
//! orientation is applied to the variant, not to the source: the crop is always centred, so
//! it is the same rectangle, turned, in the pixels as stored.

use std::io::Cursor;

use cms_core::images::{Fit, Geometry, OutputFormat, RenderSpec};
use fast_image_resize::images::Image;
use fast_image_resize::{FilterType, MulDiv, PixelType, ResizeAlg, ResizeOptions, Resizer};
use image::codecs::avif::AvifEncoder;
use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::PngEncoder;
use image::metadata::Orientation;
use image::{
    DynamicImage, ExtendedColorType, ImageDecoder, ImageEncoder, ImageFormat, ImageReader, Limits, RgbImage,
    RgbaImage,
};

use crate::budget::Budget;
use crate::error::ImageError;

/// rav1e's speed (0 slowest to 10 fastest). 10: a server answers while the visitor waits,
/// and rav1e here is pure Rust without assembly; 10 takes about a third of the time of 8
/// for files a few per cent larger (figures in docs/images.md).
const AVIF_SPEED: u8 = 10;
/// Room the decoder may allocate beyond the pixels themselves (tables, one row buffer).
const DECODER_SLACK: u64 = 64 * 1024 * 1024;
/// How much larger than the variant (per side) the box reduction leaves the source for the
/// Lanczos3 pass. Pillow's `reducing_gap`: from 3 on, the result cannot be told apart from
/// Lanczos3 over the whole source.
pub const REDUCING_GAP: f64 = 3.0;

/// Width and height as shown (orientation applied), from the file's first bytes.
pub fn probe(head: &[u8]) -> Option<(u32, u32)> {
    let mut decoder = ImageReader::new(Cursor::new(head)).with_guessed_format().ok()?.into_decoder().ok()?;
    let (w, h) = decoder.dimensions();
    Some(if turns(decoder.orientation().unwrap_or(Orientation::NoTransforms)) { (h, w) } else { (w, h) })
}

/// Whether an orientation swaps width and height.
fn turns(orientation: Orientation) -> bool {
    matches!(
        orientation,
        Orientation::Rotate90
            | Orientation::Rotate270
            | Orientation::Rotate90FlipH
            | Orientation::Rotate270FlipH
    )
}

/// Renders one variant of `source` as `spec` says, checking `budget` between its steps.
pub fn render(source: &[u8], spec: &RenderSpec, budget: &Budget<'_>) -> Result<Vec<u8>, ImageError> {
    let (decoded, orientation) = decode(source, spec.limits.max_pixels)?;
    budget.check()?;
    let turned = turns(orientation);
    let (width, height) = (decoded.width(), decoded.height());
    let g = if turned { spec.geometry(height, width) } else { spec.geometry(width, height) };
    fits(spec.format, g.width, g.height)?;
    let keep_alpha = spec.format != OutputFormat::Jpeg
        && (decoded.color().has_alpha()
            || spec.fit == Fit::Contain && spec.width.is_some() && spec.height.is_some());
    let scaled = resize(decoded, &g, turned, keep_alpha, budget)?;
    budget.check()?;
    let mut scaled = if keep_alpha {
        DynamicImage::ImageRgba8(
            RgbaImage::from_raw(scaled.width(), scaled.height(), scaled.into_vec()).ok_or_else(wrong_size)?,
        )
    } else {
        DynamicImage::ImageRgb8(
            RgbImage::from_raw(scaled.width(), scaled.height(), scaled.into_vec()).ok_or_else(wrong_size)?,
        )
    };
    scaled.apply_orientation(orientation);
    let pixels = pad(scaled, &g, keep_alpha);
    encode(&pixels, g.width, g.height, keep_alpha, spec)
}

fn wrong_size() -> ImageError {
    ImageError::Worker("the resized pixels do not match their size".into())
}

fn decode_error(error: image::ImageError) -> ImageError {
    ImageError::Decode(error.to_string())
}

/// Decodes with the pixel count checked first and an allocation limit; the pixels as
/// stored, with the orientation that shows them.
fn decode(source: &[u8], max_pixels: u64) -> Result<(DynamicImage, Orientation), ImageError> {
    let reader = ImageReader::new(Cursor::new(source))
        .with_guessed_format()
        .map_err(|e| ImageError::Decode(e.to_string()))?;
    match reader.format() {
        Some(ImageFormat::Jpeg | ImageFormat::Png | ImageFormat::WebP) => {}
        Some(ImageFormat::Gif) => {
            let frames = gif_frames(source)?;
            if frames > 1 {
                return Err(ImageError::Animated { frames });
            }
        }
        _ => return Err(ImageError::Decode("not a JPEG, PNG, WebP or GIF file".into())),
    }
    let mut decoder = reader.into_decoder().map_err(decode_error)?;
    let (width, height) = decoder.dimensions();
    if u64::from(width) * u64::from(height) > max_pixels {
        return Err(ImageError::TooManyPixels { width, height, max: max_pixels });
    }
    let mut limits = Limits::default();
    limits.max_image_width = Some(width);
    limits.max_image_height = Some(height);
    limits.max_alloc = Some(max_pixels.saturating_mul(8).saturating_add(DECODER_SLACK));
    decoder.set_limits(limits).map_err(decode_error)?;
    let orientation = decoder.orientation().unwrap_or(Orientation::NoTransforms);
    let image = DynamicImage::from_decoder(decoder).map_err(decode_error)?;
    Ok((image, orientation))
}

/// How many frames a GIF has, counted without decoding them.
fn gif_frames(source: &[u8]) -> Result<usize, ImageError> {
    let mut options = gif::DecodeOptions::new();
    options.skip_frame_decoding(true);
    let mut decoder =
        options.read_info(Cursor::new(source)).map_err(|e| ImageError::Decode(e.to_string()))?;
    let mut frames = 0;
    while decoder.next_frame_info().map_err(|e| ImageError::Decode(e.to_string()))?.is_some() {
        frames += 1;
        if frames > 1 {
            break;
        }
    }
    Ok(frames)
}

/// The whole factors a `crop` of the source is shrunk by before the Lanczos3 pass that
/// makes it `target`: as large as leaves [`REDUCING_GAP`] times the target per side.
pub fn reduction(crop: (f64, f64), target: (u32, u32)) -> (u32, u32) {
    let factor = |crop: f64, target: u32| ((crop / (f64::from(target) * REDUCING_GAP)).floor() as u32).max(1);
    (factor(crop.0, target.0), factor(crop.1, target.1))
}

/// The placed part of the variant (RGB8, or RGBA8 with `keep_alpha`), in the source's
/// stored orientation (`turned`: width and height of the geometry swapped).
fn resize(
    image: DynamicImage,
    g: &Geometry,
    turned: bool,
    keep_alpha: bool,
    budget: &Budget<'_>,
) -> Result<Image<'static>, ImageError> {
    let (_, _, placed_w, placed_h) = g.placed;
    let (cx, cy, cw, ch) = g.crop;
    let (target, crop) = if turned {
        ((placed_h, placed_w), (cy, cx, ch, cw))
    } else {
        ((placed_w, placed_h), (cx, cy, cw, ch))
    };
    let (fx, fy) = reduction((crop.2, crop.3), target);
    let pixel_type = if keep_alpha { PixelType::U8x4 } else { PixelType::U8x3 };
    let mut scaled = Image::new(target.0, target.1, pixel_type);
    let resize_error = |e: fast_image_resize::ResizeError| ImageError::Worker(e.to_string());
    if (fx, fy) == (1, 1) && !keep_alpha && matches!(image, DynamicImage::ImageRgb8(_)) {
        // Already what the resizer takes, and not much larger than the variant.
        let options = ResizeOptions::new()
            .resize_alg(ResizeAlg::Convolution(FilterType::Lanczos3))
            .crop(crop.0, crop.1, crop.2, crop.3);
        Resizer::new().resize(&image, &mut scaled, &options).map_err(resize_error)?;
        return Ok(scaled);
    }
    let working = reduce(&image, fx, fy, keep_alpha, budget)?;
    drop(image);
    budget.check()?;
    let (fx, fy) = (f64::from(fx), f64::from(fy));
    let (ww, wh) = (f64::from(working.width()), f64::from(working.height()));
    let (left, top) = ((crop.0 / fx).min(ww - 1.0), (crop.1 / fy).min(wh - 1.0));
    let (width, height) = ((crop.2 / fx).min(ww - left), (crop.3 / fy).min(wh - top));
    // The working pixels are premultiplied by alpha already.
    let options = ResizeOptions::new()
        .resize_alg(ResizeAlg::Convolution(FilterType::Lanczos3))
        .crop(left, top, width, height)
        .use_alpha(false);
    Resizer::new().resize(&working, &mut scaled, &options).map_err(resize_error)?;
    if keep_alpha {
        MulDiv::default().divide_alpha_inplace(&mut scaled).map_err(|e| ImageError::Worker(e.to_string()))?;
    }
    Ok(scaled)
}

/// The source shrunk `fx` × `fy` times with a box filter, as RGB8 or (with `alpha`) RGBA8
/// premultiplied by alpha, from any pixel layout the decoders give.
fn reduce(
    image: &DynamicImage,
    fx: u32,
    fy: u32,
    alpha: bool,
    budget: &Budget<'_>,
) -> Result<Image<'static>, ImageError> {
    let (width, height) = (image.width(), image.height());
    let narrow = |v: u16| u32::from(v >> 8);
    let pixels = match image {
        DynamicImage::ImageLuma8(i) => {
            reduce_samples(i.as_raw(), width, height, 1, u32::from, fx, fy, alpha, budget)
        }
        DynamicImage::ImageLumaA8(i) => {
            reduce_samples(i.as_raw(), width, height, 2, u32::from, fx, fy, alpha, budget)
        }
        DynamicImage::ImageRgb8(i) => {
            reduce_samples(i.as_raw(), width, height, 3, u32::from, fx, fy, alpha, budget)
        }
        DynamicImage::ImageRgba8(i) => {
            reduce_samples(i.as_raw(), width, height, 4, u32::from, fx, fy, alpha, budget)
        }
        DynamicImage::ImageLuma16(i) => {
            reduce_samples(i.as_raw(), width, height, 1, narrow, fx, fy, alpha, budget)
        }
        DynamicImage::ImageLumaA16(i) => {
            reduce_samples(i.as_raw(), width, height, 2, narrow, fx, fy, alpha, budget)
        }
        DynamicImage::ImageRgb16(i) => {
            reduce_samples(i.as_raw(), width, height, 3, narrow, fx, fy, alpha, budget)
        }
        DynamicImage::ImageRgba16(i) => {
            reduce_samples(i.as_raw(), width, height, 4, narrow, fx, fy, alpha, budget)
        }
        // Floating point comes from none of the decoders enabled here.
        other => {
            let rgba = DynamicImage::ImageRgba8(other.to_rgba8());
            return reduce(&rgba, fx, fy, alpha, budget);
        }
    }?;
    let pixel_type = if alpha { PixelType::U8x4 } else { PixelType::U8x3 };
    Image::from_vec_u8(width.div_ceil(fx), height.div_ceil(fy), pixels, pixel_type)
        .map_err(|e| ImageError::Worker(e.to_string()))
}

/// [`reduce`] over samples of one type: each output pixel the mean of its block (colour
/// weighted by alpha with `alpha`), one band of `fy` rows at a time.
#[allow(clippy::too_many_arguments)]
fn reduce_samples<T: Copy>(
    samples: &[T],
    width: u32,
    height: u32,
    channels: usize,
    to8: impl Fn(T) -> u32,
    fx: u32,
    fy: u32,
    alpha: bool,
    budget: &Budget<'_>,
) -> Result<Vec<u8>, ImageError> {
    let (width, height, fx, fy) = (width as usize, height as usize, fx as usize, fy as usize);
    let (out_w, out_h) = (width.div_ceil(fx), height.div_ceil(fy));
    let out_channels = if alpha { 4 } else { 3 };
    let mut out = Vec::with_capacity(out_w * out_h * out_channels);
    let mut sums = vec![0u64; out_w * 4];
    let row_len = width * channels;
    for band in 0..out_h {
        budget.check()?;
        sums.fill(0);
        let rows = band * fy..((band + 1) * fy).min(height);
        for y in rows.clone() {
            let row = &samples[y * row_len..(y + 1) * row_len];
            for (block, sum) in sums.chunks_exact_mut(4).enumerate() {
                let columns = block * fx..((block + 1) * fx).min(width);
                for px in row[columns.start * channels..columns.end * channels].chunks_exact(channels) {
                    let (r, g, b, a) = match *px {
                        [l] => (to8(l), to8(l), to8(l), 255),
                        [l, a] => (to8(l), to8(l), to8(l), to8(a)),
                        [r, g, b] => (to8(r), to8(g), to8(b), 255),
                        [r, g, b, a, ..] => (to8(r), to8(g), to8(b), to8(a)),
                        [] => (0, 0, 0, 0),
                    };
                    let weight = if alpha { a } else { 1 };
                    sum[0] += u64::from(r * weight);
                    sum[1] += u64::from(g * weight);
                    sum[2] += u64::from(b * weight);
                    sum[3] += u64::from(a);
                }
            }
        }
        let rows = (rows.end - rows.start) as u64;
        for (block, sum) in sums.chunks_exact(4).enumerate() {
            let count = rows * ((((block + 1) * fx).min(width) - block * fx) as u64);
            let mean = |total: u64, over: u64| ((total + over / 2) / over) as u8;
            if alpha {
                // Premultiplied: the colour's mean weighted by alpha, times the mean alpha.
                out.extend([mean(sum[0], count * 255), mean(sum[1], count * 255), mean(sum[2], count * 255)]);
                out.push(mean(sum[3], count));
            } else {
                out.extend([mean(sum[0], count), mean(sum[1], count), mean(sum[2], count)]);
            }
        }
    }
    Ok(out)
}

/// The variant's pixels: the scaled image, centred on a transparent (black for JPEG)
/// canvas for `contain`.
fn pad(scaled: DynamicImage, g: &Geometry, alpha: bool) -> Vec<u8> {
    let (left, top, placed_w, _) = g.placed;
    let channels = if alpha { 4 } else { 3 };
    let scaled = if alpha { scaled.into_rgba8().into_raw() } else { scaled.into_rgb8().into_raw() };
    if (g.placed.2, g.placed.3) == (g.width, g.height) {
        return scaled;
    }
    let mut canvas = vec![0u8; g.width as usize * g.height as usize * channels];
    let row = placed_w as usize * channels;
    for (y, line) in scaled.chunks_exact(row).enumerate() {
        let at = ((top as usize + y) * g.width as usize + left as usize) * channels;
        canvas[at..at + row].copy_from_slice(line);
    }
    canvas
}

/// The longest side each format holds: WebP's bitstream has 14 bits for it, AV1 (rav1e)
/// and JPEG 16.
fn max_side(format: OutputFormat) -> u32 {
    match format {
        OutputFormat::Webp => 16_383,
        OutputFormat::Avif | OutputFormat::Jpeg => 65_535,
        OutputFormat::Png => i32::MAX as u32,
    }
}

/// Refuses, before any pixel is touched, a variant its format cannot hold.
fn fits(format: OutputFormat, width: u32, height: u32) -> Result<(), ImageError> {
    let max = max_side(format);
    if width > max || height > max {
        return Err(ImageError::TooLargeFor { width, height, format: format.name(), max_side: max });
    }
    Ok(())
}

fn encode(
    pixels: &[u8],
    width: u32,
    height: u32,
    alpha: bool,
    spec: &RenderSpec,
) -> Result<Vec<u8>, ImageError> {
    let color = if alpha { ExtendedColorType::Rgba8 } else { ExtendedColorType::Rgb8 };
    let format = spec.format.name();
    let encode_error = |e: image::ImageError| ImageError::Encode { format, reason: e.to_string() };
    let mut out = Vec::new();
    match spec.format {
        OutputFormat::Jpeg => JpegEncoder::new_with_quality(&mut out, spec.quality)
            .write_image(pixels, width, height, color)
            .map_err(encode_error)?,
        OutputFormat::Png => {
            PngEncoder::new(&mut out).write_image(pixels, width, height, color).map_err(encode_error)?
        }
        // One thread: the pool's worker is the render's only thread, so that the API keeps
        // the other cores (rav1e is built without its thread pool here anyway).
        OutputFormat::Avif => AvifEncoder::new_with_speed_quality(&mut out, AVIF_SPEED, spec.quality)
            .with_num_threads(Some(1))
            .write_image(pixels, width, height, color)
            .map_err(encode_error)?,
        OutputFormat::Webp => {
            let encoder = if alpha {
                webp::Encoder::from_rgba(pixels, width, height)
            } else {
                webp::Encoder::from_rgb(pixels, width, height)
            };
            let memory = encoder
                .encode_simple(false, f32::from(spec.quality))
                .map_err(|e| ImageError::Encode { format, reason: format!("{e:?}") })?;
            out = memory.to_vec();
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    use cms_core::images::RenderLimits;

    use super::*;

    fn png(width: u32, height: u32) -> Vec<u8> {
        let image = image::RgbImage::from_pixel(width, height, image::Rgb([10, 200, 30]));
        let mut out = Vec::new();
        PngEncoder::new(&mut out)
            .write_image(image.as_raw(), width, height, ExtendedColorType::Rgb8)
            .unwrap();
        out
    }

    fn rgba_png(width: u32, height: u32, pixel: impl Fn(u32, u32) -> [u8; 4]) -> Vec<u8> {
        let image = RgbaImage::from_fn(width, height, |x, y| image::Rgba(pixel(x, y)));
        let mut out = Vec::new();
        PngEncoder::new(&mut out)
            .write_image(image.as_raw(), width, height, ExtendedColorType::Rgba8)
            .unwrap();
        out
    }

    fn limits() -> RenderLimits {
        RenderLimits {
            max_pixels: 1_000_000,
            render_timeout: Duration::from_secs(60),
            queue_timeout: Duration::from_secs(60),
        }
    }

    fn spec(width: Option<u32>, height: Option<u32>, fit: Fit, format: OutputFormat) -> RenderSpec {
        RenderSpec { width, height, fit, format, quality: 75, max_side: None, limits: limits() }
    }

    fn render_now(source: &[u8], spec: &RenderSpec) -> Result<Vec<u8>, ImageError> {
        let stop = AtomicBool::new(false);
        render(source, spec, &Budget::new(spec.limits.render_timeout, &stop))
    }

    #[test]
    fn contain_pads_with_transparency() {
        let out =
            render_now(&png(40, 20), &spec(Some(16), Some(16), Fit::Contain, OutputFormat::Png)).unwrap();
        let image = image::load_from_memory(&out).unwrap().to_rgba8();
        assert_eq!(image.dimensions(), (16, 16));
        assert_eq!(image.get_pixel(8, 0)[3], 0, "the border is transparent");
        assert_eq!(image.get_pixel(8, 8)[3], 255);
    }

    #[test]
    fn over_max_pixels_is_refused_from_the_header() {
        let error =
            render_now(&png(1200, 1000), &spec(Some(16), None, Fit::Inside, OutputFormat::Webp)).unwrap_err();
        assert!(matches!(error, ImageError::TooManyPixels { width: 1200, height: 1000, .. }), "{error}");
        assert_eq!(probe(&png(30, 10)), Some((30, 10)));
        assert!(matches!(
            render_now(b"GIF89a", &spec(None, None, Fit::Inside, OutputFormat::Png)),
            Err(ImageError::Decode(_))
        ));
    }

    #[test]
    fn a_side_over_what_the_format_holds_is_refused_not_failed() {
        let tall = png(2, 16_400);
        let error = render_now(&tall, &spec(None, None, Fit::Inside, OutputFormat::Webp)).unwrap_err();
        assert!(matches!(error, ImageError::TooLargeFor { height: 16_400, .. }), "{error}");
        assert!(matches!(cms_core::CoreError::from(error), cms_core::CoreError::Unprocessable(_)));
        assert!(render_now(&tall, &spec(None, Some(100), Fit::Inside, OutputFormat::Webp)).is_ok());
        // AV1 holds 65,535 pixels a side: named before the encoder is asked (it said
        // "Format error encoding Avif", a 500).
        let taller = png(1, 70_000);
        let error = render_now(&taller, &spec(Some(160), None, Fit::Inside, OutputFormat::Avif)).unwrap_err();
        assert!(
            matches!(error, ImageError::TooLargeFor { format: "AVIF", max_side: 65_535, height: 70_000, .. }),
            "{error}"
        );
        let bounded =
            RenderSpec { max_side: Some(2560), ..spec(Some(160), None, Fit::Inside, OutputFormat::Avif) };
        assert!(render_now(&taller, &bounded).is_ok(), "within the largest size, 1 × 2560");
    }

    #[test]
    fn every_format_encodes() {
        for format in [OutputFormat::Webp, OutputFormat::Avif, OutputFormat::Jpeg, OutputFormat::Png] {
            let out = render_now(&png(40, 20), &spec(Some(16), None, Fit::Inside, format)).unwrap();
            let shown = image::load_from_memory(&out);
            if format != OutputFormat::Avif {
                assert_eq!(shown.unwrap().width(), 16, "{format:?}");
            }
            assert!(!out.is_empty());
        }
    }

    #[test]
    fn a_long_side_is_reduced_before_the_filter_sees_it() {
        // 40,000,000 × 1 to 160 wide: Lanczos3's weights over the whole row were 2.4 GB.
        assert_eq!(reduction((40_000_000.0, 1.0), (160, 1)), (83_333, 1));
        let (fx, _) = reduction((40_000_000.0, 1.0), (160, 1));
        assert!(f64::from(40_000_000u32.div_ceil(fx)) <= 2.0 * REDUCING_GAP * 160.0);
        // A photo to a thumbnail: shrunk 2×, then filtered; a small change is filtered alone.
        assert_eq!(reduction((6000.0, 4000.0), (800, 533)), (2, 2));
        assert_eq!(reduction((1000.0, 800.0), (800, 640)), (1, 1));
    }

    #[test]
    fn the_reduction_averages_blocks_and_weighs_colour_by_alpha() {
        // Columns alternate black and white: every block of the reduction is mid grey.
        let stripes = {
            let image =
                RgbImage::from_fn(
                    960,
                    2,
                    |x, _| if x % 2 == 0 { image::Rgb([0; 3]) } else { image::Rgb([255; 3]) },
                );
            let mut out = Vec::new();
            PngEncoder::new(&mut out).write_image(image.as_raw(), 960, 2, ExtendedColorType::Rgb8).unwrap();
            out
        };
        let out = render_now(&stripes, &spec(Some(16), None, Fit::Inside, OutputFormat::Png)).unwrap();
        let grey = image::load_from_memory(&out).unwrap().to_rgb8();
        assert_eq!(grey.dimensions(), (16, 1));
        assert!(grey.pixels().all(|p| p.0.iter().all(|c| c.abs_diff(128) <= 2)), "{:?}", grey.as_raw());
        // Opaque red beside fully transparent green: the mean is half-transparent red,
        // with no green fringe (the transparent pixels' colour weighs nothing).
        let halves = rgba_png(960, 2, |x, _| if x % 2 == 0 { [255, 0, 0, 255] } else { [0, 255, 0, 0] });
        let out = render_now(&halves, &spec(Some(16), None, Fit::Inside, OutputFormat::Png)).unwrap();
        let red = image::load_from_memory(&out).unwrap().to_rgba8();
        for p in red.pixels() {
            assert!(p[0] >= 250 && p[1] <= 5 && p[3].abs_diff(128) <= 2, "{p:?}");
        }
    }

    #[test]
    fn a_rotated_source_is_cropped_and_turned_like_the_one_shown() {
        // 60 × 30 stored, shown turned (Rotate90): 30 × 60; the top third red, the rest blue
        // as shown, that is the left third of the stored pixels... rotated clockwise.
        let stored =
            RgbImage::from_fn(
                60,
                30,
                |x, _| if x < 20 { image::Rgb([255, 0, 0]) } else { image::Rgb([0, 0, 255]) },
            );
        let mut shown = DynamicImage::ImageRgb8(stored.clone());
        shown.apply_orientation(Orientation::Rotate90);
        let (w, h) = (shown.width(), shown.height());
        assert_eq!((w, h), (30, 60));
        let g = spec(Some(10), Some(10), Fit::Cover, OutputFormat::Png).geometry(w, h);
        let stop = AtomicBool::new(false);
        let budget = Budget::new(Duration::from_secs(60), &stop);
        let scaled = resize(DynamicImage::ImageRgb8(stored), &g, true, false, &budget).unwrap();
        let mut scaled = DynamicImage::ImageRgb8(RgbImage::from_raw(10, 10, scaled.into_vec()).unwrap());
        scaled.apply_orientation(Orientation::Rotate90);
        let expected = image::imageops::resize(
            &image::imageops::crop_imm(&shown.to_rgb8(), 0, 15, 30, 30).to_image(),
            10,
            10,
            image::imageops::FilterType::Lanczos3,
        );
        for (got, want) in scaled.to_rgb8().pixels().zip(expected.pixels()) {
            assert!(got.0.iter().zip(want.0).all(|(a, b)| a.abs_diff(b) <= 24), "{got:?} / {want:?}");
        }
    }

    #[test]
    fn a_render_stops_at_its_deadline_or_when_its_request_goes_away() {
        let source = png(40, 20);
        let spec = spec(Some(16), None, Fit::Inside, OutputFormat::Png);
        let stop = AtomicBool::new(false);
        let spent = Budget::new(Duration::ZERO, &stop);
        assert!(matches!(render(&source, &spec, &spent), Err(ImageError::TimedOut(_))));
        let stop = AtomicBool::new(true);
        let gone = Budget::new(Duration::from_secs(60), &stop);
        assert!(matches!(render(&source, &spec, &gone), Err(ImageError::Abandoned)));
    }
}
