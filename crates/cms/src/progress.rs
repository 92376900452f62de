//! How a long command shows it is moving, and how it does many small transfers at once.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};

/// Requests to the bucket in flight at once: a copy of many small files waits on round
/// trips, not on bandwidth.
pub const IN_FLIGHT: usize = 8;

/// `each` of `items` on [`IN_FLIGHT`] threads, counted by `progress`; the results in the
/// order of `items`, or the first error (the others stop taking new items).
pub fn in_parallel<T: Sync, R: Send>(
    items: &[T],
    progress: &Progress,
    each: impl Fn(&T) -> anyhow::Result<R> + Sync,
) -> anyhow::Result<Vec<R>> {
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let results: Vec<Mutex<Option<anyhow::Result<R>>>> = items.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..IN_FLIGHT.min(items.len()) {
            scope.spawn(|| {
                while !failed.load(Ordering::Relaxed) {
                    let at = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(at) else { return };
                    let result = each(item);
                    failed.fetch_or(result.is_err(), Ordering::Relaxed);
                    *results[at].lock().unwrap_or_else(PoisonError::into_inner) = Some(result);
                    progress.advance();
                }
            });
        }
    });
    let mut all = Vec::with_capacity(items.len());
    // Items are taken in order, so the first not taken comes after every one taken,
    // the failed one included.
    for result in results {
        let Some(result) = result.into_inner().unwrap_or_else(PoisonError::into_inner) else { break };
        all.push(result?);
    }
    anyhow::ensure!(all.len() == items.len(), "stopped after an error");
    Ok(all)
}

/// How a long copy shows it is moving: a bar on a terminal (standard error), else a line
/// each time another tenth of the files is done (so a log shows it without flooding).
pub struct Progress {
    what: String,
    /// What is counted: `files`, `KiB`.
    unit: &'static str,
    total: usize,
    done: AtomicUsize,
    bar: Option<ProgressBar>,
    started: Instant,
}

impl Progress {
    /// Counts files.
    pub fn new(what: String, total: usize) -> Self {
        Self::counting(what, total, "files")
    }

    pub fn counting(what: String, total: usize, unit: &'static str) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total as u64);
            bar.set_style(
                ProgressStyle::with_template(&format!(
                    "{{msg}}: {{bar:30}} {{pos}}/{{len}} {unit}, {{elapsed}} (about {{eta}} left)"
                ))
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar.set_message(what.clone());
            bar
        });
        Self { what, unit, total, done: AtomicUsize::new(0), bar, started: Instant::now() }
    }

    pub fn advance(&self) {
        self.advance_by(1);
    }

    pub fn advance_by(&self, count: usize) {
        let before = self.done.fetch_add(count, Ordering::Relaxed);
        let done = before + count;
        match &self.bar {
            Some(bar) => bar.inc(count as u64),
            None => {
                // Crossing a tenth of the total (every file of a small copy).
                let tenth = self.total.div_ceil(10).max(1);
                if before / tenth != done / tenth && done < self.total {
                    eprintln!(
                        "{}: {done} of {} {}, {} s",
                        self.what,
                        self.total,
                        self.unit,
                        self.started.elapsed().as_secs()
                    );
                }
            }
        }
    }

    pub fn finish(&self) {
        match &self.bar {
            Some(bar) => bar.finish(),
            None => eprintln!(
                "{}: {} of {} {}, {} s",
                self.what,
                self.done.load(Ordering::Relaxed),
                self.total,
                self.unit,
                self.started.elapsed().as_secs()
            ),
        }
    }
}
