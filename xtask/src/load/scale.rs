//! What a large site costs beyond the read cases (issue 50, "a million items, flat"): an
//! uncached filtered page (each a page no request asked for before, so no kept answer
//! serves it), and one writer's latency.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use super::cases::items_path;
use super::client::Client;
use super::process::Server;
use super::sitegen::{BenchSite, COLLECTION};
use super::writes::{self, Writes};

/// Distinct pages asked for, one after the other.
pub const FILTERED_PAGES: usize = 30;

/// The latencies of [`FILTERED_PAGES`] public pages of `filter[rating][gte]=4`, each a page
/// number not asked for before in the run (the read cases ask for the first), sorted.
/// Every answer counts every match (its `totalItems`), so each walks the whole filter.
pub fn uncached_filtered_pages(server: &Server) -> anyhow::Result<Vec<Duration>> {
    let client = Client::new(Duration::from_secs(30));
    let mut latencies = Vec::with_capacity(FILTERED_PAGES);
    for page in 0..FILTERED_PAGES {
        // Far beyond the pages of a 10,000-item site too: an empty page still counts.
        let url = format!(
            "{}{}?filter%5Brating%5D%5Bgte%5D=4&per_page=20&page={}",
            server.base,
            items_path(),
            1_000 + page
        );
        let started = Instant::now();
        let (status, body) = client.get(&url)?;
        latencies.push(started.elapsed());
        if status != 200 {
            bail!("GET {url}: {status}: {body}");
        }
        if !body.contains("\"totalItems\"") {
            bail!("GET {url}: no totalItems in the answer");
        }
    }
    latencies.sort();
    Ok(latencies)
}

/// One writer, for as long as the write cases' writers, on the first published item.
pub fn one_writer(server: &Server, site: &BenchSite) -> anyhow::Result<Writes> {
    let slug = site.published_slugs.first().context("the site has no published item")?;
    let writes = writes::run_writers(&server.base, &site.owner_key, COLLECTION, std::slice::from_ref(slug));
    if writes.latencies.is_empty() {
        bail!("no write succeeded: {}", writes.first_failure.as_deref().unwrap_or("no answer"));
    }
    Ok(writes)
}
