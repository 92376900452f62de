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
    // A restore (the versions are the server's own history) is a commit like any write.
    let (_, versions) = server.get("/cms/collections/blog-posts/items/in-git/versions", Some(&ann));
    let oldest =
        versions["versions"].as_array().and_then(|v| v.last()).expect("versions")["timestamp"].clone();
    let restore = format!("/cms/collections/blog-posts/items/in-git/versions/{oldest}/restore");
    assert_eq!(send(&server, "POST", &restore, &ann, Some(json!({}))), 200);
    wait_for_commits(root, before + 4);
    let restored = git(root, &["show", "HEAD:content/posts/in-git.md"]);
    assert!(restored.contains("title: In git\n"), "the first version again: {restored}");
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
    wait_for_commits(root, before + 5);
    assert_eq!(send(&server, "DELETE", "/cms/collections/blog-posts/items/in-git", &ann, None), 200);
    wait_for_commits(root, before + 6);

    let log = git(root, &["log", "--format=%an <%ae>|%s", "--", "content/posts/in-git.md"]);
    assert_eq!(
        log.lines().collect::<Vec<_>>(),
        [
            "ann-laptop <ann@example.com>|Delete blog-posts/in-git",
            "ann-laptop <ann@example.com>|Update blog-posts/in-git",
            "dan-agent <dan@example.com>|Update blog-posts/in-git",
            "bob-ci <bob@example.com>|Update blog-posts/in-git",
            "ann-laptop <ann@example.com>|Create blog-posts/in-git",
        ]
    );
    let editor = git(root, &["log", "-1", "--skip=1", "--format=%an <%ae>|%s"]);
    assert!(editor.starts_with("cat@example.com <cat@example.com>|Create blog-posts/"), "{editor}");
    // Each commit holds its write: the agent's commit has the title bob gave.
    let dans = git(root, &["log", "-1", "--skip=3", "--format=%H"]);
    let text = git(root, &["show", &format!("{}:content/posts/in-git.md", dans.trim())]);
    assert!(text.contains("title: In git, twice") && text.contains("Said by an agent."), "{text}");
    for skip in 0..6 {
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

/// The commits `git log` lists for `path` (newest first).
fn commits_of(dir: &Path, path: &str) -> Vec<String> {
    git(dir, &["log", "--format=%H", "--", path]).lines().map(str::to_owned).collect()
}

/// The commits an item's versions list names, newest first.
fn version_commits(versions: &Value) -> Vec<String> {
    versions["versions"]
        .as_array()
        .expect("versions")
        .iter()
        .map(|v| v["commit"].as_str().unwrap_or("(no commit)").to_owned())
        .collect()
}

#[test]
fn an_items_versions_are_the_commits_of_its_file_also_once_deleted() {
    let site = git_site("");
    let root = site.path();
    let ann = key_named(root, "ann@example.com", "editor", "ann-laptop", &[]);
    user_with_password(root, "cat@example.com", "editor");
    // A site already in git, with a developer's history.
    git(root, &["init", "-q", "-b", "main"]);
    fs::write(root.join(".gitignore"), "/.cms/\n").unwrap();
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "Import the site"]);
    let path = "content/posts/2026-01-12-hello-world.md";
    let mut text = fs::read_to_string(root.join(path)).unwrap();
    text.push_str("\nFixed by hand.\n");
    fs::write(root.join(path), &text).unwrap();
    git(root, &["commit", "-q", "-am", "Fix hello by hand"]);
    let before = commit_count(root);
    let server = Server::start(root);
    let item = "/cms/collections/blog-posts/items/hello-world";

    let patch = json!({"fm": {"title": "Hello from ann"}});
    assert_eq!(send(&server, "PATCH", item, &ann, Some(patch)), 200);
    wait_for_commits(root, before + 1);
    let (status, versions) = server.get(&format!("{item}/versions"), Some(&ann));
    assert_eq!(status, 200, "{versions}");
    // The earlier commits, newest first; the newest (ann's) is the current content.
    assert_eq!(version_commits(&versions), commits_of(root, path)[1..], "{versions}");
    assert_eq!(versions["versions"][0]["author"], "Dev");
    assert!(versions["current"]["size"].as_u64().is_some(), "{versions}");
    let stamps: Vec<i64> =
        versions["versions"].as_array().unwrap().iter().map(|v| v["timestamp"].as_i64().unwrap()).collect();
    assert!(stamps.windows(2).all(|pair| pair[0] > pair[1]), "unique, newest first: {stamps:?}");
    // Read: each version holds its commit's content.
    let (status, fixed) = server.get(&format!("{item}/versions/{}", stamps[0]), Some(&ann));
    assert_eq!(status, 200, "{fixed}");
    assert!(fixed["body"].as_str().unwrap().contains("Fixed by hand."), "{fixed}");
    assert_eq!(fixed["fm"]["title"], "Hello, World");
    let (_, imported) = server.get(&format!("{item}/versions/{}", stamps[1]), Some(&ann));
    assert!(!imported["body"].as_str().unwrap().contains("Fixed by hand."), "{imported}");
    let (status, _) = server.get(&format!("{item}/versions/12345"), Some(&ann));
    assert_eq!(status, 404);
    // The editor's History page names each version's commit.
    let mut tab = Tab::new(&server);
    assert_eq!(tab.sign_in("cat@example.com", PASSWORD).status, 303);
    let page = tab.get("/admin/collections/blog-posts/items/hello-world/history");
    assert_eq!(page.status, 200, "{}", page.body);
    let fix = versions["versions"][0]["commit"].as_str().unwrap();
    assert!(page.body.contains(&format!("<code>{}</code>", &fix[..12])), "{}", page.body);
    assert!(page.body.contains("The site is kept in git"), "{}", page.body);

    // A restore is a new commit by whoever restored, holding that version's bytes.
    let restore = format!("{item}/versions/{}/restore", stamps[0]);
    assert_eq!(send(&server, "POST", &restore, &ann, Some(json!({}))), 200);
    wait_for_commits(root, before + 2);
    assert_eq!(
        git(root, &["log", "-1", "--format=%an|%s"]).trim(),
        "ann-laptop|Update blog-posts/hello-world"
    );
    let fix_commit = &commits_of(root, path)[2];
    assert_eq!(
        git(root, &["show", &format!("HEAD:{path}")]),
        git(root, &["show", &format!("{fix_commit}:{path}")])
    );
    let (_, versions) = server.get(&format!("{item}/versions"), Some(&ann));
    assert_eq!(version_commits(&versions), commits_of(root, path)[1..], "{versions}");
    assert_eq!(versions["versions"][0]["author"], "ann-laptop");

    // Deleted, and without the server's own copies: the history is git's.
    assert_eq!(send(&server, "DELETE", item, &ann, None), 200);
    wait_for_commits(root, before + 3);
    fs::remove_dir_all(root.join(".cms/versions")).unwrap();
    let (status, versions) = server.get(&format!("{item}/versions"), Some(&ann));
    assert_eq!(status, 200, "{versions}");
    assert_eq!(versions["current"], Value::Null);
    // Every commit but the removal, the newest first.
    assert_eq!(version_commits(&versions), commits_of(root, path)[1..], "{versions}");
    let newest = versions["versions"][0]["timestamp"].clone();
    assert_eq!(
        send(&server, "POST", &format!("{item}/versions/{newest}/restore"), &ann, Some(json!({}))),
        200
    );
    wait_for_commits(root, before + 4);
    let (status, back) = server.get(item, None);
    assert_eq!(status, 200, "{back}");
    assert!(back["data"]["body_html"].as_str().unwrap_or_default().contains("Fixed by hand."), "{back}");
    git(root, &["fsck", "--strict"]);
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
    // The issue's check: after 1,000 writes and a push, a fresh clone equals the site.
    for i in 0..1000 {
        let item = json!({"slug": format!("pushed-{i}"), "date_prefix": false, "fm": {"title": format!("Pushed {i}")}});
        assert_eq!(send(&server, "POST", "/cms/collections/blog-posts/items", &key, Some(item)), 200);
    }
    // Media are commits too.
    let (status, uploaded) = crate::resources::post_upload(&server, &key, "notes.txt", 300);
    assert_eq!(status, 200, "{uploaded}");
    let head = || git(root, &["rev-parse", "HEAD"]);
    let pushed = poll(
        || {
            (
                git(&bare, &["for-each-ref", "--format=%(objectname)", "refs/heads/main"]),
                server.get("/readyz", None).1,
            )
        },
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
    // One commit by its author (it may share it with the author's last item, written while
    // the committer was busy).
    let media = git(root, &["log", "--format=%an|%B", "--", "media/uploads/notes.txt"]);
    assert!(media.starts_with("ann|") && media.contains("Create uploads/notes.txt"), "{media}");
    assert_eq!(git(root, &["rev-list", "--count", "HEAD", "--", "media/uploads/notes.txt"]).trim(), "1");
    let status = stdout(&cms(root, &["git", "status"]));
    assert!(status.contains("remote:     origin") && status.contains("unpushed:   0 commits"), "{status}");
}

/// A child process stopped when the test ends, however it ends.
struct Stopping(std::process::Child);

impl Drop for Stopping {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_git_daemon_remote_takes_pushes_and_gives_pulls() {
    let remotes = tempfile::tempdir().unwrap();
    let bare = remotes.path().join("site.git");
    git(remotes.path(), &["init", "-q", "--bare", "-b", "main", bare.to_str().unwrap()]);
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let _daemon = Stopping(
        // `git daemon` would start `git-daemon` as a child of its own, left running.
        Command::new(Path::new(git(remotes.path(), &["--exec-path"]).trim()).join("git-daemon"))
            .args(["--reuseaddr", "--export-all", "--enable=receive-pack", "--listen=127.0.0.1"])
            .arg(format!("--port={port}"))
            .arg(format!("--base-path={}", remotes.path().display()))
            .arg(remotes.path())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("git daemon"),
    );
    let url = format!("git://127.0.0.1:{port}/site.git");
    let listening = poll(
        || {
            Command::new("git")
                .args(["ls-remote", &url])
                .output()
                .map(|out| out.status.success())
                .unwrap_or(false)
        },
        |up| *up,
    );
    assert!(listening, "git daemon on {url}");
    let site = git_site("  remote: origin\n  pull_every_secs: 1\n");
    let root = site.path();
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["remote", "add", "origin", &url]);
    let key = key_named(root, "ann@example.com", "editor", "ann", &[]);
    let server = Server::start(root);
    let item = json!({"slug": "over-git-protocol", "date_prefix": false, "fm": {"title": "Sent"}});
    assert_eq!(send(&server, "POST", "/cms/collections/blog-posts/items", &key, Some(item)), 200);
    let head = || git(root, &["rev-parse", "HEAD"]);
    let remote_head = poll(
        || git(&bare, &["for-each-ref", "--format=%(objectname)", "refs/heads/main"]),
        |remote| *remote == head() && git(root, &["log", "-1", "--format=%s"]).starts_with("Create"),
    );
    assert_eq!(remote_head, head(), "pushed through git daemon");
    // A developer's commit, pushed through the daemon, is pulled within the interval.
    let clone = remotes.path().join("clone");
    git(remotes.path(), &["clone", "-q", &url, clone.to_str().unwrap()]);
    fs::write(
        clone.join("content/posts/from-a-clone.md"),
        "---\ntitle: From a clone\nstatus: published\n---\n",
    )
    .unwrap();
    git(&clone, &["add", "-A", "."]);
    git(&clone, &["commit", "-q", "-m", "from a clone"]);
    git(&clone, &["push", "-q", "origin", "main"]);
    let (status, body) =
        poll(|| server.get("/cms/collections/blog-posts/items/from-a-clone", None), |(s, _)| *s == 200);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["title"], "From a clone");
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
    // The editor's home page says so too, as a problem: with git's words to an admin, in
    // short to an editor.
    user_with_password(root, "adm@example.com", "admin");
    let mut tab = Tab::new(&server);
    assert_eq!(tab.sign_in("adm@example.com", PASSWORD).status, 303);
    let home = tab.get("/admin/");
    assert_eq!(home.status, 200);
    assert!(home.body.contains("<h2 id=\"site-notice-1\">Git: branch main</h2>"), "{}", home.body);
    assert!(home.body.contains("2 commits waiting: pushes to origin fail since"), "{}", home.body);
    assert!(home.body.contains("the remote cannot be reached"), "{}", home.body);
    assert!(home.body.contains("<section class=\"conflict\""), "shown as a problem: {}", home.body);
    user_with_password(root, "cat@example.com", "editor");
    let mut tab = Tab::new(&server);
    assert_eq!(tab.sign_in("cat@example.com", PASSWORD).status, 303);
    let home = tab.get("/admin/");
    assert!(home.body.contains("2 commits waiting to be pushed: pushes fail."), "{}", home.body);
    assert!(!home.body.contains("remote.git") && !home.body.contains("cannot be reached"), "{}", home.body);
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

/// A bare remote, a site that pushes to and pulls from it (`settings` under `git:`), and a
/// developer's clone of the remote.
struct Shared {
    _dir: TempDir,
    site: TempDir,
    bare: std::path::PathBuf,
    clone: std::path::PathBuf,
}

fn shared_site(settings: &str) -> Shared {
    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().join("site.git");
    git(dir.path(), &["init", "-q", "--bare", "-b", "main", bare.to_str().unwrap()]);
    let site = git_site(&format!("  remote: origin\n{settings}"));
    git(site.path(), &["init", "-q", "-b", "main"]);
    git(site.path(), &["remote", "add", "origin", bare.to_str().unwrap()]);
    // The site's first commit, pushed by hand so that the clone has it.
    fs::write(site.path().join(".gitignore"), "/.cms/\n").unwrap();
    git(site.path(), &["add", "-A", "."]);
    git(site.path(), &["commit", "-q", "-m", "the site"]);
    git(site.path(), &["push", "-q", "origin", "main"]);
    let clone = dir.path().join("clone");
    git(dir.path(), &["clone", "-q", bare.to_str().unwrap(), clone.to_str().unwrap()]);
    Shared { _dir: dir, site, bare, clone }
}

#[test]
fn a_commit_pushed_elsewhere_reaches_the_api_and_private_state_never_comes_in() {
    let shared = shared_site("  pull_every_secs: 1\n");
    let root = shared.site.path();
    let server = Server::start(root);
    let hello = "content/posts/2026-01-12-hello-world.md";
    let text = fs::read_to_string(shared.clone.join(hello))
        .unwrap()
        .replace("title: Hello, World", "title: Hello from a clone");
    fs::write(shared.clone.join(hello), text).unwrap();
    fs::write(
        shared.clone.join("content/posts/from-git.md"),
        "---\ntitle: From git\nstatus: published\n---\nPulled.\n",
    )
    .unwrap();
    fs::create_dir_all(shared.clone.join(".cms")).unwrap();
    fs::write(shared.clone.join(".cms/users.yaml"), "users: []\n").unwrap();
    git(&shared.clone, &["add", "-A", "--force", "."]);
    git(&shared.clone, &["commit", "-q", "-m", "A developer's change"]);
    git(&shared.clone, &["push", "-q", "origin", "main"]);

    // The pull is done when its status says so (the items are served as each is written).
    let (_, ready) = poll(|| server.get("/readyz", None), |(_, ready)| ready["git"]["pulled_at"].is_string());
    assert!(ready["git"]["pull_error"].is_null(), "{ready}");
    let (status, item) = server.get("/cms/collections/blog-posts/items/from-git", None);
    assert_eq!(status, 200, "{item}");
    let (_, hello_item) = server.get("/cms/collections/blog-posts/items/hello-world", None);
    assert!(hello_item.to_string().contains("Hello from a clone"), "{hello_item}");
    // The developer's commit is in the site's history as it was made.
    assert!(git(root, &["log", "--format=%an|%s"]).contains("Dev|A developer's change"));
    // Private state in a pushed commit is never written into the site's .cms/.
    assert!(!fs::read_to_string(root.join(".cms/users.yaml")).unwrap_or_default().contains("users: []"));
}

#[test]
fn a_forge_webhook_asks_for_a_pull_with_the_secret() {
    let shared = shared_site("  pull_every_secs: 0\n  pull_token_env: CMS_TEST_PULL_SECRET\n");
    let root = shared.site.path();
    let mut command = Command::new(BIN);
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--site"])
        .arg(root)
        .env("CMS_TEST_PULL_SECRET", "s3cret");
    let server = Server::spawn(command);
    fs::write(shared.clone.join("content/posts/asked.md"), "---\ntitle: Asked\nstatus: published\n---\n")
        .unwrap();
    git(&shared.clone, &["add", "-A", "."]);
    git(&shared.clone, &["commit", "-q", "-m", "asked for"]);
    git(&shared.clone, &["push", "-q", "origin", "main"]);
    let pull = |secret: Option<&str>| {
        let mut request = server.agent.post(format!("{}/cms/git/pull", server.base));
        if let Some(secret) = secret {
            request = request.header("Authorization", format!("Bearer {secret}"));
        }
        let mut response = request.send_empty().unwrap();
        (response.status().as_u16(), response.body_mut().read_json::<Value>().unwrap_or(Value::Null))
    };
    let (status, body) = pull(Some("wrong"));
    assert_eq!(status, 401);
    assert!(body["error"].as_str().unwrap_or_default().contains("git.pull_token_env"), "{body}");
    assert_eq!(server.get("/cms/collections/blog-posts/items/asked", None).0, 404, "no pull on its own");
    assert_eq!(pull(Some("s3cret")).0, 202);
    let (status, _) =
        poll(|| server.get("/cms/collections/blog-posts/items/asked", None), |(s, _)| *s == 200);
    assert_eq!(status, 200);
}

#[test]
fn a_conflict_keeps_the_remotes_version_current_and_this_sites_on_a_branch() {
    let shared = shared_site("  pull_every_secs: 0\n  pull_token_env: CMS_TEST_PULL_SECRET\n");
    let root = shared.site.path();
    let key = key_named(root, "ann@example.com", "editor", "ann", &[]);
    user_with_password(root, "cat@example.com", "editor");
    let mut command = Command::new(BIN);
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--site"])
        .arg(root)
        .env("CMS_TEST_PULL_SECRET", "s3cret");
    let server = Server::spawn(command);
    let hello = "content/posts/2026-01-12-hello-world.md";
    // Both sides change the same line of the same item.
    let remote_text = fs::read_to_string(shared.clone.join(hello))
        .unwrap()
        .replace("title: Hello, World", "title: Remote title");
    fs::write(shared.clone.join(hello), &remote_text).unwrap();
    git(&shared.clone, &["commit", "-q", "-am", "the remote's title"]);
    git(&shared.clone, &["push", "-q", "origin", "main"]);
    let remote_head = git(&shared.clone, &["rev-parse", "HEAD"]).trim().to_owned();
    let patch = json!({"fm": {"title": "Local title"}});
    assert_eq!(
        send(&server, "PATCH", "/cms/collections/blog-posts/items/hello-world", &key, Some(patch)),
        200
    );
    let local_head = poll(
        || git(root, &["log", "-1", "--format=%H|%s"]),
        |log| log.contains("Update blog-posts/hello-world"),
    );
    let local_head = local_head.split('|').next().unwrap().to_owned();

    let asked = server
        .agent
        .post(format!("{}/cms/git/pull", server.base))
        .header("Authorization", "Bearer s3cret")
        .send_empty()
        .unwrap();
    assert_eq!(asked.status().as_u16(), 202);
    let (_, item) = poll(
        || server.get("/cms/collections/blog-posts/items/hello-world", None),
        |(_, item)| item.to_string().contains("Remote title"),
    );
    assert!(item.to_string().contains("Remote title"), "the remote's version is current: {item}");
    let (_, ready) = poll(|| server.get("/readyz", None), |(_, ready)| ready["git"]["conflicts"] == 1);
    assert!(ready["git"]["pulled_at"].is_string(), "{ready}");
    // Both versions stay reachable: the remote's old head is in the branch's history, this
    // site's is on its conflict branch, which was pushed too.
    git(root, &["merge-base", "--is-ancestor", &remote_head, "HEAD"]);
    let branches =
        git(root, &["branch", "--list", "cms/conflict-*", "--format=%(refname:short) %(objectname)"]);
    let (branch, at) =
        branches.trim().split_once(' ').unwrap_or_else(|| panic!("no conflict branch: {branches}"));
    assert_eq!(at, local_head);
    let kept = git(root, &["show", &format!("{branch}:{hello}")]);
    assert!(kept.contains("Local title"), "{kept}");
    assert!(git(root, &["log", "-1", "--format=%B"]).contains(branch), "the merge names the branch");
    poll(|| git(&shared.bare, &["branch", "--list", "cms/conflict-*"]), |b| b.contains(branch));
    // And in the item's history.
    let (_, versions) = server.get("/cms/collections/blog-posts/items/hello-world/versions", Some(&key));
    let newest = versions["versions"][0]["timestamp"].as_i64().unwrap_or_else(|| panic!("{versions}"));
    let (_, old) =
        server.get(&format!("/cms/collections/blog-posts/items/hello-world/versions/{newest}"), Some(&key));
    assert!(old.to_string().contains("Local title"), "{old}");
    git(root, &["fsck", "--strict"]);
    assert_eq!(git(root, &["status", "--porcelain"]), "", "the folder is the merge");
    let status = stdout(&cms(root, &["git", "status"]));
    assert!(status.contains("conflict") && status.contains(branch), "{status}");
    let check = stdout(&cms(root, &["check"]));
    assert!(check.contains("warning: git: a pull at") && check.contains(hello), "{check}");
    // The editor marks the item, and shows both versions side by side.
    let mut tab = Tab::new(&server);
    assert_eq!(tab.sign_in("cat@example.com", PASSWORD).status, 303);
    let page = tab.get("/admin/collections/blog-posts/items/2026-01-12-hello-world.md");
    assert!(
        page.body.contains("A git pull met a conflict on this item") && page.body.contains(branch),
        "{}",
        page.body
    );
    let compare = page.body.split("id=\"item-notice-compare\"").next().unwrap();
    let href = compare.rsplit("href=\"").next().unwrap().split('"').next().unwrap().to_owned();
    let diff = tab.get(&href);
    assert_eq!(diff.status, 200, "{href}");
    assert!(diff.body.contains("Local title") && diff.body.contains("Remote title"), "{}", diff.body);
    let other = tab.get("/admin/collections/blog-posts/items/2026-02-03-writing-with-frontmatter.md");
    assert!(!other.body.contains("item-notice"), "only the conflicted item is marked");
    // Resolved once looked at (the notice's button, or `cms git resolve FILE`): the editor
    // and `cms check` stop showing it.
    let action = "/admin/collections/blog-posts/items/2026-01-12-hello-world.md/notice/dismiss";
    assert!(page.body.contains(&format!("<form method=\"post\" action=\"{action}\">")), "{}", page.body);
    let csrf = tab.csrf();
    let resolved = tab.post(action, &[("csrf", &csrf)], &[]);
    assert_eq!(resolved.status, 303, "{}", resolved.body);
    let page = tab.get("/admin/collections/blog-posts/items/2026-01-12-hello-world.md?ok=notice-dismissed");
    assert!(!page.body.contains("item-notice"), "{}", page.body);
    assert!(page.body.contains("Marked as resolved."), "{}", page.body);
    assert!(!stdout(&cms(root, &["check"])).contains("warning: git: a pull at"));
    assert_eq!(server.get("/readyz", None).1["git"]["conflicts"], 0);
    let again = cms(root, &["git", "resolve", hello]);
    assert!(String::from_utf8_lossy(&again.stderr).contains("no conflict is recorded for"));
}

#[test]
fn twenty_kills_during_commits_and_pushes_lose_no_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().join("site.git");
    git(dir.path(), &["init", "-q", "--bare", "-b", "main", bare.to_str().unwrap()]);
    let site = git_site("  remote: origin\n");
    let root = site.path();
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["remote", "add", "origin", bare.to_str().unwrap()]);
    let key = key_named(root, "ann@example.com", "editor", "ann", &[]);
    let mut acknowledged = Vec::new();
    for round in 0..20 {
        let mut server = Server::start(root);
        for i in 0..3 {
            let slug = format!("r{round}-{i}");
            let item = json!({"slug": slug, "date_prefix": false, "fm": {"title": "Killed"}});
            assert_eq!(send(&server, "POST", "/cms/collections/blog-posts/items", &key, Some(item)), 200);
            acknowledged.push(slug);
        }
        // Killed while it commits and pushes what it just acknowledged.
        server.child.kill().unwrap();
        server.child.wait().unwrap();
    }
    let server = Server::start(root);
    let (_, ready) = poll(
        || server.get("/readyz", None),
        |(_, ready)| ready["git"]["queued"] == 0 && ready["git"]["unpushed"] == 0,
    );
    assert_eq!(ready["git"]["unpushed"], 0, "{ready}");
    let tracked = git(root, &["ls-tree", "-r", "--name-only", "HEAD", "content/posts"]);
    for slug in &acknowledged {
        assert!(tracked.contains(&format!("content/posts/{slug}.md")), "{slug} is committed");
    }
    git(root, &["fsck", "--strict"]);
    git(&bare, &["fsck", "--strict"]);
    assert_eq!(git(&bare, &["rev-parse", "main"]), git(root, &["rev-parse", "HEAD"]));
    assert_eq!(git(root, &["status", "--porcelain"]), "");
}
