//! `cargo xtask openapi-lint`: docs/openapi.yaml through the validators that code
//! generators and gateways go by, where `cargo xtask contract` only checks the server
//! against it: Redocly CLI (`lint`, the recommended rules with warnings as errors),
//! Spectral (`spectral:oas`, failing on warnings), `openapi-spec-validator` (the published
//! OpenAPI 3.1 schema), and a load with PyYAML's pure-Python `SafeLoader`, which refuses
//! YAML that the C loader and the server's own reader let through. Any finding fails.
//!
//! The tools are installed without root into `target/`: the npm packages under
//! `target/openapi-tools` (with the machine's Node.js), the Python ones in the virtual
//! environment `target/openapi-venv`; a second run reuses both. The rule files, and the
//! few places the rules are waived with their reasons, are in `xtask/openapi-lint/`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, bail};

/// The npm packages, pinned. Redocly CLI 2 runs on Node.js 20.19+ or 22.12+.
const REDOCLY: &str = "@redocly/cli@2.77.0";
const SPECTRAL: &str = "@stoplight/spectral-cli@6.16.3";
/// The Python packages, pinned (distribution name, version).
const PYTHON_PACKAGES: [(&str, &str); 2] = [("openapi-spec-validator", "0.9.0"), ("PyYAML", "6.0.4")];

const DOCUMENT: &str = "docs/openapi.yaml";

/// Loads the document with PyYAML's pure-Python loader (`yaml.SafeLoader`; the C one is
/// `CSafeLoader`), as tools without libyaml do, and checks it is a mapping with `openapi`.
const PURE_YAML_LOAD: &str = "\
import sys, yaml
with open(sys.argv[1], encoding='utf-8') as f:
    document = yaml.load(f, Loader=yaml.SafeLoader)
if not isinstance(document, dict) or 'openapi' not in document:
    sys.exit(sys.argv[1] + ': not an OpenAPI document')
print(sys.argv[1] + ': loaded with the pure-Python SafeLoader')
";

pub fn run(root: &Path) -> anyhow::Result<()> {
    let tools = install_npm_tools(root)?;
    let python = install_python_tools(root)?;
    let rules = root.join("xtask/openapi-lint");
    let venv_bin = python.parent().context("the venv's python is in bin/")?;

    let mut checks: Vec<(&str, Command)> = Vec::new();
    let mut redocly = Command::new(tools.join("redocly"));
    redocly.arg("lint").arg("--config").arg(rules.join("redocly.yaml")).arg(DOCUMENT);
    // No usage report and no update notice (the config file says `telemetry: off` too).
    redocly.env("REDOCLY_TELEMETRY", "off").env("REDOCLY_SUPPRESS_UPDATE_NOTICE", "true");
    checks.push(("redocly lint", redocly));
    let mut spectral = Command::new(tools.join("spectral"));
    spectral
        .args(["lint", "--fail-severity", "warn", "--ruleset"])
        .arg(rules.join("spectral.yaml"))
        .arg(DOCUMENT);
    checks.push(("spectral lint", spectral));
    let mut validator = Command::new(venv_bin.join("openapi-spec-validator"));
    validator.args(["--validation-errors", "all", DOCUMENT]);
    checks.push(("openapi-spec-validator", validator));
    let mut pure_load = Command::new(&python);
    pure_load.args(["-c", PURE_YAML_LOAD, DOCUMENT]);
    checks.push(("PyYAML SafeLoader", pure_load));

    // Every check runs, so one run shows every finding.
    let mut failed = Vec::new();
    for (name, mut command) in checks {
        println!("openapi-lint: {name}");
        let status = command.current_dir(root).status().with_context(|| format!("cannot run {name}"))?;
        if !status.success() {
            failed.push(name);
        }
    }
    if !failed.is_empty() {
        bail!("{DOCUMENT} fails {} (their output is above)", failed.join(", "));
    }
    println!("openapi-lint: {DOCUMENT} passes all four checks");
    Ok(())
}

/// Redocly CLI and Spectral under `target/openapi-tools`, installed when either pinned
/// version is missing. Returns the folder of their executables.
fn install_npm_tools(root: &Path) -> anyhow::Result<PathBuf> {
    let prefix = root.join("target/openapi-tools");
    let bin = prefix.join("node_modules/.bin");
    let installed = [REDOCLY, SPECTRAL].iter().all(|spec| {
        let (name, version) = spec.rsplit_once('@').expect("a pinned npm package");
        let manifest = prefix.join("node_modules").join(name).join("package.json");
        std::fs::read_to_string(manifest)
            .ok()
            .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
            .is_some_and(|m| m["version"] == version)
    });
    if installed {
        return Ok(bin);
    }
    check_node()?;
    std::fs::create_dir_all(&prefix)?;
    crate::contract::run_checked(Command::new("npm").arg("install").arg("--prefix").arg(&prefix).args([
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
        "--save-exact",
        REDOCLY,
        SPECTRAL,
    ]))?;
    Ok(bin)
}

/// Redocly CLI 2 needs Node.js 20.19 or later within 20, or 22.12 or later; Spectral 6
/// runs on any of those.
fn check_node() -> anyhow::Result<()> {
    let output = Command::new("node")
        .arg("--version")
        .stderr(Stdio::inherit())
        .output()
        .context("openapi-lint needs Node.js 20.19+ or 22.12+ and npm (node is not on PATH)")?;
    let version = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let mut parts = version.trim_start_matches('v').split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    let supported = (major == 20 && minor >= 19) || (major == 22 && minor >= 12) || major >= 23;
    if !supported {
        bail!("openapi-lint needs Node.js 20.19+ or 22.12+ for {REDOCLY}; this is {version}");
    }
    Ok(())
}

/// `openapi-spec-validator` and PyYAML in `target/openapi-venv`, installed when the venv
/// lacks either pinned version. Returns the venv's python.
fn install_python_tools(root: &Path) -> anyhow::Result<PathBuf> {
    let venv = root.join("target/openapi-venv");
    let python = venv.join("bin/python");
    let wanted: Vec<String> =
        PYTHON_PACKAGES.iter().map(|(name, version)| format!("{name}=={version}")).collect();
    let probe = format!(
        "import importlib.metadata as m, sys\nsys.exit(any(m.version(n) != v for n, v in {:?}))",
        PYTHON_PACKAGES
    );
    let ready = Command::new(&python)
        .args(["-c", &probe])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ready {
        return Ok(python);
    }
    crate::contract::run_checked(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    crate::contract::run_checked(
        Command::new(venv.join("bin/pip"))
            .args(["install", "--quiet", "--disable-pip-version-check"])
            .args(&wanted),
    )?;
    Ok(python)
}
