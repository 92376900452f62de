//! Single items' answers made ahead of their first reads: after start-up the server has
//! the core render every live item ([`Cms::render_ahead`](cms_core::Cms::render_ahead))
//! and keeps each finished answer (the envelope without its timestamp) by version, as a
//! read would have kept it. A random read of a large site then costs a lookup and one
//! positional read instead of a file read, a parse and a render.

use cms_core::error::CoreResult;
use cms_core::ports::RenderCache;
use cms_core::service::{AheadSink, ItemView};

use crate::ahead_progress::{AheadProgress, Stage};
use crate::reply::item_body;
use crate::state::AppState;

/// Renders and keeps the answers of every live item not kept yet, until the store is
/// full. Nothing without an answer store: the memory cache is for what is read often.
/// [`AppState::ahead`] follows it, for `/readyz`.
pub async fn render_ahead(state: &AppState) -> CoreResult<usize> {
    let Some(answers) = &state.answers else { return Ok(0) };
    let progress = &state.ahead;
    progress.enter(Stage::Making);
    let sink = Answers { answers: answers.as_ref(), progress };
    let made = state.cms.render_ahead(&sink).await;
    let stage = match &made {
        Err(_) => Stage::Failed,
        Ok(_) if sink.is_full() => Stage::Full,
        Ok(_) => Stage::Done,
    };
    progress.enter(stage);
    made
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
            self.progress.made_one();
        }
    }
}
