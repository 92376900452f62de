use std::time::Duration;

use cms_core::CoreError;

/// Why an image could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error(
        "the image is {width} × {height} pixels, over the {max} pixels this site decodes (images.max_pixels); request it without parameters"
    )]
    TooManyPixels { width: u32, height: u32, max: u64 },
    #[error("animated GIFs ({frames} frames) are not transformed; request the file without parameters")]
    Animated { frames: usize },
    #[error("the file is not an image this server can decode: {0}")]
    Decode(String),
    #[error(
        "the variant would be {width} × {height} pixels, over the {max_side} pixels a side {format} holds; ask for a smaller w or h, or another format"
    )]
    TooLargeFor { width: u32, height: u32, format: &'static str, max_side: u32 },
    /// The encoder refused these pixels (its limits, not ours): the request's or the
    /// source's doing, so a `422` that says which format and why.
    #[error("the variant could not be encoded as {format}: {reason}; ask for another size or format")]
    Encode { format: &'static str, reason: String },
    #[error("the image workers are busy ({0} renders waiting); try again in a moment")]
    Busy(usize),
    #[error(
        "the image workers are busy: none was free within {} (images.queue_timeout_secs); try again in a moment",
        seconds(*.0)
    )]
    Waited(Duration),
    #[error(
        "rendering this variant took longer than {} (images.render_timeout_secs) and was stopped; try again later, or ask for a smaller w or h or another format",
        seconds(*.0)
    )]
    TimedOut(Duration),
    /// The request went away (or gave up) while its render ran: nobody reads this.
    #[error("the request for this variant was given up")]
    Abandoned,
    #[error("an image worker failed: {0}")]
    Worker(String),
}

/// `15 s`, or `0.1 s` for the short budgets of tests.
fn seconds(duration: Duration) -> String {
    if duration.subsec_nanos() == 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{:.1} s", duration.as_secs_f64())
    }
}

impl From<ImageError> for CoreError {
    fn from(error: ImageError) -> Self {
        match error {
            // Try again later: the workers were taken, or this render ran out of time on
            // them (the site's bound, not a fault; a retry on a quieter server may pass).
            ImageError::Busy(_) | ImageError::Waited(_) | ImageError::TimedOut(_) | ImageError::Abandoned => {
                CoreError::Busy(error.to_string())
            }
            // A panic or a resizer that refuses its own arguments: our fault, a 500.
            ImageError::Worker(_) => CoreError::internal("rendering an image variant", error),
            // The source or the request: a 422 that names the reason.
            ImageError::TooManyPixels { .. }
            | ImageError::Animated { .. }
            | ImageError::Decode(_)
            | ImageError::TooLargeFor { .. }
            | ImageError::Encode { .. } => CoreError::Unprocessable(error.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_worker_fault_is_a_server_error() {
        let unprocessable = [
            ImageError::Encode { format: "AVIF", reason: "invalid height 40000000".into() },
            ImageError::Decode("truncated".into()),
            ImageError::TooLargeFor { width: 1, height: 70_000, format: "AVIF", max_side: 65_535 },
        ];
        for error in unprocessable {
            let text = error.to_string();
            assert!(matches!(CoreError::from(error), CoreError::Unprocessable(_)), "{text}");
        }
        let busy = [
            ImageError::Busy(16),
            ImageError::Waited(Duration::from_secs(5)),
            ImageError::TimedOut(Duration::from_secs(15)),
        ];
        for error in busy {
            let text = error.to_string();
            assert!(text.contains("images.") || text.contains("16 renders"), "{text}");
            assert!(matches!(CoreError::from(error), CoreError::Busy(_)), "{text}");
        }
        assert!(ImageError::TimedOut(Duration::from_secs(15)).to_string().contains("15 s"));
        let fault = CoreError::from(ImageError::Worker("the decoder panicked".into()));
        assert!(matches!(fault, CoreError::Internal { .. }));
    }
}
