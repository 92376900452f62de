//! The API reference, `docs/openapi.yaml`, compiled in: served as JSON at
//! `GET /cms/openapi.json`, and the source of the `GET /cms/` description, so the two can
//! never disagree. Tests check that it lists exactly the operations of the route table and
//! the public file URLs of the resource folders.

use std::sync::OnceLock;

use cms_core::codec::{self, YamlLimits};
use serde_json::{Map, Value};

const SOURCE: &str = include_str!("../../../docs/openapi.yaml");

/// Marks the path item that describes the public file URLs of a resource folder. The
/// document names the demo site's folder (`/media/uploads/{path}`); a site gets one such
/// path per configured folder, under its `url` (see [`document_for`]).
pub const RESOURCE_FOLDER_MARKER: &str = "x-resource-folder";

/// The document as written (parsed once; a unit test proves it parses).
pub fn document() -> &'static Value {
    static DOCUMENT: OnceLock<Value> = OnceLock::new();
    DOCUMENT
        .get_or_init(|| codec::from_yaml(SOURCE, YamlLimits::STATE).expect("docs/openapi.yaml is valid YAML"))
}

/// The document for a site whose resource folders have the public URL prefixes `urls`
/// (`/media/uploads`, no trailing `/`): the marked path item is listed once per folder, as
/// `{url}/{path}`, and not at all when there is no folder.
pub fn document_for<'a>(urls: impl IntoIterator<Item = &'a str>) -> Value {
    let mut document = document().clone();
    let Some(paths) = document.get_mut("paths").and_then(Value::as_object_mut) else { return document };
    let marked = |item: &Value| item.get(RESOURCE_FOLDER_MARKER).is_some_and(|m| m == true);
    let Some(template) = paths.values().find(|item| marked(item)).cloned() else { return document };
    let mut kept = Map::new();
    for (path, item) in std::mem::take(paths) {
        if !marked(&item) {
            kept.insert(path, item);
        }
    }
    for url in urls {
        kept.insert(crate::routes::file_path(url), template.clone());
    }
    *paths = kept;
    document
}

/// One operation as the document describes it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Operation {
    pub method: String,
    pub path: String,
    /// `none`, `optional` or `required`, from the operation's `security` (or the
    /// document's, when the operation has none).
    pub auth: &'static str,
}

const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

/// Every operation of `document`, in document order.
pub fn operations(document: &Value) -> Vec<Operation> {
    let Some(paths) = document.get("paths").and_then(Value::as_object) else { return Vec::new() };
    let default_security = document.get("security");
    let mut operations = Vec::new();
    for (path, item) in paths {
        for method in METHODS {
            let Some(operation) = item.get(method) else { continue };
            operations.push(Operation {
                method: method.to_uppercase(),
                path: path.clone(),
                auth: auth_of(operation.get("security").or(default_security)),
            });
        }
    }
    operations
}

/// `[]` → none; a list containing `{}` → optional; otherwise (or absent) required.
fn auth_of(security: Option<&Value>) -> &'static str {
    match security.and_then(Value::as_array) {
        Some(schemes) if schemes.is_empty() => "none",
        Some(schemes) if schemes.iter().any(|s| s.as_object().is_some_and(|o| o.is_empty())) => "optional",
        _ => "required",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routes::{self, ROUTES};

    #[test]
    fn the_document_parses_and_is_openapi_3_1() {
        assert_eq!(document()["openapi"], "3.1.0");
        assert_eq!(
            document()["info"]["version"],
            env!("CARGO_PKG_VERSION"),
            "the document's version is the crate's"
        );
    }

    /// What the server answers for a site with these resource folder URLs: the route
    /// table, and `GET` (no key) on each folder's file URLs.
    fn served(urls: &[&str]) -> Vec<Operation> {
        let mut served: Vec<Operation> = ROUTES
            .iter()
            .map(|r| Operation {
                method: r.method.to_owned(),
                path: r.path.to_owned(),
                auth: r.auth.as_str(),
            })
            .collect();
        for url in urls {
            served.push(Operation {
                method: routes::FILE_ROUTE_METHOD.to_owned(),
                path: routes::file_path(url),
                auth: routes::Auth::None.as_str(),
            });
        }
        served.sort();
        served
    }

    /// Fails when a route exists in the server but not in the document, or the reverse,
    /// or when they disagree on auth; the public file URLs included.
    #[test]
    fn the_document_and_the_route_table_list_the_same_operations() {
        for urls in [&["/media/uploads"][..], &["/files", "/media/uploads", "/a/b"], &[]] {
            let served = served(urls);
            let mut documented = operations(&document_for(urls.iter().copied()));
            documented.sort();
            let missing: Vec<_> = served.iter().filter(|o| !documented.contains(o)).collect();
            let extra: Vec<_> = documented.iter().filter(|o| !served.contains(o)).collect();
            assert!(missing.is_empty(), "served but not documented (or auth differs): {missing:#?}");
            assert!(extra.is_empty(), "documented but not served (or auth differs): {extra:#?}");
        }
    }

    /// The document as written describes the demo site, whose one resource folder is
    /// served at `/media/uploads`.
    #[test]
    fn the_written_document_is_the_demo_sites() {
        assert_eq!(document_for(["/media/uploads"]), *document());
    }

    /// Every operation says what a `402` (no license) looks like, and every operation
    /// that needs a key what a `401` looks like.
    #[test]
    fn every_operation_documents_402_and_its_auth_failures() {
        let document = document();
        for operation in operations(document) {
            let responses = &document["paths"][&operation.path][operation.method.to_lowercase()]["responses"];
            assert!(responses.get("402").is_some(), "{operation:?} lacks 402");
            if operation.auth != "none" {
                assert!(responses.get("401").is_some(), "{operation:?} lacks 401");
            }
            if operation.auth == "optional" {
                assert!(responses.get("403").is_some(), "{operation:?} lacks 403 (origin check)");
            }
        }
    }
}
