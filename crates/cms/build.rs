//! Build facts the binary carries: the git commit it was built from (`cms --version`),
//! and the bundled demo site, embedded so that a binary copied anywhere can still make
//! its demo copy.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    commit();
    demo_site();
}

/// `CMS_GIT_COMMIT`: the first 12 hex digits of `HEAD`, or `unknown` outside a checkout
/// (a source tarball) or without git.
fn commit() {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=CMS_GIT_COMMIT={commit}");
    // Run again when HEAD moves: HEAD itself, the branch it names, the packed refs (a
    // worktree keeps HEAD apart from the shared refs, which --git-path finds).
    let mut watched = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        // Only files that exist: cargo runs a script whose watched file is missing every time.
        if let Some(path) = git(&["rev-parse", "--git-path", &name]).filter(|p| Path::new(p).exists()) {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}

/// `$OUT_DIR/demo_site.rs`: `DEMO_FILES`, every file of `fixtures/demo-site` as its path
/// relative to the site and its bytes.
fn demo_site() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/demo-site");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    collect(&root, &root, &mut files);
    files.sort();
    let mut code = String::from("pub const DEMO_FILES: &[(&str, &[u8])] = &[\n");
    for (relative, absolute) in files {
        writeln!(code, "    ({relative:?}, include_bytes!({:?})),", absolute.display().to_string()).unwrap();
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap()).join("demo_site.rs");
    fs::write(out, code).unwrap();
}

fn collect(root: &Path, dir: &Path, files: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_dir() {
            collect(root, &path, files);
        } else if kind.is_file() {
            let relative = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            files.push((relative, path.canonicalize().unwrap_or(path)));
        }
    }
}
