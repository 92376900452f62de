//! Project tasks: `cargo xtask ci` runs exactly what CI runs; `cargo xtask bench` runs the
//! benchmarks (release build) and fails when a performance target is missed;
//! `cargo xtask contract` checks the running server against docs/openapi.yaml.

mod contract;

use std::path::Path;
use std::process::Command;

use anyhow::{Context, bail};

fn main() -> anyhow::Result<()> {
    let task = std::env::args().nth(1).unwrap_or_default();
    match task.as_str() {
        "ci" => ci(),
        "bench" => bench(),
        "contract" => contract::run(&workspace_root()),
        _ => bail!(
            "usage: cargo xtask <ci|bench>\n  ci     fmt check, clippy -D warnings, all tests\n  bench  benchmarks with their targets"
        ),
    }
}

/// The listing benchmark, then the large-upload memory measurement (release builds).
fn bench() -> anyhow::Result<()> {
    cargo(&["bench", "--locked", "-p", "cms-fs", "--bench", "listing"])?;
    cargo(&[
        "test",
        "--locked",
        "--release",
        "-p",
        "cms",
        "--test",
        "it",
        "--",
        "--ignored",
        "--nocapture",
        "upload_keeps",
    ])
}

fn ci() -> anyhow::Result<()> {
    cargo(&["fmt", "--all", "--", "--check"])?;
    cargo(&["clippy", "--workspace", "--all-targets", "--locked", "--", "-D", "warnings"])?;
    cargo(&["test", "--workspace", "--locked"])?;
    contract::run(&workspace_root())
}

fn workspace_root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask sits in the workspace").to_path_buf()
}

pub(crate) fn cargo(args: &[&str]) -> anyhow::Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    eprintln!("$ cargo {}", args.join(" "));
    let status = Command::new(cargo).args(args).status().context("cannot run cargo")?;
    if !status.success() {
        bail!("cargo {} failed ({status})", args.join(" "));
    }
    Ok(())
}
