//! The adapter's errors, and what a failed request says in the operator's words: the
//! store's own error code (`NoSuchBucket`, `SignatureDoesNotMatch`...) and message taken
//! out of its XML answer, a connection failure as the system said it, never the raw XML.

use cms_core::CoreError;

/// Failures of the S3 adapter, translated into domain errors at the port boundary.
#[derive(Debug, thiserror::Error)]
pub enum S3Error {
    /// A request to the store failed (network, credentials, the store's own error).
    #[error("object store, {key}: {}", summary(source))]
    Store {
        key: String,
        #[source]
        source: object_store::Error,
    },
    /// An object read by range changed (or went) after it was opened: a read never mixes
    /// the bytes of two versions.
    #[error("{key} changed while it was being read; ask for it again")]
    ChangedWhileRead { key: String },
    /// The adapter's I/O runtime is gone (the process is shutting down).
    #[error("object store I/O runtime stopped")]
    Stopped,
    /// A setting under `storage:` is missing or wrong; names the setting.
    #[error("storage.{setting}: {message}")]
    Setting { setting: &'static str, message: String },
    /// A state object (`.cms/users.yaml`...) that cannot be read.
    #[error("{key}: {message}")]
    State { key: String, message: String },
    /// No credentials to sign with: which variables to set.
    #[error("no credentials for the store: {0}")]
    MissingCredentials(String),
    /// The store does not take the credentials given: which one is wrong.
    #[error("the store refused the credentials: {0}")]
    RejectedCredentials(String),
    #[error("bucket {bucket:?} does not exist at {endpoint}; create it, or correct storage.bucket")]
    NoSuchBucket { bucket: String, endpoint: String },
    /// The credentials are good but may not use the bucket.
    #[error(
        "access to bucket {bucket:?} at {endpoint} is denied to these credentials ({detail}); their policy must allow s3:ListBucket, s3:GetObject, s3:PutObject and s3:DeleteObject on it"
    )]
    AccessDenied { bucket: String, endpoint: String, detail: String },
    /// Nothing answers at the endpoint; names where the endpoint came from.
    #[error("cannot reach the store at {endpoint} (from {setting}): {reason}")]
    Unreachable { endpoint: String, setting: &'static str, reason: String },
    #[error(
        "the store refused this machine's clock ({detail}): S3 allows 15 minutes of difference; set the clock (NTP) and start again"
    )]
    ClockSkew { detail: String },
    /// Any other refusal, with the store's code and message.
    #[error("bucket {bucket:?} at {endpoint} refused a listing: {detail}")]
    Refused { bucket: String, endpoint: String, detail: String },
}

impl From<S3Error> for CoreError {
    fn from(error: S3Error) -> Self {
        match error {
            S3Error::State { .. } => CoreError::Corrupt(error.to_string()),
            S3Error::ChangedWhileRead { .. } => CoreError::Conflict(error.to_string()),
            other => CoreError::internal("bucket storage", other),
        }
    }
}

/// Shorthand for mapping a store error on `key` into a `CoreError`.
pub(crate) fn store_error(key: &impl std::fmt::Display) -> impl FnOnce(object_store::Error) -> CoreError {
    let key = key.to_string();
    move |source| S3Error::Store { key, source }.into()
}

/// What a failed request tells, read from object_store's error and its causes.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Failure {
    /// The store's error code (`<Code>` of its XML answer).
    pub code: Option<String>,
    /// The store's message (`<Message>`).
    pub message: Option<String>,
    /// The connection failed (refused, timed out, no such host): the system's words.
    pub unreachable: Option<String>,
    /// The request was for credentials from the EC2/ECS metadata service, which failed.
    pub metadata_service: bool,
    /// The HTTP status as object_store classified it.
    pub not_found: bool,
    pub denied: bool,
    pub unauthenticated: bool,
}

impl Failure {
    pub(crate) fn of(error: &object_store::Error) -> Self {
        let mut failure = Self {
            not_found: matches!(error, object_store::Error::NotFound { .. }),
            denied: matches!(error, object_store::Error::PermissionDenied { .. }),
            unauthenticated: matches!(error, object_store::Error::Unauthenticated { .. }),
            ..Self::default()
        };
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
        let mut connecting = false;
        let mut deepest = String::new();
        while let Some(current) = cause {
            let text = current.to_string();
            failure.code = failure.code.or_else(|| xml_element(&text, "Code"));
            failure.message = failure.message.or_else(|| xml_element(&text, "Message"));
            failure.metadata_service |= text.contains("169.254.169.254") || text.contains("169.254.170.2");
            if let Some(http) = current.downcast_ref::<object_store::client::HttpError>() {
                use object_store::client::HttpErrorKind;
                connecting |= matches!(http.kind(), HttpErrorKind::Connect | HttpErrorKind::Timeout);
            }
            deepest = text;
            cause = current.source();
        }
        if connecting && failure.code.is_none() {
            failure.unreachable = Some(deepest);
        }
        failure
    }
}

/// The text of the first `<name>...</name>` in `text`, unescaped (the five XML entities).
fn xml_element(text: &str, name: &str) -> Option<String> {
    let open = format!("<{name}>");
    let start = text.find(&open)? + open.len();
    let end = start + text[start..].find(&format!("</{name}>"))?;
    let value = text[start..end]
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&");
    (!value.trim().is_empty()).then(|| value.trim().to_owned())
}

/// One line for a failed request: the store's code and message, or the connection
/// failure, or object_store's own words with any XML answer cut off.
pub(crate) fn summary(error: &object_store::Error) -> String {
    let failure = Failure::of(error);
    match (failure.code, failure.message, failure.unreachable) {
        (Some(code), Some(message), _) => format!("the store answered {code}: {message}"),
        (Some(code), None, _) => format!("the store answered {code}"),
        (None, _, Some(reason)) => format!("cannot reach the store: {reason}"),
        (None, _, None) => {
            let text = error.to_string();
            let cut = ["<?xml", "<Error"].iter().filter_map(|tag| text.find(tag)).min().unwrap_or(text.len());
            text[..cut].trim_end_matches([' ', ':', '-']).to_owned()
        }
    }
}

/// Where the adapter connects, for the messages of [`explain`].
pub(crate) struct Target<'a> {
    pub bucket: &'a str,
    /// The endpoint's URL, or `AWS`.
    pub endpoint: &'a str,
    /// Where the endpoint came from: `storage.endpoint`, `AWS_ENDPOINT_URL`, or AWS's own.
    pub endpoint_setting: &'static str,
    pub region: &'a str,
    /// Where the region came from: `storage.region`, `AWS_REGION`, or the default.
    pub region_setting: &'static str,
}

/// Why the first listing of the bucket failed, as an error that names the cause and what
/// to change.
pub(crate) fn explain(error: &object_store::Error, target: &Target<'_>) -> S3Error {
    let failure = Failure::of(error);
    let endpoint = target.endpoint.to_owned();
    let bucket = target.bucket.to_owned();
    let detail = || match (&failure.code, &failure.message) {
        (Some(code), Some(message)) => format!("{code}: {message}"),
        (Some(code), None) => code.clone(),
        (None, _) => summary(error),
    };
    if failure.metadata_service {
        return S3Error::MissingCredentials(
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set, and no instance role answered at the EC2 metadata service; set both variables"
                .into(),
        );
    }
    match failure.code.as_deref() {
        Some("InvalidAccessKeyId") => S3Error::RejectedCredentials(format!(
            "the access key ID in AWS_ACCESS_KEY_ID is unknown to {endpoint} ({})",
            detail()
        )),
        Some("SignatureDoesNotMatch") => S3Error::RejectedCredentials(format!(
            "AWS_SECRET_ACCESS_KEY is not the secret of the key in AWS_ACCESS_KEY_ID ({})",
            detail()
        )),
        Some("ExpiredToken" | "InvalidToken" | "TokenRefreshRequired") => S3Error::RejectedCredentials(
            format!("the session token in AWS_SESSION_TOKEN is expired or invalid ({})", detail()),
        ),
        Some("NoSuchBucket") => S3Error::NoSuchBucket { bucket, endpoint },
        Some("AccessDenied" | "AllAccessDisabled" | "AccountProblem") => {
            S3Error::AccessDenied { bucket, endpoint, detail: detail() }
        }
        Some("RequestTimeTooSkewed") => S3Error::ClockSkew { detail: detail() },
        Some("AuthorizationHeaderMalformed" | "PermanentRedirect" | "IllegalLocationConstraintException") => {
            S3Error::Setting {
                setting: "region",
                message: format!(
                    "bucket {bucket:?} is not in region {} (from {}); set storage.region or AWS_REGION to its region ({})",
                    target.region,
                    target.region_setting,
                    detail()
                ),
            }
        }
        Some(_) => S3Error::Refused { bucket, endpoint, detail: detail() },
        None => match failure.unreachable {
            Some(reason) => S3Error::Unreachable { endpoint, setting: target.endpoint_setting, reason },
            None if failure.not_found => S3Error::NoSuchBucket { bucket, endpoint },
            None if failure.unauthenticated => {
                S3Error::RejectedCredentials(format!("{endpoint} answered 401 Unauthorized ({})", detail()))
            }
            None if failure.denied => S3Error::AccessDenied { bucket, endpoint, detail: detail() },
            None => S3Error::Refused { bucket, endpoint, detail: detail() },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generic(text: &str) -> object_store::Error {
        object_store::Error::Generic { store: "S3", source: text.to_owned().into() }
    }

    const TARGET: Target<'static> = Target {
        bucket: "site",
        endpoint: "http://127.0.0.1:9000",
        endpoint_setting: "storage.endpoint",
        region: "us-east-1",
        region_setting: "the default",
    };

    #[test]
    fn the_stores_code_and_message_replace_its_xml() {
        let xml = "Error performing GET http://127.0.0.1:9000/site?list-type=2 in 2ms - Server returned non-2xx status code: 403 Forbidden: <?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>RequestTimeTooSkewed</Code><Message>The difference between the request time and the current time is too large.</Message><RequestId>1</RequestId></Error>";
        let error = generic(xml);
        let summary = summary(&error);
        assert_eq!(
            summary,
            "the store answered RequestTimeTooSkewed: The difference between the request time and the current time is too large."
        );
        let explained = explain(&error, &TARGET).to_string();
        assert!(explained.contains("clock") && !explained.contains('<'), "{explained}");
        assert!(matches!(explain(&error, &TARGET), S3Error::ClockSkew { .. }));
    }

    #[test]
    fn each_code_names_its_cause() {
        let with_code = |code: &str| {
            generic(&format!(
                "status code: 400: <Error><Code>{code}</Code><Message>m &amp; n</Message></Error>"
            ))
        };
        let explained = explain(&with_code("SignatureDoesNotMatch"), &TARGET).to_string();
        assert!(explained.contains("AWS_SECRET_ACCESS_KEY"), "{explained}");
        assert!(explained.contains("m & n"), "unescaped: {explained}");
        let explained = explain(&with_code("InvalidAccessKeyId"), &TARGET).to_string();
        assert!(explained.contains("AWS_ACCESS_KEY_ID"), "{explained}");
        assert!(matches!(explain(&with_code("NoSuchBucket"), &TARGET), S3Error::NoSuchBucket { .. }));
        assert!(matches!(explain(&with_code("AccessDenied"), &TARGET), S3Error::AccessDenied { .. }));
        let explained = explain(&with_code("AuthorizationHeaderMalformed"), &TARGET).to_string();
        assert!(explained.starts_with("storage.region:") && explained.contains("AWS_REGION"), "{explained}");
        let explained = explain(&with_code("SlowDown"), &TARGET).to_string();
        assert!(explained.contains("SlowDown: m & n") && !explained.contains('<'), "{explained}");
    }

    #[test]
    fn a_failed_metadata_request_means_no_credentials() {
        let error = generic(
            "Error performing PUT http://169.254.169.254/latest/api/token in 1s - error sending request",
        );
        let explained = explain(&error, &TARGET).to_string();
        assert!(explained.contains("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set"), "{explained}");
        assert!(!explained.contains("169.254"), "{explained}");
    }

    #[test]
    fn an_answer_without_xml_keeps_objects_stores_words() {
        let error =
            generic("Error performing GET http://x in 1ms - Server returned non-2xx status code: 500: ");
        assert_eq!(
            summary(&error),
            "Generic S3 error: Error performing GET http://x in 1ms - Server returned non-2xx status code: 500"
        );
    }
}
