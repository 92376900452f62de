//! The site kept in git (issue 48), checked with the real `git` program: each write through
//! REST, MCP and the editor is one commit by its author touching only the item's file; a
//! bare remote receives every commit and a fresh clone equals the site; an unreachable
//! remote is reported while writes go on; a server killed during commits loses none; a
//! repository that would leak `.cms/` or sits on another branch is refused.

use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::admin::{PASSWORD, Tab, user_with_password};
use crate::mcp::Raw;
use crate::{BIN, Server, cms, demo_site, poll, stdout};

/// `git ARGS` in `dir`, as a developer runs it; its output, after asserting success.
fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "Dev")
        .env("GIT_AUTHOR_EMAIL", "dev@example.com")
        .env("GIT_COMMITTER_NAME", "Dev")
        .env("GIT_COMMITTER_EMAIL", "dev@example.com")
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The demo site with `git:` in its `cms.yaml` (plus `extra` under it).
fn git_site(extra: &str) -> TempDir {
    let site = demo_site();
    let config = site.path().join("cms.yaml");
    let mut text = fs::read_to_string(&config).unwrap();
    text.push_str(&format!("git:\n  branch: main\n{extra}"));
    fs::write(config, text).unwrap();
    site
}

fn key_named(site: &Path, email: &str, role: &str, name: &str, kind: &[&str]) -> String {
    if !stdout(&cms(site, &["users", "list"])).contains(email) {
        assert!(cms(site, &["users", "add", "--email", email, "--role", role]).status.success());
    }
    let mut args = vec!["keys", "create", "--user", email, "--name", name];
    args.extend_from_slice(kind);
    let output = cms(site, &args);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    stdout(&output).lines().last().unwrap().to_owned()
}

fn send(server: &Server, method: &str, path: &str, key: &str, body: Option<Value>) -> u16 {
    let url = format!("{}{path}", server.base);
    let request = |r: ureq::RequestBuilder<ureq::typestate::WithBody>| {
        r.header("Authorization", format!("Bearer {key}"))
            .header("Content-Type", "application/json")
            .send(body.clone().unwrap_or(Value::Null).to_string())
            .unwrap()
            .status()
            .as_u16()
    };
    match method {
        "POST" => request(server.agent.post(url)),
        "PATCH" => request(server.agent.patch(url)),
        "DELETE" => server
            .agent
            .delete(url)
            .header("Authorization", format!("Bearer {key}"))
            .call()
            .unwrap()
            .status()
            .as_u16(),
        _ => unreachable!(),
    }
}

fn commit_count(dir: &Path) -> usize {
    git(dir, &["rev-list", "--count", "HEAD"]).trim().parse().unwrap()
}

/// Waits until the branch has `count` commits (the committer works off the request path).
fn wait_for_commits(dir: &Path, count: usize) {
    let seen = poll(|| commit_count(dir), |n| *n >= count);
    assert_eq!(seen, count, "{}", git(dir, &["log", "--format=%an|%s"]));
}

#[test]
fn each_write_is_one_commit_by_its_author_touching_only_its_file() {
    let site = git_site("");
    let root = site.path();
    let ann = key_named(root, "ann@example.com", "editor", "ann-laptop", &[]);
    let bob = key_named(root, "bob@example.com", "editor", "bob-ci", &[]);
    let dan = key_named(root, "dan@example.com", "editor", "dan-agent", &["--mcp"]);
    user_with_password(root, "cat@example.com", "editor");
    let server = Server::start(root);
    assert!(
        server.banner.iter().any(|line| line.starts_with("git: committing to branch main")),
        "{:?}",
        server.banner
    );
    // The server made the folder a repository, the site as it was its first commit.
    assert_eq!(
        git(root, &["log", "--format=%an <%ae>|%s"]).trim(),
        "cms <cms@localhost>|Start keeping the site in git"
    );
    let before = commit_count(root);

    let created = json!({"slug": "in-git", "date_prefix": false, "fm": {"title": "In git"}, "body": "One."});
    assert_eq!(send(&server, "POST", "/cms/collections/blog-posts/items", &ann, Some(created)), 200);
    wait_for_commits(root, before + 1);
    let patch = json!({"fm": {"title": "In git, twice"}});
    assert_eq!(send(&server, "PATCH", "/cms/collections/blog-posts/items/in-git", &bob, Some(patch)), 200);
    wait_for_commits(root, before + 2);
    let raw = Raw { server: &server, key: dan };
    let session = raw.open();
    let answer = raw.call_tool(
        &session,
        "update_item",
        json!({"collection": "blog-posts", "slug": "in-git", "fm": {"summary": "Said by an agent."}}),
    );
    assert_ne!(answer["isError"], json!(true), "{answer}");
    wait_for_commits(root, before + 3);
    let mut tab = Tab::new(&server);
    assert_eq!(tab.sign_in("cat@example.com", PASSWORD).status, 303);
    let csrf = tab.csrf();
    let made = tab.post(
        "/admin/collections/blog-posts/new",
        &[
            ("csrf", &csrf),
            ("form", "model"),
            ("fm.title", "From the editor"),
            ("status", "draft"),
            ("body", "Typed."),
        ],
        &[],
    );
    assert_eq!(made.status, 303, "{}", made.body);
    wait_for_commits(root, before + 4);
    assert_eq!(send(&server, "DELETE", "/cms/collections/blog-posts/items/in-git", &ann, None), 200);
    wait_for_commits(root, before + 5);

    let log = git(root, &["log", "--format=%an <%ae>|%s", "--", "content/posts/in-git.md"]);
    assert_eq!(
        log.lines().collect::<Vec<_>>(),
        [
            "ann-laptop <ann@example.com>|Delete blog-posts/in-git",
            "dan-agent <dan@example.com>|Update blog-posts/in-git",
            "bob-ci <bob@example.com>|Update blog-posts/in-git",
            "ann-laptop <ann@example.com>|Create blog-posts/in-git",
        ]
    );
    let editor = git(root, &["log", "-1", "--skip=1", "--format=%an <%ae>|%s"]);
    assert!(editor.starts_with("cat@example.com <cat@example.com>|Create blog-posts/"), "{editor}");
    // Each commit holds its write: the agent's commit has the title bob gave.
    let dans = git(root, &["log", "-1", "--skip=2", "--format=%H"]);
    let text = git(root, &["show", &format!("{}:content/posts/in-git.md", dans.trim())]);
    assert!(text.contains("title: In git, twice") && text.contains("Said by an agent."), "{text}");
    for skip in 0..5 {
        let files = git(root, &["show", "--format=", "--name-only", &format!("HEAD~{skip}")]);
        assert_eq!(files.lines().count(), 1, "one item's file per commit: {files}");
        assert!(files.starts_with("content/posts/"), "{files}");
    }
    git(root, &["fsck", "--strict"]);
    // The working tree is clean, and the private state was never committed.
    assert_eq!(git(root, &["status", "--porcelain"]), "");
    assert_eq!(git(root, &["ls-files", ".cms"]), "");
    let (status, ready) = server.get("/readyz", None);
    assert_eq!(status, 200);
    assert_eq!(ready["git"]["branch"], "main");
    assert_eq!(ready["git"]["queued"], 0);
    assert_eq!(ready["git"]["head"], git(root, &["rev-parse", "HEAD"]).trim());
}

#[test]
fn commits_are_pushed_to_a_bare_remote_and_a_clone_equals_the_site() {
    let remotes = tempfile::tempdir().unwrap();
    let bare = remotes.path().join("site.git");
    git(remotes.path(), &["init", "-q", "--bare", "-b", "main", bare.to_str().unwrap()]);
    let site = git_site("  remote: origin\n");
    let root = site.path();
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["remote", "add", "origin", bare.to_str().unwrap()]);
    let key = key_named(root, "ann@example.com", "editor", "ann", &[]);
    let server = Server::start(root);
    for i in 0..40 {
        let item = json!({"slug": format!("pushed-{i}"), "date_prefix": false, "fm": {"title": format!("Pushed {i}")}});
        assert_eq!(send(&server, "POST", "/cms/collections/blog-posts/items", &key, Some(item)), 200);
    }
    let head = || git(root, &["rev-parse", "HEAD"]);
    let pushed = poll(
        || (git(&bare, &["rev-parse", "main"]), server.get("/readyz", None).1),
        |(remote, ready)| *remote == head() && ready["git"]["unpushed"] == 0,
    );
    assert_eq!(pushed.0, head(), "{}", pushed.1);
    assert!(pushed.1["git"]["pushed_at"].is_string(), "{}", pushed.1);
    let clone = remotes.path().join("clone");
    git(remotes.path(), &["clone", "-q", bare.to_str().unwrap(), clone.to_str().unwrap()]);
    let diff =
        Command::new("diff").args(["-r", "-x", ".cms", "-x", ".git"]).arg(root).arg(&clone).output().unwrap();
    assert!(diff.status.success(), "{}", String::from_utf8_lossy(&diff.stdout));
    git(&bare, &["fsck", "--strict"]);
    let status = stdout(&cms(root, &["git", "status"]));
    assert!(status.contains("remote:     origin") && status.contains("unpushed:   0 commits"), "{status}");
}

#[test]
fn an_unreachable_remote_is_reported_and_writes_go_on() {
    let site = git_site("  remote: origin\n");
    let root = site.path();
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["remote", "add", "origin", "/nonexistent/remote.git"]);
    let key = key_named(root, "ann@example.com", "editor", "ann", &[]);
    let server = Server::start(root);
    let item = json!({"slug": "local-only", "date_prefix": false, "fm": {"title": "Local"}});
    assert_eq!(send(&server, "POST", "/cms/collections/blog-posts/items", &key, Some(item)), 200);
    let subject = poll(|| git(root, &["log", "-1", "--format=%s"]), |s| s.starts_with("Create"));
    assert_eq!(subject.trim(), "Create blog-posts/local-only", "the commit is made locally");
    let (status, ready) = poll(
        || server.get("/readyz", None),
        |(_, ready)| ready["git"]["push_error"].is_string() && ready["git"]["unpushed"] == 2,
    );
    assert_eq!(status, 200, "pushes failing do not make the server unready: {ready}");
    let error = ready["git"]["push_error"].as_str().unwrap();
    assert!(error.starts_with("the remote cannot be reached"), "{error}");
    assert_eq!(ready["git"]["unpushed"], 2, "the site's first commit and the write: {ready}");
    let status = stdout(&cms(root, &["git", "status"]));
    assert!(status.contains("pushes to origin fail since"), "{status}");
    assert!(status.contains("the remote cannot be reached"), "{status}");
}

#[test]
fn a_server_killed_during_commits_loses_no_acknowledged_write() {
    let site = git_site("  group_window_ms: 2000\n");
    let root = site.path();
    let key = key_named(root, "ann@example.com", "editor", "ann", &[]);
    for round in 0..3 {
        let mut server = Server::start(root);
        // Acknowledged, then killed within the window in which they wait to be committed.
        for i in 0..5 {
            let item =
                json!({"slug": format!("k{round}-{i}"), "date_prefix": false, "fm": {"title": "Kill"}});
            assert_eq!(send(&server, "POST", "/cms/collections/blog-posts/items", &key, Some(item)), 200);
        }
        server.child.kill().unwrap();
        server.child.wait().unwrap();
        let tracked = git(root, &["ls-tree", "-r", "--name-only", "HEAD", "content/posts"]);
        assert!(!tracked.contains(&format!("k{round}-0.md")), "killed before its commit: {tracked}");
    }
    // The next start commits what the killed servers acknowledged.
    let server = Server::start(root);
    drop(server);
    let tracked = git(root, &["ls-tree", "-r", "--name-only", "HEAD", "content/posts"]);
    for round in 0..3 {
        for i in 0..5 {
            assert!(tracked.contains(&format!("content/posts/k{round}-{i}.md")), "k{round}-{i} in {tracked}");
        }
    }
    let authors = git(root, &["log", "--format=%an", "--", "content/posts/k0-0.md"]);
    assert_eq!(authors.trim(), "ann", "the journal keeps who wrote it");
    git(root, &["fsck", "--strict"]);
    assert_eq!(git(root, &["status", "--porcelain"]), "");
}

#[test]
fn a_repository_that_tracks_private_state_or_sits_on_another_branch_is_refused() {
    let site = git_site("");
    let root = site.path();
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["add", "-A", "--force", "."]);
    git(root, &["commit", "-q", "-m", "everything, .cms/ too"]);
    let refused =
        Command::new(BIN).args(["serve", "--listen", "127.0.0.1:0", "--site"]).arg(root).output().unwrap();
    let error = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        error.contains("tracks .cms/") && error.contains("git -C") && error.contains("rm -r --cached .cms"),
        "{error}"
    );

    git(root, &["rm", "-q", "-r", "--cached", ".cms"]);
    git(root, &["commit", "-q", "-m", "untrack .cms"]);
    git(root, &["switch", "-q", "-c", "drafts"]);
    let refused =
        Command::new(BIN).args(["serve", "--listen", "127.0.0.1:0", "--site"]).arg(root).output().unwrap();
    let error = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(error.contains("has drafts checked out, but git.branch in cms.yaml is main"), "{error}");
    assert!(error.contains("switch main"), "{error}");
}

#[test]
fn init_with_git_makes_a_repository_whose_first_commit_is_the_site() {
    let parent = tempfile::tempdir().unwrap();
    let root = parent.path().join("new-site");
    let output = Command::new(BIN)
        .arg("init")
        .arg(&root)
        .args(["--git", "--owner", "o@example.com"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout(&output).contains(".git/"), "{}", stdout(&output));
    assert_eq!(git(&root, &["log", "--format=%an|%s"]).trim(), "cms|Start keeping the site in git");
    let files = git(&root, &["ls-files"]);
    assert!(files.contains("cms.yaml") && files.contains("content/pages/about.md"), "{files}");
    assert!(!files.contains(".cms/"), "{files}");
    assert!(fs::read_to_string(root.join("cms.yaml")).unwrap().contains("\ngit:\n  branch: main\n"));
    let status = stdout(&cms(&root, &["git", "status"]));
    assert!(status.contains("branch:     main") && status.contains("remote:     none"), "{status}");
}
