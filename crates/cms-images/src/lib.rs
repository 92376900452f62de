//! Image variants for the CMS: the [`ImageCodec`] port on a bounded pool of worker
//! threads. Decoding is bounded (the header's pixel count is checked against
//! `images.max_pixels` before anything is allocated, and the decoder runs with an
//! allocation limit), EXIF orientation is applied to the pixels, and the output is
//! written without any metadata (so camera location never leaves the server). Animated
//! GIFs are refused, and a corrupt file or a panicking decoder is an error, never a crash.
//! A long source side is shrunk with a box filter before the Lanczos3 pass, so that a
//! render costs the source's pixels, not its length; a render stops at its deadline
//! (`images.render_timeout_secs`) between its steps, and a request waits for a worker at
//! most `images.queue_timeout_secs` (see `pool.rs`).
//!
//! No I/O: bytes in, bytes out. The composition root builds one [`ImagePool`].

mod budget;
mod error;
mod pool;
mod render;

pub use budget::Budget;
pub use error::ImageError;
pub use pool::ImagePool;
pub use render::{probe, render};
