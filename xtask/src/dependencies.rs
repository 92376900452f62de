//! The dependency matrix of the workspace, as a test over `cargo metadata`: which of our
//! crates may depend on which, and which outside crates the domain may use. The arrows
//! point to `cms-core`; the adapters never reach each other; only the binary composes.
//! Dev-dependencies are not checked: a crate's tests may compose what they need (the
//! webhook tests run over a real site folder, for instance).

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::process::Command;

    use serde_json::Value;

    /// Which workspace crates each workspace crate may depend on (normal and build
    /// dependencies). A crate missing here fails the test: a new crate takes a row.
    const MAY_USE: &[(&str, &[&str])] = &[
        // The domain: ours, nothing.
        ("cms-core", &[]),
        // Outbound adapters: the ports of core, never another adapter.
        ("cms-fs", &["cms-core"]),
        ("cms-s3", &["cms-core"]),
        ("cms-webhooks", &["cms-core"]),
        ("cms-images", &["cms-core"]),
        // A change-log subscriber of folder sites, composed by the binary (the git program
        // behind it); never another adapter, though it commits the folder cms-fs writes.
        ("cms-git", &["cms-core"]),
        // Inbound adapters: the facade of core, never an outbound adapter (nor each other).
        ("cms-http", &["cms-core"]),
        ("cms-admin", &["cms-core"]),
        ("cms-mcp", &["cms-core"]),
        // The composition root.
        (
            "cms",
            &[
                "cms-core",
                "cms-fs",
                "cms-s3",
                "cms-webhooks",
                "cms-images",
                "cms-git",
                "cms-http",
                "cms-admin",
                "cms-mcp",
            ],
        ),
        // Tooling: the bench of the bucket adapter starts its test server.
        ("xtask", &["cms-s3"]),
    ];

    /// Every outside crate `cms-core` may depend on: computation, encodings and their
    /// derives. No framework (actix, rmcp, askama), no runtime or I/O crate (tokio,
    /// reqwest, object_store, ureq, notify, rustix, libc, tempfile): the core does no I/O.
    const CORE_MAY_USE: &[&str] = &[
        "argon2",
        "async-trait",
        // The chunks a resource read streams (`ports::ByteStream`): a buffer type, no I/O.
        "bytes",
        "comrak",
        // A notification primitive (the event log wakes its streams), no runtime, no I/O.
        "event-listener",
        // The index's and the search index's hash maps (seeded, faster than SipHash).
        "foldhash",
        "futures-util",
        "gif",
        // `HashTable`: the maps from names to ids that hold the ids alone; pure computation.
        "hashbrown",
        "hex",
        "image",
        "jiff",
        // BCP 47 tags of `languages:` and the IANA registry they are checked against: data.
        "language-tags",
        "postcard",
        "regex-lite",
        "ring",
        "rust-stemmers",
        "schemars",
        "serde",
        "serde-saphyr",
        "serde_json",
        "serde_path_to_error",
        // Line diffs of a translation's source (`service/translating.rs`): computation.
        "similar",
        "thiserror",
        "time",
        "tracing",
        "zune-core",
        "zune-jpeg",
    ];

    /// Outside crates that belong to the web layer: only the inbound adapters and the
    /// binary (and the bench's ceiling server) may use them.
    const WEB: &[&str] = &["actix-", "rmcp", "askama"];

    fn metadata() -> Value {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let output = Command::new(cargo)
            .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("cargo metadata runs");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        serde_json::from_slice(&output.stdout).unwrap()
    }

    /// Each workspace crate with the names of its normal and build dependencies.
    fn crates() -> Vec<(String, BTreeSet<String>)> {
        let metadata = metadata();
        let mut crates = Vec::new();
        for package in metadata["packages"].as_array().unwrap() {
            let uses = package["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|dep| dep["kind"].is_null() || dep["kind"] == "build")
                .map(|dep| dep["name"].as_str().unwrap().to_owned())
                .collect();
            crates.push((package["name"].as_str().unwrap().to_owned(), uses));
        }
        crates
    }

    #[test]
    fn the_workspace_keeps_its_dependency_matrix() {
        let crates = crates();
        let ours: BTreeSet<&str> = crates.iter().map(|(name, _)| name.as_str()).collect();
        let mut wrong = Vec::new();
        for (name, uses) in &crates {
            let Some((_, allowed)) = MAY_USE.iter().find(|(crate_name, _)| crate_name == name) else {
                wrong.push(format!("{name} has no row in MAY_USE"));
                continue;
            };
            for dep in uses.iter().filter(|dep| ours.contains(dep.as_str())) {
                if !allowed.contains(&dep.as_str()) {
                    wrong.push(format!("{name} must not depend on {dep}"));
                }
            }
            let web_allowed = matches!(name.as_str(), "cms-http" | "cms-admin" | "cms-mcp" | "cms" | "xtask");
            for dep in uses.iter().filter(|dep| WEB.iter().any(|web| dep.starts_with(web))) {
                if !web_allowed {
                    wrong.push(format!("{name} must not depend on the web framework crate {dep}"));
                }
            }
            if name == "cms-core" {
                for dep in uses.iter().filter(|dep| !CORE_MAY_USE.contains(&dep.as_str())) {
                    wrong.push(format!("cms-core must not depend on {dep} (not in CORE_MAY_USE)"));
                }
            }
        }
        assert!(wrong.is_empty(), "the dependency matrix is broken:\n{}", wrong.join("\n"));
        assert!(crates.len() >= 10, "cargo metadata listed the workspace: {crates:?}");
    }
}
