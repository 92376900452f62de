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
    #[error("encoding the variant failed: {0}")]
    Encode(String),
    #[error("the image workers are busy ({0} renders waiting); try again in a moment")]
    Busy(usize),
    #[error("an image worker failed: {0}")]
    Worker(String),
}

impl From<ImageError> for CoreError {
    fn from(error: ImageError) -> Self {
        match error {
            ImageError::Busy(_) => CoreError::Busy(error.to_string()),
            ImageError::Encode(_) | ImageError::Worker(_) => {
                CoreError::internal("rendering an image variant", error)
            }
            other => CoreError::Unprocessable(other.to_string()),
        }
    }
}
