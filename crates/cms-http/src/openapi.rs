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
        kept.insert(file_path(url), template.clone());
    }
    *paths = kept;
    document
}

/// The public file URLs of a resource folder whose `url` is `url`, as the OpenAPI document
/// names them: `/media/uploads/{path}`, where `{path}` may span several segments.
pub fn file_path(url: &str) -> String {
    format!("{url}/{{path}}")
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

    /// Each operation of the document as written, with its path and method.
    fn operation_objects() -> Vec<(String, &'static str, &'static Value)> {
        let paths = document()["paths"].as_object().expect("the document has paths");
        let mut found = Vec::new();
        for (path, item) in paths {
            for method in METHODS {
                if let Some(operation) = item.get(method) {
                    found.push((path.clone(), method, operation));
                }
            }
        }
        found
    }

    /// Code generators, gateways and rendered references group and name operations by
    /// these: every operation has a tag the document defines, a unique `operationId` and a
    /// `description`.
    #[test]
    fn every_operation_has_a_defined_tag_a_unique_operation_id_and_a_description() {
        let defined: Vec<&str> = document()["tags"]
            .as_array()
            .map(|tags| tags.iter().filter_map(|t| t["name"].as_str()).collect())
            .unwrap_or_default();
        let mut ids = std::collections::BTreeSet::new();
        for (path, method, operation) in operation_objects() {
            let tags = operation["tags"].as_array().map(Vec::as_slice).unwrap_or_default();
            assert!(!tags.is_empty(), "{method} {path} has no tag");
            for tag in tags {
                assert!(
                    tag.as_str().is_some_and(|t| defined.contains(&t)),
                    "{method} {path}: tag {tag} is not in the document's `tags`"
                );
            }
            let id = operation["operationId"].as_str().unwrap_or_default();
            assert!(!id.is_empty(), "{method} {path} has no operationId");
            assert!(ids.insert(id), "operationId {id} is used twice");
            let description = operation["description"].as_str().unwrap_or_default();
            assert!(!description.trim().is_empty(), "{method} {path} has no description");
        }
    }

    /// A member whose value is null is what an unquoted comma or `?` in a YAML flow map
    /// leaves behind (`{ description: Results, best first }` is a description `Results`
    /// and a key `best first`); the document never means a null member.
    #[test]
    fn no_member_of_the_document_is_null() {
        fn walk(value: &Value, pointer: &str, found: &mut Vec<String>) {
            match value {
                Value::Object(members) => {
                    for (key, member) in members {
                        let pointer = format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1"));
                        if member.is_null() {
                            found.push(pointer);
                        } else {
                            walk(member, &pointer, found);
                        }
                    }
                }
                Value::Array(elements) => {
                    for (i, element) in elements.iter().enumerate() {
                        walk(element, &format!("{pointer}/{i}"), found);
                    }
                }
                _ => {}
            }
        }
        let mut found = Vec::new();
        walk(document(), "", &mut found);
        assert!(found.is_empty(), "null members (prose split by an unquoted comma?): {found:#?}");
    }

    /// The published OpenAPI 3.1 schema takes a link's `parameters` as strings only
    /// (runtime expressions or constants): `folder: 0` makes the document invalid.
    #[test]
    fn link_parameters_are_strings() {
        let mut found = Vec::new();
        let mut check = |at: String, response: &Value| {
            for (name, link) in response["links"].as_object().into_iter().flatten() {
                for (parameter, value) in link["parameters"].as_object().into_iter().flatten() {
                    if !value.is_string() {
                        found.push(format!("{at} link {name}: {parameter} = {value}"));
                    }
                }
            }
        };
        for (path, method, operation) in operation_objects() {
            for (status, response) in operation["responses"].as_object().into_iter().flatten() {
                check(format!("{method} {path} {status}"), response);
            }
        }
        for (name, response) in document()["components"]["responses"].as_object().into_iter().flatten() {
            check(format!("components/responses/{name}"), response);
        }
        assert!(found.is_empty(), "link parameters that are not strings: {found:#?}");
    }

    /// Every operation says what a `402` (no license) looks like (but the health probes,
    /// which answer without one), and every operation that needs a key what a `401` looks
    /// like.
    #[test]
    fn every_operation_documents_402_and_its_auth_failures() {
        let document = document();
        for operation in operations(document) {
            let responses = &document["paths"][&operation.path][operation.method.to_lowercase()]["responses"];
            let probe = matches!(
                operation.path.as_str(),
                crate::routes::LIVEZ | crate::routes::READYZ | crate::routes::METRICS
            );
            assert_eq!(
                responses.get("402").is_some(),
                !probe,
                "{operation:?}: 402 documented only where sent"
            );
            if operation.auth != "none" {
                assert!(responses.get("401").is_some(), "{operation:?} lacks 401");
            }
            if operation.auth == "optional" {
                assert!(responses.get("403").is_some(), "{operation:?} lacks 403 (origin check)");
            }
        }
    }
}
