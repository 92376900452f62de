//! Content models over the real binary: `cms schema export` (JSON Schema checked by
//! Python's `jsonschema` against the demo's posts and a refused payload; TypeScript).

use std::fs;
use std::process::Command;

use serde_json::{Value, json};

use crate::first_hour::{VALIDATE, python_with_jsonschema};
use crate::{cms, demo_site, stdout};

/// The demo's posts, modelled as they are written.
const POSTS_MODEL: &str = "    date_prefix: true
    fields:
      title: { type: string, required: true, max_length: 120 }
      date: { type: datetime }
      status: { type: select, options: [published, draft] }
      author: { type: string }
      tags: { type: tags }
      description: { type: text }
";

fn modelled_demo() -> tempfile::TempDir {
    let site = demo_site();
    let config = site.path().join("cms.yaml");
    let text = fs::read_to_string(&config).unwrap().replacen("    date_prefix: true\n", POSTS_MODEL, 1);
    fs::write(&config, text).unwrap();
    site
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
    assert!(!out.join("pages.schema.json").exists(), "only modelled collections are exported");

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
    let refused = validate(&json!({ "date": "next week", "status": "gone", "tags": [3] }));
    assert!(!refused.status.success());
    let reasons = stdout(&refused);
    for needle in ["'title' is a required property", "date 'next week'", "status 'gone'", "tags [3]"] {
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
        text.contains("export interface BlogPosts {\n  title: string;\n  date?: string | null;\n"),
        "{text}"
    );
    assert!(text.contains("  status?: \"published\" | \"draft\" | null;\n"), "{text}");
    assert!(!text.contains("interface Pages"), "{text}");
}
