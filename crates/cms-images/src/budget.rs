//! The time a render has left, and whether its request still wants it: made by the pool
//! (`pool.rs`) for each render, checked by the render (`render.rs`) between its steps.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::ImageError;

/// The time a render has left, and whether its request still wants it; checked by the
/// render between its steps.
pub struct Budget<'a> {
    deadline: Instant,
    timeout: Duration,
    stop: &'a AtomicBool,
}

impl<'a> Budget<'a> {
    pub fn new(timeout: Duration, stop: &'a AtomicBool) -> Self {
        Self { deadline: Instant::now() + timeout, timeout, stop }
    }

    /// `Err` once the render should stop: its time is up or its request went away.
    pub fn check(&self) -> Result<(), ImageError> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(ImageError::Abandoned);
        }
        if Instant::now() >= self.deadline {
            return Err(ImageError::TimedOut(self.timeout));
        }
        Ok(())
    }
}
