//! Project tasks: `cargo xtask ci` runs exactly what CI runs; `cargo xtask bench` runs the
//! benchmarks (release builds): the HTTP load benchmark, then the in-process ones;
//! `cargo xtask contract` checks the running server against docs/openapi.yaml;
//! `cargo xtask mcp-conformance` runs the official MCP conformance suite against its `/mcp`;
//! `cargo xtask openapi-lint` checks the document itself with the OpenAPI validators;
//! `cargo xtask test` is the README's test command (the test tools installed, skipped
//! checks listed); `cargo xtask dist` builds the release tarball.

mod conformance;
mod contract;
mod dependencies;
mod dist;
mod hello;
mod layers;
mod load;
mod openapi_lint;
mod test;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

const USAGE: &str = "usage: cargo xtask <test|ci|dist|bench|contract|openapi-lint|mcp-conformance>
  test      every test, with the tools the real-client tests need installed (venvs under
            target/), then the list of checks skipped for a missing tool [--ci] [-- ARGS]
  ci        fmt check, clippy -D warnings, `test --ci`, the OpenAPI lint and contract
            checks and the MCP conformance suite
  dist      the release tarball in target/dist/ (binary, LICENSE, README, docs, a systemd
            unit, the demo site)
  bench     benchmarks with their targets (`cargo xtask bench --help` for options)
  bench-images  the image variant figures (24 MP JPEG to WebP, PNG bomb, cache hits)
  bench-s3  the 10,000-item site in a bucket (SeaweedFS on loopback): reads, writes,
            and how soon a write through one node shows on another [--duration SECS]
  contract  schemathesis against a server on a copy of the demo site
  openapi-lint  docs/openapi.yaml through Redocly, Spectral, openapi-spec-validator and
            PyYAML's pure-Python loader (tools installed under target/)
  mcp-conformance [SCENARIO...]  the official MCP conformance suite's server scenarios
            against /mcp of a server on a copy of the demo site";

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let task = args.next().unwrap_or_default();
    let rest: Vec<String> = args.collect();
    match task.as_str() {
        "ci" => ci(),
        "test" => test::run(&workspace_root(), &rest),
        "dist" => dist::run(&workspace_root(), &rest),
        "bench" => bench(&rest),
        "bench-images" => bench_images(),
        "bench-s3" => bench_s3(&rest),
        "contract" => contract::run(&workspace_root(), &rest),
        "mcp-conformance" => conformance::run(&workspace_root(), &rest),
        "openapi-lint" => openapi_lint::run(&workspace_root()),
        // Not in the usage: the ceiling server that `bench` starts as a child process.
        "hello" => hello::run(&rest),
        _ => bail!("{USAGE}"),
    }
}

/// The HTTP load benchmark, then (unless `--load-only`) the listing benchmark and the
/// large-upload memory measurement.
fn bench(args: &[String]) -> anyhow::Result<()> {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{}", load::USAGE);
        return Ok(());
    }
    let options = load::Options::parse(args)?;
    let root = workspace_root();
    if cfg!(debug_assertions) {
        return rerun_as_release(&root, args);
    }
    let missed = load::run(&root, &options)?;
    if !options.load_only {
        in_process_benches()?;
        load::images::run(&root)?;
    }
    if options.enforce && missed > 0 {
        bail!("{missed} load benchmark target(s) missed (see target/bench-report.md)");
    }
    Ok(())
}

/// The image variant figures, on release builds (see `load/images.rs`).
fn bench_images() -> anyhow::Result<()> {
    let root = workspace_root();
    if cfg!(debug_assertions) {
        cargo(&["build", "--release", "--locked", "-p", "cms", "-p", "xtask"])?;
        let status = Command::new(root.join("target/release/xtask")).arg("bench-images").status()?;
        if !status.success() {
            std::process::exit(status.code().unwrap_or(130));
        }
        return Ok(());
    }
    load::images::run(&root)
}

/// The bucket figures, on release builds (see `load/s3.rs`).
fn bench_s3(args: &[String]) -> anyhow::Result<()> {
    let root = workspace_root();
    if cfg!(debug_assertions) {
        cargo(&["build", "--release", "--locked", "-p", "cms", "-p", "xtask"])?;
        let status = Command::new(root.join("target/release/xtask")).arg("bench-s3").args(args).status()?;
        if !status.success() {
            std::process::exit(status.code().unwrap_or(130));
        }
        return Ok(());
    }
    let duration = match args {
        [] => std::time::Duration::from_secs(5),
        [flag, seconds] if flag == "--duration" => std::time::Duration::from_secs(
            seconds.trim_end_matches('s').parse().context("--duration takes seconds")?,
        ),
        _ => bail!("usage: cargo xtask bench-s3 [--duration SECS]"),
    };
    load::s3::run(&root, duration)
}

/// `cargo xtask` is a debug build. The load benchmark runs in a release build of this
/// tool instead, because this tool is also the ceiling server and the write client, and a
/// debug build of either would skew the figures.
fn rerun_as_release(root: &Path, args: &[String]) -> anyhow::Result<()> {
    cargo(&["build", "--release", "--locked", "-p", "cms", "-p", "xtask"])?;
    let release = root.join("target/release/xtask");
    // No kill guard here: on Ctrl-C the release process gets the signal too and stops its
    // own children, which killing it from here would orphan.
    let status = Command::new(&release)
        .arg("bench")
        .args(args)
        .status()
        .with_context(|| format!("cannot run {}", release.display()))?;
    if !status.success() {
        // The release process has said why; pass its exit code on (130 for a signal).
        std::process::exit(status.code().unwrap_or(130));
    }
    Ok(())
}

/// The benchmarks that existed before the load benchmark: listing on the file adapter,
/// and the memory a 100 MB upload keeps. Each fails when its own target is missed.
fn in_process_benches() -> anyhow::Result<()> {
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
    test::run(&workspace_root(), &["--ci".to_owned()])?;
    openapi_lint::run(&workspace_root())?;
    contract::run(&workspace_root(), &[])?;
    conformance::run(&workspace_root(), &[])
}

fn workspace_root() -> PathBuf {
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
