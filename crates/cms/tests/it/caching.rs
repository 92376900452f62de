//! HTTP that caches: compressed answers (decoded by curl's own zlib, brotli and zstd),
//! validators on every read that can carry them, weak `If-None-Match`, the caching policy,
//! and what a `415` says it accepts. Each over real HTTP against the real server.

use std::process::Command;

use serde_json::Value;

use crate::{Server, demo_site, user_with_key};

/// A plain answer: status, headers (names lowercase), body.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    fn all(&self, name: &str) -> Vec<&str> {
        self.headers.iter().filter(|(n, _)| n == name).map(|(_, v)| v.as_str()).collect()
    }
}

/// GET `path` with `headers`, the body as sent (no decoding).
fn get(server: &Server, path: &str, headers: &[(&str, &str)]) -> Answer {
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let mut req = agent.get(format!("{}{path}", server.base));
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("accept-encoding")) {
        req = req.header("Accept-Encoding", "identity");
    }
    let mut response = req.call().unwrap();
    let headers = response
        .headers()
        .iter()
        .map(|(n, v)| (n.as_str().to_ascii_lowercase(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    let status = response.status().as_u16();
    let body = response.body_mut().with_config().limit(64 << 20).read_to_vec().unwrap_or_default();
    Answer { status, headers, body }
}

/// GET `path` with curl asking for `coding`: the headers and the bytes as sent.
fn curl_raw(server: &Server, path: &str, coding: &str) -> Answer {
    curl_with(server, path, coding, &[])
}

/// [`curl_raw`] with more request headers.
fn curl_with(server: &Server, path: &str, coding: &str, headers: &[(&str, &str)]) -> Answer {
    let mut command = Command::new("curl");
    command.args(["-s", "-D", "/dev/stderr", "-H"]).arg(format!("Accept-Encoding: {coding}"));
    for (name, value) in headers {
        command.arg("-H").arg(format!("{name}: {value}"));
    }
    let output = command.arg(format!("{}{path}", server.base)).output().unwrap();
    let head = String::from_utf8_lossy(&output.stderr);
    let mut lines = head.lines();
    let status = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|s| s.parse().ok()).unwrap_or(0);
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Answer { status, headers, body: output.stdout }
}

/// The body with an envelope's `timestamp` taken out (it changes from one answer to the next).
fn without_timestamp(body: &[u8]) -> Vec<u8> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(mut object)) => {
            object.remove("timestamp");
            serde_json::to_vec(&object).unwrap()
        }
        _ => body.to_vec(),
    }
}

/// The public reads that carry validators, on the demo site.
const READS: &[&str] = &[
    "/cms/collections/blog-posts/items",
    "/cms/collections/blog-posts/items/hello-world",
    "/cms/collections/blog-posts/rss",
    "/cms/collections/blog-posts/sitemap",
    "/cms/collections/search-index?collectionPath=content/posts",
    "/cms/tags?content_path=content/posts",
    "/cms/tags/markdown/items",
    "/cms/search?q=markdown",
    "/cms/items/related?contentPath=content/posts/hello-world",
    "/cms/openapi.json",
    "/status",
];

/// Every encoding decodes (by curl, with its own libraries) to the plain answer, is
/// announced with `Content-Encoding` and `Vary: Accept-Encoding`, and is smaller.
#[test]
fn compressed_answers_decode_to_the_plain_bytes_in_every_coding() {
    if Command::new("curl").arg("--version").output().is_err() {
        return cms_s3::testing::skip_check("curl", "apt-get install curl (needs root)");
    }
    let site = demo_site();
    let svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\">{}</svg>",
        "<rect width=\"1\" height=\"1\"/>".repeat(100)
    );
    std::fs::write(site.path().join("media/uploads/shape.svg"), &svg).unwrap();
    let server = Server::start(site.path());
    // Text media too, as a representation of its own (its own ETag; ranges stay plain).
    let plain_svg = get(&server, "/media/uploads/shape.svg", &[]);
    assert_eq!((plain_svg.status, plain_svg.body.as_slice()), (200, svg.as_bytes()));
    assert!(plain_svg.all("vary").contains(&"Accept-Encoding"));
    let gzipped = curl_raw(&server, "/media/uploads/shape.svg", "gzip");
    assert_eq!(gzipped.header("content-encoding"), Some("gzip"));
    assert_ne!(gzipped.header("etag"), plain_svg.header("etag"));
    assert!(gzipped.body.len() < svg.len() / 4);
    // A document uploaded as HTML stays a download, compressed or not.
    let html = format!("<html><body>{}</body></html>", "<p>phish</p>".repeat(200));
    std::fs::write(site.path().join("media/uploads/page.html"), &html).unwrap();
    for coding in ["identity", "gzip", "br"] {
        let sent = curl_raw(&server, "/media/uploads/page.html", coding);
        assert_eq!(sent.status, 200, "{coding}");
        assert!(sent.header("content-disposition").is_some_and(|d| d.starts_with("attachment")), "{coding}");
        assert!(sent.header("content-security-policy").is_some_and(|c| c.starts_with("sandbox")), "{coding}");
    }
    let range =
        get(&server, "/media/uploads/shape.svg", &[("Accept-Encoding", "gzip"), ("Range", "bytes=0-4")]);
    assert_eq!((range.status, range.body.as_slice()), (206, &svg.as_bytes()[..5]));
    for path in READS.iter().filter(|p| **p != "/status").chain(["/media/uploads/shape.svg"].iter()) {
        let plain = get(&server, path, &[]);
        assert_eq!(plain.status, 200, "{path}");
        assert!(plain.header("content-encoding").is_none(), "{path}: identity was asked for");
        assert!(plain.all("vary").contains(&"Accept-Encoding"), "{path}: {:?}", plain.all("vary"));
        for coding in ["gzip", "br", "zstd"] {
            let sent = curl_raw(&server, path, coding);
            // Small answers made per request are sent as they are (under 1 KiB).
            if plain.body.len() >= 1024 {
                assert_eq!(sent.header("content-encoding"), Some(coding), "{path}");
            }
            assert!(sent.all("vary").contains(&"Accept-Encoding"), "{path}");
            // Each coding is a representation with a tag of its own.
            let plain_tag = plain.header("etag").unwrap();
            if sent.header("content-encoding").is_some() {
                let coded = format!("{}-{coding}\"", plain_tag.trim_end_matches('"'));
                assert_eq!(sent.header("etag"), Some(coded.as_str()), "{path}");
                let other = curl_with(&server, path, coding, &[("If-None-Match", plain_tag)]);
                assert_eq!(
                    other.status, 200,
                    "{path} {coding}: the plain body's tag names another representation"
                );
            }
            let again = curl_with(&server, path, coding, &[("If-None-Match", sent.header("etag").unwrap())]);
            assert_eq!(again.status, 304, "{path} {coding}: its own tag revalidates");
            let decoded = Command::new("curl")
                .args(["-s", "--fail", "--compressed", "-H"])
                .arg(format!("Accept-Encoding: {coding}"))
                .arg(format!("{}{path}", server.base))
                .output()
                .unwrap();
            assert!(decoded.status.success(), "{path} {coding}: curl failed");
            assert_eq!(
                String::from_utf8_lossy(&without_timestamp(&decoded.stdout)),
                String::from_utf8_lossy(&without_timestamp(&plain.body)),
                "{path} in {coding}"
            );
            if plain.body.len() > 2048 {
                assert!(
                    sent.body.len() * 2 < plain.body.len(),
                    "{path} {coding}: {} of {}",
                    sent.body.len(),
                    plain.body.len()
                );
            }
        }
    }
    // Q-values decide; a coding refused with q=0 is never used.
    let chosen = curl_raw(&server, READS[0], "gzip;q=0.5, br;q=0.9, zstd;q=0");
    assert_eq!(chosen.header("content-encoding"), Some("br"));
    let none = curl_raw(&server, READS[0], "gzip;q=0");
    assert_eq!(none.header("content-encoding"), None);
    // Media are never compressed again.
    let image = curl_raw(&server, "/media/uploads/logo.png", "gzip, br, zstd");
    assert_eq!((image.status, image.header("content-encoding")), (200, None));
}

/// Every read with a validator answers `304` to a weak `If-None-Match` (what a compressing
/// proxy sends back), repeating the `200`'s validators, `Cache-Control` and `Vary`.
#[test]
fn weak_etags_revalidate_on_every_read_that_has_one() {
    let site = demo_site();
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    let server = Server::start(site.path());
    let auth = format!("Bearer {key}");
    let mut reads: Vec<(&str, Vec<(&str, &str)>)> = READS.iter().map(|p| (*p, Vec::new())).collect();
    reads.push(("/cms/collections/blog-posts/items/hello-world/raw", vec![("Authorization", auth.as_str())]));
    for (path, headers) in reads {
        let first = get(&server, path, &headers);
        assert_eq!(first.status, 200, "{path}");
        let etag = first.header("etag").unwrap_or_else(|| panic!("{path} has no ETag")).to_owned();
        let weak = format!("W/{etag}");
        for tag in [etag.as_str(), weak.as_str(), &format!("\"other\", {weak}")] {
            let mut conditional = headers.clone();
            conditional.push(("If-None-Match", tag));
            let again = get(&server, path, &conditional);
            assert_eq!(again.status, 304, "{path} with If-None-Match {tag}");
            assert!(again.body.is_empty());
            for name in ["etag", "cache-control", "last-modified"] {
                assert_eq!(again.header(name), first.header(name), "{path}: {name} of the 304");
            }
            let sorted = |mut v: Vec<&str>| {
                v.sort_unstable();
                v.into_iter().map(str::to_owned).collect::<Vec<_>>()
            };
            assert_eq!(sorted(again.all("vary")), sorted(first.all("vary")), "{path}: Vary of the 304");
        }
        let mut stale = headers.clone();
        stale.push(("If-None-Match", "W/\"stale\""));
        assert_eq!(get(&server, path, &stale).status, 200, "{path}");
    }
    // Documents carry Last-Modified and answer If-Modified-Since.
    for path in [
        "/cms/collections/blog-posts/rss",
        "/cms/openapi.json",
        "/status",
        "/cms/tags?content_path=content/posts",
    ] {
        let first = get(&server, path, &[]);
        let since = first.header("last-modified").unwrap_or_else(|| panic!("{path}")).to_owned();
        assert_eq!(get(&server, path, &[("If-Modified-Since", &since)]).status, 304, "{path}");
        let before = "Mon, 01 Jan 2001 00:00:00 GMT";
        assert_eq!(get(&server, path, &[("If-Modified-Since", before)]).status, 200, "{path}");
    }
}

/// Public reads may be kept by any cache but revalidate; anything read with a key, in the
/// header or the query, is private and never stored; errors are not cached; every answer
/// varies by `Origin`.
#[test]
fn keyed_reads_are_private_and_errors_are_not_cached() {
    let site = demo_site();
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    let server = Server::start(site.path());
    let list = "/cms/collections/blog-posts/items";
    let public = get(&server, list, &[]);
    assert_eq!(public.header("cache-control"), Some("public, no-cache"));
    assert!(public.all("vary").contains(&"Origin"), "without an Origin too: {:?}", public.all("vary"));
    let auth = format!("Bearer {key}");
    let keyed = get(&server, list, &[("Authorization", &auth)]);
    assert_eq!((keyed.status, keyed.header("cache-control")), (200, Some("private, no-store")));
    let by_token = get(&server, &format!("{list}?status=all&token={key}"), &[]);
    assert_eq!((by_token.status, by_token.header("cache-control")), (200, Some("private, no-store")));
    let disguised = get(&server, &format!("{list}?status=all&%74oken={key}"), &[]);
    assert_eq!((disguised.status, disguised.header("cache-control")), (200, Some("private, no-store")));
    for missing in ["/cms/collections/blog-posts/items/nothing", "/cms/collections/nothing/items", "/nowhere"]
    {
        let error = get(&server, missing, &[]);
        assert_eq!((error.status, error.header("cache-control")), (404, Some("no-store")), "{missing}");
    }
    let refused = get(&server, &format!("{list}?status=all"), &[]);
    assert_eq!((refused.status, refused.header("cache-control")), (401, Some("no-store")));
}

/// A body of the wrong media type gets `415` naming what the route takes.
#[test]
fn unsupported_media_types_name_what_is_accepted() {
    let site = demo_site();
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    let server = Server::start(site.path());
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let auth = format!("Bearer {key}");
    let item = format!("{}/cms/collections/blog-posts/items/hello-world", server.base);
    let patch = agent
        .patch(&item)
        .header("Authorization", &auth)
        .header("Content-Type", "text/plain")
        .send("x")
        .unwrap();
    assert_eq!(patch.status().as_u16(), 415);
    assert_eq!(patch.headers().get("accept").unwrap(), "application/json");
    assert_eq!(patch.headers().get("accept-patch").unwrap(), "application/json");
    let put = agent
        .put(&item)
        .header("Authorization", &auth)
        .header("Content-Type", "text/plain")
        .send("x")
        .unwrap();
    assert_eq!(
        (put.status().as_u16(), put.headers().get("accept").unwrap().to_str().unwrap()),
        (415, "application/json")
    );
    assert!(put.headers().get("accept-patch").is_none());
    let upload = agent
        .post(format!("{}/cms/resources", server.base))
        .header("Authorization", &auth)
        .header("Content-Type", "application/json")
        .send("{}")
        .unwrap();
    assert_eq!(upload.status().as_u16(), 415);
    assert_eq!(upload.headers().get("accept").unwrap(), "multipart/form-data");
}

/// A client that read an item compressed holds its tag with the coding's suffix: `If-Match`
/// takes it as the item's.
#[test]
fn if_match_takes_the_tag_of_a_compressed_read() {
    if Command::new("curl").arg("--version").output().is_err() {
        eprintln!("note: skipping the check: curl is not available (apt-get install curl, or run .ci/run)");
        return;
    }
    let site = demo_site();
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    let server = Server::start(site.path());
    let item = "/cms/collections/blog-posts/items/hello-world";
    let read = curl_raw(&server, item, "br");
    let tag = read.header("etag").unwrap().to_owned();
    assert!(tag.ends_with("-br\""), "{tag}");
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let patch = |tag: &str| {
        agent
            .patch(format!("{}{item}", server.base))
            .header("Authorization", format!("Bearer {key}"))
            .header("If-Match", tag)
            .send_json(serde_json::json!({"fm": {"tags": ["x"]}}))
            .unwrap()
            .status()
            .as_u16()
    };
    assert_eq!(patch(&tag), 200);
    assert_eq!(patch(&tag), 412, "the item changed since");
}

/// A search asked while the search index is still being built (just after start) gets the
/// tag of the index it was answered from, so that asking again with that tag gets `304`.
/// The site is large enough that the build the server starts in the background is still
/// running when the first search arrives.
#[test]
fn a_search_during_the_first_index_build_has_the_tag_of_its_answer() {
    let site = demo_site();
    let posts = site.path().join("content/posts");
    for n in 0..3000 {
        let text =
            format!("---\ntitle: Filler {n}\ndate: 2020-01-01\n---\nSome markdown words, number {n}.\n");
        std::fs::write(posts.join(format!("filler-{n}.md")), text).unwrap();
    }
    let server = Server::start(site.path());
    let path = "/cms/search?q=markdown";
    let first = get(&server, path, &[]);
    assert_eq!(first.status, 200);
    let etag = first.header("etag").expect("search answers carry an ETag").to_owned();
    let again = get(&server, path, &[("If-None-Match", &etag)]);
    assert_eq!(again.status, 304, "the tag of the first answer still names the same results");
}
