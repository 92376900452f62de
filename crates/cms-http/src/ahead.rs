//! Single items' answers made ahead of their first reads: after start-up the server has
//! the core render every live item ([`Cms::render_ahead`](cms_core::Cms::render_ahead))
//! and keeps each finished answer (the envelope without its timestamp) by version, as a
//! read would have kept it. A random read of a large site then costs a lookup and one
//! positional read instead of a file read, a parse and a render.

use cms_core::error::CoreResult;
use cms_core::ports::RenderCache;
use cms_core::service::{AheadSink, ItemView};

use crate::reply::item_body;
use crate::state::AppState;

/// Renders and keeps the answers of every live item not kept yet, until the store is
/// full. Nothing without an answer store: the memory cache is for what is read often.
pub async fn render_ahead(state: &AppState) -> CoreResult<usize> {
    let Some(answers) = &state.answers else { return Ok(0) };
    state.cms.render_ahead(&Answers(answers.as_ref())).await
}

struct Answers<'a>(&'a dyn RenderCache);

impl AheadSink for Answers<'_> {
    fn wants(&self, version: u64) -> bool {
        !self.0.contains(version)
    }

    fn is_full(&self) -> bool {
        self.0.is_full()
    }

    fn keep(&self, view: ItemView) {
        let version = view.version;
        // An answer that cannot be serialized is made (and reported) by its first read.
        if let Ok(body) = item_body(view) {
            self.0.put(version, &body);
        }
    }
}
