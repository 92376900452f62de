//! The real `cms` binary on temporary sites: the CLI, and the server over HTTP.

mod admin;
mod admin_access;
mod admin_browser;
mod admin_history;
mod admin_list;
mod admin_live;
mod admin_model;
mod admin_sessions;
mod admin_writing;
mod backup;
mod caching;
mod changes;
mod cli;
mod discovery;
mod dist;
mod events;
mod events_clients;
mod events_hostile;
mod first_hour;
mod git;
mod images;
mod logging;
mod mcp;
mod metrics;
mod model;
mod nodes;
mod nodes_webhooks;
mod policy;
mod previews;
mod resources;
mod restarts;
mod retries;
mod schedule;
mod server;
mod slow_clients;
mod startup;
mod storage;
mod traces;
mod translations;
mod webhooks;

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

pub const BIN: &str = env!("CARGO_BIN_EXE_cms");
pub const DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/demo-site");

/// A fresh copy of the demo site in a temporary folder.
pub fn demo_site() -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(Path::new(DEMO), dir.path());
    dir
}

/// A fresh copy of the fixture site `fixtures/{name}` in a temporary folder.
pub fn fixture_site(name: &str) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&Path::new(DEMO).join("..").join(name), dir.path());
    dir
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Runs `cms --site <site> <args>`.
pub fn cms(site: &Path, args: &[&str]) -> Output {
    Command::new(BIN).arg("--site").arg(site).args(args).env_remove("CMS_LISTEN").output().unwrap()
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Standard error of a command on `site`, without the `site: ...` line a command that
/// changes the site prints first.
pub fn error_of(site: &Path, output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let named = format!("site: {}\n", site.canonicalize().unwrap().display());
    stderr.strip_prefix(&named).map(str::to_owned).unwrap_or(stderr)
}

/// Adds a user and returns a new key for them.
pub fn user_with_key(site: &Path, email: &str, role: &str) -> String {
    assert!(cms(site, &["users", "add", "--email", email, "--role", role]).status.success());
    let output = cms(site, &["keys", "create", "--user", email]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    stdout(&output).lines().last().unwrap().to_owned()
}

/// A command the validators' venv installs (`cargo xtask test`), else the one on the
/// PATH; `None` when neither runs.
pub fn python_venv_tool(name: &str) -> Option<PathBuf> {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/validators-venv/bin").join(name);
    [venv, PathBuf::from(name)]
        .into_iter()
        .find(|tool| Command::new(tool).arg("--help").output().is_ok_and(|output| output.status.success()))
}

/// How long a change made behind the server's back may take to show: the change feed
/// reports it within about a second (a store without a feed is rescanned every second).
pub const SEEN_WITHIN: Duration = Duration::from_secs(5);

/// Calls `probe` until `done` accepts its answer or [`SEEN_WITHIN`] has passed, and
/// returns the last answer (the caller asserts on it, so a failure shows what was seen).
pub fn poll<T>(mut probe: impl FnMut() -> T, done: impl Fn(&T) -> bool) -> T {
    let deadline = Instant::now() + SEEN_WITHIN;
    loop {
        let answer = probe();
        if done(&answer) || Instant::now() >= deadline {
            return answer;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A running `cms serve` on a free port, killed on drop.
pub struct Server {
    pub child: Child,
    pub base: String,
    pub agent: ureq::Agent,
    /// What the server printed before `ready`.
    pub banner: Vec<String>,
}

impl Server {
    pub fn start(site: &Path) -> Self {
        let mut command = Command::new(BIN);
        command.args(["serve", "--listen", "127.0.0.1:0", "--site"]).arg(site);
        Self::spawn(command)
    }

    /// Starts a server on `site` whose log, at `info`, goes to the file `log`.
    pub fn start_logging_to(site: &Path, log: &Path) -> Self {
        let mut command = Command::new(BIN);
        command.args(["serve", "--listen", "127.0.0.1:0", "--site"]).arg(site);
        Self::spawn_with(command, "info", fs::File::create(log).unwrap().into())
    }

    /// Starts `command` and reads its banner up to the `ready` line.
    pub fn spawn(command: Command) -> Self {
        Self::spawn_with(command, "warn", Stdio::inherit())
    }

    /// [`Self::spawn`] with a log level and where the log goes.
    pub fn spawn_with(mut command: Command, level: &str, log: Stdio) -> Self {
        let mut child = command.env("RUST_LOG", level).stdout(Stdio::piped()).stderr(log).spawn().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap());
        let mut banner = Vec::new();
        loop {
            let mut line = String::new();
            if lines.read_line(&mut line).unwrap() == 0 {
                panic!("the server stopped during start-up: {banner:?}");
            }
            let line = line.trim_end().to_owned();
            let ready = line.starts_with("ready");
            banner.push(line);
            if ready {
                break;
            }
        }
        std::thread::spawn(move || std::io::copy(&mut lines, &mut std::io::sink()));
        let base = banner[0].strip_prefix("listening on ").unwrap_or_else(|| panic!("{banner:?}")).to_owned();
        let agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
        Self { child, base, agent, banner }
    }

    pub fn get(&self, path: &str, key: Option<&str>) -> (u16, Value) {
        let mut req = self.agent.get(format!("{}{path}", self.base));
        if let Some(key) = key {
            req = req.header("Authorization", format!("Bearer {key}"));
        }
        let mut response = req.call().unwrap();
        (response.status().as_u16(), response.body_mut().read_json().unwrap_or(Value::Null))
    }

    /// Resident memory of the server process, in KiB.
    pub fn rss_kib(&self) -> u64 {
        self.proc_status_kib("VmRSS:")
    }

    /// Peak resident memory of the server process so far, in KiB.
    pub fn peak_rss_kib(&self) -> u64 {
        self.proc_status_kib("VmHWM:")
    }

    fn proc_status_kib(&self, field: &str) -> u64 {
        let status = fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let line = status.lines().find(|l| l.starts_with(field)).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
