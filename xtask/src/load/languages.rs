//! A site in three languages (issue 46): a copy of the bench site (hard links) whose
//! `cms.yaml` adds `languages: [en, fr, de]`, and whose every item of the read collection
//! has a French and a German translation beside it (`…-slug.fr.md`, `…-slug.de.md`:
//! Hugo's file-name layout, hard links of the English file), so three times the files.
//!
//! Measured: its first start and its restart (spawn until every language's list answers),
//! the French default list and a random French single item against the same cases on the
//! one-language site (paired rounds, as `paired.rs`: the two runs of a round follow each
//! other, the order alternating, and a case's figure is the median ratio), and its peak RSS
//! against the one-language server's after the same rounds.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, bail};

use super::cases::{self, Case};
use super::client::Client;
use super::paired::PairedFigures;
use super::process::Server;
use super::sitegen::{BenchSite, CONTENT_DIR};
use super::wrk;

/// The items per language of the site a full run measures (the size); any size
/// with `--only languages`.
pub const LANGUAGE_SIZE: usize = 100_000;
/// The site's languages, the default first; the cases read the second.
const LANGUAGES: [&str; 3] = ["en", "fr", "de"];
const READ_IN: &str = "fr";
/// Rounds of each case on each server.
const ROUNDS: usize = 4;
/// The cases measured in French against the one-language site.
pub const CASES: [Case; 2] = [Case::ListDefault, Case::SingleItem];

pub struct LanguageFigures {
    /// Items per language.
    pub items: usize,
    /// Spawn until every language's list answered: without an index snapshot, then with
    /// the snapshots the first start saved.
    pub first_start: Result<Duration, String>,
    pub restart: Result<Duration, String>,
    /// Each case's three-language/one-language ratios, round by round.
    pub ratios: PairedFigures,
    /// Peak RSS after the rounds: the three-language server's, and the one-language
    /// server's (which served the same rounds).
    pub peak_rss_kib: Option<u64>,
    pub one_language_peak_rss_kib: Option<u64>,
    /// Resident memory after the rounds (not the peak), both servers.
    pub rss_kib: Option<u64>,
    pub one_language_rss_kib: Option<u64>,
}

pub fn measure(
    cms: &Path,
    site: &BenchSite,
    bench: &Server,
    wrk: &wrk::Settings,
    logs: &Path,
) -> anyhow::Result<LanguageFigures> {
    let copy = site.root.with_file_name(format!("{}-languages", site.items));
    make_copy(site, &copy)?;
    let start = |what: &str| -> anyhow::Result<Server> {
        let mut command = Command::new(cms);
        command
            .arg("serve")
            .arg("--site")
            .arg(&copy)
            .args(["--listen", "127.0.0.1:0"])
            .env_remove("RUST_LOG");
        Server::start(&mut command, what, &logs.join("cms-languages.log"), super::STARTUP_DEADLINE)
    };
    let first = start("cms serve (three languages, first start)")?;
    let first_start = every_language_answers(&first);
    report_time(site.items, "first start (no snapshot)", &first_start);
    super::wait_for_snapshot(&first, &copy.join(".cms/index"), super::FIRST_START_DEADLINE);
    drop(first);
    let server = start("cms serve (three languages)")?;
    let restart = every_language_answers(&server);
    report_time(site.items, "restart", &restart);
    restart.as_ref().map_err(|error| anyhow::anyhow!("the three-language site did not answer: {error}"))?;

    let french_slugs = copy.join(".bench/published-slugs-fr.txt");
    let lines: String = site.published_slugs.iter().map(|slug| format!("{slug}?lang={READ_IN}\n")).collect();
    std::fs::write(&french_slugs, lines)?;
    let mut ratios = Vec::new();
    for case in CASES {
        let mut rounds = Vec::with_capacity(ROUNDS);
        for round in 0..ROUNDS {
            eprintln!(
                "{} items: {} in French, three languages (round {} of {ROUNDS})",
                site.items,
                case.label(),
                round + 1
            );
            let translated = || run_in_french(case, &server, site, &french_slugs, wrk);
            let one = || -> anyhow::Result<f64> {
                super::settle(bench);
                let figures = super::run_case(case, bench, site, wrk).map_err(anyhow::Error::msg)?;
                Ok(figures.requests_per_sec)
            };
            let (three, single) = if round % 2 == 0 {
                let three = translated()?;
                (three, one()?)
            } else {
                let single = one()?;
                (translated()?, single)
            };
            rounds.push(three / single);
        }
        ratios.push((case, rounds));
    }
    let figures = LanguageFigures {
        items: site.items,
        first_start,
        restart,
        ratios: PairedFigures { ratios },
        peak_rss_kib: server.peak_rss_kib(),
        one_language_peak_rss_kib: bench.peak_rss_kib(),
        rss_kib: server.rss_kib(),
        one_language_rss_kib: bench.rss_kib(),
    };
    drop(server);
    let _ = std::fs::remove_dir_all(&copy);
    Ok(figures)
}

/// The bench site, hard-linked, with languages in its configuration and two translations
/// of every item of the read collection. The server and the bench replace files by
/// renaming new ones in, never in place, so the links never change the original.
fn make_copy(site: &BenchSite, copy: &Path) -> anyhow::Result<()> {
    if copy.exists() {
        std::fs::remove_dir_all(copy).with_context(|| format!("removing {}", copy.display()))?;
    }
    let linked = Command::new("cp").arg("-al").arg(&site.root).arg(copy).status()?;
    if !linked.success() {
        bail!("cp -al {} {} failed", site.root.display(), copy.display());
    }
    let _ = std::fs::remove_dir_all(copy.join(".cms/index"));
    let config = copy.join("cms.yaml");
    let text = std::fs::read_to_string(&config)?;
    std::fs::remove_file(&config)?;
    let languages: String = LANGUAGES.iter().map(|code| format!("  - code: {code}\n")).collect();
    std::fs::write(&config, format!("{text}\nlanguages:\n{languages}translations: filename\n"))?;
    let started = std::time::Instant::now();
    let content = copy.join(CONTENT_DIR);
    // Listed whole first: a listing read while links are made would list them too.
    let english: Vec<String> = std::fs::read_dir(&content)?
        .map(|entry| Ok(entry?.file_name().to_string_lossy().into_owned()))
        .collect::<std::io::Result<_>>()?;
    for name in english {
        let Some(stem) = name.strip_suffix(".md") else { continue };
        for code in &LANGUAGES[1..] {
            std::fs::hard_link(content.join(&name), content.join(format!("{stem}.{code}.md")))?;
        }
    }
    eprintln!(
        "{} items: linked the translations of {} in {:.2} s",
        site.items,
        copy.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The time from spawn until the list of each language has answered 200.
fn every_language_answers(server: &Server) -> Result<Duration, String> {
    let mut last_problem = String::from("no answer");
    for code in LANGUAGES {
        let url = format!("{}{}&lang={code}", server.base, Case::ListDefault.path(""));
        loop {
            if server.started.elapsed() >= super::STARTUP_DEADLINE {
                return Err(format!(
                    "the {code} list did not answer within {} s ({last_problem})",
                    super::STARTUP_DEADLINE.as_secs()
                ));
            }
            let client = Client::new(super::STARTUP_DEADLINE.saturating_sub(server.started.elapsed()));
            match client.get(&url) {
                Ok((200, _)) => break,
                Ok((status, body)) => last_problem = format!("answered {status}: {body}"),
                Err(error) => last_problem = format!("{error:#}"),
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    Ok(server.started.elapsed())
}

fn report_time(items: usize, what: &str, time: &Result<Duration, String>) {
    match time {
        Ok(time) => eprintln!("{items} items in three languages: {what} {:.2} s", time.as_secs_f64()),
        Err(error) => eprintln!("{items} items in three languages: {what}: {error}"),
    }
}

/// A case in French on the three-language server: its requests per second.
fn run_in_french(
    case: Case,
    server: &Server,
    site: &BenchSite,
    french_slugs: &Path,
    wrk: &wrk::Settings,
) -> anyhow::Result<f64> {
    super::settle(server);
    let (path, script) = match case {
        Case::SingleItem => {
            let script = french_slugs.with_extension("lua");
            wrk::write_random_path_script(french_slugs, &cases::item_path(""), &script)?;
            (format!("{}?lang={READ_IN}", cases::item_path(&site.published_slugs[0])), Some(script))
        }
        _ => (format!("{}&lang={READ_IN}", case.path("")), None),
    };
    let url = format!("{}{path}", server.base);
    match Client::new(Duration::from_secs(30)).get(&url) {
        Ok((200, _)) => {}
        Ok((status, body)) => bail!("GET {path} answered {status}: {body}"),
        Err(error) => return Err(error),
    }
    let figures = wrk.run_undisturbed_with(&url, script.as_deref(), &[])?;
    if figures.non_2xx > 0 {
        bail!("GET {path} under load: {} answers were not 2xx", figures.non_2xx);
    }
    Ok(figures.requests_per_sec)
}
