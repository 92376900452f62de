//! Image variants over real HTTP: transforms on the public media URLs, the cache under
//! `.cms/variants/`, presets made after an upload, and hostile files (a decompression
//! bomb, a corrupt JPEG, an animated GIF). Every image is made here, a few pixels large.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use image::{ImageEncoder, ImageFormat, Rgb, RgbImage};

use crate::{Server, demo_site, poll, user_with_key};

const IMAGES: &str = "images:
  sizes: [16, 32, 64]
  qualities: [50, 75]
  quality: 75
  presets:
    thumb: { w: 32, h: 32, fit: cover, format: webp }
";

/// The demo site with small sizes allowed and one preset.
fn site() -> tempfile::TempDir {
    site_with("")
}

/// [`site`] with more lines of `images:` (indented by two spaces).
fn site_with(more_images: &str) -> tempfile::TempDir {
    let site = demo_site();
    let config = site.path().join("cms.yaml");
    let text = fs::read_to_string(&config).unwrap();
    let without = text.split("\nimages:").next().unwrap().trim_end_matches(|c| c != '\n').to_owned();
    let without = without
        .lines()
        .filter(|l| !l.starts_with("# Responsive") && !l.starts_with("# each preset"))
        .collect::<Vec<_>>()
        .join("\n");
    fs::write(&config, format!("{without}\n{IMAGES}{more_images}")).unwrap();
    site
}

/// A PNG of one colour, made here: 2,000,000 × 1 pixels compress to a few KiB.
fn flat_png(width: u32, height: u32) -> Vec<u8> {
    let pixels = [90u8, 40, 200].repeat(width as usize * height as usize);
    let mut out = Vec::new();
    image::codecs::png::PngEncoder::new_with_quality(
        &mut out,
        image::codecs::png::CompressionType::Best,
        image::codecs::png::FilterType::NoFilter,
    )
    .write_image(&pixels, width, height, image::ExtendedColorType::Rgb8)
    .unwrap();
    out
}

/// 40 × 20 pixels, red on the left and blue on the right, as a JPEG whose EXIF says
/// "rotate 90° clockwise to show" and carries a GPS position, its frame header past 2 KiB.
fn rotated_jpeg_with_gps() -> Vec<u8> {
    let image = RgbImage::from_fn(40, 20, |x, _| if x < 20 { Rgb([255, 0, 0]) } else { Rgb([0, 0, 255]) });
    let mut jpeg = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 95)
        .write_image(image.as_raw(), 40, 20, image::ExtendedColorType::Rgb8)
        .unwrap();
    // TIFF (little-endian): IFD0 with Orientation = 6 and a GPS IFD pointer; the GPS IFD
    // with GPSLatitudeRef "N" and GPSLatitude 52/1 13/1 0/1 (a rational triple at 68).
    let mut tiff: Vec<u8> = b"II*\0".to_vec();
    tiff.extend(8u32.to_le_bytes());
    tiff.extend(2u16.to_le_bytes());
    tiff.extend([0x12, 0x01, 3, 0].iter().chain(&1u32.to_le_bytes()).chain(&[6, 0, 0, 0]));
    tiff.extend([0x25, 0x88, 4, 0].iter().chain(&1u32.to_le_bytes()).chain(&38u32.to_le_bytes()));
    tiff.extend(0u32.to_le_bytes());
    assert_eq!(tiff.len(), 38);
    tiff.extend(2u16.to_le_bytes());
    tiff.extend([0x01, 0x00, 2, 0].iter().chain(&2u32.to_le_bytes()).chain(b"N\0\0\0"));
    tiff.extend([0x02, 0x00, 5, 0].iter().chain(&3u32.to_le_bytes()).chain(&68u32.to_le_bytes()));
    tiff.extend(0u32.to_le_bytes());
    assert_eq!(tiff.len(), 68);
    for (n, d) in [(52u32, 1u32), (13, 1), (0, 1)] {
        tiff.extend(n.to_le_bytes());
        tiff.extend(d.to_le_bytes());
    }
    let mut app1 = b"Exif\0\0".to_vec();
    app1.extend(tiff);
    let mut out = jpeg[..2].to_vec();
    out.extend([0xff, 0xe1]);
    out.extend(((app1.len() + 2) as u16).to_be_bytes());
    out.extend(app1);
    // A maker note's worth of comment, so that the frame header is past the first 1 KiB
    // (as in camera files, whose EXIF carries a thumbnail).
    out.extend([0xff, 0xfe]);
    out.extend(2002u16.to_be_bytes());
    out.extend([b'n'; 2000]);
    out.extend(&jpeg[2..]);
    out
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xedb8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

fn png_chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend((data.len() as u32).to_be_bytes());
    let start = out.len();
    out.extend(kind);
    out.extend(data);
    let crc = crc32(&out[start..]);
    out.extend(crc.to_be_bytes());
}

/// A PNG of a few dozen bytes whose header claims 50,000 × 50,000 pixels.
fn png_bomb() -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend(50_000u32.to_be_bytes());
    ihdr.extend(50_000u32.to_be_bytes());
    ihdr.extend([8, 2, 0, 0, 0]);
    png_chunk(&mut out, b"IHDR", &ihdr);
    // A zlib stream of a few zero bytes (stored block).
    png_chunk(&mut out, b"IDAT", &[0x78, 0x01, 0x01, 0x04, 0x00, 0xfb, 0xff, 0, 0, 0, 0, 0, 4, 0, 1]);
    png_chunk(&mut out, b"IEND", &[]);
    out
}

fn animated_gif() -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut encoder = image::codecs::gif::GifEncoder::new(&mut out);
        for shade in [0u8, 255] {
            let frame = image::RgbaImage::from_pixel(8, 8, image::Rgba([shade, shade, shade, 255]));
            encoder.encode_frame(image::Frame::new(frame)).unwrap();
        }
    }
    out
}

struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

fn fetch(server: &Server, path: &str, headers: &[(&str, &str)]) -> Answer {
    let mut req = server.agent.get(format!("{}{path}", server.base));
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let mut response = req.call().unwrap();
    let headers = response
        .headers()
        .iter()
        .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    let status = response.status().as_u16();
    let body = response.body_mut().with_config().limit(64 << 20).read_to_vec().unwrap();
    Answer { status, headers, body }
}

fn upload(server: &Server, key: &str, filename: &str, bytes: &[u8]) -> (u16, serde_json::Value) {
    let boundary = "img-boundary-7f3a";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\n\
         Content-Type: application/octet-stream\r\n\r\n"
    )
    .into_bytes();
    body.extend(bytes);
    body.extend(format!("\r\n--{boundary}--\r\n").into_bytes());
    let mut response = server
        .agent
        .post(format!("{}/cms/resources", server.base))
        .header("Authorization", format!("Bearer {key}"))
        .header("Content-Type", format!("multipart/form-data; boundary={boundary}"))
        .send(&body[..])
        .unwrap();
    (response.status().as_u16(), response.body_mut().read_json().unwrap_or_default())
}

fn send_json(server: &Server, method: &str, key: &str, body: serde_json::Value) -> u16 {
    let url = format!("{}/cms/resources", server.base);
    let auth = format!("Bearer {key}");
    let req = match method {
        "PATCH" => server.agent.patch(&url),
        _ => server.agent.delete(&url).force_send_body(),
    };
    req.header("Authorization", &auth).send_json(body).unwrap().status().as_u16()
}

fn decoded(answer: &Answer) -> image::DynamicImage {
    image::load_from_memory(&answer.body)
        .unwrap_or_else(|e| panic!("not an image ({e}): {:?}", answer.headers))
}

fn variant_files(site: &Path, source: &str) -> Vec<String> {
    let dir = site.join(".cms/variants/0").join(format!(".{source}"));
    let mut names: Vec<String> = fs::read_dir(&dir)
        .map(|d| d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn transforms_orient_strip_cache_and_follow_their_source() {
    let site = site();
    let uploads = site.path().join("media/uploads");
    let photo = rotated_jpeg_with_gps();
    assert!(photo.windows(4).any(|w| w == b"Exif"));
    fs::write(uploads.join("photo.jpg"), &photo).unwrap();
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    let server = Server::start(site.path());

    // Orientation applied (40 × 20 shown turned: 20 × 40, so w=16 gives 16 × 32), red on top.
    let png = fetch(&server, "/media/uploads/photo.jpg?w=16&format=png", &[]);
    assert_eq!(png.status, 200, "{}", png.text());
    assert_eq!(png.header("content-type"), Some("image/png"));
    assert_eq!(png.header("cache-control"), Some("public, no-cache"), "no v=: revalidated");
    let image = decoded(&png).to_rgb8();
    assert_eq!(image.dimensions(), (16, 32));
    let (top, bottom) = (image.get_pixel(8, 4), image.get_pixel(8, 28));
    assert!(top[0] > 200 && top[2] < 60, "top is red: {top:?}");
    assert!(bottom[2] > 200 && bottom[0] < 60, "bottom is blue: {bottom:?}");

    // No metadata survives: no EXIF, no GPS, in any output format.
    for format in ["jpeg", "webp", "png", "avif"] {
        let answer = fetch(&server, &format!("/media/uploads/photo.jpg?w=32&format={format}"), &[]);
        assert_eq!(answer.status, 200, "{format}: {}", answer.text());
        assert!(!answer.body.windows(4).any(|w| w == b"Exif"), "{format} carries EXIF");
        assert_eq!(
            image::guess_format(&answer.body).unwrap(),
            match format {
                "jpeg" => ImageFormat::Jpeg,
                "webp" => ImageFormat::WebP,
                "avif" => ImageFormat::Avif,
                _ => ImageFormat::Png,
            }
        );
    }

    // Cover crops to the exact box.
    let cover = decoded(&fetch(&server, "/media/uploads/photo.jpg?w=16&h=16&fit=cover&format=png", &[]));
    assert_eq!((cover.width(), cover.height()), (16, 16));

    // format=auto follows Accept and says so.
    let webp = fetch(&server, "/media/uploads/photo.jpg?w=16&format=auto", &[("Accept", "image/webp,*/*")]);
    assert_eq!((webp.status, webp.header("content-type")), (200, Some("image/webp")));
    assert_eq!(webp.header("vary"), Some("Accept"));
    let plain = fetch(&server, "/media/uploads/photo.jpg?w=16&format=auto", &[("Accept", "*/*")]);
    assert_eq!(plain.header("content-type"), Some("image/jpeg"));
    assert_ne!(plain.header("etag"), webp.header("etag"));

    // A repeat is a cache hit: the same ETag, and 304 for a client that has it.
    let etag = webp.header("etag").unwrap().to_owned();
    let again = fetch(&server, "/media/uploads/photo.jpg?w=16&format=auto", &[("Accept", "image/webp")]);
    assert_eq!((again.header("etag"), &again.body), (Some(etag.as_str()), &webp.body));
    let not_modified = fetch(
        &server,
        "/media/uploads/photo.jpg?w=16&format=auto",
        &[("Accept", "image/webp"), ("If-None-Match", &etag)],
    );
    assert_eq!(not_modified.status, 304);
    assert_eq!(not_modified.header("vary"), Some("Accept"));

    // Kept under .cms/variants/, never in the folder's listing.
    let kept = variant_files(site.path(), "photo.jpg");
    assert!(kept.iter().any(|n| n.ends_with("-w16-h_-inside-q75-max64.webp")), "{kept:?}");
    let (_, listing) = server.get("/cms/resources", Some(&key));
    let names: Vec<&str> =
        listing["files"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"photo.jpg") && names.iter().all(|n| !n.contains("q75")), "{names:?}");

    // The original is untouched by the parameters' absence (unknown ones are ignored).
    let original = fetch(&server, "/media/uploads/photo.jpg?v=2", &[]);
    assert_eq!(original.body, photo);

    // Renaming moves the variants with the file; deleting drops them.
    let status =
        send_json(&server, "PATCH", &key, serde_json::json!({"file": "photo.jpg", "newName": "picture.jpg"}));
    assert_eq!(status, 200);
    assert!(variant_files(site.path(), "photo.jpg").is_empty());
    assert_eq!(variant_files(site.path(), "picture.jpg"), kept);
    let moved = fetch(&server, "/media/uploads/picture.jpg?w=16&format=auto", &[("Accept", "image/webp")]);
    assert_eq!(moved.header("etag"), Some(etag.as_str()), "the same content keeps its variants");
    assert_eq!(send_json(&server, "DELETE", &key, serde_json::json!({"file": "picture.jpg"})), 200);
    assert!(variant_files(site.path(), "picture.jpg").is_empty());
    assert_eq!(fetch(&server, "/media/uploads/picture.jpg?w=16", &[]).status, 404);
}

#[test]
fn only_configured_values_are_rendered() {
    let site = site();
    fs::write(site.path().join("media/uploads/photo.jpg"), rotated_jpeg_with_gps()).unwrap();
    let server = Server::start(site.path());
    for (query, words) in [
        ("w=100", "16, 32, 64"),
        ("h=0", "16, 32, 64"),
        ("q=100", "50, 75"),
        ("fit=stretch&w=16", "cover, contain, inside"),
        ("format=gif", "auto, webp, avif, jpeg, png"),
        ("preset=huge", "thumb"),
        ("w=16&w=32", "more than once"),
    ] {
        let answer = fetch(&server, &format!("/media/uploads/photo.jpg?{query}"), &[]);
        assert_eq!(answer.status, 400, "{query}: {}", answer.text());
        let body: serde_json::Value = serde_json::from_slice(&answer.body).unwrap();
        assert!(body["error"].as_str().unwrap().contains(words), "{query}: {body}");
    }
    let text = fetch(&server, "/media/uploads/README.txt?w=16", &[]);
    assert_eq!(text.status, 422, "{}", text.text());
    assert!(text.text().contains("only JPEG, PNG, WebP and GIF"), "{}", text.text());
    // A preset is a starting point that other parameters may change.
    let smaller = fetch(&server, "/media/uploads/photo.jpg?preset=thumb&w=16&format=png", &[]);
    assert_eq!(smaller.status, 200, "{}", smaller.text());
    assert_eq!(decoded(&smaller).width(), 16);
    assert_eq!(fetch(&server, "/media/uploads/missing.jpg?w=16", &[]).status, 404);
}

#[test]
fn hostile_images_are_refused_and_the_server_stays_up() {
    let site = site();
    let uploads = site.path().join("media/uploads");
    fs::write(uploads.join("bomb.png"), png_bomb()).unwrap();
    let mut corrupt = rotated_jpeg_with_gps();
    let len = corrupt.len();
    corrupt[len / 2..].fill(0x5a);
    fs::write(uploads.join("corrupt.jpg"), &corrupt).unwrap();
    fs::write(uploads.join("noise.png"), b"\x89PNG\r\n\x1a\nnot really").unwrap();
    fs::write(uploads.join("moving.gif"), animated_gif()).unwrap();
    let server = Server::start(site.path());

    let started = Instant::now();
    let bomb = fetch(&server, "/media/uploads/bomb.png?w=16", &[]);
    let took = started.elapsed();
    assert_eq!(bomb.status, 422, "{}", bomb.text());
    assert!(bomb.text().contains("50000 × 50000"), "{}", bomb.text());
    // The header is refused before any pixel is decoded (the bench measures it in release).
    assert!(took < Duration::from_secs(1), "{took:?}");
    assert!(server.peak_rss_kib() < 200 * 1024, "{} KiB", server.peak_rss_kib());

    for (name, words) in [
        ("corrupt.jpg", "not an image this server can decode"),
        ("noise.png", "not an image this server can decode"),
        ("moving.gif", "animated GIFs (2 frames)"),
    ] {
        let answer = fetch(&server, &format!("/media/uploads/{name}?w=16"), &[]);
        if name == "corrupt.jpg" && answer.status == 200 {
            // zune-jpeg fills a damaged scan rather than failing: still an image, no crash.
            assert!(image::load_from_memory(&answer.body).is_ok());
            continue;
        }
        assert_eq!(answer.status, 422, "{name}: {}", answer.text());
        assert!(answer.text().contains(words), "{name}: {}", answer.text());
    }
    // The originals are still served as they are, and the server still answers.
    assert_eq!(fetch(&server, "/media/uploads/moving.gif", &[]).body, animated_gif());
    assert_eq!(server.get("/status", None).0, 200);
}

#[test]
fn presets_are_made_after_an_upload_and_listed() {
    let site = site();
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    let server = Server::start(site.path());
    let (status, stored) = upload(&server, &key, "Holiday Photo.jpg", &rotated_jpeg_with_gps());
    assert_eq!(status, 200, "{stored}");
    let variants = stored["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 1, "{stored}");
    assert_eq!(variants[0]["name"], "thumb");
    let url = variants[0]["url"].as_str().unwrap();
    let version = url
        .strip_prefix("/media/uploads/Holiday-Photo.jpg?preset=thumb&v=")
        .unwrap_or_else(|| panic!("{url}"));
    assert!(version.len() == 12 && version.bytes().all(|b| b.is_ascii_hexdigit()), "{url}");
    assert_eq!((variants[0]["width"].as_u64(), variants[0]["height"].as_u64()), (Some(32), Some(32)));

    let listed = poll(
        || server.get("/cms/resources", Some(&key)).1,
        |listing| {
            listing["files"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["name"] == "Holiday-Photo.jpg" && f["variants"][0]["size"].is_u64())
        },
    );
    let file = listed["files"].as_array().unwrap().iter().find(|f| f["name"] == "Holiday-Photo.jpg").unwrap();
    let size =
        file["variants"][0]["size"].as_u64().unwrap_or_else(|| panic!("the preset was not made: {file}"));
    let thumb = fetch(&server, "/media/uploads/Holiday-Photo.jpg?preset=thumb", &[]);
    assert_eq!((thumb.status, thumb.header("content-type")), (200, Some("image/webp")));
    assert_eq!(thumb.body.len() as u64, size);
    assert_eq!(decoded(&thumb).width(), 32);
    // A file that is not an image has no variants.
    let (_, text) = upload(&server, &key, "notes.txt", b"hello");
    assert_eq!(text["variants"], serde_json::json!([]));
}

#[test]
fn a_variant_without_a_size_stays_within_the_largest_size() {
    // The issue: `?format=avif&q=90` of a 7000 × 7000 PNG encoded all 49 MP (174 s). Here
    // the largest of images.sizes is 64.
    let site = site();
    let uploads = site.path().join("media/uploads");
    fs::write(uploads.join("wide.png"), flat_png(100, 50)).unwrap();
    fs::write(uploads.join("strip.png"), flat_png(400, 10)).unwrap();
    let server = Server::start(site.path());
    for query in ["format=png", "format=webp&q=50", "q=50"] {
        let answer = fetch(&server, &format!("/media/uploads/wide.png?{query}"), &[]);
        assert_eq!(answer.status, 200, "{query}: {}", answer.text());
        let shown = decoded(&answer);
        assert_eq!((shown.width(), shown.height()), (64, 32), "{query}");
    }
    // One side given: the other one is bounded too.
    let strip = decoded(&fetch(&server, "/media/uploads/strip.png?h=16", &[]));
    assert_eq!((strip.width(), strip.height()), (64, 2));
    drop(server);

    // A site that wants the source's size says so.
    let site = site_with("  render_source_size: true\n");
    let uploads = site.path().join("media/uploads");
    fs::write(uploads.join("wide.png"), flat_png(100, 50)).unwrap();
    fs::write(uploads.join("tall.png"), flat_png(1, 70_000)).unwrap();
    let server = Server::start(site.path());
    let whole = decoded(&fetch(&server, "/media/uploads/wide.png?format=png", &[]));
    assert_eq!((whole.width(), whole.height()), (100, 50));
    // There, a variant over what its format holds is refused with the reason (AVIF's
    // encoder said "Format error encoding Avif", answered 500).
    let avif = fetch(&server, "/media/uploads/tall.png?format=avif&w=16", &[]);
    assert_eq!(avif.status, 422, "{}", avif.text());
    assert!(avif.text().contains("65535 pixels a side AVIF holds"), "{}", avif.text());
}

#[test]
fn extreme_aspect_ratios_cost_their_pixels_not_their_length() {
    // The issue: a 40,000,000 × 1 PNG at `?w=160` took 17 s and 2.4 GB (Lanczos3's weights
    // are counted per source pixel of the long side). 2,000,000 × 1 here: 6 MB of pixels,
    // and it was about 100 MB of weights.
    let site = site();
    let uploads = site.path().join("media/uploads");
    fs::write(uploads.join("wide.png"), flat_png(2_000_000, 1)).unwrap();
    fs::write(uploads.join("tall.png"), flat_png(1, 2_000_000)).unwrap();
    let server = Server::start(site.path());
    let peak_before = server.peak_rss_kib();

    for (path, size) in
        [("wide.png?w=16", (16, 1)), ("wide.png?w=16&h=16&fit=contain", (16, 16)), ("tall.png?w=16", (1, 64))]
    {
        let answer = fetch(&server, &format!("/media/uploads/{path}"), &[]);
        assert_eq!(answer.status, 200, "{path}: {}", answer.text());
        let shown = decoded(&answer);
        assert_eq!((shown.width(), shown.height()), size, "{path}");
        let colour = shown.to_rgba8().get_pixel(0, (shown.height() - 1) / 2).0;
        assert!(colour[0].abs_diff(90) <= 2 && colour[2].abs_diff(200) <= 2, "{path}: {colour:?}");
    }
    // The issue's `?format=avif&w=160` of 1 × 40,000,000 answered 500.
    let avif = fetch(&server, "/media/uploads/tall.png?format=avif&w=16", &[]);
    assert_eq!((avif.status, avif.header("content-type")), (200, Some("image/avif")), "{}", avif.text());

    let grown = server.peak_rss_kib().saturating_sub(peak_before);
    assert!(grown < 48 * 1024, "the peak grew by {grown} KiB");
}

/// A variant URL cached for a year names its source's content: delete the file, upload
/// other bytes under the same name, and the URLs handed out change; the old URL answers
/// the new bytes only under a revalidating lifetime.
#[test]
fn variant_urls_are_immutable_and_name_their_source_content() {
    let site = site();
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    let server = Server::start(site.path());
    let (status, first) = upload(&server, &key, "a.png", &flat_png(40, 20));
    assert_eq!(status, 200, "{first}");
    let old_url = first["variants"][0]["url"].as_str().unwrap().to_owned();
    assert!(old_url.contains("&v="), "{old_url}");
    let old = fetch(&server, &old_url, &[]);
    assert_eq!((old.status, old.header("cache-control")), (200, Some("public, max-age=31536000, immutable")));

    let deleted = server
        .agent
        .delete(format!("{}/cms/resources", server.base))
        .header("Authorization", format!("Bearer {key}"))
        .force_send_body()
        .send_json(serde_json::json!({"folder": 0, "subpath": "", "file": "a.png"}))
        .unwrap();
    assert_eq!(deleted.status().as_u16(), 200);
    let mut other = Vec::new();
    RgbImage::from_pixel(20, 40, Rgb([10, 200, 30]))
        .write_to(&mut std::io::Cursor::new(&mut other), ImageFormat::Png)
        .unwrap();
    let (status, second) = upload(&server, &key, "a.png", &other);
    assert_eq!((status, second["name"].as_str()), (200, Some("a.png")), "{second}");
    let new_url = second["variants"][0]["url"].as_str().unwrap().to_owned();
    assert_ne!(new_url, old_url, "other content, another URL");
    let new = fetch(&server, &new_url, &[]);
    assert_eq!(new.header("cache-control"), Some("public, max-age=31536000, immutable"));
    let outdated = fetch(&server, &old_url, &[]);
    assert_eq!(outdated.status, 200);
    assert_ne!(outdated.body, old.body, "the file's new content");
    assert_eq!(outdated.header("cache-control"), Some("public, no-cache"), "never for a year");
    // Revalidation by date works too.
    let since = new.header("last-modified").unwrap().to_owned();
    assert_eq!(fetch(&server, &new_url, &[("If-Modified-Since", since.as_str())]).status, 304);
    let etag = new.header("etag").unwrap().to_owned();
    assert_eq!(fetch(&server, &new_url, &[("If-None-Match", &format!("W/{etag}"))]).status, 304);
}
