//! Metrics on and off (issue 49): the same binary on the site and on a copy of it (hard
//! links, with its own `cms.yaml` that sets `metrics.listen`, so requests are counted),
//! the default list and `/status` run on one then the other, the order alternating each
//! round; a round's figure is its on/off ratio (the two runs follow each other, so the
//! machine's drift between rounds cancels), and the case's is the median of its rounds.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, bail};

use super::cases::Case;
use super::process::Server;
use super::sitegen::BenchSite;
use super::wrk;

/// Rounds of each case on each server.
pub const ROUNDS: usize = 4;
/// The cases measured both ways.
pub const CASES: [Case; 2] = [Case::ListDefault, Case::Status];

/// Each case's on/off ratios, round by round.
pub struct MetricsFigures {
    pub ratios: Vec<(Case, Vec<f64>)>,
}

impl MetricsFigures {
    pub fn median(ratios: &[f64]) -> Option<f64> {
        let mut sorted = ratios.to_vec();
        sorted.sort_by(f64::total_cmp);
        sorted.get(sorted.len() / 2).copied()
    }
}

/// Measures `off` (the server of `site`, metrics off) against a server of a copy of the
/// site with metrics on.
pub fn measure(
    cms: &Path,
    site: &BenchSite,
    off: &Server,
    wrk: &wrk::Settings,
    logs: &Path,
) -> anyhow::Result<MetricsFigures> {
    let copy = site.root.with_file_name(format!("{}-metrics-on", site.items));
    if copy.exists() {
        std::fs::remove_dir_all(&copy).with_context(|| format!("removing {}", copy.display()))?;
    }
    // Hard links: the server replaces files by renaming new ones in, never in place.
    let linked = Command::new("cp").arg("-al").arg(&site.root).arg(&copy).status()?;
    if !linked.success() {
        bail!("cp -al {} {} failed", site.root.display(), copy.display());
    }
    let config = copy.join("cms.yaml");
    let text = std::fs::read_to_string(&config)?;
    std::fs::remove_file(&config)?;
    std::fs::write(&config, format!("{text}\nmetrics:\n  listen: 127.0.0.1:0\n"))?;
    let mut command = Command::new(cms);
    command.arg("serve").arg("--site").arg(&copy).args(["--listen", "127.0.0.1:0"]).env("RUST_LOG", "warn");
    let on = Server::start(
        &mut command,
        "cms serve (metrics on)",
        &logs.join("cms-metrics-on.log"),
        super::STARTUP_DEADLINE,
    )?;
    super::wait_for_first_list(&on).map_err(anyhow::Error::msg)?;
    let mut ratios = Vec::new();
    for case in CASES {
        let mut rounds = Vec::with_capacity(ROUNDS);
        for round in 0..ROUNDS {
            eprintln!(
                "{} items: {} with metrics on and off (round {} of {ROUNDS})",
                site.items,
                case.label(),
                round + 1
            );
            let run = |server: &Server| -> anyhow::Result<f64> {
                super::settle(server);
                let figures = super::run_case(case, server, site, wrk).map_err(anyhow::Error::msg)?;
                Ok(figures.requests_per_sec)
            };
            let (with, without) = if round % 2 == 0 {
                let with = run(&on)?;
                (with, run(off)?)
            } else {
                let without = run(off)?;
                (run(&on)?, without)
            };
            rounds.push(with / without);
        }
        ratios.push((case, rounds));
    }
    drop(on);
    let _ = std::fs::remove_dir_all(&copy);
    Ok(MetricsFigures { ratios })
}
