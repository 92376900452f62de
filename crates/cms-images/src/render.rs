//! One variant: decode (bounded), orient, crop and resize, pad, encode.

use std::io::Cursor;

use cms_core::images::{Fit, OutputFormat, RenderSpec, geometry};
use fast_image_resize::images::Image;
use fast_image_resize::{FilterType, PixelType, ResizeAlg, ResizeOptions, Resizer};
use image::codecs::avif::AvifEncoder;
use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::PngEncoder;
use image::metadata::Orientation;
use image::{DynamicImage, ExtendedColorType, ImageDecoder, ImageEncoder, ImageFormat, ImageReader, Limits};

use crate::error::ImageError;

/// rav1e's speed (0 slowest to 10 fastest): 8 keeps an 800 px AVIF well under a second.
const AVIF_SPEED: u8 = 8;
/// Room the decoder may allocate beyond the pixels themselves (tables, one row buffer).
const DECODER_SLACK: u64 = 64 * 1024 * 1024;

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

/// Renders one variant of `source` as `spec` says.
pub fn render(source: &[u8], spec: &RenderSpec) -> Result<Vec<u8>, ImageError> {
    let decoded = decode(source, spec.max_pixels)?;
    let keep_alpha = spec.format != OutputFormat::Jpeg
        && (decoded.color().has_alpha()
            || spec.fit == Fit::Contain && spec.width.is_some() && spec.height.is_some());
    let (pixels, width, height) = resize(decoded, spec, keep_alpha)?;
    encode(&pixels, width, height, keep_alpha, spec)
}

fn decode_error(error: image::ImageError) -> ImageError {
    ImageError::Decode(error.to_string())
}

/// Decodes with the pixel count checked first and an allocation limit, orientation applied.
fn decode(source: &[u8], max_pixels: u64) -> Result<DynamicImage, ImageError> {
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
    let mut image = DynamicImage::from_decoder(decoder).map_err(decode_error)?;
    image.apply_orientation(orientation);
    Ok(image)
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

/// The output pixels (RGB8, or RGBA8 with `keep_alpha`) and their size.
fn resize(
    image: DynamicImage,
    spec: &RenderSpec,
    keep_alpha: bool,
) -> Result<(Vec<u8>, u32, u32), ImageError> {
    let g = geometry(image.width(), image.height(), spec.width, spec.height, spec.fit);
    let (source, pixel_type, channels) = if keep_alpha {
        (DynamicImage::ImageRgba8(image.into_rgba8()), PixelType::U8x4, 4)
    } else {
        (DynamicImage::ImageRgb8(image.into_rgb8()), PixelType::U8x3, 3)
    };
    let (left, top, placed_w, placed_h) = g.placed;
    let mut scaled = Image::new(placed_w, placed_h, pixel_type);
    let (cx, cy, cw, ch) = g.crop;
    let options =
        ResizeOptions::new().resize_alg(ResizeAlg::Convolution(FilterType::Lanczos3)).crop(cx, cy, cw, ch);
    Resizer::new().resize(&source, &mut scaled, &options).map_err(|e| ImageError::Worker(e.to_string()))?;
    drop(source);
    if (placed_w, placed_h) == (g.width, g.height) {
        return Ok((scaled.into_vec(), g.width, g.height));
    }
    // `contain`: the scaled image centred on a transparent canvas.
    let mut canvas = vec![0u8; g.width as usize * g.height as usize * channels];
    let row = placed_w as usize * channels;
    for (y, line) in scaled.buffer().chunks_exact(row).enumerate() {
        let at = ((top as usize + y) * g.width as usize + left as usize) * channels;
        canvas[at..at + row].copy_from_slice(line);
    }
    Ok((canvas, g.width, g.height))
}

/// The longest side a WebP image can have.
const WEBP_MAX_SIDE: u32 = 16_383;

fn encode(
    pixels: &[u8],
    width: u32,
    height: u32,
    alpha: bool,
    spec: &RenderSpec,
) -> Result<Vec<u8>, ImageError> {
    let color = if alpha { ExtendedColorType::Rgba8 } else { ExtendedColorType::Rgb8 };
    let encode_error = |e: image::ImageError| ImageError::Encode(e.to_string());
    let mut out = Vec::new();
    match spec.format {
        OutputFormat::Jpeg => JpegEncoder::new_with_quality(&mut out, spec.quality)
            .write_image(pixels, width, height, color)
            .map_err(encode_error)?,
        OutputFormat::Png => {
            PngEncoder::new(&mut out).write_image(pixels, width, height, color).map_err(encode_error)?
        }
        OutputFormat::Avif => AvifEncoder::new_with_speed_quality(&mut out, AVIF_SPEED, spec.quality)
            .write_image(pixels, width, height, color)
            .map_err(encode_error)?,
        OutputFormat::Webp => {
            if width > WEBP_MAX_SIDE || height > WEBP_MAX_SIDE {
                return Err(ImageError::TooLargeFor {
                    width,
                    height,
                    format: "WebP",
                    max_side: WEBP_MAX_SIDE,
                });
            }
            let encoder = if alpha {
                webp::Encoder::from_rgba(pixels, width, height)
            } else {
                webp::Encoder::from_rgb(pixels, width, height)
            };
            let memory = encoder
                .encode_simple(false, f32::from(spec.quality))
                .map_err(|e| ImageError::Encode(format!("{e:?}")))?;
            out = memory.to_vec();
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(width: u32, height: u32) -> Vec<u8> {
        let image = image::RgbImage::from_pixel(width, height, image::Rgb([10, 200, 30]));
        let mut out = Vec::new();
        PngEncoder::new(&mut out)
            .write_image(image.as_raw(), width, height, ExtendedColorType::Rgb8)
            .unwrap();
        out
    }

    fn spec(width: Option<u32>, height: Option<u32>, fit: Fit, format: OutputFormat) -> RenderSpec {
        RenderSpec { width, height, fit, format, quality: 75, max_pixels: 1_000_000 }
    }

    #[test]
    fn contain_pads_with_transparency() {
        let out = render(&png(40, 20), &spec(Some(16), Some(16), Fit::Contain, OutputFormat::Png)).unwrap();
        let image = image::load_from_memory(&out).unwrap().to_rgba8();
        assert_eq!(image.dimensions(), (16, 16));
        assert_eq!(image.get_pixel(8, 0)[3], 0, "the border is transparent");
        assert_eq!(image.get_pixel(8, 8)[3], 255);
    }

    #[test]
    fn over_max_pixels_is_refused_from_the_header() {
        let error =
            render(&png(1200, 1000), &spec(Some(16), None, Fit::Inside, OutputFormat::Webp)).unwrap_err();
        assert!(matches!(error, ImageError::TooManyPixels { width: 1200, height: 1000, .. }), "{error}");
        assert_eq!(probe(&png(30, 10)), Some((30, 10)));
        assert!(matches!(
            render(b"GIF89a", &spec(None, None, Fit::Inside, OutputFormat::Png)),
            Err(ImageError::Decode(_))
        ));
    }

    #[test]
    fn a_side_over_what_webp_holds_is_refused_not_failed() {
        let tall = png(2, 16_400);
        let error = render(&tall, &spec(None, None, Fit::Inside, OutputFormat::Webp)).unwrap_err();
        assert!(matches!(error, ImageError::TooLargeFor { height: 16_400, .. }), "{error}");
        assert!(matches!(cms_core::CoreError::from(error), cms_core::CoreError::Unprocessable(_)));
        assert!(render(&tall, &spec(None, Some(100), Fit::Inside, OutputFormat::Webp)).is_ok());
    }

    #[test]
    fn every_format_encodes() {
        for format in [OutputFormat::Webp, OutputFormat::Avif, OutputFormat::Jpeg, OutputFormat::Png] {
            let out = render(&png(40, 20), &spec(Some(16), None, Fit::Inside, format)).unwrap();
            let shown = image::load_from_memory(&out);
            if format != OutputFormat::Avif {
                assert_eq!(shown.unwrap().width(), 16, "{format:?}");
            }
            assert!(!out.is_empty());
        }
    }
}
