//! The crate's place in the architecture (see docs/ARCHITECTURE.md): an adapter that
//! reaches the site's state through the core's ports only (never `cms-fs`), not a part of
//! the web layer or the binary, and no async runtime.

use std::fs;
use std::path::Path;

/// Crate names, or prefixes ending in `-`, that cms-webhooks must not depend on.
const FORBIDDEN: &[&str] = &[
    "cms",
    "cms-http",
    "cms-admin",
    "cms-mcp",
    "cms-fs",
    "cms-s3",
    "cms-images",
    "actix-",
    "tokio",
    "hyper",
    "reqwest",
    "async-std",
];

#[test]
fn cms_webhooks_depends_on_no_web_layer_or_runtime() {
    let manifest = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap();
    let mut section = String::new();
    let mut checked = 0;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.to_owned();
            continue;
        }
        if section != "[dependencies]" || line.is_empty() || line.starts_with('#') {
            continue;
        }
        let name = line.split(['=', '.', ' ']).next().unwrap();
        for forbidden in FORBIDDEN {
            let hit = if forbidden.ends_with('-') { name.starts_with(forbidden) } else { name == *forbidden };
            assert!(!hit, "cms-webhooks must not depend on {name}");
        }
        checked += 1;
    }
    assert!(checked > 5, "the walk found the dependencies");
}
