//! Content models over the real binary: `cms schema export` (JSON Schema checked by
//! Python's `jsonschema` against the demo's posts and a refused payload; TypeScript).

use std::fs;
use std::process::Command;

use serde_json::{Value, json};

use crate::first_hour::{VALIDATE, python_with_jsonschema};
use crate::{cms, demo_site, stdout};

/// The demo site, whose collections declare their fields in its `cms.yaml`.
fn modelled_demo() -> tempfile::TempDir {
    demo_site()
}

/// The frontmatter of a demo post, as JSON.
fn frontmatter(site: &std::path::Path, name: &str) -> Value {
    let text = fs::read_to_string(site.join("content/posts").join(name)).unwrap();
    let yaml = text.strip_prefix("---\n").unwrap().split("\n---\n").next().unwrap();
    serde_saphyr::from_str(yaml).unwrap()
}

#[test]
fn the_exported_json_schema_takes_every_demo_post_and_refuses_a_broken_one() {
    let site = modelled_demo();
    let out = site.path().join("schemas");
    let exported =
        cms(site.path(), &["schema", "export", "--format", "json-schema", "--out", out.to_str().unwrap()]);
    assert!(exported.status.success(), "{}", String::from_utf8_lossy(&exported.stderr));
    let written = out.join("blog-posts.schema.json");
    assert!(stdout(&exported).contains("blog-posts.schema.json"), "{}", stdout(&exported));
    let schema: Value = serde_json::from_str(&fs::read_to_string(&written).unwrap()).unwrap();
    assert_eq!(schema["required"], json!(["title"]));
    assert!(out.join("authors.schema.json").exists(), "every modelled collection is exported");

    let Some(python) = python_with_jsonschema() else {
        return cms_s3::testing::skip_check(
            "Python's jsonschema package",
            cms_s3::testing::INSTALL_PYTHON_PACKAGES,
        );
    };
    let validate = |instance: &Value| {
        let file = site.path().join("instance.json");
        fs::write(&file, serde_json::to_vec(instance).unwrap()).unwrap();
        Command::new(&python).args(["-c", VALIDATE]).arg(&written).arg(&file).output().unwrap()
    };
    for entry in fs::read_dir(site.path().join("content/posts")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let checked = validate(&frontmatter(site.path(), &name));
        assert!(checked.status.success(), "{name}: {}", stdout(&checked));
    }
    let refused = validate(&json!({ "date": "next week", "summary": 7, "tags": [3] }));
    assert!(!refused.status.success());
    let reasons = stdout(&refused);
    for needle in ["'title' is a required property", "date 'next week'", "summary 7", "tags [3]"] {
        assert!(reasons.contains(needle), "{needle}: {reasons}");
    }
}

#[test]
fn the_typescript_export_has_an_interface_per_modelled_collection() {
    let site = modelled_demo();
    let exported = cms(site.path(), &["schema", "export", "--format", "typescript"]);
    assert!(exported.status.success(), "{}", String::from_utf8_lossy(&exported.stderr));
    let text = stdout(&exported);
    assert!(
        text.contains(
            "export interface BlogPosts {\n  title: string;\n  /** One or two sentences for lists and feeds. */\n  summary?: string | null;\n  date?: string | null;\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("export interface Authors {\n  /** The author's name as shown. */\n  title: string;\n"),
        "{text}"
    );
}

/// A post edited by hand so that it breaks the model is still served, and `cms check`
/// reports it with every failing field (a warning: `--strict` fails on it).
#[test]
fn a_hand_edited_item_that_breaks_the_model_is_served_and_reported() {
    let site = modelled_demo();
    let post = site.path().join("content/posts/2026-03-20-tables-and-lists.md");
    let text = fs::read_to_string(&post).unwrap().replacen("title: Tables and Lists\n", "summary: [1]\n", 1);
    fs::write(&post, text).unwrap();

    let checked = cms(site.path(), &["check"]);
    let out = stdout(&checked);
    assert!(checked.status.success(), "a warning only: {out}");
    assert!(
        out.contains("collection blog-posts: 2026-03-20-tables-and-lists.md breaks the content model: fm.title is required; fm.summary must be a string, got "),
        "{out}"
    );
    assert!(!cms(site.path(), &["check", "--strict"]).status.success());

    let server = crate::Server::start(site.path());
    let key = crate::user_with_key(site.path(), "ed@example.com", "editor");
    let (status, body) = server.get("/cms/collections/blog-posts/items/tables-and-lists", Some(&key));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["frontmatter"]["summary"], json!([1]), "{body}");
    let collections = server.get("/cms/collections", None).1;
    assert_eq!(collections["data"][0]["invalid_items"], 1, "{collections}");
}

/// The TypeScript export types the demo's items: their frontmatter as JSON, declared with
/// the exported interfaces, compiles with `tsc --strict`; an item that breaks the model
/// does not.
#[test]
fn the_typescript_export_compiles_against_the_demos_items_with_tsc() {
    let Some(tsc) = std::env::var_os("CMS_TSC") else {
        return cms_s3::testing::skip_check(
            "the TypeScript compiler (tsc)",
            "cargo xtask test (installs typescript into target/ts-tools)",
        );
    };
    let site = modelled_demo();
    let out = site.path().join("types");
    let exported =
        cms(site.path(), &["schema", "export", "--format", "typescript", "--out", out.to_str().unwrap()]);
    assert!(exported.status.success(), "{}", String::from_utf8_lossy(&exported.stderr));
    let types = fs::read_to_string(out.join("content.d.ts")).unwrap();
    let items = |folder: &str| -> Vec<Value> {
        let mut names: Vec<String> = fs::read_dir(site.path().join("content").join(folder))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names.iter().map(|name| frontmatter_in(site.path(), folder, name)).collect()
    };
    let compile = |program: &str| {
        let file = site.path().join("check.ts");
        fs::write(&file, format!("{types}\n{program}")).unwrap();
        Command::new(&tsc).args(["--noEmit", "--strict", "--target", "es2022"]).arg(&file).output().unwrap()
    };
    let program = format!(
        "export const posts: BlogPosts[] = {};\nexport const authors: Authors[] = {};\nexport const pages: Pages[] = {};\nexport const projects: Projects[] = {};\n",
        Value::from(items("posts")),
        Value::from(items("authors")),
        Value::from(items("pages")),
        Value::from(items("projects")),
    );
    assert_eq!(items("posts").len(), 4);
    let checked = compile(&program);
    assert!(checked.status.success(), "tsc: {}", stdout(&checked));
    let refused = compile("export const broken: BlogPosts = { title: 3, tags: [1] };\n");
    assert!(!refused.status.success(), "a number is no title");
    let reasons = stdout(&refused);
    assert!(reasons.contains("Type 'number' is not assignable to type 'string'"), "{reasons}");
}

/// The frontmatter of an item of the demo's `folder`, as JSON.
fn frontmatter_in(site: &std::path::Path, folder: &str, name: &str) -> Value {
    let text = fs::read_to_string(site.join("content").join(folder).join(name)).unwrap();
    let yaml = text.strip_prefix("---\n").unwrap().split("\n---").next().unwrap();
    serde_saphyr::from_str(yaml).unwrap()
}
