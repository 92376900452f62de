//! A site kept in git at 10,000 items (at any size with `--only git`; issue 48): 64
//! writers on a copy of the bench site with `git:` (a bare remote on this machine, pushed
//! after each commit) against the bench site itself, in paired rounds; every write
//! committed and pushed afterwards; an item's versions list; and a pull
//! of 1,000 files changed in a developer's clone, from `POST /cms/git/pull` until the last
//! of them is served.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use super::client::Client;
use super::process::Server;
use super::sitegen::{BenchSite, COLLECTION, CONCURRENT_WRITERS, CONTENT_DIR};
use super::writes::{Writes, median, run_writers};

/// Paired rounds of the writers, git and not in turn.
const ROUNDS: usize = 3;
/// Files the pull brings.
pub const PULLED_FILES: usize = 1000;
/// How long the pull may take before it is reported as not done.
const PULL_LIMIT: Duration = Duration::from_secs(60);
/// The secret of the copy's `POST /cms/git/pull`.
const PULL_SECRET: &str = "bench-pull-secret";

pub struct GitFigures {
    /// Writes per second, each round: the bench site, then the git copy.
    pub plain: Vec<f64>,
    pub git: Vec<f64>,
    /// Failed writes on the git copy, all rounds.
    pub failures: usize,
    /// Commits the writes made, and whether all were pushed once the writers stopped.
    pub commits: usize,
    pub pushed: bool,
    /// How long it took to commit and push what the writers left, once they stopped.
    pub caught_up: Duration,
    /// From the pull's request to the last pulled file served.
    pub pull: Result<Duration, String>,
    /// One written item's versions list (read from git): the first time, the median of a
    /// few more (the server keeps what it read of the item's commits), and how many
    /// versions it listed.
    pub history: Result<(Duration, Duration, usize), String>,
}

impl GitFigures {
    /// The median over the rounds of git's writes/s over the bench site's.
    pub fn ratio(&self) -> Option<f64> {
        let ratios: Vec<f64> =
            self.plain.iter().zip(&self.git).filter(|(plain, _)| **plain > 0.0).map(|(p, g)| g / p).collect();
        median(&ratios)
    }
}

pub fn measure(cms: &Path, site: &BenchSite, bench: &Server, logs: &Path) -> anyhow::Result<GitFigures> {
    let work = site.root.with_file_name(format!("{}-git", site.items));
    if work.exists() {
        std::fs::remove_dir_all(&work).with_context(|| format!("removing {}", work.display()))?;
    }
    std::fs::create_dir_all(&work)?;
    let copy = work.join("site");
    let remote = work.join("remote.git");
    let clone = work.join("clone");
    // Hard links: the server and git replace files by renaming new ones in, never in place.
    run(Command::new("cp").arg("-al").arg(&site.root).arg(&copy))?;
    let config = copy.join("cms.yaml");
    let text = std::fs::read_to_string(&config)?;
    std::fs::remove_file(&config)?;
    std::fs::write(
        &config,
        format!("{text}\ngit:\n  remote: origin\n  pull_every_secs: 0\n  pull_token_env: CMS_BENCH_PULL\n"),
    )?;
    std::fs::write(copy.join(".gitignore"), "/.cms/\n/.bench/\n")?;
    git(&work, &["init", "-q", "--bare", "-b", "main", "remote.git"])?;
    git(&copy, &["init", "-q", "-b", "main"])?;
    git(&copy, &["add", "-A", "."])?;
    git(&copy, &["commit", "-q", "-m", "the bench site"])?;
    git(&copy, &["remote", "add", "origin", path_text(&remote)?])?;
    git(&copy, &["push", "-q", "origin", "main"])?;
    git(&work, &["clone", "-q", "remote.git", "clone"])?;

    let mut command = Command::new(cms);
    command
        .arg("serve")
        .arg("--site")
        .arg(&copy)
        .args(["--listen", "127.0.0.1:0"])
        .env_remove("RUST_LOG")
        .env("CMS_BENCH_PULL", PULL_SECRET);
    let server =
        Server::start(&mut command, "cms serve (git)", &logs.join("cms-git.log"), super::STARTUP_DEADLINE)?;
    super::wait_for_first_list(&server).map_err(anyhow::Error::msg)?;
    let slugs = &site.published_slugs[1..=CONCURRENT_WRITERS];
    let commits_before = commit_count(&copy)?;
    let (mut plain, mut git_rates, mut failures) = (Vec::new(), Vec::new(), 0);
    let mut caught_up = Duration::ZERO;
    for round in 0..ROUNDS {
        eprintln!(
            "{} items: {CONCURRENT_WRITERS} writers, git and not (round {} of {ROUNDS})",
            site.items,
            round + 1
        );
        let writes = |server: &Server| -> Writes {
            super::settle(server);
            run_writers(&server.base, &site.owner_key, COLLECTION, slugs)
        };
        let (with, without) = if round % 2 == 0 {
            let with = writes(&server);
            caught_up = caught_up.max(wait_for_commits(&server)?);
            (with, writes(bench))
        } else {
            let without = writes(bench);
            let with = writes(&server);
            caught_up = caught_up.max(wait_for_commits(&server)?);
            (with, without)
        };
        failures += with.failures;
        git_rates.push(with.per_second());
        plain.push(without.per_second());
    }
    let commits = commit_count(&copy)? - commits_before;
    let pushed = git(&remote, &["rev-parse", "main"])? == git(&copy, &["rev-parse", "HEAD"])?;
    eprintln!("{} items: an item's history, from git", site.items);
    let history = time_history(&server, site, &slugs[0]).map_err(|error| format!("{error:#}"));
    eprintln!("{} items: a pull of {PULLED_FILES} changed files", site.items);
    let pull = pull_files(&server, &clone, site).map_err(|error| format!("{error:#}"));
    Ok(GitFigures { plain, git: git_rates, failures, commits, pushed, caught_up, pull, history })
}

/// Lists the versions of an item the writers changed, once and then a few times: the
/// first time, the median of the others, and how many versions it has.
fn time_history(
    server: &Server,
    site: &BenchSite,
    slug: &str,
) -> anyhow::Result<(Duration, Duration, usize)> {
    const TIMES: usize = 6;
    let client = Client::new(Duration::from_secs(60));
    let url = format!("{}/cms/collections/{COLLECTION}/items/{slug}/versions", server.base);
    let (mut times, mut versions) = (Vec::with_capacity(TIMES), 0);
    for _ in 0..TIMES {
        let started = Instant::now();
        let (status, body) = client.get_with_key(&url, &site.owner_key)?;
        times.push(started.elapsed());
        if status != 200 {
            bail!("GET {url} answered {status}: {body}");
        }
        let list: serde_json::Value = serde_json::from_str(&body)?;
        versions = list["versions"].as_array().map_or(0, Vec::len);
    }
    let first = times.remove(0);
    times.sort();
    Ok((first, times[times.len() / 2], versions))
}

/// Waits until what the writers left is committed and pushed; how long that took.
fn wait_for_commits(server: &Server) -> anyhow::Result<Duration> {
    let client = Client::new(Duration::from_secs(10));
    let started = Instant::now();
    loop {
        let (_, body) = client.get(&format!("{}/readyz", server.base))?;
        let ready: serde_json::Value = serde_json::from_str(&body)?;
        if ready["git"]["queued"] == 0 && ready["git"]["unpushed"] == 0 {
            return Ok(started.elapsed());
        }
        if started.elapsed() > PULL_LIMIT {
            bail!(
                "the git copy had not committed and pushed its writes {} s after they stopped: {ready}",
                PULL_LIMIT.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Changes `PULLED_FILES` items in the clone (after pulling what the site pushed), pushes,
/// asks the server to pull, and times it until the last changed item is served changed.
fn pull_files(server: &Server, clone: &Path, site: &BenchSite) -> anyhow::Result<Duration> {
    git(clone, &["pull", "-q", "--ff-only"])?;
    let folder = clone.join(CONTENT_DIR);
    let mut names: Vec<String> = std::fs::read_dir(&folder)?
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(".md"))
        .collect();
    names.sort();
    if names.len() < PULLED_FILES {
        bail!("the site has fewer than {PULLED_FILES} items");
    }
    // Spread over the collection; the last in path order is the last the pull writes.
    let step = names.len() / PULLED_FILES;
    let changed: Vec<&String> = names.iter().step_by(step).take(PULLED_FILES).collect();
    let marker = format!("pulled-{}", std::process::id());
    for name in &changed {
        let path = folder.join(name);
        let mut text = std::fs::read_to_string(&path)?;
        text.push_str(&format!("\n{marker}\n"));
        std::fs::write(&path, text)?;
    }
    git(clone, &["commit", "-q", "-am", "a developer's change of 1,000 items"])?;
    git(clone, &["push", "-q", "origin", "main"])?;
    let last = changed.last().context("no file changed")?;
    let slug = slug_of(last);
    let client = Client::new(Duration::from_secs(10));
    let started = Instant::now();
    let (status, body) = client.post_json(&format!("{}/cms/git/pull", server.base), PULL_SECRET, "{}")?;
    if status != 202 {
        bail!("POST /cms/git/pull answered {status}: {body}");
    }
    let url = format!("{}/cms/collections/{COLLECTION}/items/{slug}", server.base);
    loop {
        let (status, body) = client.get_with_key(&url, &site.owner_key)?;
        if status == 200 && body.contains(&marker) {
            return Ok(started.elapsed());
        }
        if started.elapsed() > PULL_LIMIT {
            bail!("the last pulled item was not served changed within {} s", PULL_LIMIT.as_secs());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `2026-01-12-hello.md` → `hello`.
fn slug_of(name: &str) -> String {
    let stem = name.trim_end_matches(".md");
    let dated = stem.len() > 11
        && stem.as_bytes()[4] == b'-'
        && stem.as_bytes()[7] == b'-'
        && stem.as_bytes()[10] == b'-';
    if dated { stem[11..].to_owned() } else { stem.to_owned() }
}

fn commit_count(dir: &Path) -> anyhow::Result<usize> {
    Ok(git(dir, &["rev-list", "--count", "HEAD"])?.parse()?)
}

fn git(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "Bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "Bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com")
        .output()
        .context("running git")?;
    if !output.status.success() {
        bail!("git {args:?} in {}: {}", dir.display(), String::from_utf8_lossy(&output.stderr));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

fn run(command: &mut Command) -> anyhow::Result<()> {
    let status = command.status()?;
    if !status.success() {
        bail!("{command:?} failed");
    }
    Ok(())
}

fn path_text(path: &Path) -> anyhow::Result<&str> {
    path.to_str().context("a path that is not UTF-8")
}
