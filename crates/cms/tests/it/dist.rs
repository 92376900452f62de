//! What `dist/` ships for running the server: the systemd unit passes `systemd-analyze
//! verify` and waits for the server's notifications; the Kubernetes manifests are valid
//! resources (`kubernetes-validate`, the API's own schemas), their `cms.yaml` is one the
//! server accepts, and the pod's grace period covers the drain and the stop.

use std::path::{Path, PathBuf};
use std::process::Command;

use cms_core::config::SiteConfig;
use cms_s3::S3StorageConfig;

use crate::BIN;

const DIST: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../dist");

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(DIST).join(path)).unwrap()
}

#[test]
fn the_systemd_unit_is_valid_and_waits_for_the_server() {
    let unit = read("cms.service");
    for line in ["Type=notify", "NotifyAccess=main", "WatchdogSec=30", "TimeoutStopSec=45"] {
        assert!(unit.lines().any(|l| l == line), "{line}");
    }
    if Command::new("systemd-analyze").arg("--version").output().is_err() {
        cms_s3::testing::skip_check(
            "systemd-analyze",
            "apt-get install systemd (cargo xtask test does, as root)",
        );
        return;
    }
    // The binary where the unit expects it, so that verify checks the rest.
    let folder = tempfile::tempdir().unwrap();
    let copy = folder.path().join("cms.service");
    std::fs::write(&copy, unit.replace("/usr/local/bin/cms", BIN)).unwrap();
    let verified = Command::new("systemd-analyze").arg("verify").arg(&copy).output().unwrap();
    let said = String::from_utf8_lossy(&verified.stderr);
    assert!(verified.status.success() && said.trim().is_empty(), "{said}");
}

fn manifest_path(name: &str) -> PathBuf {
    Path::new(DIST).join("kubernetes").join(name)
}

#[test]
fn the_kubernetes_manifests_are_valid_and_consistent() {
    let manifests = ["configmap.yaml", "deployment.yaml", "service.yaml", "poddisruptionbudget.yaml"];
    let kustomization = read("kubernetes/kustomization.yaml");
    for name in manifests {
        assert!(kustomization.contains(&format!("  - {name}\n")), "kustomization.yaml lists {name}");
    }

    // The ConfigMap's cms.yaml is one the server accepts, a bucket site's.
    let configmap = read("kubernetes/configmap.yaml");
    let (_, embedded) = configmap.split_once("  cms.yaml: |\n").unwrap();
    let text: String =
        embedded.lines().map(|line| format!("{}\n", line.strip_prefix("    ").unwrap_or(line))).collect();
    let (config, bucket) = SiteConfig::from_yaml_with(&text, S3StorageConfig::from_storage).unwrap();
    assert_eq!(bucket.bucket, "my-site");
    let deployment = read("kubernetes/deployment.yaml");
    let grace: u64 = deployment
        .lines()
        .find_map(|line| line.trim().strip_prefix("terminationGracePeriodSeconds: "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        grace > config.server.drain_secs + config.server.stop_timeout_secs,
        "the pod's grace period ({grace} s) covers drain_secs and stop_timeout_secs"
    );
    assert!(config.server.drain_secs >= 2 * 2, "the drain outlasts two readiness probes");
    for probe in ["path: /readyz", "path: /livez"] {
        assert!(deployment.contains(probe), "{probe}");
    }

    let validator = crate::python_venv_tool("kubernetes-validate");
    let Some(validator) = validator else {
        cms_s3::testing::skip_check("kubernetes-validate", cms_s3::testing::INSTALL_PYTHON_PACKAGES);
        return;
    };
    let output = Command::new(validator)
        .args(["--strict", "--kubernetes-version", "1.33"])
        .args(manifests.map(manifest_path))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
