//! A stranger's first hour, over the real binary: `cms init`, serving the new site, the
//! license that explains itself, a CLI that cannot act on the wrong site, `cms check`, and
//! the JSON Schema of `cms.yaml`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::{BIN, Server, stdout};

const OWNER: &str = "me@example.com";

/// `cms ARGS` in `cwd`, with none of the caller's `CMS_*` or `RUST_LOG` settings.
fn run_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .env_remove("CMS_SITE")
        .env_remove("CMS_LISTEN")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// `cms --site SITE ARGS`.
fn on(site: &Path, args: &[&str]) -> Output {
    let mut all = vec!["--site", site.to_str().unwrap()];
    all.extend_from_slice(args);
    run_in(site.parent().unwrap(), &all)
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// What `cms init` printed once: the owner's key and password.
struct Made {
    site: PathBuf,
    printed: String,
    key: Option<String>,
    password: Option<String>,
}

/// `cms init <dir>/my-site [--owner OWNER]`.
fn init(dir: &Path, owner: bool) -> Made {
    let site = dir.join("my-site");
    let mut args = vec!["init", site.to_str().unwrap()];
    if owner {
        args.extend(["--owner", OWNER]);
    }
    let output = run_in(dir, &args);
    assert!(output.status.success(), "cms init: {}", stderr(&output));
    let printed = stdout(&output);
    let lines: Vec<&str> = printed.lines().collect();
    let key = lines.iter().find(|l| l.starts_with("api_")).map(|l| (*l).to_owned());
    let password = lines
        .iter()
        .position(|l| l.contains("password for the web editor"))
        .map(|at| lines[at + 1].trim().to_owned());
    Made { site, printed, key, password }
}

/// `cms init DIR --owner E` → `cms serve --site DIR`: the list answers, the sign-in page
/// answers, and the key and the password printed once both work.
#[test]
fn init_makes_a_site_that_serves_with_the_printed_key_and_password() {
    let dir = tempfile::tempdir().unwrap();
    let made = init(dir.path(), true);
    let (key, password) = (made.key.clone().expect("a key"), made.password.clone().expect("a password"));
    assert!(key.starts_with("api_") && password.len() >= 16, "{}", made.printed);
    // It says what it wrote, which features the license has, and what to run next.
    for expected in
        ["cms.yaml", "license", "json_api, theme_customization, webhooks, mcp", "cms serve --site"]
    {
        assert!(made.printed.contains(expected), "{expected}: {}", made.printed);
    }
    let config = fs::read_to_string(made.site.join("cms.yaml")).unwrap();
    assert!(config.starts_with("# yaml-language-server: $schema=./cms.schema.json\n"), "{config}");
    for folder in ["content/posts", "content/pages", "media/uploads"] {
        assert!(made.site.join(folder).is_dir(), "{folder}");
    }

    let server = Server::start(&made.site);
    let (status, list) = server.get("/cms/collections/posts/items", None);
    assert_eq!(status, 200, "{list}");
    let (status, all) = server.get("/cms/collections/posts/items?status=all", Some(&key));
    assert_eq!(status, 200, "the printed key works: {all}");
    assert_eq!(server.get("/cms/collections/posts/items?status=all", Some("api_0000")).0, 401);

    let (status, cookie, location) = sign_in(&server, OWNER, &password);
    assert_eq!((status, location.as_deref()), (303, Some("/admin/")), "the printed password works");
    assert!(cookie.is_some(), "a session cookie");
    let (status, _, location) = sign_in(&server, OWNER, "not the password");
    assert_ne!((status, location.as_deref()), (303, Some("/admin/")));
    drop(server);

    // A folder that is not empty is refused, and left as it was.
    let again = run_in(dir.path(), &["init", made.site.to_str().unwrap(), "--owner", OWNER]);
    assert!(!again.status.success());
    assert!(stderr(&again).contains("not empty"), "{}", stderr(&again));
    assert_eq!(fs::read_to_string(made.site.join("cms.yaml")).unwrap(), config);
}

/// Signs in through the web editor's form: the status, the session cookie, the redirect.
fn sign_in(server: &Server, email: &str, password: &str) -> (u16, Option<String>, Option<String>) {
    let agent: ureq::Agent =
        ureq::Agent::config_builder().http_status_as_error(false).max_redirects(0).build().into();
    let mut form = agent.get(format!("{}/admin/signin", server.base)).call().unwrap();
    assert_eq!(form.status().as_u16(), 200);
    let cookies: BTreeMap<String, String> = form
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| {
            v.to_str().ok()?.split(';').next()?.split_once('=').map(|(k, v)| (k.into(), v.into()))
        })
        .collect();
    let body = form.body_mut().read_to_string().unwrap();
    let at = body.find("name=\"csrf\" value=\"").expect("a csrf field") + 19;
    let csrf = &body[at..at + body[at..].find('"').unwrap()];
    let cookie = cookies.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ");
    let mut request = agent.post(format!("{}/admin/signin", server.base));
    if !cookie.is_empty() {
        request = request.header("Cookie", cookie);
    }
    let answer = request
        .send_form([("csrf", csrf), ("email", email), ("password", password), ("next", "/admin/")])
        .unwrap();
    let header = |name: &str| answer.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let session = answer
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| !v.contains("Max-Age=0") && v.contains("session"))
        .map(str::to_owned);
    (answer.status().as_u16(), session, header("location"))
}

/// Without a license every route answers 402: the server says so loudly at start, with
/// the command that fixes it, and the 402 names that command too.
#[test]
fn a_site_without_a_license_warns_at_start_and_its_402_names_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let made = init(dir.path(), false);
    fs::remove_file(made.site.join(".cms/license.yaml")).unwrap();
    let log = dir.path().join("server.log");
    let server = Server::start_logging_to(&made.site, &log);
    // Written by the log's own thread: soon, not necessarily before the banner's end.
    let warned = crate::poll(|| fs::read_to_string(&log).unwrap(), |warned| warned.contains("402"));
    assert!(
        warned.contains("no license is installed") && warned.contains("cms license install"),
        "the start warns: {warned}"
    );
    assert!(warned.contains("402"), "{warned}");
    for path in ["/status", "/cms/collections/posts/items", "/admin/signin"] {
        let (status, body) = server.get(path, None);
        assert_eq!(status, 402, "{path}");
        if path != "/admin/signin" {
            assert!(body.to_string().contains("cms license install"), "{path}: {body}");
        }
    }
}

/// `features: [jsonapi]` is refused by `license install` (naming json_api and the known
/// features), and `license show` of such a file says what is wrong instead of "active".
#[test]
fn a_misspelt_feature_is_refused_with_the_known_ones() {
    let dir = tempfile::tempdir().unwrap();
    let made = init(dir.path(), false);
    let installed = fs::read_to_string(made.site.join(".cms/license.yaml")).unwrap();
    let file = dir.path().join("license.yaml");
    fs::write(&file, "licensee: Me\nfeatures: [jsonapi, webhooks]\n").unwrap();
    let refused = on(&made.site, &["license", "install", file.to_str().unwrap()]);
    assert!(!refused.status.success());
    let message = stderr(&refused);
    assert!(message.contains("did you mean json_api?"), "{message}");
    assert!(message.contains("json_api, theme_customization, webhooks, mcp"), "{message}");
    assert_eq!(fs::read_to_string(made.site.join(".cms/license.yaml")).unwrap(), installed);

    // Written by hand: `show` says what is wrong and fails.
    fs::write(made.site.join(".cms/license.yaml"), "licensee: Me\nfeatures: [jsonapi]\n").unwrap();
    let shown = on(&made.site, &["license", "show"]);
    let all = format!("{}{}", stdout(&shown), stderr(&shown));
    assert!(!shown.status.success(), "{all}");
    assert!(all.contains("did you mean json_api?") && all.contains("402"), "{all}");

    let init_typo = run_in(dir.path(), &["init", "other", "--features", "json_api,mpc"]);
    assert!(!init_typo.status.success());
    assert!(stderr(&init_typo).contains("did you mean mcp?"), "{}", stderr(&init_typo));
    assert!(!dir.path().join("other").exists(), "nothing made");
}

/// The CLI refuses to remove or demote the last owner, as the editor does.
#[test]
fn the_last_owner_can_be_neither_removed_nor_demoted() {
    let dir = tempfile::tempdir().unwrap();
    let made = init(dir.path(), true);
    for args in [
        ["users", "remove", "--email", OWNER, "--yes"].as_slice(),
        &["users", "add", "--email", OWNER, "--role", "editor"],
    ] {
        let refused = on(&made.site, args);
        assert!(!refused.status.success(), "{args:?}");
        assert!(stderr(&refused).contains("only owner"), "{args:?}: {}", stderr(&refused));
    }
    assert_eq!(stdout(&on(&made.site, &["users", "list"])), format!("{OWNER} owner\n"));
    assert!(
        on(&made.site, &["users", "add", "--email", "two@example.com", "--role", "owner"]).status.success()
    );
    let removed = on(&made.site, &["users", "remove", "--email", OWNER]);
    assert!(removed.status.success(), "{}", stderr(&removed));
}

/// A command that changes a site needs one named (or the current folder's); it never
/// falls back to the demo. Each such command says first which site it used.
#[test]
fn a_command_without_a_site_is_refused_and_says_how_to_name_one() {
    let dir = tempfile::tempdir().unwrap();
    let made = init(dir.path(), false);
    let elsewhere = tempfile::tempdir().unwrap();
    let demo = elsewhere.path().join("demo");
    let refused = Command::new(BIN)
        .args(["users", "add", "--email", OWNER, "--role", "owner"])
        .current_dir(elsewhere.path())
        .env_remove("CMS_SITE")
        .env("CMS_DEMO_COPY", &demo)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let message = stderr(&refused);
    assert!(
        message.contains("--site") && message.contains("CMS_SITE") && message.contains("cms init"),
        "{message}"
    );
    assert!(!demo.exists(), "no demo copy is made for a command");

    // Inside the site folder, the folder is the site.
    let added = run_in(&made.site, &["users", "add", "--email", OWNER, "--role", "owner"]);
    assert!(added.status.success(), "{}", stderr(&added));
    let site = made.site.canonicalize().unwrap();
    assert_eq!(stderr(&added).lines().next(), Some(format!("site: {}", site.display()).as_str()));
    assert_eq!(stdout(&added), format!("added {OWNER} (owner)\n"));
    // A command that only reads says nothing about the site, and CMS_SITE names one.
    let listed = Command::new(BIN).args(["users", "list"]).env("CMS_SITE", &made.site).output().unwrap();
    assert_eq!((stdout(&listed), stderr(&listed)), (format!("{OWNER} owner\n"), String::new()));
}

/// A second `cms serve` on a folder that a server serves stops at its start, naming the
/// first (its process and address) and the fix; the first goes on answering, `cms check`
/// names it, and once it has stopped a server starts on the folder again.
#[test]
fn a_second_server_on_a_served_folder_is_refused_naming_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let made = init(dir.path(), true);
    let first = Server::start(&made.site);

    let second = on(&made.site, &["serve", "--listen", "127.0.0.1:0"]);
    assert!(!second.status.success());
    let message = stderr(&second);
    let holder = format!("(process {}, listening on {})", first.child.id(), first.base);
    assert!(
        message.contains(&format!("another server already serves this site folder {holder}")),
        "{message}"
    );
    assert!(message.contains("Stop it first") && message.contains("keep the site in a bucket"), "{message}");
    assert!(!stdout(&second).contains("listening on"), "{}", stdout(&second));
    assert_eq!(first.get("/status", None).0, 200);
    let checked = stdout(&on(&made.site, &["check"]));
    assert!(checked.contains(&format!("ok: a server serves this folder now {holder}\n")), "{checked}");

    drop(first);
    let checked = stdout(&on(&made.site, &["check"]));
    assert!(checked.contains("ok: no server serves this folder now\n"), "{checked}");
    let again = Server::start(&made.site);
    assert_eq!(again.get("/status", None).0, 200);
}

/// `cms check` passes on a new site and fails, naming the key and the line, on a broken
/// `cms.yaml`; a collection whose folder is missing and a file that cannot be read are
/// named too.
#[test]
fn check_passes_on_a_new_site_and_names_what_is_broken() {
    let dir = tempfile::tempdir().unwrap();
    let made = init(dir.path(), true);
    let passed = on(&made.site, &["check"]);
    assert!(passed.status.success(), "{}{}", stdout(&passed), stderr(&passed));
    assert!(stdout(&passed).contains("no problems"), "{}", stdout(&passed));

    fs::write(made.site.join("content/posts/broken.md"), "---\ntitle: [unclosed\n---\nbody\n").unwrap();
    fs::remove_dir(made.site.join("content/pages"))
        .unwrap_or_else(|_| fs::remove_dir_all(made.site.join("content/pages")).unwrap());
    let found = on(&made.site, &["check"]);
    let report = stdout(&found);
    assert!(!found.status.success(), "{report}");
    assert!(report.contains("collections[1].path") && report.contains("content/pages"), "{report}");
    assert!(report.contains("broken.md"), "{report}");

    let config = made.site.join("cms.yaml");
    let text = fs::read_to_string(&config).unwrap();
    let broken = text.replacen("  per_page: 10", "  per_page: ten", 1);
    assert_ne!(broken, text, "the template sets site.per_page");
    fs::write(&config, broken).unwrap();
    let failed = on(&made.site, &["check"]);
    let report = format!("{}{}", stdout(&failed), stderr(&failed));
    assert!(!failed.status.success());
    assert!(
        report.contains("site.per_page") && report.contains("line ") && report.contains("whole number"),
        "{report}"
    );
}

/// The JSON Schema `cms config schema` prints (and `cms init` saves beside `cms.yaml`)
/// validates the initialised `cms.yaml` with Python's `jsonschema`, and refuses a value of
/// the wrong type.
#[test]
fn the_json_schema_validates_the_initialised_config_and_refuses_a_wrong_type() {
    let dir = tempfile::tempdir().unwrap();
    let made = init(dir.path(), false);
    let printed = run_in(dir.path(), &["config", "schema"]);
    assert!(printed.status.success(), "{}", stderr(&printed));
    let schema: Value = serde_json::from_slice(&printed.stdout).unwrap();
    let saved: Value =
        serde_json::from_str(&fs::read_to_string(made.site.join("cms.schema.json")).unwrap()).unwrap();
    assert_eq!(schema, saved, "cms init saves the same schema");
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");

    let Some(python) = python_with_jsonschema() else {
        return cms_s3::testing::skip_check(
            "Python's jsonschema package",
            cms_s3::testing::INSTALL_PYTHON_PACKAGES,
        );
    };
    let text = fs::read_to_string(made.site.join("cms.yaml")).unwrap();
    let config: Value = serde_saphyr::from_str(&text).unwrap();
    let mut wrong = config.clone();
    wrong["site"]["per_page"] = Value::from("ten");
    let schema_file = dir.path().join("schema.json");
    fs::write(&schema_file, serde_json::to_vec(&schema).unwrap()).unwrap();
    let validate = |instance: &Value| {
        let file = dir.path().join("instance.json");
        fs::write(&file, serde_json::to_vec(instance).unwrap()).unwrap();
        Command::new(&python).args(["-c", VALIDATE]).arg(&schema_file).arg(&file).output().unwrap()
    };
    let valid = validate(&config);
    assert!(valid.status.success(), "{}{}", stdout(&valid), stderr(&valid));
    let invalid = validate(&wrong);
    assert!(!invalid.status.success());
    assert!(stdout(&invalid).contains("per_page"), "{}{}", stdout(&invalid), stderr(&invalid));
}

/// Validates the JSON file argv[2] against the schema argv[1]; prints the errors.
pub(crate) const VALIDATE: &str = r#"
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
errors = list(jsonschema.Draft202012Validator(schema).iter_errors(json.load(open(sys.argv[2]))))
for error in errors:
    print("/".join(str(p) for p in error.absolute_path), error.message)
sys.exit(1 if errors else 0)
"#;

pub(crate) fn python_with_jsonschema() -> Option<PathBuf> {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/validators-venv/bin/python");
    let candidates = [std::env::var_os("CMS_PYTHON").map(PathBuf::from), Some(venv), Some("python3".into())];
    candidates.into_iter().flatten().find(|python| {
        Command::new(python)
            .args(["-c", "import jsonschema"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// `--version` names the commit; commands log nothing at the default level; times are
/// RFC 3339; `--listen` belongs to `serve`.
#[test]
fn the_cli_names_its_commit_logs_quietly_and_prints_rfc_3339_times() {
    let dir = tempfile::tempdir().unwrap();
    let version = run_in(dir.path(), &["--version"]);
    let version = stdout(&version);
    let expected = format!("cms {} (commit ", env!("CARGO_PKG_VERSION"));
    assert!(version.starts_with(&expected), "{version}");
    let commit = version.trim_end().trim_end_matches(')').rsplit(' ').next().unwrap();
    assert!(
        commit == "unknown" || (commit.len() == 12 && commit.chars().all(|c| c.is_ascii_hexdigit())),
        "{version}"
    );

    let made = init(dir.path(), true);
    let listed = on(&made.site, &["keys", "list"]);
    let line = stdout(&listed);
    let created = line.split_whitespace().nth(3).unwrap_or_default();
    assert!(
        time::OffsetDateTime::parse(created, &time::format_description::well_known::Rfc3339).is_ok(),
        "{line}"
    );
    let added = on(&made.site, &["users", "add", "--email", "ed@example.com", "--role", "editor"]);
    assert!(added.status.success());
    assert!(!stderr(&added).contains("INFO"), "no log lines: {}", stderr(&added));

    let listen = on(&made.site, &["users", "list", "--listen", "127.0.0.1:0"]);
    assert!(!listen.status.success(), "--listen is not an option of users list");
    let help = on(&made.site, &["users", "add", "--help"]);
    assert!(!stdout(&help).contains("--listen") && stdout(&help).contains("Examples"), "{}", stdout(&help));
}

/// `cms check` on a bucket site (SeaweedFS): with the credentials it reaches the bucket
/// and finds conditional writes enforced; without them it fails naming the variables.
#[test]
fn check_reaches_the_bucket_and_probes_its_conditional_writes() {
    let Some(storage) = cms_s3::testing::fresh_bucket() else {
        eprintln!("note: skipping the bucket check: no S3 server (run .ci/run)");
        return;
    };
    let credentials = cms_s3::testing::credentials();
    let bucket = cms_s3::S3Site::connect(&storage, Some(credentials.clone())).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let license = dir.path().join("license.yaml");
    fs::write(&license, "licensee: Me\nfeatures: [json_api]\n").unwrap();
    bucket.put_file_blocking(".cms/license.yaml", &license).unwrap();
    let node = dir.path().join("node");
    fs::create_dir(&node).unwrap();
    let config = format!(
        "site:\n  name: S\n  url: https://example.com\ncollections:\n  - label: Posts\n    path: content/posts\nstorage:\n  kind: s3\n  bucket: {}\n  endpoint: {}\n  prefix: {}\n",
        storage.bucket,
        storage.endpoint.as_deref().unwrap(),
        storage.prefix
    );
    fs::write(node.join("cms.yaml"), config).unwrap();
    let check = |with_credentials: bool| {
        let mut command = Command::new(BIN);
        command.arg("--site").arg(&node).arg("check").env_remove("AWS_SESSION_TOKEN");
        if with_credentials {
            command
                .env("AWS_ACCESS_KEY_ID", &credentials.access_key_id)
                .env("AWS_SECRET_ACCESS_KEY", &credentials.secret_access_key);
        } else {
            command.env_remove("AWS_ACCESS_KEY_ID").env_remove("AWS_SECRET_ACCESS_KEY");
        }
        command.output().unwrap()
    };
    let passed = check(true);
    let report = stdout(&passed);
    assert!(passed.status.success(), "{report}{}", stderr(&passed));
    assert!(report.contains("enforces conditional writes"), "{report}");
    let failed = check(false);
    let report = stdout(&failed);
    assert!(!failed.status.success(), "{report}");
    assert!(report.contains("AWS_ACCESS_KEY_ID"), "{report}");
}
