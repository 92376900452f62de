//! Single items' answers made ahead of their first reads: after start-up the server has
//! the core render every live item ([`Cms::render_ahead`](cms_core::Cms::render_ahead))
//! and keeps each finished answer (the envelope without its timestamp) by version, as a
//! read would have kept it. A random read of a large site then costs a lookup and one
//! positional read instead of a file read, a parse and a render.

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

use cms_core::error::CoreResult;
use cms_core::ports::RenderCache;
use cms_core::service::{AheadSink, ItemView};

use crate::reply::item_body;
use crate::state::AppState;

/// Renders and keeps the answers of every live item not kept yet, until the store is
/// full. Nothing without an answer store: the memory cache is for what is read often.
/// [`AppState::ahead`] follows it, for `/readyz`.
pub async fn render_ahead(state: &AppState) -> CoreResult<usize> {
    let Some(answers) = &state.answers else { return Ok(0) };
    let progress = &state.ahead;
    progress.stage.store(Stage::Making as u8, Ordering::Relaxed);
    let sink = Answers { answers: answers.as_ref(), progress };
    let made = state.cms.render_ahead(&sink).await;
    let stage = match &made {
        Err(_) => Stage::Failed,
        Ok(_) if sink.is_full() => Stage::Full,
        Ok(_) => Stage::Done,
    };
    progress.stage.store(stage as u8, Ordering::Relaxed);
    made
}

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
enum Stage {
    Making = 1,
    Done,
    Full,
    Failed,
}

impl AheadProgress {
    /// `{"ahead": "waiting" | "making" | "done" | "full" | "failed", "made": count}`.
    pub fn report(&self) -> serde_json::Value {
        let stage = STAGES[usize::from(self.stage.load(Ordering::Relaxed))];
        serde_json::json!({ "ahead": stage, "made": self.made.load(Ordering::Relaxed) })
    }
}

struct Answers<'a> {
    answers: &'a dyn RenderCache,
    progress: &'a AheadProgress,
}

impl AheadSink for Answers<'_> {
    fn wants(&self, version: u64) -> bool {
        !self.answers.contains(version)
    }

    fn is_full(&self) -> bool {
        self.answers.is_full()
    }

    fn keep(&self, view: ItemView) {
        let version = view.version;
        // An answer that cannot be serialized is made (and reported) by its first read.
        if let Ok(body) = item_body(view) {
            self.answers.put(version, &body);
            self.progress.made.fetch_add(1, Ordering::Relaxed);
        }
    }
}
