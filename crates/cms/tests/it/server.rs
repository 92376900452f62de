use std::fs;
use std::os::unix::fs::symlink;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::{SEEN_WITHIN, Server, cms, demo_site, poll, user_with_key};

/// The server runs with the allocator settings (mimalloc's freed pages given back at once,
/// its arenas committed as used), unless the operator gave their own.
#[test]
fn the_server_runs_with_the_allocator_settings_unless_given() {
    let environ = |server: &Server| {
        let bytes = fs::read(format!("/proc/{}/environ", server.child.id())).unwrap();
        String::from_utf8_lossy(&bytes).split('\0').map(str::to_owned).collect::<Vec<_>>()
    };
    let site = demo_site();
    let server = Server::start(site.path());
    let env = environ(&server);
    assert!(env.contains(&"MIMALLOC_PURGE_DELAY=0".to_owned()), "{env:?}");
    assert!(env.contains(&"MIMALLOC_ARENA_EAGER_COMMIT=0".to_owned()), "{env:?}");
    assert_eq!(server.get("/status", None).0, 200);
    drop(server);

    let mut command = Command::new(crate::BIN);
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--site"])
        .arg(site.path())
        .env("MIMALLOC_PURGE_DELAY", "250");
    let server = Server::spawn(command);
    let env = environ(&server);
    assert!(env.contains(&"MIMALLOC_PURGE_DELAY=250".to_owned()), "{env:?}");
    assert!(!env.iter().any(|v| v.starts_with("MIMALLOC_ARENA_EAGER_COMMIT")), "nothing else added: {env:?}");
    assert_eq!(server.get("/status", None).0, 200);
}

#[test]
fn items_over_real_http_and_revocation_and_graceful_stop() {
    let site = demo_site();
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    let mut server = Server::start(site.path());

    let (status, body) = server.get("/status", None);
    assert_eq!((status, body["data"]["name"].as_str()), (200, Some("Demo Site")));

    let (status, list) = server.get("/cms/collections/blog-posts/items", None);
    assert_eq!(status, 200);
    assert_eq!(list["meta"]["totalItems"], 3, "the draft is hidden: {list}");

    let url = format!("{}/cms/collections/posts/items", server.base);
    let mut created = server
        .agent
        .post(&url)
        .header("Authorization", format!("Bearer {key}"))
        .send_json(json!({"slug": "e2e", "date_prefix": false, "fm": {"title": "E2E", "status": "published"}, "body": "Over *HTTP*."}))
        .unwrap();
    assert_eq!(created.status().as_u16(), 200);
    assert_eq!(created.headers()["location"], "/cms/collections/blog-posts/items/e2e");
    let created: serde_json::Value = created.body_mut().read_json().unwrap();
    assert_eq!(created, json!({"filename": "e2e.md", "folder": 0, "message": "File created."}));
    let on_disk = fs::read_to_string(site.path().join("content/posts/e2e.md")).unwrap();
    assert!(
        on_disk.starts_with("---\ntitle: E2E\n") && on_disk.ends_with("\n---\n\nOver *HTTP*."),
        "{on_disk}"
    );

    let (status, item) = server.get("/cms/collections/0/items/e2e", None);
    assert_eq!((status, item["data"]["body_html"].as_str()), (200, Some("<p>Over <em>HTTP</em>.</p>\n")));

    // An edit made on disk by another program reaches the list through the change feed
    // (within about a second, not necessarily by the next request).
    fs::write(
        site.path().join("content/posts/e2e.md"),
        "---\ntitle: Edited Outside\nstatus: published\n---\n",
    )
    .unwrap();
    let edited = |list: &serde_json::Value| {
        list["data"].as_array().is_some_and(|items| items.iter().any(|i| i["title"] == "Edited Outside"))
    };
    let (_, list) = poll(
        || server.get("/cms/collections/posts/items?orderBy=title&direction=asc", None),
        |(_, l)| edited(l),
    );
    assert!(edited(&list), "not seen within {SEEN_WITHIN:?}: {list}");

    // A key revoked with the CLI stops working on the next request.
    assert_eq!(server.get("/cms/", Some(&key)).0, 200);
    let keys = String::from_utf8(cms(site.path(), &["keys", "list"]).stdout).unwrap();
    let id = keys.split_whitespace().next().unwrap();
    assert!(cms(site.path(), &["keys", "revoke", id]).status.success());
    assert_eq!(server.get("/cms/", Some(&key)).0, 401);

    // A body over limits.json_bytes (1 MiB in the demo) sent chunked, with no
    // Content-Length to refuse it early, is cut off at the limit.
    let mut huge =
        std::io::Cursor::new(format!("{{\"slug\": \"big\", \"body\": \"{}\"}}", "x".repeat(2 << 20)));
    let owner_key = crate::user_with_key(site.path(), "owner@example.com", "owner");
    let response = server
        .agent
        .post(&url)
        .header("Authorization", format!("Bearer {owner_key}"))
        .header("Content-Type", "application/json")
        .send(ureq::SendBody::from_reader(&mut huge));
    match response {
        Ok(response) => assert_eq!(response.status().as_u16(), 413),
        // The server may close the connection before the client has sent everything.
        Err(error) => assert!(matches!(error, ureq::Error::Io(_)), "{error:?}"),
    }
    assert!(!site.path().join("content/posts/big.md").exists());

    // SIGTERM stops the server gracefully.
    let killed = Command::new("kill").args(["-TERM", &server.child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let status = server.child.wait().unwrap();
    assert!(status.success(), "graceful stop exits 0: {status:?}");
}

#[test]
fn hostile_files_on_disk_are_skipped_quickly_with_bounded_memory() {
    let site = demo_site();
    let posts = site.path().join("content/posts");
    let values = vec!["1"; 8000].join(",");
    let refs = vec!["*a"; 8000].join(",");
    fs::write(posts.join("quadratic.md"), format!("---\nanchor: &a [{values}]\nrefs: [{refs}]\n---\n"))
        .unwrap();
    let mut bomb = String::from("---\na: &a [x, x, x, x, x, x, x, x, x]\n");
    for (name, prev) in [("b", "a"), ("c", "b"), ("d", "c"), ("e", "d"), ("f", "e"), ("g", "f"), ("h", "g")] {
        bomb.push_str(&format!("{name}: &{name} [{}]\n", vec![format!("*{prev}"); 9].join(", ")));
    }
    fs::write(posts.join("bomb.md"), bomb + "---\n").unwrap();
    fs::write(posts.join("broken.md"), "---\ntitle: [unclosed\n---\n").unwrap();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret.md"), "---\ntitle: Secret\nstatus: published\n---\n").unwrap();
    symlink(outside.path().join("secret.md"), posts.join("leak.md")).unwrap();

    let server = Server::start(site.path());
    let before = server.rss_kib();
    let started = Instant::now();
    let (status, list) = server.get("/cms/collections/posts/items?per_page=50", None);
    // A hang guard, not a performance target (that lives in `cargo xtask bench`).
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(status, 200);
    let slugs: Vec<&str> =
        list["data"].as_array().unwrap().iter().map(|i| i["slug"].as_str().unwrap()).collect();
    assert_eq!(slugs, ["tables-and-lists", "writing-with-frontmatter", "hello-world"]);
    let grown_mib = server.rss_kib().saturating_sub(before) / 1024;
    assert!(grown_mib < 100, "server memory grew by {grown_mib} MiB");

    for (slug, status) in [("quadratic", 500), ("bomb", 500), ("broken", 500), ("leak", 404)] {
        assert_eq!(server.get(&format!("/cms/collections/posts/items/{slug}"), None).0, status, "{slug}");
    }
    assert_eq!(fs::read_to_string(outside.path().join("secret.md")).unwrap().lines().count(), 4);
}

/// `cms` with no arguments serves a working copy of the demo, prints an owner key on the
/// first start only, and never writes into `fixtures/`.
#[test]
fn a_bare_start_serves_the_demo_copy_and_prints_the_owner_key_once() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("demo");
    let bare = || {
        let mut command = Command::new(crate::BIN);
        command.env("CMS_DEMO_COPY", &copy).env("CMS_LISTEN", "127.0.0.1:0").env_remove("CMS_SITE");
        command
    };
    let server = Server::spawn(bare());
    let key = server.banner.iter().find(|l| l.starts_with("api_")).cloned().expect("a key on first start");
    assert!(server.banner.iter().any(|l| l.contains("owner@example.com")), "{:?}", server.banner);
    let editor =
        server.banner.iter().position(|l| l.contains("password for the web editor")).expect("a password");
    assert_eq!(server.banner[editor + 1].len(), 24, "{:?}", server.banner);
    assert!(server.banner.iter().any(|l| l.ends_with("/admin/")), "{:?}", server.banner);
    assert_eq!(server.get("/cms/", Some(&key)).0, 200);
    assert_eq!(server.get("/cms/collections/blog-posts/items", None).1["meta"]["totalItems"], 3);
    drop(server);

    let again = Server::spawn(bare());
    assert!(
        !again.banner.iter().any(|l| l.starts_with("api_")),
        "the key is printed once: {:?}",
        again.banner
    );
    assert_eq!(again.get("/cms/", Some(&key)).0, 200, "the first key still works");
    let fixture_state = std::path::Path::new(crate::DEMO).join(".cms");
    assert!(!fixture_state.join("users.yaml").exists() && !fixture_state.join("keys.yaml").exists());
}

/// A Jekyll blog's `_posts` as it is: `.markdown` (Jekyll's default), `.mdown` and `.mkd`
/// items beside `.md`, dates with times and offsets, and files that are not items. Every
/// post lists and reads; edits keep the file's own name; new items are `.md`; what is
/// skipped is reported with its reason in `GET /cms/`.
#[test]
fn a_jekyll_posts_folder_lists_every_post_and_reports_what_it_skips() {
    let site = demo_site();
    let posts = site.path().join("content/posts");
    fs::remove_dir_all(&posts).unwrap();
    fs::create_dir(&posts).unwrap();
    let jekyll = std::path::Path::new(crate::DEMO).join("../jekyll-posts");
    for entry in fs::read_dir(&jekyll).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), posts.join(entry.file_name())).unwrap();
    }
    let key = user_with_key(site.path(), "owner@example.com", "owner");
    let server = Server::start(site.path());

    let (status, list) = server.get("/cms/collections/posts/items?per_page=50", None);
    assert_eq!(status, 200, "{list}");
    let listed: Vec<(&str, &str)> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["slug"].as_str().unwrap(), i["filename"].as_str().unwrap()))
        .collect();
    assert_eq!(
        listed,
        [
            ("plain-markdown", "2021-01-01-plain-markdown.md"),
            ("a-hugo-style-post", "2020-07-14-a-hugo-style-post.mkd"),
            ("notes-from-the-road", "2019-02-03-notes-from-the-road.mdown"),
            ("welcome-to-jekyll", "2018-04-19-welcome-to-jekyll.markdown"),
        ],
        "newest first, every extension"
    );
    let (status, item) = server.get("/cms/collections/posts/items/welcome-to-jekyll", None);
    assert_eq!(status, 200, "{item}");
    assert_eq!(item["data"]["title"], "Welcome to Jekyll!");
    let by_filename = server.get("/cms/collections/posts/items/2018-04-19-welcome-to-jekyll.markdown", None);
    assert_eq!(by_filename.0, 200);

    let url = format!("{}/cms/collections/posts/items/welcome-to-jekyll", server.base);
    let response = server
        .agent
        .patch(&url)
        .header("Authorization", format!("Bearer {key}"))
        .send_json(json!({"fm": {"title": "Welcome, edited"}}))
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let edited = fs::read_to_string(posts.join("2018-04-19-welcome-to-jekyll.markdown")).unwrap();
    assert!(edited.contains("Welcome, edited") && edited.contains("{% highlight ruby %}"), "{edited}");
    assert!(!posts.join("2018-04-19-welcome-to-jekyll.md").exists(), "edited under its own name");
    let (status, versions) =
        server.get("/cms/collections/posts/items/welcome-to-jekyll/versions", Some(&key));
    assert_eq!((status, versions["versions"].as_array().map(Vec::len)), (200, Some(1)), "{versions}");

    let url = format!("{}/cms/collections/posts/items", server.base);
    let response = server
        .agent
        .post(&url)
        .header("Authorization", format!("Bearer {key}"))
        .send_json(json!({"slug": "fresh", "date_prefix": false, "fm": {"title": "Fresh"}}))
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert!(posts.join("fresh.md").exists(), "new items are .md");

    let (status, described) = server.get("/cms/", Some(&key));
    assert_eq!(status, 200);
    let skipped = &described["data"]["skipped_files"];
    assert_eq!(skipped["count"], 3, "{skipped}");
    let reasons: Vec<(&str, &str)> = skipped["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["filename"].as_str().unwrap(), f["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(reasons[0].0, "2021-02-02-broken.markdown");
    assert!(reasons[0].1.starts_with("the frontmatter cannot be read: line 1"), "{reasons:?}");
    assert_eq!(reasons[1].0, "My Draft.md");
    assert!(reasons[1].1.contains("' '"), "{reasons:?}");
    assert_eq!(reasons[2], ("notes.txt", "not an item file: items end in .md, .markdown, .mdown or .mkd"));
    assert!(skipped["files"].as_array().unwrap().iter().all(|f| f["collection"] == "blog-posts"));
}

/// The index is kept in `.cms/index/` between runs; a file edited while the server was
/// down is read again at the next start (its stamp differs), the others come from the
/// snapshot.
#[test]
fn a_restart_uses_the_index_snapshot_and_sees_edits_made_while_stopped() {
    let site = demo_site();
    let snapshot = site.path().join(".cms/index/content%2Fposts.snapshot");
    {
        let server = Server::start(site.path());
        let saved = poll(|| snapshot.exists(), |exists| *exists);
        assert!(saved, "the snapshot is saved after start-up");
        assert_eq!(server.get("/cms/collections/posts/items/hello-world", None).0, 200);
    }
    let post = site.path().join("content/posts/2026-01-12-hello-world.md");
    let text = fs::read_to_string(&post).unwrap();
    let title_line = text.lines().find(|l| l.starts_with("title:")).unwrap().to_owned();
    fs::write(&post, text.replace(&title_line, "title: Edited while stopped")).unwrap();
    fs::write(site.path().join("content/posts/added-while-stopped.md"), "---\ntitle: Added\n---\n").unwrap();

    let saved_before = fs::metadata(&snapshot).unwrap().modified().unwrap();
    let server = Server::start(site.path());
    let (status, item) = server.get("/cms/collections/posts/items/hello-world", None);
    assert_eq!((status, item["data"]["title"].as_str()), (200, Some("Edited while stopped")));
    assert_eq!(server.get("/cms/collections/posts/items/added-while-stopped", None).0, 200);
    let (_, list) = server.get("/cms/collections/posts/items?per_page=50", None);
    assert_eq!(list["meta"]["totalItems"], 4, "{list}");
    let saved = poll(|| fs::metadata(&snapshot).unwrap().modified().unwrap(), |at| *at != saved_before);
    assert_ne!(saved, saved_before, "what the start read is saved");
    drop(server);

    // Edited in place alone, the folder's own stamp does not move: the next start answers
    // from the snapshot at once, and its check of every file's stamp finds the edit.
    let text = fs::read_to_string(&post).unwrap();
    fs::write(&post, text.replace("title: Edited while stopped", "title: Edited in place")).unwrap();
    let server = Server::start(site.path());
    let titles = || {
        let (_, list) = server.get("/cms/collections/posts/items?per_page=50", None);
        list["data"].as_array().unwrap().iter().map(|item| item["title"].to_string()).collect::<Vec<_>>()
    };
    let titles = poll(titles, |titles| titles.iter().any(|t| t == "\"Edited in place\""));
    assert!(titles.iter().any(|t| t == "\"Edited in place\""), "{titles:?}");
    assert_eq!(titles.len(), 4, "{titles:?}");
}

/// DNS rebinding: a hostile page whose name has come to resolve to this server sends its
/// own name as both `Origin` and `Host`. Neither makes it this server: REST refuses the
/// key-less call and `/mcp` refuses the name, with the setting that would allow it.
#[test]
fn a_name_the_site_does_not_give_is_refused_whatever_host_says() {
    let site = demo_site();
    let output = cms(site.path(), &["users", "add", "--email", "a@example.com", "--role", "editor"]);
    assert!(output.status.success());
    let output = cms(site.path(), &["keys", "create", "--user", "a@example.com", "--mcp"]);
    let agent = String::from_utf8_lossy(&output.stdout).lines().last().unwrap().to_owned();
    let server = Server::start(site.path());
    let port = server.base.rsplit(':').next().unwrap();
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"it","version":"0"}}}"#;
    let post_mcp = |host: &str, origin: Option<&str>| {
        let mut req = server
            .agent
            .post(format!("{}/mcp", server.base))
            .header("Host", host)
            .header("Authorization", format!("Bearer {agent}"))
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json");
        if let Some(origin) = origin {
            req = req.header("Origin", origin);
        }
        let mut response = req.send(initialize).unwrap();
        (response.status().as_u16(), response.body_mut().read_to_string().unwrap_or_default())
    };
    let rebound = format!("rebind.example:{port}");
    let (status, body) = post_mcp(&rebound, None);
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("server.allowed_hosts"), "{body}");
    let (status, body) = post_mcp(&rebound, Some(&format!("http://{rebound}")));
    assert_eq!(status, 403, "{body}");
    let (status, body) = post_mcp(&format!("localhost:{port}"), Some(&format!("http://localhost:{port}")));
    assert_eq!(status, 200, "a loopback name on the bound port: {body}");

    let rest = server
        .agent
        .get(format!("{}/cms/collections", server.base))
        .header("Host", &rebound)
        .header("Origin", &format!("http://{rebound}"))
        .call()
        .unwrap();
    assert_eq!(rest.status().as_u16(), 403);
}
