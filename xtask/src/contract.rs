//! `cargo xtask contract`: schemathesis (from PyPI, in a virtual environment under
//! `target/`) against a real server on a copy of the demo site, with an owner key. It
//! must find no server error and no response that violates docs/openapi.yaml.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{Context, bail};

const SCHEMATHESIS: &str = "schemathesis==4.32.5";
const CHECKS: &str = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance";

pub fn run(root: &Path) -> anyhow::Result<()> {
    crate::cargo(&["build", "--locked", "-p", "cms"])?;
    let cms = root.join("target/debug/cms");
    let schemathesis = install_schemathesis(root)?;

    let site = root.join("target/contract-site");
    if site.exists() {
        fs::remove_dir_all(&site)?;
    }
    copy_tree(&root.join("fixtures/demo-site"), &site)?;
    let key = owner_key(&cms, &site)?;
    let mut server = Server::start(&cms, &site)?;

    let status = Command::new(schemathesis)
        .arg("run")
        .arg(format!("{}/cms/openapi.json", server.base))
        .args(["--header", &format!("Authorization: Bearer {key}")])
        .args(["--checks", CHECKS])
        .args(["--max-examples", "20", "--workers", "1", "--seed", "1", "--generation-database", "none"])
        .args(["--suppress-health-check", "all", "--request-timeout", "10"])
        .status()
        .context("cannot run schemathesis")?;
    server.stop();
    if !status.success() {
        bail!("schemathesis found responses that break docs/openapi.yaml ({status})");
    }
    Ok(())
}

fn install_schemathesis(root: &Path) -> anyhow::Result<PathBuf> {
    let venv = root.join("target/contract-venv");
    let bin = venv.join("bin/schemathesis");
    if bin.exists() {
        return Ok(bin);
    }
    run_checked(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    run_checked(Command::new(venv.join("bin/pip")).args(["install", "--quiet", SCHEMATHESIS]))?;
    Ok(bin)
}

fn owner_key(cms: &Path, site: &Path) -> anyhow::Result<String> {
    run_checked(Command::new(cms).arg("--site").arg(site).args([
        "users",
        "add",
        "--email",
        "owner@example.com",
        "--role",
        "owner",
    ]))?;
    let output = Command::new(cms)
        .arg("--site")
        .arg(site)
        .args(["keys", "create", "--user", "owner@example.com"])
        .output()?;
    if !output.status.success() {
        bail!("cms keys create failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    let stdout = String::from_utf8(output.stdout)?;
    stdout.lines().last().map(str::to_owned).context("cms keys create printed no key")
}

struct Server {
    child: Child,
    base: String,
}

impl Server {
    fn start(cms: &Path, site: &Path) -> anyhow::Result<Self> {
        let mut child = Command::new(cms)
            .arg("serve")
            .arg("--site")
            .arg(site)
            .args(["--listen", "127.0.0.1:0"])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .spawn()
            .context("cannot start cms serve")?;
        let mut lines = BufReader::new(child.stdout.take().context("no stdout")?);
        let mut first = String::new();
        lines.read_line(&mut first)?;
        let base =
            first.trim().strip_prefix("listening on ").context("unexpected start-up output")?.to_owned();
        std::thread::spawn(move || std::io::copy(&mut lines, &mut std::io::sink()));
        Ok(Self { child, base })
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

fn run_checked(command: &mut Command) -> anyhow::Result<()> {
    let status = command.status().with_context(|| format!("cannot run {command:?}"))?;
    if !status.success() {
        bail!("{command:?} failed ({status})");
    }
    Ok(())
}

fn copy_tree(from: &Path, to: &Path) -> anyhow::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}
