//! The web editor on a collection with a content model, over real HTTP: the form built
//! from the model (an input per field, in its order, with labels, hints and the lists to
//! pick from), a save read as typed values, a refused save shown again with what was typed
//! and each error at its field, and an item edited by hand that breaks the model.

use std::fs;
use std::path::Path;

use serde_json::{Value, json};

use crate::admin::{PASSWORD, Tab, user_with_password};
use crate::{Server, demo_site};

/// The demo's posts with a model of every kind of input.
pub const POSTS_MODEL: &str = "    date_prefix: true
    fields:
      title: { type: string, required: true, max_length: 120 }
      date: { type: datetime }
      author: { type: string }
      tags: { type: tags }
      description: { type: text, description: Shown in lists and feeds. }
      price: { type: number, min: 0 }
      rating: { type: integer, min: 1, max: 5 }
      featured: { type: boolean }
      category: { type: select, options: [news, guide] }
      topics: { type: multiselect, options: [rust, web] }
      event_day: { type: date }
      cover: { type: image }
      related: { type: reference, collection: pages }
      homepage: { type: url }
      contact: { type: email }
      links: { type: list, of: { type: url } }
      seo: { type: object, fields: { title: { type: string }, noindex: { type: boolean } } }
      sku: { type: string, pattern: \"[A-Z]{3}-[0-9]+\" }
      internal: { type: string, hidden: true }
";

/// A copy of the demo site whose posts have [`POSTS_MODEL`] in place of the demo's own,
/// and whose pages have no model.
pub fn modelled_site() -> tempfile::TempDir {
    let site = demo_site();
    let config = site.path().join("cms.yaml");
    let text = fs::read_to_string(&config).unwrap();
    let start = text.find("    date_prefix: true\n").expect("the demo's posts");
    let end = text.find("  - label: Projects\n").expect("the demo's projects, after its pages");
    let pages = "  - label: Pages\n    path: content/pages\n    page_path: /\n";
    fs::write(&config, format!("{}{POSTS_MODEL}{pages}{}", &text[..start], &text[end..])).unwrap();
    site
}

/// The frontmatter of a post, as JSON.
pub fn frontmatter(site: &Path, name: &str) -> Value {
    let text = fs::read_to_string(site.join("content/posts").join(name)).unwrap();
    let yaml = text.strip_prefix("---\n").unwrap().split("\n---\n").next().unwrap();
    serde_saphyr::from_str(yaml).unwrap()
}

const HELLO: &str = "/admin/collections/blog-posts/items/2026-01-12-hello-world.md";

fn signed_in(server: &Server) -> Tab<'_> {
    let mut tab = Tab::new(server);
    assert_eq!(tab.sign_in("owner@example.com", PASSWORD).status, 303);
    tab
}

/// The text of the page's `<textarea id="ID">`.
fn textarea(body: &str, id: &str) -> String {
    let start = at(body, &format!("<textarea id=\"{id}\""));
    let rest = &body[start..];
    let open = rest.find('>').unwrap() + 1;
    let text = &rest[open..rest.find("</textarea>").unwrap()];
    text.strip_prefix('\n').unwrap_or(text).to_owned()
}

fn at(body: &str, needle: &str) -> usize {
    body.find(needle).unwrap_or_else(|| panic!("{needle} not in {body}"))
}

#[test]
fn the_edit_form_has_an_input_per_field_of_the_model_in_its_order() {
    let site = modelled_site();
    user_with_password(site.path(), "owner@example.com", "owner");
    let server = Server::start(site.path());
    let mut tab = signed_in(&server);

    let page = tab.get(HELLO);
    assert_eq!(page.status, 200, "{}", page.body);
    let body = &page.body;
    let order: Vec<usize> =
        ["fm.title", "fm.date", "fm.price", "fm.featured", "fm.seo.title", "fm.sku", "name=\"extra\""]
            .iter()
            .map(|name| at(body, name))
            .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "the model's order: {order:?}");
    for needle in [
        r#"<label for="f-title">Title <span class="req">(required)</span></label>"#,
        r#"<input type="text" id="f-title" name="fm.title" value="Hello, World" maxlength="120" autocomplete="off" required>"#,
        r#"<input type="text" id="f-date" name="fm.date" value="2026-01-12" placeholder="2026-01-12T09:30:00+01:00""#,
        r#"<textarea id="f-description" name="fm.description" rows="4" aria-describedby="f-description-hint">"#,
        r#"<p class="hint" id="f-description-hint">Shown in lists and feeds.</p>"#,
        r#"<input type="number" id="f-price" name="fm.price" value="" min="0" step="any">"#,
        r#"<input type="number" id="f-rating" name="fm.rating" value="" min="1" max="5" step="1">"#,
        r#"<input type="hidden" name="fm.featured" value="false">"#,
        r#"<input type="checkbox" id="f-featured" name="fm.featured" value="true">"#,
        r#"<option value="news">news</option>"#,
        r#"<input type="checkbox" id="f-topics-0" name="fm.topics" value="rust">"#,
        r#"<input type="date" id="f-event_day" name="fm.event_day" value="">"#,
        r#"name="fm.cover" value="" list="dl-images""#,
        // Each image with its thumbnail: a width of `images.sizes`, not the original.
        r#"<option value="/media/uploads/logo.png" data-thumb="/media/uploads/logo.png?w=160"></option>"#,
        r#"<option value="/media/uploads/2026/hero.png" data-thumb="/media/uploads/2026/hero.png?w=160"></option>"#,
        r#"name="fm.related" value="" list="dl-ref-pages""#,
        r#"<option value="about" label="About"></option>"#,
        r#"<input type="url" id="f-homepage" name="fm.homepage""#,
        r#"<input type="email" id="f-contact" name="fm.contact""#,
        r#"<textarea id="f-links" name="fm.links" rows="3""#,
        r#"<fieldset class="field wide group" id="f-seo">"#,
        r#"<input type="text" id="f-seo-title" name="fm.seo.title""#,
        r#"<select id="status" name="status">"#,
    ] {
        assert!(body.contains(needle), "{needle}\n{body}");
    }
    assert!(body.contains(r#"name="fm.tags" value="announcements, rust""#), "{body}");
    assert!(!body.contains("fm.internal") && !body.contains(r#"id="title""#), "{body}");
    assert!(!body.contains("error-summary"), "a valid item has no notice");
    assert_eq!(textarea(body, "extra"), "", "every key of the post is a field of the model");

    // A collection without a model: the fixed fields, as before.
    let about = tab.get("/admin/collections/pages/items/about.md");
    assert!(about.body.contains(r#"<input id="title" name="title" value="About""#), "{}", about.body);
    assert!(!about.body.contains("fm."), "{}", about.body);
}

#[test]
fn a_save_writes_typed_values_and_a_refused_one_keeps_what_was_typed() {
    let site = modelled_site();
    user_with_password(site.path(), "owner@example.com", "owner");
    let server = Server::start(site.path());
    let mut tab = signed_in(&server);
    let page = tab.get(HELLO);
    let (csrf, etag) = (page.input("csrf"), page.input("etag"));
    let stored = fs::read(site.path().join("content/posts/2026-01-12-hello-world.md")).unwrap();

    let refused = tab.post(
        HELLO,
        &[
            ("csrf", &csrf),
            ("form", "model"),
            ("etag", &etag),
            ("action", "save"),
            ("fm.title", "Typed, then refused"),
            ("fm.price", "-1"),
            ("fm.rating", "2.5"),
            ("fm.sku", "nope"),
            ("fm.cover", "/media/uploads/missing.png"),
            ("fm.featured", "false"),
            ("fm.featured", "true"),
            ("status", "published"),
            ("extra", "colour: blue\n"),
            ("body", "Typed text."),
        ],
        &[],
    );
    assert_eq!(refused.status, 422, "{}", refused.body);
    let body = &refused.body;
    assert_eq!(fs::read(site.path().join("content/posts/2026-01-12-hello-world.md")).unwrap(), stored);
    for needle in [
        r#"<section class="error-summary" id="error-summary" tabindex="-1" aria-labelledby="error-summary-title" role="alert" data-autofocus>"#,
        // Every failing field at once, in the model's words (as REST says them): the
        // unreadable rating beside the model's own checks.
        "Nothing was saved: 4 fields to fix",
        r##"<li><a href="#f-price">Price</a> must be a number ≥ 0, got -1</li>"##,
        r##"<li><a href="#f-rating">Rating</a> must be a whole number from 1 to 5, got a string</li>"##,
        r##"<li><a href="#f-sku">Sku</a> must match the pattern [A-Z]{3}-[0-9]+</li>"##,
        r#"value="Typed, then refused""#,
        r#"<input type="checkbox" id="f-featured" name="fm.featured" value="true" checked>"#,
        r#"value="2.5" min="1" max="5" step="1" aria-invalid="true" aria-describedby="f-rating-error">"#,
        r#"<p class="field-error" id="f-rating-error">Rating must be a whole number from 1 to 5, got a string.</p>"#,
        "colour: blue",
        "Typed text.",
    ] {
        assert!(body.contains(needle), "{needle}\n{body}");
    }

    // The rating mended: the other three remain.
    let refused = tab.post(
        HELLO,
        &[
            ("csrf", &csrf),
            ("form", "model"),
            ("etag", &etag),
            ("fm.title", "Typed, then refused"),
            ("fm.price", "-1"),
            ("fm.sku", "nope"),
            ("fm.cover", "/media/uploads/missing.png"),
            ("fm.featured", "false"),
            ("status", "published"),
            ("body", "Typed text."),
        ],
        &[],
    );
    assert_eq!(refused.status, 422, "{}", refused.body);
    let body = &refused.body;
    for needle in [
        "Nothing was saved: 3 fields to fix",
        r##"<a href="#f-price">Price</a> must be a number ≥ 0, got -1"##,
        r##"<a href="#f-sku">Sku</a> must match the pattern [A-Z]{3}-[0-9]+"##,
        r##"<a href="#f-cover">Cover</a> names /media/uploads/missing.png, but there is no file there"##,
        r#"id="f-price" name="fm.price" value="-1" min="0" step="any" aria-invalid="true" aria-describedby="f-price-error">"#,
        r#"id="f-cover" name="fm.cover" value="/media/uploads/missing.png""#,
    ] {
        assert!(body.contains(needle), "{needle}\n{body}");
    }
    // The same write through the REST API is refused with the same field errors.
    let key = crate::user_with_key(site.path(), "ed@example.com", "editor");
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let mut answer = agent
        .patch(format!("{}/cms/collections/blog-posts/items/hello-world", server.base))
        .header("Authorization", format!("Bearer {key}"))
        .send_json(json!({"fm": {"price": -1, "sku": "nope", "cover": "/media/uploads/missing.png"}}))
        .unwrap();
    assert_eq!(answer.status().as_u16(), 400);
    let rest: Value = answer.body_mut().read_json().unwrap();
    let fields = rest["fields"].as_array().unwrap();
    assert_eq!(fields.len(), 3, "{rest}");
    for error in fields {
        let (field, message) = (error["field"].as_str().unwrap(), error["message"].as_str().unwrap());
        let label = format!("#f-{}", field.strip_prefix("fm.").unwrap());
        assert!(
            body.contains(&format!("<a href=\"{label}\">")) && body.contains(message),
            "{field} {message}\n{body}"
        );
    }

    let saved = tab.post(
        HELLO,
        &[
            ("csrf", &csrf),
            ("form", "model"),
            ("etag", &etag),
            ("action", "save"),
            ("fm.title", "Hello, typed"),
            ("fm.date", "2026-01-12T09:30:00+01:00"),
            ("fm.author", "ada"),
            ("fm.tags", "announcements, rust"),
            ("fm.price", "12.5"),
            ("fm.rating", "4"),
            ("fm.featured", "false"),
            ("fm.featured", "true"),
            ("fm.category", "guide"),
            ("fm.topics", "rust"),
            ("fm.topics", "web"),
            ("fm.event_day", "2026-05-01"),
            ("fm.cover", "/media/uploads/logo.png"),
            ("fm.related", "about"),
            ("fm.homepage", ""),
            ("fm.links", "https://a.example/\r\nhttps://b.example/\r\n"),
            ("fm.seo.title", "Hello"),
            ("fm.seo.noindex", "false"),
            ("fm.sku", "ABC-12"),
            ("status", "published"),
            ("extra", "colour: blue\n"),
            ("body", "Saved text.\n"),
        ],
        &[],
    );
    assert_eq!(
        (saved.status, saved.header("location")),
        (303, Some(&*format!("{HELLO}?ok=saved"))),
        "{}",
        saved.body
    );
    let fm = frontmatter(site.path(), "2026-01-12-hello-world.md");
    assert_eq!(
        fm,
        json!({
            "title": "Hello, typed", "date": "2026-01-12T09:30:00+01:00", "status": "published",
            "author": "ada", "tags": ["announcements", "rust"], "price": 12.5, "rating": 4,
            "featured": true, "category": "guide", "topics": ["rust", "web"],
            "event_day": "2026-05-01", "cover": "/media/uploads/logo.png", "related": "about",
            "links": ["https://a.example/", "https://b.example/"], "seo": {"title": "Hello", "noindex": false},
            "sku": "ABC-12", "colour": "blue"
        })
    );

    // A save over a version someone else replaced meanwhile: nothing written, both shown.
    let stale = tab.post(
        HELLO,
        &[
            ("csrf", &csrf),
            ("form", "model"),
            ("etag", &etag),
            ("fm.title", "Mine"),
            ("status", "published"),
            ("body", "Mine."),
        ],
        &[],
    );
    assert_eq!(stale.status, 409, "{}", stale.body);
    assert!(
        stale.body.contains("Someone saved this item") && stale.body.contains("title: Hello, typed"),
        "{}",
        stale.body
    );
    assert!(stale.body.contains(r#"name="fm.title" value="Mine""#), "what was typed is kept: {}", stale.body);

    // Emptied inputs remove their keys; the YAML box holds only what the model does not name.
    let page = tab.get(HELLO);
    assert_eq!(textarea(&page.body, "extra"), "colour: blue\n");
    let etag = page.input("etag");
    let emptied = tab.post(
        HELLO,
        &[
            ("csrf", &csrf),
            ("form", "model"),
            ("etag", &etag),
            ("fm.title", "Hello, typed"),
            ("fm.date", "2026-01-12T09:30:00+01:00"),
            ("fm.author", "ada"),
            ("fm.tags", "announcements, rust"),
            ("fm.price", ""),
            ("fm.rating", "4"),
            ("fm.featured", "false"),
            ("fm.category", "guide"),
            ("fm.event_day", "2026-05-01"),
            ("fm.cover", "/media/uploads/logo.png"),
            ("fm.related", "about"),
            ("fm.links", ""),
            ("fm.seo.title", ""),
            ("fm.seo.noindex", "false"),
            ("fm.sku", "ABC-12"),
            ("status", "published"),
            ("extra", "colour: blue\n"),
            ("body", "Saved text.\n"),
        ],
        &[],
    );
    assert_eq!(emptied.status, 303, "{}", emptied.body);
    let fm = frontmatter(site.path(), "2026-01-12-hello-world.md");
    for gone in ["price", "topics", "links", "seo"] {
        assert!(fm.get(gone).is_none(), "{gone}: {fm}");
    }
    assert_eq!(fm["featured"], json!(false));
}

#[test]
fn a_new_item_is_created_from_the_typed_inputs() {
    let site = modelled_site();
    user_with_password(site.path(), "owner@example.com", "owner");
    let server = Server::start(site.path());
    let mut tab = signed_in(&server);
    let form = tab.get("/admin/collections/blog-posts/new");
    assert_eq!(form.status, 200);
    assert!(
        form.body.contains(r#"id="slug" name="slug""#) && form.body.contains(r#"name="fm.title""#),
        "{}",
        form.body
    );
    let csrf = form.input("csrf");
    let new = "/admin/collections/blog-posts/new";
    assert!(form.body.contains(r#"<input type="hidden" name="form" value="model">"#), "{}", form.body);
    let fields = [
        ("csrf", csrf.as_str()),
        ("form", "model"),
        ("slug", "refused"),
        ("fm.title", ""),
        ("fm.rating", "9"),
        ("status", "draft"),
    ];
    let refused = tab.post(new, &fields, &[]);
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(refused.body.contains(r##"<a href="#f-title">Title</a> is required"##), "{}", refused.body);
    assert!(refused.body.contains(r#"value="9""#), "{}", refused.body);

    let created = tab.post(
        new,
        &[
            ("csrf", &csrf),
            ("form", "model"),
            ("slug", "typed"),
            ("fm.title", "Typed"),
            ("fm.price", "3"),
            ("fm.featured", "false"),
            ("status", "draft"),
            ("body", "New."),
        ],
        &[],
    );
    assert_eq!(created.status, 303, "{}", created.body);
    let name = fs::read_dir(site.path().join("content/posts"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .find(|n| n.ends_with("-typed.md"))
        .unwrap();
    let fm = frontmatter(site.path(), &name);
    assert_eq!(fm, json!({"title": "Typed", "price": 3, "featured": false, "status": "draft"}));
}

/// A form of the kind the collection had before `cms.yaml` gave it fields (no `form=model`)
/// is refused and changes nothing: its missing inputs would read as emptied.
#[test]
fn a_form_opened_before_the_model_changed_is_refused_and_saves_nothing() {
    let site = modelled_site();
    user_with_password(site.path(), "owner@example.com", "owner");
    let server = Server::start(site.path());
    let mut tab = signed_in(&server);
    let page = tab.get(HELLO);
    let (csrf, etag) = (page.input("csrf"), page.input("etag"));
    let stored = fs::read(site.path().join("content/posts/2026-01-12-hello-world.md")).unwrap();
    let old_form = [("csrf", csrf.as_str()), ("etag", etag.as_str()), ("title", "Hello"), ("body", "x")];
    let refused = tab.post(HELLO, &old_form, &[]);
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(refused.body.contains("open the item again"), "{}", refused.body);
    assert_eq!(fs::read(site.path().join("content/posts/2026-01-12-hello-world.md")).unwrap(), stored);
}

/// A post edited by hand so that it breaks the model: the item list marks it, the edit page
/// says how, each error at its field, and shows what is written (nothing lost: text in a
/// number field is in the YAML box).
#[test]
fn an_item_that_breaks_the_model_is_marked_in_the_list_and_on_its_edit_page() {
    let site = modelled_site();
    user_with_password(site.path(), "owner@example.com", "owner");
    let post = site.path().join("content/posts/2026-03-20-tables-and-lists.md");
    let text = fs::read_to_string(&post).unwrap().replacen(
        "title: Tables and Lists\n",
        "price: ten\nrelated: nowhere\n",
        1,
    );
    fs::write(&post, text).unwrap();
    let server = Server::start(site.path());
    let mut tab = signed_in(&server);

    let list = tab.get("/admin/collections/blog-posts");
    assert_eq!(list.status, 200, "{}", list.body);
    assert_eq!(
        list.body.matches(r#"<span class="badge invalid">breaks the model</span>"#).count(),
        1,
        "{}",
        list.body
    );
    let row = &list.body[list.body.find("2026-03-20-tables-and-lists.md").unwrap()..];
    assert!(row[..row.find("</tr>").unwrap()].contains("badge invalid"), "on the broken item's row");

    let page = tab.get("/admin/collections/blog-posts/items/2026-03-20-tables-and-lists.md");
    assert_eq!(page.status, 200, "{}", page.body);
    let body = &page.body;
    for needle in [
        "This item breaks its collection&#39;s model (3 fields)",
        r##"<a href="#f-title">Title</a> is required"##,
        r##"<a href="#f-price">Price</a> must be a number ≥ 0, got a string"##,
        r##"<a href="#f-related">Related</a> names &#34;nowhere&#34;, but pages has no item with that slug"##,
        // Text in a number field is shown where it can be mended as it is: the YAML box
        // (an input showing "ten" as a number would be emptied by the browser).
        r#"<input type="number" id="f-price" name="fm.price" value="" min="0" step="any" aria-invalid="true" aria-describedby="f-price-hint f-price-error">"#,
        "Its value is in Other fields below: this input cannot show it.",
    ] {
        assert!(body.contains(needle), "{needle}\n{body}");
    }
    assert!(textarea(body, "extra").contains("price: ten"), "{body}");
    assert!(!body.contains("data-autofocus"), "a notice, not a refused save");
    assert!(body.contains("<h1>2026-03-20-tables-and-lists.md</h1>"), "without a title, the file: {body}");
}

/// A reference's input offers the first page of its collection by title; what is typed is
/// searched for in the whole collection (`/admin/collections/{c}/suggest`), drafts too.
#[test]
fn a_reference_searches_its_whole_collection() {
    let site = modelled_site();
    user_with_password(site.path(), "owner@example.com", "owner");
    let pages = site.path().join("content/pages");
    for n in 0..110 {
        fs::write(pages.join(format!("yak-{n}.md")), format!("---\ntitle: Yak {n}\n---\nA yak.\n")).unwrap();
    }
    fs::write(pages.join("zulu-draft.md"), "---\ntitle: Zulu draft\nstatus: draft\n---\nSoon.\n").unwrap();
    let server = Server::start(site.path());
    let mut tab = Tab::new(&server);
    let anonymous = tab.get("/admin/collections/pages/suggest?q=zulu");
    assert_eq!(anonymous.status, 303, "signed in only");
    assert!(
        anonymous.header("location").unwrap().starts_with("/admin/signin"),
        "{:?}",
        anonymous.header("location")
    );
    assert_eq!(tab.sign_in("owner@example.com", PASSWORD).status, 303);

    let edit = tab.get(HELLO);
    assert!(
        edit.body.contains(r#"list="dl-ref-pages" data-suggest="/admin/collections/pages/suggest""#),
        "{}",
        edit.body
    );
    let listed = edit.body.matches(r#"<option value="yak-"#).count();
    assert!(listed < 110 && edit.body.contains(r#"<option value="about" label="About">"#), "{listed}");
    assert!(!edit.body.contains("zulu-draft"), "past the first page by title");

    let found = tab.get("/admin/collections/pages/suggest?q=Zulu");
    assert_eq!((found.status, found.header("cache-control")), (200, Some("no-store")));
    assert_eq!(
        serde_json::from_str::<Value>(&found.body).unwrap(),
        json!([{"value": "zulu-draft", "label": "Zulu draft"}])
    );
    let prefix: Value = serde_json::from_str(&tab.get("/admin/collections/pages/suggest?q=ya").body).unwrap();
    assert_eq!(prefix.as_array().unwrap().len(), 20, "at most 20: {prefix}");
    assert_eq!(tab.get("/admin/collections/pages/suggest?q=z").body, "[]", "two characters at least");
    assert_eq!(tab.get("/admin/collections/nope/suggest?q=zulu").status, 404);
}
