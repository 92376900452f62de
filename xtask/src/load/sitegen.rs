//! The generated sites: `target/bench-sites/N/`, one collection of N items of about 2 KB,
//! with an owner and an API key made through the `cms` CLI. Items are a pure function of
//! their index, so a site is the same on every machine, and it is reused while its
//! marker names the current generator version.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

/// Change this whenever the generated files change, so that old sites are remade.
const GENERATOR_VERSION: &str = "bench-site v6";
/// The collection's folder, and its address in URLs (the slug of its label).
pub const CONTENT_DIR: &str = "content/posts";
pub const COLLECTION: &str = "posts";
const OWNER: &str = "bench-owner@example.com";
/// Files of ours inside the site folder (the server never reads or serves them).
const BENCH_DIR: &str = ".bench";
/// Two small collections of the same first published items, one per writer of the write
/// cases, with the model of [`COLLECTION`] and without one (see `CONFIG`): what checking
/// a write against the model costs is measured between them, all else being equal.
pub const PLAIN_COLLECTION: &str = "notes";
const PLAIN_DIR: &str = "content/notes";
pub const MODELLED_COLLECTION: &str = "checked-notes";
const MODELLED_DIR: &str = "content/checked-notes";
/// Writers at once in the write cases (`writes.rs`), each on its own item.
pub const CONCURRENT_WRITERS: usize = 64;
pub const SMALL_ITEMS: usize = CONCURRENT_WRITERS;

/// The content model of [`COLLECTION`] and of [`MODELLED_COLLECTION`]: written once, so
/// that the two small collections of the write-cost comparison differ by the model alone.
macro_rules! bench_model {
    () => {
        "    fields:
      title: { type: string, required: true }
      date: { type: datetime }
      tags: { type: tags }
      author: { type: string }
      rating: { type: integer, min: 1, max: 5 }
"
    };
}

const CONFIG: &str = concat!(
    "# Written by `cargo xtask bench`: the dated collection of the read cases, with a content
# model, two small ones for the write cost, and the demo's license.
site:
  name: Bench Site
  url: https://bench.example.com
  per_page: 20
  max_per_page: 100
collections:
  - label: Posts
    path: content/posts
    page_path: /blog
    date_prefix: true
",
    bench_model!(),
    "  # The same first items twice, with the model and without: what validation adds to a
  # write is measured between these two.
  - label: Checked Notes
    path: content/checked-notes
    page_path: /checked-notes
    date_prefix: true
",
    bench_model!(),
    "  - label: Notes
    path: content/notes
    page_path: /notes
    date_prefix: true
license:
  public_key: null
# The stream case opens 1,000 anonymous streams from this one address.
events:
  max_streams_per_address: 2000
server:
  max_connections: 4096
"
);

/// A generated site, ready to serve.
pub struct BenchSite {
    pub root: PathBuf,
    pub items: usize,
    pub owner_key: String,
    /// The slugs of the published items, one a line (what the single-item case asks for).
    pub slugs_file: PathBuf,
    pub published_slugs: Vec<String>,
}

impl BenchSite {
    pub fn item_path(&self, filename: &str) -> PathBuf {
        self.root.join(CONTENT_DIR).join(filename)
    }

    /// A file of the benchmark's own inside the site folder.
    pub fn bench_file(&self, name: &str) -> PathBuf {
        self.root.join(BENCH_DIR).join(name)
    }
}

/// The site of `items` items under `target/bench-sites/`, generated unless an up-to-date
/// one is there.
pub fn ensure(root: &Path, cms: &Path, items: usize) -> anyhow::Result<BenchSite> {
    let sites = root.join("target/bench-sites");
    let site = sites.join(items.to_string());
    let marker = site.join(BENCH_DIR).join("generator");
    let expected = format!("{GENERATOR_VERSION}, {items} items\n");
    if fs::read_to_string(&marker).is_ok_and(|found| found == expected) {
        return open(site, items);
    }
    let started = std::time::Instant::now();
    if site.exists() {
        fs::remove_dir_all(&site).with_context(|| format!("cannot remove the old {}", site.display()))?;
    }
    // Written aside and renamed into place, so an interrupted run leaves no half site.
    let staging = sites.join(format!(".{items}.partial"));
    if staging.exists() {
        fs::remove_dir_all(&staging)?;
    }
    write_files(&staging, items)?;
    fs::rename(&staging, &site)?;
    let owner_key = make_owner_key(cms, &site)?;
    fs::write(site.join(BENCH_DIR).join("owner-key"), owner_key)?;
    fs::write(&marker, expected)?;
    eprintln!("generated {} in {:.2} s", site.display(), started.elapsed().as_secs_f64());
    open(site, items)
}

fn open(root: PathBuf, items: usize) -> anyhow::Result<BenchSite> {
    let owner_key = fs::read_to_string(root.join(BENCH_DIR).join("owner-key"))?.trim().to_owned();
    let slugs_file = root.join(BENCH_DIR).join("published-slugs.txt");
    let published_slugs: Vec<String> = fs::read_to_string(&slugs_file)?.lines().map(str::to_owned).collect();
    if published_slugs.is_empty() {
        bail!("{} lists no published item", slugs_file.display());
    }
    Ok(BenchSite { root, items, owner_key, slugs_file, published_slugs })
}

/// Configuration, license, items (on two threads) and the list of published slugs.
fn write_files(site: &Path, items: usize) -> anyhow::Result<()> {
    let content = site.join(CONTENT_DIR);
    fs::create_dir_all(&content)?;
    fs::create_dir_all(site.join(".cms"))?;
    fs::create_dir_all(site.join(BENCH_DIR))?;
    fs::write(site.join("cms.yaml"), CONFIG)?;
    // The server answers 402 without a license carrying `json_api`; the demo's has it.
    let license = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/demo-site/.cms/license.yaml");
    fs::copy(&license, site.join(".cms/license.yaml"))
        .with_context(|| format!("cannot copy {}", license.display()))?;

    const THREADS: usize = 2;
    std::thread::scope(|scope| {
        let writers: Vec<_> = (0..THREADS)
            .map(|first| {
                let content = &content;
                scope.spawn(move || -> std::io::Result<()> {
                    for index in (first..items).step_by(THREADS) {
                        let item = Item::nth(index);
                        fs::write(content.join(item.filename()), item.text())?;
                    }
                    Ok(())
                })
            })
            .collect();
        writers.into_iter().try_for_each(|writer| writer.join().expect("an item writer panicked"))
    })?;

    let mut slugs = String::new();
    for item in (0..items).map(Item::nth).filter(|item| item.published) {
        writeln!(slugs, "{}", item.slug)?;
    }
    for dir in [PLAIN_DIR, MODELLED_DIR] {
        let small = site.join(dir);
        fs::create_dir_all(&small)?;
        for item in (0..items).map(Item::nth).filter(|item| item.published).take(SMALL_ITEMS) {
            fs::write(small.join(item.filename()), item.text())?;
        }
    }
    fs::write(site.join(BENCH_DIR).join("published-slugs.txt"), slugs)?;
    Ok(())
}

/// Adds the owner and returns a new API key for them, both with the `cms` CLI.
fn make_owner_key(cms: &Path, site: &Path) -> anyhow::Result<String> {
    let cli = |args: &[&str]| -> anyhow::Result<String> {
        let output = Command::new(cms)
            .args(args)
            .arg("--site")
            .arg(site)
            .env("RUST_LOG", "warn")
            .output()
            .with_context(|| format!("cannot run {}", cms.display()))?;
        if !output.status.success() {
            bail!("cms {} failed: {}", args.join(" "), String::from_utf8_lossy(&output.stderr));
        }
        Ok(String::from_utf8(output.stdout)?)
    };
    cli(&["users", "add", "--email", OWNER, "--role", "owner"])?;
    let printed = cli(&["keys", "create", "--user", OWNER])?;
    // The key is the last line printed.
    printed
        .lines()
        .last()
        .map(str::trim)
        .filter(|key| !key.is_empty())
        .map(str::to_owned)
        .context("no key printed")
}

/// One generated item.
pub struct Item {
    index: usize,
    date: (i64, u32, u32),
    /// Half the items carry a time and an offset in `date:`, as some editors write it.
    time: Option<&'static str>,
    pub slug: String,
    title: String,
    pub published: bool,
    tags: Vec<&'static str>,
    author: &'static str,
    /// 1 to 5: a field of the model that lists filter and sort by.
    rating: u64,
}

impl Item {
    pub fn nth(index: usize) -> Self {
        let mut random = SplitMix64::new(index as u64);
        // Dates spread over ten years from 2016-01-01 (day 16,801 of the Unix epoch).
        let date = civil_from_days(16_801 + random.below(3_650) as i64);
        let time = random.chance(50).then(|| random.pick(&TIMES));
        let words = 3 + random.below(4) as usize;
        let title_words: Vec<&str> = (0..words).map(|_| random.pick(&WORDS)).collect();
        let title = capitalise(&title_words.join(" "));
        let slug = format!("{}-{index}", title_words.join("-"));
        let published = !random.chance(10);
        let tags = pick_tags(&mut random);
        let author = random.pick(&AUTHORS);
        let rating = 1 + random.below(5);
        Self { index, date, time, slug, title, published, tags, author, rating }
    }

    pub fn filename(&self) -> String {
        let (year, month, day) = self.date;
        format!("{year:04}-{month:02}-{day:02}-{}.md", self.slug)
    }

    /// Frontmatter and a Markdown body of about 2 KB.
    pub fn text(&self) -> String {
        let (year, month, day) = self.date;
        let mut text = String::with_capacity(2_400);
        text.push_str("---\n");
        let _ = writeln!(text, "title: {}", self.title);
        match self.time {
            Some(time) => _ = writeln!(text, "date: \"{year:04}-{month:02}-{day:02} {time}\""),
            None => _ = writeln!(text, "date: {year:04}-{month:02}-{day:02}"),
        }
        let _ = writeln!(text, "status: {}", if self.published { "published" } else { "draft" });
        let _ = writeln!(text, "tags: [{}]", self.tags.join(", "));
        let _ = writeln!(text, "author: {}", self.author);
        let _ = writeln!(text, "rating: {}", self.rating);
        text.push_str("---\n\n");
        self.write_body(&mut text);
        text
    }

    fn write_body(&self, text: &mut String) {
        let mut random = SplitMix64::new(!(self.index as u64));
        let mut section = 0;
        while text.len() < 1_850 && section < 20 {
            let heading = capitalise(&(0..3).map(|_| random.pick(&WORDS)).collect::<Vec<_>>().join(" "));
            let _ = writeln!(text, "## {heading}\n");
            paragraph(&mut random, text);
            if section == 0 {
                for _ in 0..3 {
                    let _ = writeln!(text, "- {} `{}`", capitalise(random.pick(&WORDS)), random.pick(&WORDS));
                }
                text.push('\n');
            }
            if section == 1 && random.chance(30) {
                text.push_str("```rust\nfn main() {\n    println!(\"hello\");\n}\n```\n\n");
            }
            section += 1;
        }
    }
}

/// One to four tags from the pool; `rust` on about 5% of items.
fn pick_tags(random: &mut SplitMix64) -> Vec<&'static str> {
    let mut tags = Vec::new();
    if random.chance(5) {
        tags.push("rust");
    }
    let wanted = 1 + random.below(4) as usize;
    let mut tries = 0;
    while tags.len() < wanted && tries < 20 {
        let tag = random.pick(&TAGS);
        if !tags.contains(&tag) {
            tags.push(tag);
        }
        tries += 1;
    }
    tags
}

/// A paragraph of 40 to 80 words in sentences, with some emphasis.
fn paragraph(random: &mut SplitMix64, text: &mut String) {
    let words = 40 + random.below(41);
    let mut sentence_start = true;
    for n in 0..words {
        let word = random.pick(&WORDS);
        if sentence_start {
            text.push_str(&capitalise(word));
        } else if random.chance(5) {
            let _ = write!(text, "*{word}*");
        } else {
            text.push_str(word);
        }
        sentence_start = random.chance(12) || n + 1 == words;
        text.push_str(if sentence_start { ". " } else { " " });
    }
    text.push_str("\n\n");
}

fn capitalise(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map(|first| first.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 { month_index + 3 } else { month_index - 9 } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// A small deterministic generator (SplitMix64): the same index gives the same item.
struct SplitMix64(u64);

impl SplitMix64 {
    fn new(seed: u64) -> Self {
        Self(seed ^ 0x5eed_cafe_f00d_d00d)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn pick<T: Copy>(&mut self, pool: &[T]) -> T {
        pool[self.below(pool.len() as u64) as usize]
    }
}

const TIMES: [&str; 4] = ["09:30:00 +0200", "14:05:00 +0000", "22:45:10 -0500", "07:00:00 +0900"];

const AUTHORS: [&str; 8] = ["ada", "grace", "linus", "barbara", "ken", "margaret", "dennis", "frances"];

/// About fifty tags besides `rust`.
const TAGS: [&str; 49] = [
    "announcements",
    "guides",
    "markdown",
    "release",
    "web",
    "databases",
    "performance",
    "security",
    "testing",
    "design",
    "css",
    "javascript",
    "python",
    "go",
    "linux",
    "networking",
    "devops",
    "cloud",
    "tutorial",
    "opinion",
    "tools",
    "editors",
    "git",
    "api",
    "http",
    "json",
    "yaml",
    "search",
    "caching",
    "async",
    "memory",
    "compilers",
    "types",
    "errors",
    "logging",
    "metrics",
    "deploy",
    "docker",
    "backup",
    "accessibility",
    "i18n",
    "mobile",
    "email",
    "feeds",
    "images",
    "video",
    "community",
    "events",
    "jobs",
];

const WORDS: [&str; 64] = [
    "async", "build", "cache", "data", "editor", "file", "folder", "guide", "index", "item", "layout",
    "markdown", "memory", "network", "page", "parser", "query", "release", "render", "request", "server",
    "site", "slug", "static", "stream", "style", "table", "thread", "title", "token", "update", "value",
    "quick", "simple", "modern", "careful", "better", "small", "large", "fast", "steady", "clear", "notes",
    "story", "lesson", "pattern", "idea", "review", "change", "history", "budget", "limit", "signal",
    "worker", "feature", "design", "method", "answer", "reader", "writer", "version", "report", "future",
    "garden",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_days_to_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(16_801), (2016, 1, 1));
        assert_eq!(civil_from_days(19_844), (2024, 5, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
    }

    #[test]
    fn items_look_like_the_brief() {
        let items: Vec<Item> = (0..2_000).map(Item::nth).collect();
        let share =
            |test: &dyn Fn(&Item) -> bool| items.iter().filter(|i| test(i)).count() * 100 / items.len();
        assert!((7..=13).contains(&share(&|i| !i.published)), "about 10% drafts");
        assert!((3..=8).contains(&share(&|i| i.tags.contains(&"rust"))), "about 5% rust");
        assert!(items.iter().all(|i| (1..=4).contains(&i.tags.len())));
        let text = items[0].text();
        assert!((1_800..2_500).contains(&text.len()), "about 2 KB, got {}", text.len());
        assert!(items[0].filename().ends_with(&format!("-{}.md", items[0].slug)));
        assert_eq!(items[7].text(), Item::nth(7).text(), "the same index gives the same item");
    }
}

#[cfg(test)]
mod config_tests {
    #[test]
    fn the_two_modelled_collections_have_the_same_model() {
        let blocks: Vec<&str> = super::CONFIG.split("  - label: ").collect();
        assert_eq!(blocks.len(), 4, "three collections");
        let model = bench_model!();
        assert!(blocks[1].starts_with("Posts") && blocks[1].contains(model));
        assert!(blocks[2].starts_with("Checked Notes") && blocks[2].contains(model));
        assert!(blocks[3].starts_with("Notes") && !blocks[3].contains("fields:"));
    }
}
