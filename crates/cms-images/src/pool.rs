//! A fixed set of worker threads with a bounded queue: a burst of transforms waits in the
//! queue or is refused (`Busy`), and never takes the API's own threads.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread;

use async_trait::async_trait;
use cms_core::CoreResult;
use cms_core::images::RenderSpec;
use cms_core::ports::ImageCodec;
use futures_channel::oneshot;

use crate::error::ImageError;
use crate::render;

type Job = Box<dyn FnOnce() + Send>;

/// The image codec on its own worker threads.
pub struct ImagePool {
    jobs: SyncSender<Job>,
    queue: usize,
}

impl ImagePool {
    /// `workers` threads (at least one), and at most `queue` renders waiting for them.
    pub fn new(workers: usize, queue: usize) -> Self {
        let (jobs, receiver) = mpsc::sync_channel::<Job>(queue);
        let receiver = Arc::new(Mutex::new(receiver));
        for n in 0..workers.max(1) {
            let receiver = Arc::clone(&receiver);
            thread::Builder::new()
                .name(format!("cms-images-{n}"))
                .spawn(move || work(&receiver))
                .expect("an image worker thread starts");
        }
        Self { jobs, queue }
    }

    /// Half the cores (at least one), so that the API keeps the rest; 16 waiting renders.
    pub fn for_this_machine() -> Self {
        let cores = thread::available_parallelism().map_or(1, usize::from);
        Self::new((cores / 2).max(1), 16)
    }
}

fn work(receiver: &Mutex<Receiver<Job>>) {
    loop {
        let job = match receiver.lock() {
            Ok(receiver) => receiver.recv(),
            Err(_) => return,
        };
        match job {
            Ok(job) => job(),
            // The pool was dropped.
            Err(_) => return,
        }
    }
}

#[async_trait]
impl ImageCodec for ImagePool {
    fn probe(&self, head: &[u8]) -> Option<(u32, u32)> {
        render::probe(head)
    }

    async fn render(&self, source: Vec<u8>, spec: RenderSpec) -> CoreResult<Vec<u8>> {
        let (done, result) = oneshot::channel();
        let job: Job = Box::new(move || {
            let rendered =
                catch_unwind(AssertUnwindSafe(|| render::render(&source, &spec))).unwrap_or_else(|_| {
                    tracing::error!(
                        "an image decoder panicked; the request is answered 500 and the worker goes on"
                    );
                    Err(ImageError::Worker("the decoder panicked on this file".into()))
                });
            let _ = done.send(rendered);
        });
        match self.jobs.try_send(job) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => return Err(ImageError::Busy(self.queue).into()),
            Err(TrySendError::Disconnected(_)) => {
                return Err(ImageError::Worker("the image workers have stopped".into()).into());
            }
        }
        let rendered = result.await.map_err(|_| ImageError::Worker("the render was dropped".into()))?;
        Ok(rendered?)
    }
}
