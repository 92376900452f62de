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
    assert_eq!(titles, ["Bonjour"]);
    assert_eq!(body["data"][0]["lang"], "fr");
    assert_eq!(langs(&body["data"][0]["translations"]).len(), 2);
    let (_, headers, body) = get(&server, "/cms/collections/posts/items", &[("Accept-Language", "ar")]);
    assert_eq!(headers[0].as_deref(), Some("ar"));
    assert_eq!(body["meta"]["totalItems"], 1);
    let (_, _, body) = get(&server, "/cms/collections/posts/items", &[]);
    assert_eq!(body["meta"]["totalItems"], 3, "{body}");

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
    let server = Server::start(site.path());
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
