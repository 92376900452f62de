//! A fixed set of worker threads with a bounded queue: a burst of transforms waits in the
//! queue or is refused (`Busy`), and never takes the API's own threads.
//!
//! Every render is bounded in time twice. A request waits for a worker at most
//! `images.queue_timeout_secs`, then gives up (`Waited`, a `503`). Once a worker has it, the
//! render checks its [`Budget`] between its steps (decode, each band of the reduction,
//! resize, encode) and stops when `images.render_timeout_secs` has passed or its request
//! went away. One step cannot be interrupted: an encoder runs to its end (rav1e and libwebp
//! take no cancellation). So the request does not wait for that step: at the deadline (and
//! a quarter of a second of grace, in which a render that checks its budget answers by
//! itself) it is answered (`TimedOut`, a `503`), and the pool starts a new thread in place
//! of the one still encoding, which leaves when its step ends. At most as many threads are replaced at
//! once as the pool has workers, so a flood of slow renders costs at most twice the
//! workers' CPU and memory, never an unbounded number of threads.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use async_trait::async_trait;
use cms_core::CoreResult;
use cms_core::images::{RenderLimits, RenderSpec};
use cms_core::ports::ImageCodec;
use futures_channel::oneshot;

use crate::budget::Budget;
use crate::error::ImageError;
use crate::render;

/// How much longer than its budget a request waits for its render, so that a render that
/// checks its budget is answered by itself (and keeps its worker) rather than replaced.
const GRACE: Duration = Duration::from_millis(250);

type Rendered = Result<Vec<u8>, ImageError>;
type Work = Box<dyn FnOnce(&Budget<'_>) -> Rendered + Send>;

/// Where a render is; only one side wins each change of state.
const QUEUED: u8 = 0;
const RUNNING: u8 = 1;
const FINISHED: u8 = 2;
/// Its request gave up before a worker took it: the worker skips it.
const CANCELLED: u8 = 3;
/// It ran out of time and another thread took its worker's place: that worker leaves
/// when the render ends.
const REPLACED: u8 = 4;

#[derive(Default)]
struct Ticket {
    state: AtomicU8,
    stop: AtomicBool,
}

impl Ticket {
    fn moves(&self, from: u8, to: u8) -> bool {
        self.state.compare_exchange(from, to, Ordering::AcqRel, Ordering::Acquire).is_ok()
    }
}

struct Job {
    ticket: Arc<Ticket>,
    work: Work,
    render_timeout: Duration,
    started: oneshot::Sender<()>,
    done: oneshot::Sender<Rendered>,
}

struct Shared {
    receiver: Mutex<Receiver<Job>>,
    workers: usize,
    /// Threads that were replaced and are finishing an abandoned render (at most `workers`).
    replaced: AtomicUsize,
    /// For thread names.
    spawned: AtomicUsize,
    /// Jobs in the queue (cancelled ones until a worker skips them).
    queued: AtomicUsize,
    /// Renders by how they ended, as [`OUTCOMES`] names them.
    outcomes: [AtomicU64; 5],
    /// Time spent rendering, in microseconds.
    render_micros: AtomicU64,
}

/// How a render asked of the pool ended: made, failed (a bad file, a decoder's error),
/// refused (the queue was full), waited too long in the queue, or ran out of time.
const OUTCOMES: [&str; 5] = ["rendered", "failed", "refused", "waited_too_long", "timed_out"];

/// The image codec on its own worker threads.
pub struct ImagePool {
    shared: Arc<Shared>,
    jobs: SyncSender<Job>,
    queue: usize,
}

impl ImagePool {
    /// `workers` threads (at least one), and at most `queue` renders waiting for them.
    pub fn new(workers: usize, queue: usize) -> Self {
        let (jobs, receiver) = mpsc::sync_channel::<Job>(queue);
        let shared = Arc::new(Shared {
            receiver: Mutex::new(receiver),
            workers: workers.max(1),
            replaced: AtomicUsize::new(0),
            spawned: AtomicUsize::new(0),
            queued: AtomicUsize::new(0),
            outcomes: Default::default(),
            render_micros: AtomicU64::new(0),
        });
        for _ in 0..shared.workers {
            assert!(spawn_worker(&shared), "an image worker thread starts");
        }
        Self { shared, jobs, queue }
    }

    /// Half the cores (at least one), so that the API keeps the rest; 16 waiting renders.
    pub fn for_this_machine() -> Self {
        let cores = thread::available_parallelism().map_or(1, usize::from);
        Self::new((cores / 2).max(1), 16)
    }

    /// Runs `work` on a worker within `limits`' waiting and rendering times, and counts
    /// how it ended.
    async fn run(
        &self,
        limits: RenderLimits,
        work: impl FnOnce(&Budget<'_>) -> Rendered + Send + 'static,
    ) -> Rendered {
        let rendered = self.run_uncounted(limits, work).await;
        let outcome = match &rendered {
            Ok(_) => 0,
            Err(ImageError::Busy(_)) => 2,
            Err(ImageError::Waited(_)) => 3,
            Err(ImageError::TimedOut(_)) => 4,
            Err(_) => 1,
        };
        self.shared.outcomes[outcome].fetch_add(1, Ordering::Relaxed);
        rendered
    }

    async fn run_uncounted(
        &self,
        limits: RenderLimits,
        work: impl FnOnce(&Budget<'_>) -> Rendered + Send + 'static,
    ) -> Rendered {
        let ticket = Arc::new(Ticket::default());
        let (started, on_start) = oneshot::channel();
        let (done, on_done) = oneshot::channel();
        let job = Job {
            ticket: Arc::clone(&ticket),
            work: Box::new(work),
            render_timeout: limits.render_timeout,
            started,
            done,
        };
        // Counted before it is sent: a worker may take it (and count it out) at once.
        self.shared.queued.fetch_add(1, Ordering::Relaxed);
        let sent = self.jobs.try_send(job);
        if sent.is_err() {
            self.shared.queued.fetch_sub(1, Ordering::Relaxed);
        }
        match sent {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => return Err(ImageError::Busy(self.queue)),
            Err(TrySendError::Disconnected(_)) => {
                return Err(ImageError::Worker("the image workers have stopped".into()));
            }
        }
        // Whatever ends this wait (an answer, a timeout, the request dropped), the render
        // is no longer wanted after it.
        let _give_up = GiveUp(&ticket);
        match tokio::time::timeout(limits.queue_timeout, on_start).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => return Err(ImageError::Worker("the image workers have stopped".into())),
            // Still queued: it leaves the queue. Taken just now: it runs.
            Err(_) if ticket.moves(QUEUED, CANCELLED) => {
                return Err(ImageError::Waited(limits.queue_timeout));
            }
            Err(_) => {}
        }
        match tokio::time::timeout(limits.render_timeout + GRACE, on_done).await {
            Ok(Ok(rendered)) => rendered,
            Ok(Err(_)) => Err(ImageError::Worker("the render was dropped".into())),
            Err(_) => {
                self.replace_worker_of(&ticket);
                Err(ImageError::TimedOut(limits.render_timeout))
            }
        }
    }

    /// A render past its deadline is inside a step that cannot be interrupted: a new
    /// thread takes its worker's place, unless as many are being replaced already.
    fn replace_worker_of(&self, ticket: &Ticket) {
        ticket.stop.store(true, Ordering::Relaxed);
        let shared = &self.shared;
        let room = shared
            .replaced
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < shared.workers).then_some(n + 1));
        if room.is_err() {
            tracing::warn!(
                "an image render ran out of time (images.render_timeout_secs) and {} replaced workers are still finishing theirs; the pool is short of a worker until it ends",
                shared.workers
            );
            return;
        }
        if !ticket.moves(RUNNING, REPLACED) {
            // It ended in the meantime: its worker is free.
            shared.replaced.fetch_sub(1, Ordering::AcqRel);
            return;
        }
        tracing::warn!(
            "an image render ran out of time (images.render_timeout_secs); a new worker takes the place of the one still finishing it"
        );
        if !spawn_worker(shared) && ticket.moves(REPLACED, RUNNING) {
            // No thread to be had: the old worker stays.
            shared.replaced.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Marks a ticket as no longer wanted when its request stops waiting.
struct GiveUp<'a>(&'a Ticket);

impl Drop for GiveUp<'_> {
    fn drop(&mut self) {
        self.0.stop.store(true, Ordering::Relaxed);
        self.0.moves(QUEUED, CANCELLED);
    }
}

fn spawn_worker(shared: &Arc<Shared>) -> bool {
    let n = shared.spawned.fetch_add(1, Ordering::Relaxed);
    let shared = Arc::clone(shared);
    let spawned = thread::Builder::new().name(format!("cms-images-{n}")).spawn(move || work(&shared));
    if let Err(error) = &spawned {
        tracing::error!(%error, "an image worker thread could not start");
    }
    spawned.is_ok()
}

fn work(shared: &Shared) {
    loop {
        let job = match shared.receiver.lock() {
            Ok(receiver) => receiver.recv(),
            Err(_) => return,
        };
        // The pool was dropped.
        let Ok(job) = job else { return };
        shared.queued.fetch_sub(1, Ordering::Relaxed);
        if !job.ticket.moves(QUEUED, RUNNING) {
            continue;
        }
        let _ = job.started.send(());
        let budget = Budget::new(job.render_timeout, &job.ticket.stop);
        let started = std::time::Instant::now();
        let rendered = catch_unwind(AssertUnwindSafe(|| (job.work)(&budget))).unwrap_or_else(|_| {
            tracing::error!("an image decoder panicked; the request is answered 500 and the worker goes on");
            Err(ImageError::Worker("the decoder panicked on this file".into()))
        });
        shared.render_micros.fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
        let _ = job.done.send(rendered);
        if !job.ticket.moves(RUNNING, FINISHED) {
            // Replaced while it ran: the new thread is this one's successor.
            shared.replaced.fetch_sub(1, Ordering::AcqRel);
            return;
        }
    }
}

/// For `/metrics`: `image_renders{outcome}`, `image_render_seconds`, `image_queue`,
/// `image_workers`.
impl cms_core::readings::Observed for ImagePool {
    fn readings(&self) -> Vec<cms_core::readings::Reading> {
        use cms_core::readings::Reading;
        let shared = &self.shared;
        let mut readings: Vec<Reading> = OUTCOMES
            .iter()
            .zip(&shared.outcomes)
            .map(|(outcome, count)| {
                let help = "Image renders asked of the pool, by how they ended (refused: the queue was full)";
                Reading::counter("image_renders", help, count.load(Ordering::Relaxed) as f64)
                    .with("outcome", *outcome)
            })
            .collect();
        let seconds = shared.render_micros.load(Ordering::Relaxed) as f64 / 1e6;
        readings.push(Reading::counter(
            "image_render_seconds",
            "Time the pool's workers spent rendering",
            seconds,
        ));
        let queued = shared.queued.load(Ordering::Relaxed) as f64;
        readings.push(Reading::gauge("image_queue", "Renders waiting for a worker", queued));
        readings.push(Reading::gauge("image_workers", "The pool's worker threads", shared.workers as f64));
        readings
    }
}

#[async_trait]
impl ImageCodec for ImagePool {
    fn probe(&self, head: &[u8]) -> Option<(u32, u32)> {
        render::probe(head)
    }

    async fn render(&self, source: Vec<u8>, spec: RenderSpec) -> CoreResult<Vec<u8>> {
        let limits = spec.limits;
        Ok(self.run(limits, move |budget| render::render(&source, &spec, budget)).await?)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::{Sender, channel};

    use super::*;

    fn limits(queue_ms: u64, render_ms: u64) -> RenderLimits {
        RenderLimits {
            max_pixels: 1_000_000,
            queue_timeout: Duration::from_millis(queue_ms),
            render_timeout: Duration::from_millis(render_ms),
        }
    }

    /// A render stuck in a step that checks no budget (an encoder), until released.
    fn stuck() -> (Sender<()>, impl FnOnce(&Budget<'_>) -> Rendered + Send + 'static) {
        let (release, released) = channel::<()>();
        (release, move |_: &Budget<'_>| {
            let _ = released.recv();
            Ok(b"late".to_vec())
        })
    }

    #[tokio::test]
    async fn a_render_past_its_time_is_answered_and_its_worker_replaced() {
        let pool = ImagePool::new(1, 4);
        let (release_a, a) = stuck();
        let answer = pool.run(limits(5_000, 100), a).await;
        assert!(matches!(answer, Err(ImageError::TimedOut(_))), "{answer:?}");
        // The one worker is still inside `a`, and yet the next render is made.
        let answer = pool.run(limits(5_000, 5_000), |_| Ok(b"next".to_vec())).await;
        assert_eq!(answer.unwrap(), b"next");

        // Replacements are bounded: with one worker, one at a time.
        let (release_b, b) = stuck();
        assert!(matches!(pool.run(limits(5_000, 100), b).await, Err(ImageError::TimedOut(_))));
        let answer = pool.run(limits(100, 5_000), |_| Ok(Vec::new())).await;
        assert!(matches!(answer, Err(ImageError::Waited(_))), "no third thread: {answer:?}");
        let error = cms_core::CoreError::from(answer.unwrap_err()).to_string();
        assert!(error.contains("images.queue_timeout_secs"), "{error}");

        // `a`'s thread leaves when it ends; `b`'s, never replaced, works on.
        release_a.send(()).unwrap();
        release_b.send(()).unwrap();
        let answer = pool.run(limits(5_000, 5_000), |_| Ok(b"after".to_vec())).await;
        assert_eq!(answer.unwrap(), b"after");
    }

    #[tokio::test]
    async fn a_render_that_checks_its_budget_stops_at_the_deadline() {
        let pool = ImagePool::new(1, 4);
        let answer = pool
            .run(limits(5_000, 50), |budget| {
                loop {
                    budget.check()?;
                    std::hint::spin_loop();
                }
            })
            .await;
        assert!(matches!(answer, Err(ImageError::TimedOut(_))), "{answer:?}");
        assert_eq!(pool.shared.replaced.load(Ordering::Acquire), 0, "its worker stopped in time");
        assert_eq!(pool.run(limits(5_000, 5_000), |_| Ok(vec![1])).await.unwrap(), vec![1]);
    }

    #[tokio::test]
    async fn a_request_that_goes_away_is_not_rendered() {
        let pool = ImagePool::new(1, 4);
        let (release, blocker) = stuck();
        let first = pool.run(limits(5_000, 5_000), blocker);
        let ran = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&ran);
        let second = pool.run(limits(5_000, 5_000), move |_| {
            flag.store(true, Ordering::Relaxed);
            Ok(Vec::new())
        });
        // Both are queued or running; the second's request is dropped while it waits.
        let (first, second) = (Box::pin(first), Box::pin(second));
        let mut second = Some(second);
        let mut first = first;
        tokio::select! {
            biased;
            _ = &mut first => unreachable!("the first is stuck"),
            _ = second.as_mut().unwrap() => unreachable!("the second waits for the first"),
            () = std::future::ready(()) => {}
        }
        drop(second.take());
        release.send(()).unwrap();
        assert_eq!(first.await.unwrap(), b"late");
        assert_eq!(pool.run(limits(5_000, 5_000), |_| Ok(vec![2])).await.unwrap(), vec![2]);
        assert!(!ran.load(Ordering::Relaxed), "the dropped request's render was skipped");
    }
}
