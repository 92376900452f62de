//! A feature on and off, the same binary on the site and on a copy of it (hard links), the
//! default list and `/status` run on one then the other, the order alternating each round;
//! a round's figure is its on/off ratio (the two runs follow each other, so the machine's
//! drift between rounds cancels), and the case's is the median of its rounds.
//!
//! - Metrics (issue 49): the copy's own `cms.yaml` sets `metrics.listen`, so requests are
//!   counted there.
//! - The log (issue 50): the copy's server runs with `RUST_LOG=warn`, the bench's server
//!   with the default log, one line per request.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, bail};

use super::cases::Case;
use super::process::Server;
use super::sitegen::BenchSite;
use super::wrk;

/// Rounds of each case on each server. A pair's ratio moves by ±15% on this 2-core VM
/// (the same binary both ways, 16 rounds by hand: 0.85 to 1.25, median 1.01), so the
/// median of four rounds swung from 0.82 to 0.98 between runs where nothing on the path
/// changed; eleven hold a 3% target's verdict to the cost, not the draw.
pub const ROUNDS: usize = 11;
/// The cases measured both ways.
pub const CASES: [Case; 2] = [Case::ListDefault, Case::Status];

/// What the copy's server changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// Metrics on in the copy (off in the bench's server).
    MetricsOn,
    /// The log off in the copy (the default, a line per request, in the bench's server).
    LogsOff,
}

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::MetricsOn => "metrics-on",
            Variant::LogsOff => "logs-off",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Variant::MetricsOn => "metrics on and off",
            Variant::LogsOff => "the default log and logs off",
        }
    }

    /// Whether the copy's server is the one with the feature on.
    fn copy_is_on(self) -> bool {
        self == Variant::MetricsOn
    }
}

/// Each case's on/off ratios, round by round.
pub struct PairedFigures {
    pub ratios: Vec<(Case, Vec<f64>)>,
}

impl PairedFigures {
    pub fn median(ratios: &[f64]) -> Option<f64> {
        let mut sorted = ratios.to_vec();
        sorted.sort_by(f64::total_cmp);
        sorted.get(sorted.len() / 2).copied()
    }
}

/// Measures the server of `site` (`bench`) against a server of a copy of the site that
/// differs by `variant`.
pub fn measure(
    variant: Variant,
    cms: &Path,
    site: &BenchSite,
    bench: &Server,
    wrk: &wrk::Settings,
    logs: &Path,
) -> anyhow::Result<PairedFigures> {
    let copy = site.root.with_file_name(format!("{}-{}", site.items, variant.name()));
    if copy.exists() {
        std::fs::remove_dir_all(&copy).with_context(|| format!("removing {}", copy.display()))?;
    }
    // Hard links: the server replaces files by renaming new ones in, never in place.
    let linked = Command::new("cp").arg("-al").arg(&site.root).arg(&copy).status()?;
    if !linked.success() {
        bail!("cp -al {} {} failed", site.root.display(), copy.display());
    }
    let mut command = Command::new(cms);
    command.arg("serve").arg("--site").arg(&copy).args(["--listen", "127.0.0.1:0"]).env_remove("RUST_LOG");
    match variant {
        Variant::MetricsOn => {
            let config = copy.join("cms.yaml");
            let text = std::fs::read_to_string(&config)?;
            std::fs::remove_file(&config)?;
            std::fs::write(&config, format!("{text}\nmetrics:\n  listen: 127.0.0.1:0\n"))?;
        }
        Variant::LogsOff => {
            command.env("RUST_LOG", "warn");
        }
    }
    let other = Server::start(
        &mut command,
        &format!("cms serve ({})", variant.name()),
        &logs.join(format!("cms-{}.log", variant.name())),
        super::STARTUP_DEADLINE,
    )?;
    let (on, off) = if variant.copy_is_on() { (&other, bench) } else { (bench, &other) };
    super::wait_for_first_list(&other).map_err(anyhow::Error::msg)?;
    let mut ratios = Vec::new();
    for case in CASES {
        let mut rounds = Vec::with_capacity(ROUNDS);
        for round in 0..ROUNDS {
            eprintln!(
                "{} items: {} with {} (round {} of {ROUNDS})",
                site.items,
                case.label(),
                variant.label(),
                round + 1
            );
            let run = |server: &Server| -> anyhow::Result<f64> {
                super::settle(server);
                let figures = super::run_case(case, server, site, wrk).map_err(anyhow::Error::msg)?;
                Ok(figures.requests_per_sec)
            };
            let (with, without) = if round % 2 == 0 {
                let with = run(on)?;
                (with, run(off)?)
            } else {
                let without = run(off)?;
                (run(on)?, without)
            };
            rounds.push(with / without);
        }
        ratios.push((case, rounds));
    }
    drop(other);
    let _ = std::fs::remove_dir_all(&copy);
    Ok(PairedFigures { ratios })
}
