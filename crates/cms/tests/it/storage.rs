//! `cms storage copy` between a folder and a real S3 server (SeaweedFS; skipped when it is
//! not installed, see `cms_s3::testing`).

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use cms_s3::S3Site;
use cms_s3::S3StorageConfig;
use cms_s3::testing::{credentials, fresh_bucket};

use crate::{BIN, demo_site, stdout};

/// `s3://bucket/prefix` of a test site.
fn url(config: &S3StorageConfig) -> String {
    format!("s3://{}/{}", config.bucket, config.prefix)
}

/// Runs `cms storage copy --from FROM --to TO [extra]` against the test server, with its
/// credentials in the environment and no site folder anywhere.
fn copy(config: &S3StorageConfig, from: &str, to: &str, extra: &[&str]) -> Output {
    let endpoint = config.endpoint.as_deref().unwrap();
    Command::new(BIN)
        .args(["storage", "copy", "--from", from, "--to", to, "--endpoint", endpoint])
        .args(extra)
        .env("AWS_ACCESS_KEY_ID", "cms-test")
        .env("AWS_SECRET_ACCESS_KEY", "cms-test-secret")
        .env_remove("CMS_SITE")
        .output()
        .unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Every file under `root`, with its bytes, by relative path.
fn tree(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in fs::read_dir(folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else {
                let relative = path.strip_prefix(root).unwrap().to_str().unwrap().to_owned();
                files.push((relative, fs::read(&path).unwrap()));
            }
        }
    }
    files.sort();
    files
}

#[test]
fn a_site_goes_into_a_bucket_and_back_unchanged() {
    let Some(config) = fresh_bucket() else { return };
    let site = demo_site();
    // Larger than one 8 MiB part: goes up in parts.
    let large: Vec<u8> = (0..9 * 1024 * 1024).map(|i: u32| (i % 251) as u8).collect();
    fs::write(site.path().join("media/large.bin"), &large).unwrap();
    let expected = tree(site.path());
    // Node-local caches, staging and a symlink, which stay behind.
    for cache in [".cms/index/snapshot.bin", ".cms/variants/a/1.webp", ".cms/uploads/part", ".cms/changes/1"]
    {
        fs::create_dir_all(site.path().join(cache).parent().unwrap()).unwrap();
        fs::write(site.path().join(cache), "cache").unwrap();
    }
    fs::write(site.path().join(".cms/webhook-outbox.log"), "{}\n").unwrap();
    fs::write(site.path().join("content/.cms-tmp-123"), "half").unwrap();
    std::os::unix::fs::symlink("/etc", site.path().join("media/elsewhere")).unwrap();

    let up = copy(&config, site.path().to_str().unwrap(), &url(&config), &[]);
    let files = expected.len();
    let bytes: usize = expected.iter().map(|(_, b)| b.len()).sum();
    let copied = format!("copied {files} files ({bytes} bytes); both sides hold the same {files} files");
    // The symlink is not followed, and a copy that left something behind says so and fails.
    assert!(!up.status.success(), "{}", stdout(&up));
    assert!(stderr(&up).contains("media/elsewhere: a symlink"), "{}", stderr(&up));
    assert!(
        stderr(&up).contains(&format!("{copied}, but 1 entries of the folder were not copied")),
        "{}",
        stderr(&up)
    );

    let bucket = S3Site::connect(&config, Some(credentials())).unwrap();
    let mut keys: Vec<String> = bucket.list_objects_blocking().unwrap().into_iter().map(|o| o.key).collect();
    keys.sort();
    let mut expected_keys: Vec<String> = expected.iter().map(|(path, _)| path.clone()).collect();
    expected_keys.sort();
    assert_eq!(keys, expected_keys, "the caches, staging files and symlinks stay behind");

    let back = tempfile::tempdir().unwrap();
    let target = back.path().join("site-copy");
    let down = copy(&config, &url(&config), target.to_str().unwrap(), &[]);
    assert!(down.status.success(), "{}", stderr(&down));
    assert_eq!(stdout(&down), format!("{copied}\n"));
    assert!(tree(&target) == expected, "the files come back byte for byte");
}

#[test]
fn bad_input_gets_clear_errors_and_writes_nothing_outside_the_target() {
    let Some(config) = fresh_bucket() else { return };
    let scratch = tempfile::tempdir().unwrap();
    let (one, two) = (scratch.path().join("one"), scratch.path().join("two"));
    fs::create_dir(&one).unwrap();
    let cases: [(&str, &str, &str); 4] = [
        (one.to_str().unwrap(), two.to_str().unwrap(), "both folders"),
        (&url(&config), "s3://other/x", "both buckets"),
        (one.to_str().unwrap(), "s3://", "names no bucket"),
        (one.to_str().unwrap(), "s3://a bucket/x", "storage.bucket must be a bucket name"),
    ];
    for (from, to, expected) in cases {
        let output = copy(&config, from, to, &[]);
        assert!(!output.status.success(), "{from} -> {to}");
        assert!(stderr(&output).contains(expected), "{from} -> {to}: {}", stderr(&output));
    }
    assert!(!two.exists());
    let output = copy(&config, &url(&config), two.to_str().unwrap(), &[]);
    assert!(
        stderr(&output).contains("holds no site files; check the bucket and the prefix"),
        "{}",
        stderr(&output)
    );
    assert!(!two.exists());

    // A key with a `..` part cannot reach the target: the store itself refuses to hold
    // one (SeaweedFS answers 400; `check_key` in storage.rs refuses it from any other).
    let bucket = S3Site::connect(&config, Some(credentials())).unwrap();
    bucket.put_object_blocking("cms.yaml", b"site: {}\n".to_vec()).unwrap();
    let server = cms_s3::testing::server().unwrap();
    let hostile = format!("/{}/{}/posts/%2E%2E/%2E%2E/escaped.md", config.bucket, config.prefix);
    assert_eq!(server.put_raw(&hostile, b"out"), Some(400));

    // A non-empty bucket prefix, a non-empty target folder.
    fs::write(one.join("mine.txt"), "keep").unwrap();
    let output = copy(&config, one.to_str().unwrap(), &url(&config), &[]);
    assert!(!output.status.success());
    assert!(stderr(&output).contains("is not empty; pass --overwrite"), "{}", stderr(&output));
    let fresh = fresh_bucket().unwrap();
    let bucket = S3Site::connect(&fresh, Some(credentials())).unwrap();
    bucket.put_object_blocking("cms.yaml", b"site: {}\n".to_vec()).unwrap();
    let output = copy(&fresh, &url(&fresh), one.to_str().unwrap(), &[]);
    assert!(!output.status.success());
    assert!(stderr(&output).contains("is not empty; pass --overwrite"), "{}", stderr(&output));
    assert_eq!(tree(&one), vec![("mine.txt".to_owned(), b"keep".to_vec())]);
    // With --overwrite it copies; the check then names the file only the folder holds.
    let output = copy(&fresh, &url(&fresh), one.to_str().unwrap(), &["--overwrite"]);
    assert!(!output.status.success());
    assert!(stderr(&output).contains("only in the folder: mine.txt\n"), "{}", stderr(&output));
    assert!(stderr(&output).contains("copied 1 files (9 bytes), but the two sides differ: 1 difference"));
    assert_eq!(fs::read(one.join("cms.yaml")).unwrap(), b"site: {}\n");
}

/// `cms storage copy` from a bucket with `env` set as given (and nothing else of AWS's),
/// into a new folder; the output.
fn copy_from_bucket_with(bucket: &str, endpoint: Option<&str>, env: &[(&str, &str)]) -> Output {
    let scratch = tempfile::tempdir().unwrap();
    let mut command = Command::new(BIN);
    command
        .args(["storage", "copy", "--from", &format!("s3://{bucket}/x"), "--to"])
        .arg(scratch.path().join("t"));
    if let Some(endpoint) = endpoint {
        command.args(["--endpoint", endpoint]);
    }
    for name in
        ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_REGION"]
    {
        command.env_remove(name);
    }
    command.envs(env.iter().copied()).env_remove("CMS_SITE").output().unwrap()
}

/// A failure names its cause in one line: no XML, no metadata-service address.
fn assert_named(output: &Output, expected: &str) {
    let said = stderr(output);
    assert!(!output.status.success(), "{said}");
    assert!(said.contains(expected), "expected {expected:?} in: {said}");
    assert!(!said.contains('<') && !said.contains("169.254"), "{said}");
    assert_eq!(said.trim_end().lines().count(), 1, "one line: {said}");
}

#[test]
fn bucket_failures_name_their_cause() {
    // Nothing listens on port 1: the endpoint is named, with where it came from.
    let unreachable = copy_from_bucket_with(
        "b",
        Some("http://127.0.0.1:1"),
        &[("AWS_ACCESS_KEY_ID", "k"), ("AWS_SECRET_ACCESS_KEY", "s")],
    );
    assert_named(&unreachable, "cannot reach the store at http://127.0.0.1:1 (from storage.endpoint)");
    let unreachable = copy_from_bucket_with(
        "b",
        None,
        &[
            ("AWS_ACCESS_KEY_ID", "k"),
            ("AWS_SECRET_ACCESS_KEY", "s"),
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:1"),
        ],
    );
    assert_named(&unreachable, "cannot reach the store at http://127.0.0.1:1 (from AWS_ENDPOINT_URL)");
    // Half a pair of credentials.
    let half = copy_from_bucket_with("b", Some("http://127.0.0.1:1"), &[("AWS_ACCESS_KEY_ID", "k")]);
    assert_named(&half, "AWS_SECRET_ACCESS_KEY is not set (AWS_ACCESS_KEY_ID is)");

    let Some(config) = fresh_bucket() else { return };
    let endpoint = config.endpoint.as_deref();
    let none = copy_from_bucket_with(&config.bucket, endpoint, &[]);
    assert_named(&none, "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set");
    let wrong_secret = copy_from_bucket_with(
        &config.bucket,
        endpoint,
        &[("AWS_ACCESS_KEY_ID", "cms-test"), ("AWS_SECRET_ACCESS_KEY", "not-the-secret")],
    );
    assert_named(&wrong_secret, "AWS_SECRET_ACCESS_KEY is not the secret of the key in AWS_ACCESS_KEY_ID");
    let unknown_key = copy_from_bucket_with(
        &config.bucket,
        endpoint,
        &[("AWS_ACCESS_KEY_ID", "nobody"), ("AWS_SECRET_ACCESS_KEY", "cms-test-secret")],
    );
    assert_named(&unknown_key, "the access key ID in AWS_ACCESS_KEY_ID is unknown");
    let credentials = [("AWS_ACCESS_KEY_ID", "cms-test"), ("AWS_SECRET_ACCESS_KEY", "cms-test-secret")];
    let missing = copy_from_bucket_with("no-such-bucket", endpoint, &credentials);
    assert_named(&missing, &format!("bucket \"no-such-bucket\" does not exist at {}", endpoint.unwrap()));
}

/// Where `cms.yaml` (or the command line) is silent, `AWS_ENDPOINT_URL` and `AWS_REGION`
/// apply; a copy shows its progress on standard error.
#[test]
fn the_usual_environment_is_honoured_and_a_copy_shows_progress() {
    let Some(config) = fresh_bucket() else { return };
    let site = demo_site();
    let output = Command::new(BIN)
        .args(["storage", "copy", "--from"])
        .arg(site.path())
        .args(["--to", &url(&config)])
        .env("AWS_ACCESS_KEY_ID", "cms-test")
        .env("AWS_SECRET_ACCESS_KEY", "cms-test-secret")
        .env("AWS_ENDPOINT_URL", config.endpoint.as_deref().unwrap())
        .env("AWS_REGION", "eu-west-3")
        .env_remove("CMS_SITE")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let files = tree(site.path()).len();
    let said = stderr(&output);
    let target = format!("copying to {} ({})", url(&config), config.endpoint.as_deref().unwrap());
    // A line at each tenth of the files, and one at the end.
    let tenth = files.div_ceil(10);
    assert!(said.contains(&format!("{target}: {tenth} of {files} files")), "{said}");
    assert!(said.contains(&format!("{target}: {files} of {files} files")), "{said}");
    assert!(said.contains(&format!("checking the copy: {files} of {files} files")), "{said}");
}
