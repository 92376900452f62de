//! Architecture invariants, checked as tests (see docs/ARCHITECTURE.md).

use std::fs;
use std::path::Path;

const CORE: &str = env!("CARGO_MANIFEST_DIR");

/// Crates that do I/O, talk to the network or belong to the web layer.
const FORBIDDEN_DEPENDENCIES: &[&str] = &[
    "actix",
    "tokio",
    "hyper",
    "reqwest",
    "ureq",
    "mio",
    "async-std",
    "libc",
    "tempfile",
    "notify",
    "cms-fs",
    "cms-http",
    "cms-webhooks",
];

/// Standard-library paths that reach the outside world.
const FORBIDDEN_PATHS: &[&str] =
    &["std::fs", "std::net", "std::process", "std::env::", "std::io::stdin", "File::open", "SystemTime::now"];

#[test]
fn cms_core_depends_on_no_io_or_web_crate() {
    let manifest = fs::read_to_string(Path::new(CORE).join("Cargo.toml")).unwrap();
    let mut section = String::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            section = line.to_owned();
            continue;
        }
        if section != "[dependencies]" || line.is_empty() || line.starts_with('#') {
            continue;
        }
        let name = line.split(['=', '.', ' ']).next().unwrap();
        for forbidden in FORBIDDEN_DEPENDENCIES {
            assert!(!name.starts_with(forbidden), "cms-core must not depend on {name}");
        }
    }
}

#[test]
fn cms_core_source_does_no_io() {
    let mut stack = vec![Path::new(CORE).join("src")];
    let mut checked = 0;
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let text = fs::read_to_string(&path).unwrap();
            for (number, line) in text.lines().enumerate() {
                for forbidden in FORBIDDEN_PATHS {
                    assert!(
                        !line.contains(forbidden),
                        "{}:{}: {forbidden} in cms-core",
                        path.display(),
                        number + 1
                    );
                }
            }
            checked += 1;
        }
    }
    assert!(checked > 10, "the walk found the sources");
}
