//! Private state files under `.cms/`: a YAML list of rows, read within the state budgets
//! and written atomically with mode 0600.

use std::fs;
use std::io;
use std::path::Path;

use cms_core::CoreResult;
use cms_core::codec::{self, YamlLimits};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::atomic;
use crate::error::{FsError, io_error};

/// The rows of a state file; a missing or empty file has none. A damaged file is
/// `Corrupt`, naming the file.
pub fn read_rows<T: DeserializeOwned>(path: &Path) -> CoreResult<Vec<T>> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error(path)(e)),
    };
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    codec::from_yaml(&text, YamlLimits::STATE)
        .map_err(|e| FsError::State { path: path.to_owned(), message: e.to_string() }.into())
}

/// Replaces a state file with `rows`, atomically.
pub fn write_rows<T: Serialize>(path: &Path, rows: &[T]) -> CoreResult<()> {
    let text = if rows.is_empty() { "[]\n".to_owned() } else { codec::to_yaml(&rows)? };
    atomic::write_private(path, text.as_bytes()).map_err(io_error(path))
}
