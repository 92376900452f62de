//! A form the editor did not act on, kept whole so that nothing typed is lost: its session
//! had ended, its security token was refused, or the sign-in sent with it failed. The
//! answer shows it again, with what was typed and a way to send it (signing in on the
//! spot when needed); see `error.rs` for the page and `auth.rs` for the inline sign-in.
//! A leaf: it names no other module of the crate.

/// The names of the inline sign-in's inputs: distinct from any field a form offered back may have
/// (the Users page has its own `email` and `password`).
pub const SIGNIN_EMAIL: &str = "signin_email";
pub const SIGNIN_PASSWORD: &str = "signin_password";

/// Why a form was kept rather than acted on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// No session (it ended: signed out elsewhere, expired, or the server lost it).
    SessionEnded,
    /// The inline sign-in's password was wrong (or the account has none).
    SignInFailed,
    /// The inline sign-in's own token had been replaced (another tab signed in first).
    SignInExpired,
    /// Sign-ins for the account or the address are paused for this many seconds.
    Throttled(u64),
    /// Signed in, but the form carried another session's token (signed out and in again
    /// since the page was opened).
    TokenRefused,
}

/// A form offered back: where it was posted, and every field it sent except its token and the
/// inline sign-in's inputs.
#[derive(Debug, Clone)]
pub struct ResubmitForm {
    pub why: Why,
    /// The path (and query) it was posted to: the same place takes it again.
    pub action: String,
    pub fields: Vec<(String, String)>,
    /// The email the inline sign-in was tried with, to fill in again.
    pub email: String,
}

impl ResubmitForm {
    /// `fields` as the form sent them, in order.
    pub fn new(why: Why, action: &str, fields: &[(String, String)]) -> Self {
        let dropped = ["csrf", SIGNIN_EMAIL, SIGNIN_PASSWORD];
        let email = fields.iter().find(|(name, _)| name == SIGNIN_EMAIL).map(|(_, value)| value.trim());
        Self {
            why,
            action: action.to_owned(),
            fields: fields.iter().filter(|(name, _)| !dropped.contains(&name.as_str())).cloned().collect(),
            email: email.unwrap_or_default().to_owned(),
        }
    }

    /// What a person typed, to show: the fields with a value, without the form's own
    /// bookkeeping and without passwords (those stay in the hidden inputs only).
    pub fn typed(&self) -> Vec<(String, String)> {
        let bookkeeping = ["etag", "form", "action", "next", "folder", "path"];
        self.fields
            .iter()
            .filter(|(name, value)| {
                !value.trim().is_empty()
                    && !bookkeeping.contains(&name.as_str())
                    && !name.contains("password")
            })
            .map(|(name, value)| {
                let label = match name.as_str() {
                    "body" => "text",
                    "extra" => "other fields (YAML)",
                    other => other.strip_prefix("fm.").unwrap_or(other),
                };
                (label.to_owned(), value.clone())
            })
            .collect()
    }
}

/// Whether a form posted to `path` is kept when it cannot be acted on. Not the preview
/// (the script asks for it, and asks again) nor signing out (nothing to keep).
pub fn keeps_forms_of(path: &str) -> bool {
    !matches!(path, "/admin/preview" | "/admin/signout" | "/admin/signin")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_form_drops_its_token_and_the_sign_in_but_keeps_every_field() {
        let fields = crate::forms::Fields::parse(
            b"csrf=old&etag=%22e%22&form=model&fm.title=Hello&body=Line+1%0D%0ALine+2&action=publish\
              &signin_email=ed%40example.com&signin_password=secret&empty=",
        );
        let fields = fields.pairs();
        let kept = ResubmitForm::new(Why::SessionEnded, "/admin/collections/posts/items/a.md", fields);
        let names: Vec<&str> = kept.fields.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["etag", "form", "fm.title", "body", "action", "empty"]);
        assert_eq!(kept.email, "ed@example.com");
        assert_eq!(
            kept.typed(),
            [("title".to_owned(), "Hello".to_owned()), ("text".to_owned(), "Line 1\r\nLine 2".to_owned())]
        );
        assert!(keeps_forms_of("/admin/collections/posts/items/a.md"));
        assert!(!keeps_forms_of("/admin/preview"));
    }
}
