//! Measurements an adapter keeps of its own work (an image pool's renders, a webhook
//! outbox's depth, a bucket's requests), read by whoever reports them (the HTTP adapter's
//! `/metrics`) without either knowing the other: an adapter implements [`Observed`]; the
//! composition root hands it to the reporter.
//!
//! Label values must come from a fixed set the adapter chose (an operation's name, an
//! outcome), never from a request, so that the number of series stays bounded.

use std::borrow::Cow;

/// What a reading counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up while the process runs (renders made, seconds spent).
    Counter,
    /// Goes up and down (a queue's depth, sessions open).
    Gauge,
}

/// One value of one measurement, now.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// Lowercase with underscores, without the reporter's prefix (`image_renders`); a
    /// counter's without `_total`, which the reporter adds.
    pub name: &'static str,
    pub help: &'static str,
    pub kind: Kind,
    /// Label names and values from a fixed set (see the module doc).
    pub labels: Vec<(&'static str, Cow<'static, str>)>,
    pub value: f64,
}

impl Reading {
    pub fn counter(name: &'static str, help: &'static str, value: f64) -> Self {
        Self { name, help, kind: Kind::Counter, labels: Vec::new(), value }
    }

    pub fn gauge(name: &'static str, help: &'static str, value: f64) -> Self {
        Self { name, help, kind: Kind::Gauge, labels: Vec::new(), value }
    }

    pub fn with(mut self, label: &'static str, value: impl Into<Cow<'static, str>>) -> Self {
        self.labels.push((label, value.into()));
        self
    }
}

/// Something that keeps measurements of its work.
pub trait Observed: Send + Sync {
    /// Its readings now, each series once; the readings of one name share its help and
    /// kind. Cheap: called at each scrape.
    fn readings(&self) -> Vec<Reading>;
}
