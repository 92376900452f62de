//! The API reference, `docs/openapi.yaml`, compiled in: served as JSON at
//! `GET /cms/openapi.json`, and the source of the `GET /cms/` description, so the two can
//! never disagree. A test checks that it lists exactly the operations of the route table.

use std::sync::OnceLock;

use cms_core::codec::{self, YamlLimits};
use serde_json::Value;

const SOURCE: &str = include_str!("../../../docs/openapi.yaml");

/// The document as JSON (parsed once; a unit test proves it parses).
pub fn document() -> &'static Value {
    static DOCUMENT: OnceLock<Value> = OnceLock::new();
    DOCUMENT
        .get_or_init(|| codec::from_yaml(SOURCE, YamlLimits::STATE).expect("docs/openapi.yaml is valid YAML"))
}

/// One operation as the document describes it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Operation {
    pub method: String,
    pub path: String,
    /// `none`, `optional` or `required`, from the operation's `security`.
    pub auth: &'static str,
}

const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

/// Every operation of the document, in document order.
pub fn operations() -> Vec<Operation> {
    let Some(paths) = document().get("paths").and_then(Value::as_object) else { return Vec::new() };
    let mut operations = Vec::new();
    for (path, item) in paths {
        for method in METHODS {
            let Some(operation) = item.get(method) else { continue };
            operations.push(Operation {
                method: method.to_uppercase(),
                path: path.clone(),
                auth: auth_of(operation),
            });
        }
    }
    operations
}

/// `[]` → none; a list containing `{}` → optional; otherwise required.
fn auth_of(operation: &Value) -> &'static str {
    match operation.get("security").and_then(Value::as_array) {
        Some(schemes) if schemes.is_empty() => "none",
        Some(schemes) if schemes.iter().any(|s| s.as_object().is_some_and(|o| o.is_empty())) => "optional",
        _ => "required",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routes::ROUTES;

    #[test]
    fn the_document_parses_and_is_openapi_3_1() {
        assert_eq!(document()["openapi"], "3.1.0");
        assert_eq!(
            document()["info"]["version"],
            env!("CARGO_PKG_VERSION"),
            "the document's version is the crate's"
        );
    }

    /// Fails when a route exists in the server but not in the document, or the reverse,
    /// or when they disagree on auth.
    #[test]
    fn the_document_and_the_route_table_list_the_same_operations() {
        let mut served: Vec<Operation> = ROUTES
            .iter()
            .map(|r| Operation {
                method: r.method.to_owned(),
                path: r.path.to_owned(),
                auth: r.auth.as_str(),
            })
            .collect();
        let mut documented = operations();
        served.sort();
        documented.sort();
        let missing: Vec<_> = served.iter().filter(|o| !documented.contains(o)).collect();
        let extra: Vec<_> = documented.iter().filter(|o| !served.contains(o)).collect();
        assert!(missing.is_empty(), "served but not documented (or auth differs): {missing:#?}");
        assert!(extra.is_empty(), "documented but not served (or auth differs): {extra:#?}");
    }
}
