//! The discovery routes on a real site folder over real HTTP: absolute and relative path
//! parameters, symlinks that lead out of the site, and the XML routes' content types.

use std::fs;
use std::os::unix::fs::symlink;

use crate::{Server, demo_site};

/// Status, content type and body text of a GET.
fn fetch(server: &Server, path: &str) -> (u16, String, String) {
    let mut response = server.agent.get(format!("{}{path}", server.base)).call().unwrap();
    let content_type =
        response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    (response.status().as_u16(), content_type, response.body_mut().read_to_string().unwrap())
}

#[test]
fn path_parameters_resolve_inside_the_site_only() {
    let site = demo_site();
    let root = site.path().canonicalize().unwrap();
    let root = root.to_str().unwrap();
    let outside = tempfile::tempdir().unwrap();
    fs::write(
        outside.path().join("secret.md"),
        "---\ntitle: Secret\nstatus: published\ntags: [rust]\n---\nSecret.\n",
    )
    .unwrap();
    // A folder and an item file inside the site that lead out of it.
    symlink(outside.path(), site.path().join("content/outside")).unwrap();
    symlink(outside.path().join("secret.md"), site.path().join("content/posts/leak.md")).unwrap();
    let server = Server::start(site.path());

    let (status, index) =
        server.get(&format!("/cms/collections/search-index?collectionPath={root}/content/posts"), None);
    assert_eq!(status, 200, "{index}");
    let slugs: Vec<&str> = index.as_array().unwrap().iter().map(|e| e["slug"].as_str().unwrap()).collect();
    assert_eq!(
        slugs,
        ["tables-and-lists", "writing-with-frontmatter", "hello-world"],
        "no draft, no symlink"
    );
    assert_eq!(index[2]["canonicalUrl"], "https://example.com/blog/hello-world");
    let (_, relative) = server.get("/cms/collections/search-index?collectionPath=content/posts", None);
    assert_eq!(relative, index);

    let refused = [
        ("content/outside".to_owned(), 404),
        (format!("{root}/content/outside"), 404),
        (outside.path().to_str().unwrap().to_owned(), 400),
        ("/etc".to_owned(), 400),
        ("../".to_owned(), 400),
        ("%2e%2e/%2e%2e/etc".to_owned(), 400),
        ("media/uploads".to_owned(), 404),
        (".cms".to_owned(), 404),
        (format!("{root}/../{}/content/posts", root.rsplit('/').next().unwrap()), 200),
    ];
    for (path, expected) in refused {
        for route in [
            "/cms/collections/search-index?collectionPath=",
            "/cms/tags?content_path=",
            "/cms/collections/items?collectionPath=",
        ] {
            let (status, body) = server.get(&format!("{route}{path}"), None);
            assert_eq!(status, expected, "{route}{path}: {body}");
        }
    }
    for path in ["content/posts/leak.md", "content/outside/secret.md", "content/posts/../outside/secret.md"] {
        let (status, body) = server.get(&format!("/cms/items/related?contentPath={path}"), None);
        assert_eq!(status, 404, "{path}: {body}");
    }
    let (status, related) = server
        .get(&format!("/cms/items/related?contentPath={root}/content/posts/2026-01-12-hello-world.md"), None);
    assert_eq!(status, 200, "{related}");
    assert!(
        related["data"].as_array().unwrap().iter().all(|r| r["slug"] != "leak" && r["slug"] != "hello-world")
    );
    assert_eq!(server.get("/cms/items/leak", None).0, 404);
    assert_eq!(server.get("/cms/items/static-site-generator", None).1["data"]["folder"], 2);
}

#[test]
fn feeds_over_http() {
    let site = demo_site();
    let server = Server::start(site.path());
    let (status, content_type, rss) = fetch(&server, "/cms/collections/blog-posts/rss");
    assert_eq!((status, content_type.as_str()), (200, "application/rss+xml; charset=utf-8"));
    assert_eq!(rss.matches("<item>").count(), 3, "{rss}");
    assert!(rss.contains("<title>Hello, World</title>") && !rss.contains("Upcoming Release"), "{rss}");
    let (status, content_type, sitemap) =
        fetch(&server, "/cms/collections/pages/sitemap?baseUrl=https://www.example.org");
    assert_eq!((status, content_type.as_str()), (200, "application/xml; charset=utf-8"));
    assert!(sitemap.contains("<loc>https://www.example.org/about</loc>"), "{sitemap}");
    let (status, _, error) = fetch(&server, "/cms/collections/nope/rss");
    assert_eq!(status, 404);
    assert!(error.contains("\"success\":false"), "{error}");
}
