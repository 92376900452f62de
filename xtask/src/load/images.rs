//! `cargo xtask bench-images`: the figures of the image variants, on the release server.
//!
//! - a 24-megapixel JPEG (6000 × 4000, made here) to an 800 px WebP: the time of the first
//!   request (read, hash, decode, resize, encode, store) and the server's peak memory;
//! - the PNG bomb (a 50,000 × 50,000 header) refused: time and peak memory;
//! - a cache hit under wrk, beside the same bytes served as a plain file and the original.
//!
//! Figures only, no targets: they go to standard output and `target/bench-images.md`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use image::ImageEncoder;

use super::process::Server;
use super::wrk;

const WIDTH: u32 = 6000;
const HEIGHT: u32 = 4000;

pub fn run(root: &Path) -> anyhow::Result<()> {
    wrk::install_if_missing()?;
    let work = root.join("target/bench-images");
    let _ = std::fs::remove_dir_all(&work);
    let site = work.join("site");
    let uploads = site.join("media/uploads");
    std::fs::create_dir_all(&uploads)?;
    std::fs::create_dir_all(site.join(".cms"))?;
    std::fs::write(site.join("cms.yaml"), CONFIG)?;
    let license = root.join("fixtures/demo-site/.cms/license.yaml");
    std::fs::copy(&license, site.join(".cms/license.yaml")).context("copying the demo license")?;

    eprintln!("images: making a {WIDTH} × {HEIGHT} JPEG");
    let photo = photo_jpeg()?;
    std::fs::write(uploads.join("photo.jpg"), &photo)?;
    std::fs::write(uploads.join("bomb.png"), png_bomb())?;

    let cms = root.join("target/release/cms");
    let mut command = Command::new(&cms);
    command.arg("serve").arg("--site").arg(&site).args(["--listen", "127.0.0.1:0"]).env_remove("RUST_LOG");
    let server = Server::start(&mut command, "cms serve", &work.join("cms.log"), Duration::from_secs(60))?;
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(60)))
        .http_status_as_error(false)
        .build()
        .into();
    let get = |path: &str| -> anyhow::Result<(u16, Vec<u8>, Duration)> {
        let started = Instant::now();
        let mut response =
            agent.get(format!("{}{path}", server.base)).call().with_context(|| format!("GET {path}"))?;
        let body = response.body_mut().with_config().limit(256 << 20).read_to_vec()?;
        Ok((response.status().as_u16(), body, started.elapsed()))
    };
    let (status, _, _) = get("/status")?;
    if status != 200 {
        bail!("the bench server answers /status with {status}");
    }
    let idle_kib = server.peak_rss_kib().unwrap_or(0);

    // Three different qualities: three cache misses of the same work.
    let mut renders = Vec::new();
    let mut variant = Vec::new();
    for q in [50, 75, 90] {
        let (status, body, took) = get(&format!("/media/uploads/photo.jpg?w=800&format=webp&q={q}"))?;
        if status != 200 {
            bail!("the 800 px WebP answered {status}: {}", String::from_utf8_lossy(&body));
        }
        eprintln!("images: 24 MP JPEG → 800 px WebP q{q}: {:.0} ms, {} bytes", ms(took), body.len());
        renders.push(took);
        if q == 75 {
            variant = body;
        }
    }
    renders.sort();
    let render_peak_kib = server.peak_rss_kib().unwrap_or(0);

    let (status, body, bomb_took) = get("/media/uploads/bomb.png?w=800")?;
    if status != 422 {
        bail!("the PNG bomb answered {status}: {}", String::from_utf8_lossy(&body));
    }
    let bomb_peak_kib = server.peak_rss_kib().unwrap_or(0);

    // The variant's bytes as a plain file: what "as fast as a static file" compares with.
    std::fs::write(uploads.join("variant-copy.webp"), &variant)?;
    let settings = wrk::Settings::new(Duration::from_secs(5));
    let hit =
        settings.run(&format!("{}/media/uploads/photo.jpg?w=800&format=webp&q=75", server.base), None)?;
    let same_bytes = settings.run(&format!("{}/media/uploads/variant-copy.webp", server.base), None)?;
    let original = settings.run(&format!("{}/media/uploads/photo.jpg", server.base), None)?;

    let report = format!(
        "# Image variants (release build, {cores} cores)\n\n\
         Source: {WIDTH} × {HEIGHT} JPEG, {source_kib} KiB. Server idle peak RSS {idle} MiB.\n\n\
         | Figure | Value |\n|---|---|\n\
         | 24 MP JPEG → 800 px WebP, first request (median of 3) | {median:.0} ms (min {min:.0}, max {max:.0}) |\n\
         | Server peak RSS after the renders | {render_peak} MiB (+{render_delta} MiB over idle) |\n\
         | 50,000 × 50,000 PNG bomb refused (422) | {bomb:.1} ms, peak RSS {bomb_peak} MiB |\n\
         | Cache hit, 800 px WebP ({variant_kib} KiB) | {hit_rps:.0} requests/s, p99 {hit_p99:.1} ms |\n\
         | The same bytes as a plain file | {same_rps:.0} requests/s, p99 {same_p99:.1} ms |\n\
         | Cache hit ÷ same bytes as a file | {ratio_same:.2} |\n\
         | The 24 MP original itself | {orig_rps:.0} requests/s |\n\
         | Cache hit ÷ the original | {ratio_orig:.1} |\n\n\
         wrk: {wrk}\n",
        cores = std::thread::available_parallelism().map_or(1, usize::from),
        source_kib = photo.len() / 1024,
        idle = idle_kib / 1024,
        median = ms(renders[1]),
        min = ms(renders[0]),
        max = ms(renders[2]),
        render_peak = render_peak_kib / 1024,
        render_delta = render_peak_kib.saturating_sub(idle_kib) / 1024,
        bomb = bomb_took.as_secs_f64() * 1000.0,
        bomb_peak = bomb_peak_kib / 1024,
        variant_kib = variant.len() / 1024,
        hit_rps = hit.requests_per_sec,
        hit_p99 = ms(hit.p99),
        same_rps = same_bytes.requests_per_sec,
        same_p99 = ms(same_bytes.p99),
        ratio_same = hit.requests_per_sec / same_bytes.requests_per_sec.max(1.0),
        orig_rps = original.requests_per_sec,
        ratio_orig = hit.requests_per_sec / original.requests_per_sec.max(1.0),
        wrk = settings.describe(),
    );
    println!("{report}");
    std::fs::write(root.join("target/bench-images.md"), &report)?;
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

const CONFIG: &str = "# Written by `cargo xtask bench-images`.
site:
  name: Image bench
  url: https://example.com
resources:
  - label: Uploads
    path: media/uploads
    url: /media/uploads
limits:
  upload_bytes: 67108864
images:
  sizes: [800]
  qualities: [50, 75, 90]
";

/// A photo-like 24-megapixel JPEG: smooth gradients with fine noise (which is what makes
/// camera JPEGs large), quality 90.
fn photo_jpeg() -> anyhow::Result<Vec<u8>> {
    let mut seed = 0x9e37_79b9_u32;
    let pixels = image::RgbImage::from_fn(WIDTH, HEIGHT, |x, y| {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        let noise = seed % 24;
        image::Rgb([
            ((x * 255 / WIDTH) + noise).min(255) as u8,
            ((y * 255 / HEIGHT) + noise).min(255) as u8,
            (((x + y) % 256) / 2 + noise).min(255) as u8,
        ])
    });
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 90).write_image(
        pixels.as_raw(),
        WIDTH,
        HEIGHT,
        image::ExtendedColorType::Rgb8,
    )?;
    Ok(out)
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

/// A PNG of a few dozen bytes whose header claims 50,000 × 50,000 pixels.
fn png_bomb() -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut chunk = |kind: &[u8; 4], data: &[u8]| {
        out.extend((data.len() as u32).to_be_bytes());
        let start = out.len();
        out.extend(kind);
        out.extend(data);
        let crc = crc32(&out[start..]);
        out.extend(crc.to_be_bytes());
    };
    let mut ihdr = Vec::new();
    ihdr.extend(50_000u32.to_be_bytes());
    ihdr.extend(50_000u32.to_be_bytes());
    ihdr.extend([8, 2, 0, 0, 0]);
    chunk(b"IHDR", &ihdr);
    chunk(b"IDAT", &[0x78, 0x01, 0x01, 0x04, 0x00, 0xfb, 0xff, 0, 0, 0, 0, 0, 4, 0, 1]);
    chunk(b"IEND", &[]);
    out
}
