//! Resources over real HTTP on a real disk.

use std::fs;
use std::io::Read;
use std::os::unix::fs::symlink;

use crate::{Server, demo_site, user_with_key};

const BOUNDARY: &str = "e2e-boundary-1b2c";

/// A multipart body with one file part of `size` bytes, produced as it is read (so the
/// test itself never holds a large file in memory either).
struct MultipartReader {
    head: std::io::Cursor<Vec<u8>>,
    remaining: u64,
    tail: std::io::Cursor<Vec<u8>>,
}

impl MultipartReader {
    fn new(filename: &str, size: u64) -> Self {
        let head = format!(
            "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\n\
             Content-Type: application/octet-stream\r\n\r\n"
        );
        let tail = format!("\r\n--{BOUNDARY}--\r\n");
        Self {
            head: std::io::Cursor::new(head.into_bytes()),
            remaining: size,
            tail: std::io::Cursor::new(tail.into_bytes()),
        }
    }
}

impl Read for MultipartReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.head.read(buf)?;
        if n > 0 {
            return Ok(n);
        }
        if self.remaining > 0 {
            let n = buf.len().min(self.remaining as usize);
            buf[..n].fill(b'x');
            self.remaining -= n as u64;
            return Ok(n);
        }
        self.tail.read(buf)
    }
}

pub(crate) fn post_upload(server: &Server, key: &str, filename: &str, size: u64) -> (u16, serde_json::Value) {
    let mut body = MultipartReader::new(filename, size);
    let mut response = server
        .agent
        .post(format!("{}/cms/resources", server.base))
        .header("Authorization", format!("Bearer {key}"))
        .header("Content-Type", format!("multipart/form-data; boundary={BOUNDARY}"))
        .send(ureq::SendBody::from_reader(&mut body))
        .unwrap();
    (response.status().as_u16(), response.body_mut().read_json().unwrap_or_default())
}

#[test]
fn upload_list_and_serve_over_http_without_following_planted_symlinks() {
    let site = demo_site();
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("passwd"), "root:x:0:0").unwrap();
    let uploads = site.path().join("media/uploads");
    symlink(outside.path().join("passwd"), uploads.join("leak.txt")).unwrap();
    symlink(outside.path(), uploads.join("escape")).unwrap();
    let server = Server::start(site.path());

    let (status, stored) = post_upload(&server, &key, "My Notes.txt", 1000);
    assert_eq!(status, 200, "{stored}");
    assert_eq!(stored["name"], "My-Notes.txt");
    assert_eq!(stored["size"], 1000);
    assert_eq!(fs::metadata(uploads.join("My-Notes.txt")).unwrap().len(), 1000);

    let (status, listing) = server.get("/cms/resources", Some(&key));
    assert_eq!(status, 200);
    let names: Vec<&str> =
        listing["files"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["My-Notes.txt", "README.txt", "logo.png"], "symlinks are not listed");
    let logo = listing["files"].as_array().unwrap().iter().find(|f| f["name"] == "logo.png").unwrap();
    assert_eq!(logo["is_image"], true);
    assert_eq!(listing["dirs"], serde_json::json!([{"name": "2026", "type": "dir"}]));

    let mut served = server.agent.get(format!("{}/media/uploads/logo.png", server.base)).call().unwrap();
    assert_eq!(served.status().as_u16(), 200);
    assert_eq!(served.headers()["content-type"], "image/png");
    let bytes = served.body_mut().read_to_vec().unwrap();
    assert_eq!(bytes, fs::read(uploads.join("logo.png")).unwrap());

    for path in
        ["/media/uploads/leak.txt", "/media/uploads/escape/passwd", "/media/uploads/..%2F..%2Fcms.yaml"]
    {
        let status = server.agent.get(format!("{}{path}", server.base)).call().unwrap().status().as_u16();
        assert_eq!(status, 404, "{path}");
    }
    assert_eq!(server.get("/cms/resources?subpath=escape", Some(&key)).0, 404);
    assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 1, "nothing written outside");
    assert_eq!(fs::read_dir(site.path().join(".cms/uploads")).unwrap().count(), 0, "no staging leftovers");
}

/// Uploads 100 MB and reports the server's peak resident memory. Run by `cargo xtask
/// bench` (release build); ignored in the normal test run to keep it lean.
#[test]
#[ignore = "large upload; run with cargo xtask bench"]
fn a_100_mb_upload_keeps_server_memory_flat() {
    let site = demo_site();
    let config = site.path().join("cms.yaml");
    let text =
        fs::read_to_string(&config).unwrap().replace("upload_bytes: 33554432", "upload_bytes: 209715200");
    fs::write(&config, text).unwrap();
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    let server = Server::start(site.path());
    let peak_before = server.peak_rss_kib();
    let started = std::time::Instant::now();
    let (status, stored) = post_upload(&server, &key, "big.bin", 100 * 1024 * 1024);
    let elapsed = started.elapsed();
    assert_eq!(status, 200, "{stored}");
    assert_eq!(stored["size"], 100 * 1024 * 1024);
    let peak_after = server.peak_rss_kib();
    let grown_mib = peak_after.saturating_sub(peak_before) / 1024;
    println!(
        "100 MB upload: {:.2} s, server peak RSS {} MiB before, {} MiB after (+{grown_mib} MiB)",
        elapsed.as_secs_f64(),
        peak_before / 1024,
        peak_after / 1024
    );
    assert!(grown_mib < 32, "peak memory grew by {grown_mib} MiB");
}
