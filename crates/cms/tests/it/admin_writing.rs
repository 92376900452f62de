//! Writing in the web editor over real HTTP (issue 36): the edit page's pinned action bar
//! (Save, Publish, Preview, the status), the preview as a labelled section whose headings
//! sit under its own, the media library the body's "Insert image" and image fields pick
//! from, and the media page's URL and Markdown of each file at a chosen size. The
//! browser half (the leave warning, Ctrl+S, inserting at the cursor, copying, the
//! keyboard, axe-core) is `writing_works_in_a_real_browser` below (`tests/browser/writing.py`).

use crate::admin::{PASSWORD, Tab, user_with_password};
use crate::admin_browser::{browser_tools, run_script};
use crate::{Server, demo_site};

const HELLO: &str = "/admin/collections/blog-posts/items/2026-01-12-hello-world.md";

fn signed_in(server: &Server) -> Tab<'_> {
    let mut tab = Tab::new(server);
    assert_eq!(tab.sign_in("owner@example.com", PASSWORD).status, 303);
    tab
}

fn count(body: &str, needle: &str) -> usize {
    body.matches(needle).count()
}

/// The part of `body` from `start` up to the next `end` after it.
fn between<'a>(body: &'a str, start: &str, end: &str) -> &'a str {
    let from = body.find(start).unwrap_or_else(|| panic!("{start} not in {body}"));
    let rest = &body[from..];
    &rest[..rest.find(end).unwrap_or_else(|| panic!("{end} not after {start}"))]
}

#[test]
fn the_edit_page_has_a_pinned_action_bar_a_labelled_preview_and_the_media_library() {
    let site = demo_site();
    user_with_password(site.path(), "owner@example.com", "owner");
    let server = Server::start(site.path());
    let mut tab = signed_in(&server);
    let csrf = tab.csrf();

    // A post whose text has headings of its own.
    let created = tab.post(
        "/admin/collections/blog-posts/new",
        &[
            ("csrf", &csrf),
            ("form", "model"),
            ("fm.title", "Headings"),
            ("status", "draft"),
            ("body", "# Big title\n\n## A part\n\nText.\n"),
        ],
        &[],
    );
    assert_eq!(created.status, 303, "{}", created.body);
    let location = created.header("location").unwrap().split('?').next().unwrap().to_owned();

    let page = tab.get(&location);
    assert_eq!(page.status, 200);
    assert!(page.header("content-type").unwrap().starts_with("text/html"));
    let csp = page.header("content-security-policy").unwrap();
    assert!(csp.contains("script-src 'self'") && csp.contains("style-src 'self'"), "{csp}");
    let body = &page.body;
    assert!(!body.contains(" style=") && !body.contains("<script>"), "no inline style or script");
    // The bar: status, Save (with its shortcut), Publish, Preview; after the text.
    let bar = between(body, "<div class=\"action-bar\" id=\"action-bar\">", "</div>");
    assert!(bar.contains("Status: <span class=\"badge draft\" id=\"bar-status\">Draft</span>"), "{bar}");
    assert!(bar.contains("id=\"save\" aria-keyshortcuts=\"Control+S Meta+S\">Save</button>"), "{bar}");
    assert!(bar.contains("value=\"publish\" id=\"publish\">Publish</button>"), "{bar}");
    assert!(bar.contains("<a href=\"#preview-section\" id=\"preview-link\">Preview</a>"), "{bar}");
    assert!(body.find("id=\"action-bar\"").unwrap() > body.find("id=\"body\"").unwrap());
    assert!(body.contains("id=\"history\"") && body.contains("id=\"delete\""), "the other actions stay");
    assert!(!body.contains("data-unsaved"), "an opened item holds nothing unsaved");

    // The preview: a section named by its heading, no live region, its headings below it.
    assert!(
        body.contains(
            "<section class=\"pane\" id=\"preview-section\" aria-labelledby=\"preview-title\" tabindex=\"-1\">"
        ),
        "{body}"
    );
    let preview = between(body, "<div id=\"preview\" class=\"preview\">", "</section>");
    assert!(preview.contains("<h3 class=\"md-h1\">Big title</h3>"), "{preview}");
    assert!(preview.contains("<h4 class=\"md-h2\">A part</h4>"), "{preview}");
    assert!(!body.contains("aria-live"), "no live region: the status line says it");
    assert!(body.contains("<p class=\"hint\" id=\"preview-state\" role=\"status\"></p>"));
    assert_eq!(count(body, "<h1"), 1, "one h1: the page's");

    // The media library: one list of images for the body's Insert image and the cover.
    assert_eq!(count(body, "<datalist id=\"dl-images\">"), 1);
    let images = between(body, "<datalist id=\"dl-images\">", "</datalist>");
    assert!(images.contains("value=\"/media/uploads/logo.png\""), "{images}");
    assert!(!images.contains("README.txt"), "images only: {images}");
    let files = between(body, "<datalist id=\"dl-files\">", "</datalist>");
    assert!(files.contains("value=\"/media/uploads/README.txt\""), "{files}");
    assert!(body.contains("data-insert-image=\"body\" data-list=\"dl-images\""), "{body}");
    assert!(
        body.contains("<a href=\"/admin/media\" target=\"_blank\" rel=\"noopener\""),
        "without the script"
    );
    assert!(
        body.contains("id=\"f-cover\"") && body.contains("list=\"dl-images\""),
        "the cover picks from it"
    );

    // The live preview answers with the same demoted headings.
    let previewed = tab.post("/admin/preview", &[("csrf", &csrf), ("body", "# One\n\n###### Six\n")], &[]);
    assert_eq!(previewed.status, 200);
    assert!(previewed.header("content-type").unwrap().starts_with("text/html"));
    assert_eq!(previewed.body, "<h3 class=\"md-h1\">One</h3>\n<h6 class=\"md-h6\">Six</h6>\n");

    // A published item's bar offers Save as draft, and says so.
    let published = tab.get(HELLO);
    let bar = between(&published.body, "<div class=\"action-bar\" id=\"action-bar\">", "</div>");
    assert!(bar.contains("badge published\" id=\"bar-status\">Published</span>"), "{bar}");
    assert!(bar.contains("id=\"unpublish\">Save as draft</button>"), "{bar}");

    // The new-item page: Create in the bar, no Publish, not saved yet.
    let new = tab.get("/admin/collections/blog-posts/new");
    assert_eq!(new.status, 200);
    let bar = between(&new.body, "<div class=\"action-bar\" id=\"action-bar\">", "</div>");
    assert!(bar.contains("Not saved yet") && bar.contains("id=\"create\""), "{bar}");
    assert!(!bar.contains("publish"), "{bar}");
    assert_eq!(count(&new.body, "<datalist id=\"dl-images\">"), 1);
    assert_eq!(count(&new.body, "<h1"), 1);

    // A page that holds text not saved (a conflict) warns before leaving at once.
    let etag = page.input("etag");
    let saved = tab.post(
        &location,
        &[
            ("csrf", &csrf),
            ("form", "model"),
            ("etag", &etag),
            ("fm.title", "Theirs"),
            ("status", "draft"),
            ("body", "x"),
        ],
        &[],
    );
    assert_eq!(saved.status, 303);
    let conflict = tab.post(
        &location,
        &[
            ("csrf", &csrf),
            ("form", "model"),
            ("etag", &etag),
            ("fm.title", "Mine"),
            ("status", "draft"),
            ("body", "y"),
        ],
        &[],
    );
    assert_eq!(conflict.status, 409);
    assert!(conflict.body.contains("id=\"edit-form\" data-unsaved>"), "{}", conflict.body);
}

/// A collection without a model (the fixed fields) gets the same bar, preview and library.
#[test]
fn a_collection_without_a_model_has_the_same_bar_preview_and_library() {
    let site = crate::admin_model::modelled_site();
    user_with_password(site.path(), "owner@example.com", "owner");
    let server = Server::start(site.path());
    let mut tab = signed_in(&server);
    let page = tab.get("/admin/collections/pages/items/about.md");
    assert_eq!(page.status, 200);
    let body = &page.body;
    assert!(!body.contains("name=\"form\" value=\"model\""), "the fixed fields");
    let bar = between(body, "<div class=\"action-bar\" id=\"action-bar\">", "</div>");
    assert!(bar.contains("id=\"save\"") && bar.contains("id=\"preview-link\""), "{bar}");
    assert!(body.contains("id=\"preview-section\" aria-labelledby=\"preview-title\""));
    assert_eq!(count(body, "<h1"), 1);
    assert_eq!(count(body, "<datalist id=\"dl-images\">"), 1);
    assert!(body.contains("data-insert-image=\"body\""));
    let new = tab.get("/admin/collections/pages/new");
    assert!(between(&new.body, "<div class=\"action-bar\"", "</div>").contains("id=\"create\""));
}

#[test]
fn the_media_page_offers_each_files_url_and_markdown_at_a_chosen_size() {
    let site = demo_site();
    user_with_password(site.path(), "owner@example.com", "owner");
    let server = Server::start(site.path());
    let mut tab = signed_in(&server);
    let page = tab.get("/admin/media");
    assert_eq!(page.status, 200);
    let body = &page.body;
    assert!(!body.contains(" style=") && !body.contains("<script>"), "no inline style or script");
    // Without the script the form still has its Upload button.
    assert!(body.contains("<button type=\"submit\" id=\"upload\">Upload</button>"));

    // Files are listed by name: README.txt, then logo.png.
    assert!(body.contains("<input id=\"url-1\" value=\"/media/uploads/README.txt\" readonly"), "{body}");
    assert!(body.contains("<input id=\"md-1\" value=\"[README.txt](/media/uploads/README.txt)\" readonly"));
    assert!(!body.contains("id=\"size-1\""), "a file that is not an image has no sizes");
    assert!(body.contains("<input id=\"url-2\" value=\"/media/uploads/logo.png\" readonly"));
    assert!(body.contains("<input id=\"md-2\" value=\"![logo](/media/uploads/logo.png)\" readonly"));
    assert!(body.contains(
        "data-copy=\"md-2\" id=\"copy-md-2\">Copy Markdown<span class=\"sr-only\"> of logo.png</span></button>"
    ));
    assert!(body.contains(
        "data-copy=\"url-2\" id=\"copy-url-2\">Copy URL<span class=\"sr-only\"> of logo.png</span></button>"
    ));
    let sizes = between(body, "<select id=\"size-2\" data-markdown-for=\"md-2\"", "</select>");
    assert!(
        sizes.contains("<option value=\"/media/uploads/logo.png\" data-markdown=\"![logo](/media/uploads/logo.png)\">Original</option>"),
        "{sizes}"
    );
    assert!(
        sizes.contains(
            "<option value=\"/media/uploads/logo.png?w=800\" data-markdown=\"![logo](/media/uploads/logo.png?w=800)\">800 px wide</option>"
        ),
        "{sizes}"
    );
    // The demo's presets: thumb and large.
    assert!(sizes.contains("/media/uploads/logo.png?preset=thumb"), "{sizes}");
    assert!(sizes.contains("/media/uploads/logo.png?preset=large"), "{sizes}");
    // Every size is one the site serves.
    for url in sizes.split("<option value=\"").skip(1).map(|o| &o[..o.find('"').unwrap()]) {
        let url = url.replace("&amp;", "&");
        let answer = tab.get(&url);
        assert_eq!(answer.status, 200, "{url}");
        assert!(answer.header("content-type").unwrap().starts_with("image/"), "{url}");
    }
}

/// The browser half: `tests/browser/writing.py` (its doc lists the steps).
#[test]
fn writing_works_in_a_real_browser() {
    let site = demo_site();
    user_with_password(site.path(), "owner@example.com", "owner");
    let server = Server::start(site.path());
    let Some(tools) = browser_tools() else { return };
    run_script(&tools, "writing.py", &server, &[]);
    let text = std::fs::read_to_string(site.path().join("content/posts/2026-01-12-hello-world.md")).unwrap();
    assert!(text.contains("Saved with the keyboard."), "Ctrl+S saved: {text}");
    assert!(text.contains("![logo](/media/uploads/logo.png)"), "the inserted image was saved: {text}");
}
