//! [`AheadProgress`]: how far the single items' answers made ahead of their reads
//! ([`crate::ahead`]) have come, as `/readyz` reports it.

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

/// How far the answers made ahead have come: `/readyz` says it (`answers`), so that an
/// operator (and the bench) sees when single items are answered without a render.
#[derive(Debug, Default)]
pub struct AheadProgress {
    stage: AtomicU8,
    made: AtomicU64,
}

/// The stages of [`AheadProgress`], by what `/readyz` calls them: not started (the search
/// index is built first); under way; every live item's answer kept; the store's budget
/// reached or a read failed (the others are made at their first read).
const STAGES: [&str; 5] = ["waiting", "making", "done", "full", "failed"];

#[derive(Debug, Clone, Copy)]
pub(crate) enum Stage {
    Making = 1,
    Done,
    Full,
    Failed,
}

impl AheadProgress {
    pub(crate) fn enter(&self, stage: Stage) {
        self.stage.store(stage as u8, Ordering::Relaxed);
    }

    pub(crate) fn made_one(&self) {
        self.made.fetch_add(1, Ordering::Relaxed);
    }

    /// `{"ahead": "waiting" | "making" | "done" | "full" | "failed", "made": count}`.
    pub fn report(&self) -> serde_json::Value {
        let stage = STAGES[usize::from(self.stage.load(Ordering::Relaxed))];
        serde_json::json!({ "ahead": stage, "made": self.made.load(Ordering::Relaxed) })
    }
}
