//! Writes, measured at 10,000 items: one writer saving one item over and over, many
//! writers each saving its own item at once, how soon an edit made outside the server (a
//! file renamed into place, as editors save) shows in the item route, and what checking
//! a write against the collection's model costs (the server's CPU per write in a small
//! collection with the model beside the same items in one without).

use std::fs;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;

use super::cases::item_path;
use super::client::Client;
use super::process::Server;
use super::sitegen::{
    BenchSite, COLLECTION, CONCURRENT_WRITERS, CONTENT_DIR, MODELLED_COLLECTION, PLAIN_COLLECTION,
    SMALL_ITEMS,
};

/// The site size at which writes are measured.
pub const WRITE_SIZE: usize = 10_000;
const WRITE_TIME: Duration = Duration::from_secs(3);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// A cap on loops, should requests fail instantly for the whole write time.
const MAX_WRITES_PER_WRITER: u64 = 100_000;
const VISIBILITY_CAP: Duration = Duration::from_secs(10);
/// Rounds of the validation cost: each collection is measured this many times, in turn.
/// One collection's rounds spread 12-25% on a shared machine, more than the 5% target:
/// each round's pair is compared, and the median of the pairs decides.
const COST_ROUNDS: usize = 5;
/// Linux's clock ticks per second, the unit of a process's CPU time in `/proc`.
pub const TICKS_PER_SECOND: f64 = 100.0;

pub struct WriteFigures {
    pub one_writer: Writes,
    pub many_writers: Writes,
    pub outside_edit: Visibility,
    pub validation: Result<ValidationCost, String>,
}

/// The server's CPU time per write, in microseconds, each round: in the collection with a
/// model and in the one without.
pub struct ValidationCost {
    pub modelled_us: Vec<f64>,
    pub plain_us: Vec<f64>,
}

impl ValidationCost {
    /// What the model adds to a write's CPU, as a share of a write without it: the median
    /// over the rounds of each round's pair (measured one right after the other, so that
    /// a machine that slows down or speeds up between rounds moves both alike).
    pub fn added_share(&self) -> Option<f64> {
        let pairs: Vec<f64> = self
            .modelled_us
            .iter()
            .zip(&self.plain_us)
            .filter(|(_, plain)| **plain > 0.0)
            .map(|(modelled, plain)| (modelled - plain) / plain)
            .collect();
        median(&pairs)
    }
}

pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied()
}

/// What a group of writers achieved.
pub struct Writes {
    pub writers: usize,
    /// Latencies of the successful writes, sorted.
    pub latencies: Vec<Duration>,
    pub failures: usize,
    pub first_failure: Option<String>,
    /// From the start to the end of the last write.
    pub elapsed: Duration,
}

impl Writes {
    pub fn per_second(&self) -> f64 {
        self.latencies.len() as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Nearest-rank percentile of the successful writes' latencies.
    pub fn percentile(&self, percent: usize) -> Option<Duration> {
        let rank = (self.latencies.len() * percent).div_ceil(100);
        self.latencies.get(rank.max(1) - 1).copied()
    }
}

/// How soon an outside edit showed.
pub enum Visibility {
    After(Duration),
    NotWithin(Duration),
    Failed(String),
}

/// Needs `CONCURRENT_WRITERS + 2` published items; the server must be answering.
pub fn measure(server: &Server, site: &BenchSite) -> anyhow::Result<WriteFigures> {
    let base = server.base.as_str();
    let slugs = &site.published_slugs;
    if slugs.len() < CONCURRENT_WRITERS + 2 {
        anyhow::bail!("the site has too few published items for the write cases");
    }
    let one_writer = run_writers(base, &site.owner_key, COLLECTION, &slugs[..1]);
    let many_writers = run_writers(base, &site.owner_key, COLLECTION, &slugs[1..=CONCURRENT_WRITERS]);
    let outside_edit = outside_edit(base, site, &slugs[CONCURRENT_WRITERS + 1])
        .unwrap_or_else(|error| Visibility::Failed(format!("{error:#}")));
    let validation = validation_cost(server, site).map_err(|error| format!("{error:#}"));
    Ok(WriteFigures { one_writer, many_writers, outside_edit, validation })
}

/// `CONCURRENT_WRITERS` writers in the small collection with the model, then the same in
/// the one without (the same items, the same `PATCH`), `COST_ROUNDS` times in turn; the
/// server's CPU time over each run divided by its writes. Two collections of the same size,
/// so that only the model differs (the large one's bigger index costs each write more).
fn validation_cost(server: &Server, site: &BenchSite) -> anyhow::Result<ValidationCost> {
    let slugs = &site.published_slugs[..SMALL_ITEMS.min(site.published_slugs.len())];
    let mut cost = ValidationCost { modelled_us: Vec::new(), plain_us: Vec::new() };
    for _ in 0..COST_ROUNDS {
        for (collection, into) in
            [(MODELLED_COLLECTION, &mut cost.modelled_us), (PLAIN_COLLECTION, &mut cost.plain_us)]
        {
            super::settle(server);
            into.push(cpu_per_write(server, &site.owner_key, collection, slugs)?);
        }
    }
    Ok(cost)
}

fn cpu_per_write(server: &Server, key: &str, collection: &str, slugs: &[String]) -> anyhow::Result<f64> {
    let cpu = || server.cpu_ticks().context("cannot read the server's CPU time from /proc");
    let before = cpu()?;
    let writes = run_writers(&server.base, key, collection, slugs);
    let used = cpu()?.saturating_sub(before);
    if let Some(failure) = writes.first_failure {
        anyhow::bail!("{} writes in {collection} failed (first: {failure})", writes.failures);
    }
    if writes.latencies.is_empty() {
        anyhow::bail!("no write in {collection} succeeded");
    }
    Ok(used as f64 / TICKS_PER_SECOND * 1e6 / writes.latencies.len() as f64)
}

/// One thread per slug, each with its own connection, `PATCH`ing its item of
/// `collection` for `WRITE_TIME`.
pub fn run_writers(base: &str, key: &str, collection: &str, slugs: &[String]) -> Writes {
    let started = Instant::now();
    let deadline = started + WRITE_TIME;
    // A new value on every write and every run, so that every write changes the file.
    let first_value =
        SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_millis();
    let results: Vec<WriterResult> = std::thread::scope(|scope| {
        let writers: Vec<_> = slugs
            .iter()
            .map(|slug| {
                let url = format!("{base}/cms/collections/{collection}/items/{slug}");
                scope.spawn(move || write_until(&url, key, deadline, first_value))
            })
            .collect();
        writers.into_iter().map(|writer| writer.join().expect("a writer thread panicked")).collect()
    });
    let elapsed = started.elapsed();
    let mut writes =
        Writes { writers: slugs.len(), latencies: Vec::new(), failures: 0, first_failure: None, elapsed };
    for result in results {
        writes.latencies.extend(result.latencies);
        writes.failures += result.failures;
        writes.first_failure = writes.first_failure.or(result.first_failure);
    }
    writes.latencies.sort();
    writes
}

#[derive(Default)]
struct WriterResult {
    latencies: Vec<Duration>,
    failures: usize,
    first_failure: Option<String>,
}

fn write_until(url: &str, key: &str, deadline: Instant, first_value: u128) -> WriterResult {
    let client = Client::new(REQUEST_TIMEOUT);
    let mut result = WriterResult::default();
    let mut count = 0;
    while Instant::now() < deadline && count < MAX_WRITES_PER_WRITER {
        count += 1;
        let body = format!(r#"{{"fm":{{"n":{}}}}}"#, first_value + u128::from(count));
        let sent = Instant::now();
        let failure = match client.patch_json(url, key, &body) {
            Ok((status, _)) if (200..300).contains(&status) => {
                result.latencies.push(sent.elapsed());
                continue;
            }
            Ok((status, body)) => format!("PATCH {url} answered {status}: {body}"),
            Err(error) => format!("{error:#}"),
        };
        result.failures += 1;
        result.first_failure.get_or_insert(failure);
    }
    result
}

/// Rewrites the item's title outside the server and polls the item route until the new
/// title shows, for at most `VISIBILITY_CAP`.
fn outside_edit(base: &str, site: &BenchSite, slug: &str) -> anyhow::Result<Visibility> {
    let file = find_item_file(site, slug)?;
    let stamp = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_millis();
    let title = format!("Edited outside the server {stamp}");
    let edited = with_title(&fs::read_to_string(&file)?, &title).context("the item has no title line")?;
    let temporary = file.with_file_name(".bench-outside-edit.tmp");
    fs::write(&temporary, edited)?;
    fs::rename(&temporary, &file)?;
    let saved = Instant::now();

    let client = Client::new(VISIBILITY_CAP);
    let url = format!("{base}{}", item_path(slug));
    while saved.elapsed() < VISIBILITY_CAP {
        if let Ok((200, body)) = client.get(&url)
            && body.contains(&title)
        {
            return Ok(Visibility::After(saved.elapsed()));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(Visibility::NotWithin(VISIBILITY_CAP))
}

fn find_item_file(site: &BenchSite, slug: &str) -> anyhow::Result<PathBuf> {
    let ending = format!("-{slug}.md");
    for entry in fs::read_dir(site.root.join(CONTENT_DIR))? {
        let name = entry?.file_name();
        if name.to_str().is_some_and(|name| name.ends_with(&ending)) {
            return Ok(site.item_path(&name.to_string_lossy()));
        }
    }
    anyhow::bail!("no file for the item {slug}")
}

/// The text with its first `title:` line replaced.
fn with_title(text: &str, title: &str) -> Option<String> {
    let start = text.find("\ntitle: ")? + 1;
    let end = start + text[start..].find('\n')?;
    Some(format!("{}title: {title}{}", &text[..start], &text[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_title_line_only() {
        let text = "---\ntitle: Old\ndate: 2024-05-01\n---\n\ntitle: in the body\n";
        assert_eq!(
            with_title(text, "New").as_deref(),
            Some("---\ntitle: New\ndate: 2024-05-01\n---\n\ntitle: in the body\n")
        );
        assert_eq!(with_title("---\ndate: 2024-05-01\n---\n", "New"), None);
    }

    #[test]
    fn the_validation_cost_is_the_median_of_the_rounds_pairs() {
        // Pairs: +10%, +20% (a slow round for both), -5% (a fast one).
        let cost =
            ValidationCost { modelled_us: vec![110.0, 240.0, 95.0], plain_us: vec![100.0, 200.0, 100.0] };
        assert_eq!(cost.added_share(), Some(0.1));
        assert_eq!(ValidationCost { modelled_us: vec![1.0], plain_us: vec![] }.added_share(), None);
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let latencies = (1..=100).map(Duration::from_millis).collect();
        let writes = Writes {
            writers: 1,
            latencies,
            failures: 0,
            first_failure: None,
            elapsed: Duration::from_secs(2),
        };
        assert_eq!(writes.percentile(50), Some(Duration::from_millis(50)));
        assert_eq!(writes.percentile(99), Some(Duration::from_millis(99)));
        assert_eq!(writes.per_second(), 50.0);
        let none = Writes { latencies: Vec::new(), ..writes };
        assert_eq!(none.percentile(50), None);
    }
}
