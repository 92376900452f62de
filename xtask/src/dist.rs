//! `cargo xtask dist`: the release tarball, `target/dist/cms-VERSION-ARCH-linux.tar.gz`,
//! holding the release binary, LICENSE, README.md, docs/, an example systemd unit
//! (`dist/cms.service`, with the usual hardening) and the demo site:
//!
//! ```text
//! cms-0.1.0-x86_64-linux/
//!   cms                      the binary (stripped)
//!   LICENSE  README.md  docs/
//!   systemd/cms.service      copy to /etc/systemd/system/, adjust the paths
//!   kubernetes/              a bucket site on several nodes: kubectl apply -k kubernetes/
//!   demo-site/               a site to try: cms serve --site demo-site
//! ```

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

pub const USAGE: &str = "usage: cargo xtask dist [--binary PATH]
  builds cms in release mode (or takes the binary at PATH) and packs it with LICENSE,
  README.md, docs/, the systemd unit and Kubernetes manifests of dist/ and the demo site
  into target/dist/";

pub fn run(root: &Path, args: &[String]) -> anyhow::Result<()> {
    let binary = match args {
        [] => {
            crate::cargo(&["build", "--release", "--locked", "-p", "cms"])?;
            root.join("target/release/cms")
        }
        [flag, path] if flag == "--binary" => PathBuf::from(path),
        [flag] if flag == "-h" || flag == "--help" => {
            println!("{USAGE}");
            return Ok(());
        }
        _ => bail!("{USAGE}"),
    };
    let tarball = pack(root, &binary, &root.join("target/dist"))?;
    let size = std::fs::metadata(&tarball)?.len();
    println!("{} ({:.1} MB)", tarball.display(), size as f64 / 1e6);
    Ok(())
}

/// The version of the `cms` package, from the workspace manifest.
fn version(root: &Path) -> anyhow::Result<String> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).context("reading Cargo.toml")?;
    let in_package = manifest.split("[workspace.package]").nth(1).context("no [workspace.package]")?;
    let line = in_package
        .lines()
        .find(|line| line.trim_start().starts_with("version"))
        .context("no version in [workspace.package]")?;
    Ok(line.split('"').nth(1).context("a quoted version")?.to_owned())
}

/// Stages the files in `out/NAME/` and packs them into `out/NAME.tar.gz`; returns its path.
pub fn pack(root: &Path, binary: &Path, out: &Path) -> anyhow::Result<PathBuf> {
    if !binary.is_file() {
        bail!("no binary at {}", binary.display());
    }
    let name = format!("cms-{}-{}-linux", version(root)?, std::env::consts::ARCH);
    let stage = out.join(&name);
    if stage.exists() {
        std::fs::remove_dir_all(&stage).with_context(|| format!("removing {}", stage.display()))?;
    }
    std::fs::create_dir_all(stage.join("systemd"))?;
    std::fs::copy(binary, stage.join("cms")).context("copying the binary")?;
    // Symbols are a third of a release binary; a panic's message and location stay.
    run_tool(Command::new("strip").arg(stage.join("cms")))
        .unwrap_or_else(|error| eprintln!("note: the binary is not stripped: {error:#}"));
    for file in ["LICENSE", "README.md"] {
        std::fs::copy(root.join(file), stage.join(file)).with_context(|| format!("copying {file}"))?;
    }
    std::fs::copy(root.join("dist/cms.service"), stage.join("systemd/cms.service"))
        .context("copying dist/cms.service")?;
    copy_tree(&root.join("docs"), &stage.join("docs"))?;
    copy_tree(&root.join("dist/kubernetes"), &stage.join("kubernetes"))?;
    copy_tree(&root.join("fixtures/demo-site"), &stage.join("demo-site"))?;
    let tarball = out.join(format!("{name}.tar.gz"));
    run_tool(
        Command::new("tar")
            .arg("--owner=0")
            .arg("--group=0")
            .arg("-czf")
            .arg(&tarball)
            .arg("-C")
            .arg(out)
            .arg(&name),
    )?;
    std::fs::remove_dir_all(&stage)?;
    Ok(tarball)
}

fn run_tool(command: &mut Command) -> anyhow::Result<()> {
    let status = command.status().with_context(|| format!("cannot run {command:?}"))?;
    if !status.success() {
        bail!("{command:?} failed ({status})");
    }
    Ok(())
}

/// A folder's files and subfolders (symlinks are not followed: the sources hold none).
fn copy_tree(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)
                .with_context(|| format!("copying {}", entry.path().display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tarball holds what the README says a release holds, under one folder.
    #[test]
    fn the_tarball_holds_the_binary_docs_unit_and_demo_site() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let scratch = tempfile::tempdir().unwrap();
        // A stand-in for the release binary (the test does not build one).
        let binary = scratch.path().join("cms");
        std::fs::copy("/bin/true", &binary).unwrap();
        let tarball = pack(root, &binary, scratch.path()).unwrap();
        let listing = Command::new("tar").arg("-tzf").arg(&tarball).output().unwrap();
        assert!(listing.status.success());
        let listing = String::from_utf8(listing.stdout).unwrap();
        let name = tarball.file_name().unwrap().to_str().unwrap().trim_end_matches(".tar.gz");
        assert!(name.starts_with("cms-") && name.ends_with("-linux"), "{name}");
        for file in [
            "cms",
            "LICENSE",
            "README.md",
            "docs/deploying.md",
            "systemd/cms.service",
            "kubernetes/deployment.yaml",
            "demo-site/cms.yaml",
        ] {
            assert!(listing.lines().any(|line| line == format!("{name}/{file}")), "{file} in {listing}");
        }
        assert!(!scratch.path().join(name).exists(), "the staging folder is removed");
    }
}
