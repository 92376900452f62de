//! Submitted form fields.

use crate::error::{AdminError, AdminResult};

/// The `name=value` pairs of a urlencoded form, in order.
#[derive(Debug, Clone, Default)]
pub struct Fields {
    pairs: Vec<(String, String)>,
}

impl Fields {
    pub fn parse(body: &[u8]) -> Self {
        Self { pairs: form_urlencoded::parse(body).map(|(k, v)| (k.into_owned(), v.into_owned())).collect() }
    }

    /// The first value of a field.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// A field's value, or empty when it was not sent.
    pub fn text(&self, name: &str) -> &str {
        self.get(name).unwrap_or("")
    }

    /// A field's value, trimmed; `BadRequest` naming the field when it is empty or missing.
    pub fn required(&self, name: &str, label: &str) -> AdminResult<&str> {
        match self.get(name).map(str::trim) {
            Some(value) if !value.is_empty() => Ok(value),
            _ => Err(AdminError::bad_request(format!("{label} is required"))),
        }
    }

    /// Every field, in the order sent.
    pub fn pairs(&self) -> &[(String, String)] {
        &self.pairs
    }

    /// The same fields without those named.
    pub fn without(self, names: &[&str]) -> Self {
        Self { pairs: self.pairs.into_iter().filter(|(k, _)| !names.contains(&k.as_str())).collect() }
    }

    /// Every value of a field (checkbox groups).
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.pairs.iter().filter(|(k, _)| k == name).map(|(_, v)| v.as_str()).collect()
    }
}

/// A textarea's text with the line endings the form sent (`\r\n`, as HTML forms always
/// send them) turned back into `\n`.
pub fn unix_lines(text: &str) -> String {
    text.replace("\r\n", "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields() {
        let fields = Fields::parse(b"a=1&b=x+y&a=2&c=%C3%A9&empty=");
        assert_eq!(fields.get("a"), Some("1"));
        assert_eq!(fields.all("a"), ["1", "2"]);
        assert_eq!(fields.text("b"), "x y");
        assert_eq!(fields.text("c"), "é");
        assert_eq!(fields.text("missing"), "");
        assert!(fields.required("empty", "Empty").is_err());
        assert_eq!(fields.required("b", "B").unwrap(), "x y");
        assert_eq!(unix_lines("a\r\nb\n"), "a\nb\n");
    }
}
