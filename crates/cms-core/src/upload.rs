//! The upload sequence the REST API and the web editor both run for one received file:
//! begin, stream its chunks to storage (then `Cms::finish_upload` stores it under the
//! name the adapter made of the client's with `resource::sanitize_upload_name`), and the
//! job that makes its presets after the answer. Each inbound adapter reads its own form
//! and words a cut-off stream its own way.

use std::fmt::Display;
use std::sync::Arc;

use futures_util::{Stream, StreamExt};

use crate::error::CoreError;
use crate::policy::Caller;
use crate::resource::{FileName, ResourceRef, Subpath};
use crate::service::{Cms, ResourceFile, Upload};

/// Why a file was not stored.
#[derive(Debug)]
pub enum UploadFailed<E> {
    /// The request's body stream failed (the client went away, the framing broke).
    CutOff(E),
    /// The facade refused it (too large, a bad name or folder, storage).
    Refused(CoreError),
}

impl<E> From<CoreError> for UploadFailed<E> {
    fn from(error: CoreError) -> Self {
        Self::Refused(error)
    }
}

/// Receives one file's chunks, of `limit` bytes at most, before its destination is known
/// (form fields may come in any order); [`Cms::finish_upload`] stores it. What was received
/// is deleted when the stream or a write fails (the upload is dropped).
pub async fn receive<B: AsRef<[u8]>, E>(
    cms: &Cms,
    caller: impl Into<Caller<'_>>,
    limit: u64,
    mut chunks: impl Stream<Item = Result<B, E>> + Unpin,
) -> Result<Upload, UploadFailed<E>> {
    let mut upload = cms.begin_upload(caller, limit).await?;
    while let Some(chunk) = chunks.next().await {
        upload.write(chunk.map_err(UploadFailed::CutOff)?.as_ref()).await?;
    }
    Ok(upload)
}

/// The job that makes the presets of a just stored `file`, for the caller to run after
/// answering (on its runtime); `None` when the file has no presets to make. A failure is
/// logged: the upload itself succeeded.
pub fn presets_later(
    cms: Arc<Cms>,
    folder: usize,
    dir: Subpath,
    file: &ResourceFile,
) -> Option<impl Future<Output = ()> + 'static> {
    if !file.is_image || file.variants.is_empty() {
        return None;
    }
    let name = file.name.clone();
    Some(async move {
        // The name the facade stored the file under, so a file name.
        let made = async { cms.make_presets(&ResourceRef::new(folder, dir, FileName::parse(&name)?)).await };
        if let Err(error) = made.await {
            tracing::warn!(%error, file = %name, "the presets of an upload were not made");
        }
    })
}

/// `Display` of a cut-off stream, for the adapters' messages.
pub fn cut_off_message(error: impl Display) -> String {
    format!("the upload was cut off: {error}")
}
