//! Three servers ("nodes") on one bucket site share the webhook subscriptions and the
//! delivery log: a subscription added against one node's configuration applies to events
//! written through the others, each event delivered once, by the node that wrote it, and
//! logged where every node sees it.
//! Needs the test S3 server (`cms_s3::testing`); skips without it, unless CI requires it.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use cms_s3::S3Site;
use cms_webhooks::testing::{Answer, Receiver, TestCa};
use serde_json::json;
use tempfile::TempDir;

use crate::webhooks::site_trusting;
use crate::{BIN, Server, poll, user_with_key};

const AWS: [(&str, &str); 2] =
    [("AWS_ACCESS_KEY_ID", "cms-test"), ("AWS_SECRET_ACCESS_KEY", "cms-test-secret")];

/// Copies every file of a site folder but `cms.yaml` into the bucket, under the same keys.
fn upload(bucket: &S3Site, root: &Path, dir: &Path) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            upload(bucket, root, &path);
        } else if path != root.join("cms.yaml") {
            let key = path.strip_prefix(root).unwrap().to_str().unwrap();
            bucket.put_file_blocking(key, &path).unwrap();
        }
    }
}

/// A node's own folder: `cms.yaml` of `site` with `storage:` naming the bucket, and the CA.
fn node(site: &Path, storage: &cms_s3::S3StorageConfig) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    let config = fs::read_to_string(site.join("cms.yaml")).unwrap();
    let storage = format!(
        "storage:\n  kind: s3\n  bucket: {}\n  endpoint: {}\n  prefix: {}\n  poll_ms: 100\n  state_max_age_ms: 200\n",
        storage.bucket,
        storage.endpoint.as_deref().unwrap(),
        storage.prefix
    );
    fs::write(dir.path().join("cms.yaml"), format!("{config}{storage}")).unwrap();
    fs::copy(site.join("test-ca.pem"), dir.path().join("test-ca.pem")).unwrap();
    dir
}

fn serve(node: &Path) -> Server {
    let mut command = Command::new(BIN);
    command.args(["serve", "--listen", "127.0.0.1:0", "--site"]).arg(node).envs(AWS);
    Server::spawn(command)
}

/// `cms --site <node> <args>` with the bucket's credentials.
fn on_node(node: &Path, args: &[&str]) -> String {
    let output = Command::new(BIN).arg("--site").arg(node).args(args).envs(AWS).output().unwrap();
    assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn a_subscription_added_on_one_node_delivers_events_of_the_others_once() {
    let Some(storage) = cms_s3::testing::fresh_bucket() else { return };
    let ca = TestCa::new();
    let receiver = Receiver::start(&ca, Answer::Status(200));
    // The demo site (its license has the webhooks feature) with an owner's key, in the bucket.
    let site = site_trusting(&ca);
    let key = user_with_key(site.path(), "owner@example.com", "owner");
    let bucket = S3Site::connect(&storage, Some(cms_s3::testing::credentials())).unwrap();
    upload(&bucket, site.path(), site.path());
    let (a, b, c) = (node(site.path(), &storage), node(site.path(), &storage), node(site.path(), &storage));
    let (node_a, node_b, node_c) = (serve(a.path()), serve(b.path()), serve(c.path()));

    let id = add_hook_on(a.path(), &receiver.url());
    assert!(
        !site.path().join(".cms/webhooks.yaml").exists() && !a.path().join(".cms/webhooks.yaml").exists()
    );
    let listed = poll(
        || node_b.get("/cms/settings/webhooks", Some(&key)),
        |(_, body)| body["webhooks"].as_array().is_some_and(|hooks| hooks.len() == 1),
    );
    assert_eq!(listed.1["webhooks"][0]["id"], id.as_str(), "node B serves node A's subscription: {listed:?}");

    let create = |server: &Server, slug: &str| {
        let response = server
            .agent
            .post(format!("{}/cms/collections/posts/items", server.base))
            .header("Authorization", format!("Bearer {key}"))
            .send_json(json!({"slug": slug, "date_prefix": false, "fm": {"title": "Nodes"}}))
            .unwrap();
        assert_eq!(response.status().as_u16(), 200);
    };
    create(&node_b, "from-b");
    let got = receiver.wait_for(1, Duration::from_secs(20));
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].header("x-webhook-event"), Some("file.created"));
    assert_eq!(got[0].json()["data"]["filename"], "from-b.md", "{}", got[0].json());
    let delivery = got[0].header("x-webhook-delivery").unwrap().to_owned();

    // Node A sees the item (through the change journal) without announcing it again: a
    // later event of node A's own is the only other delivery.
    let seen =
        poll(|| node_a.get("/cms/collections/posts/items/from-b", Some(&key)).0, |status| *status == 200);
    assert_eq!(seen, 200);
    create(&node_a, "from-a");
    receiver.wait_for(2, Duration::from_secs(20));
    create(&node_c, "from-c");
    let got = receiver.wait_for(3, Duration::from_secs(20));
    let files: Vec<String> =
        got.iter().map(|r| r.json()["data"]["filename"].as_str().unwrap().to_owned()).collect();
    assert_eq!(
        files,
        ["from-b.md", "from-a.md", "from-c.md"],
        "each event delivered once, by the node that wrote it"
    );

    // One log in the bucket, read through node B's configuration, with every node's deliveries.
    let log = poll(|| on_node(b.path(), &["webhooks", "log"]), |log| log.lines().count() == 3);
    assert!(log.lines().any(|l| l.contains(&delivery) && l.ends_with(" 200 success")), "{log}");
    assert_eq!(log.lines().count(), 3, "{log}");
    drop((node_a, node_b, node_c));
}

/// `cms webhooks add` against a node's configuration (so, into the bucket).
fn add_hook_on(node: &Path, url: &str) -> String {
    let out = on_node(node, &["webhooks", "add", "--url", url, "--events", "file.created"]);
    out.split_whitespace().find(|w| w.starts_with("wh_")).unwrap().to_owned()
}
