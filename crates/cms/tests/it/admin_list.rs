//! The web editor's item list over real HTTP: its order (newest first, each run of one
//! date and the undated by last change), pages, each filter (status, tag, text) alone and
//! combined, the tag list, the "breaks the model" mark and the skipped files. The list is
//! a page of the facade's `list_items`, as the REST API's.

use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::admin::{PASSWORD, Tab, user_with_password};
use crate::{Server, demo_site};

/// Writes an item file last changed `age` seconds ago.
fn item(folder: &Path, name: &str, text: &str, age: u64) {
    let path = folder.join(name);
    std::fs::write(&path, text).unwrap();
    let file = std::fs::File::options().write(true).open(&path).unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(age)).unwrap();
}

/// The file names of a list page's rows, in order.
fn rows(body: &str) -> Vec<String> {
    body.split("<br><span class=\"hint\">")
        .skip(1)
        .map(|row| row[..row.find("</span>").unwrap()].to_owned())
        .collect()
}

fn notes(numbers: impl IntoIterator<Item = u32>) -> Vec<String> {
    numbers.into_iter().map(|n| format!("note-{n:02}.md")).collect()
}

/// `<a ... href="HREF"` is on the page (an ampersand as askama escapes it).
fn links_to(body: &str, href: &str) -> bool {
    body.contains(&format!("href=\"{}\"", href.replace('&', "&#38;")))
}

#[test]
fn the_item_list_pages_newest_first_and_filters_by_status_tag_and_text() {
    let site = demo_site();
    let root = site.path();
    let pages = root.join("content/pages");
    // Two of one date: the later change first (their file names say the other way).
    item(&pages, "twin-a.md", "---\ntitle: Twin A\ndate: 2025-02-01\nstatus: published\n---\n", 100);
    item(&pages, "twin-b.md", "---\ntitle: Twin B\ndate: 2025-02-01\nstatus: published\n---\n", 500);
    // Notes 1 to 22: drafts when even, tagged Alpha when a multiple of 3.
    for n in 1..=22u32 {
        let status = if n % 2 == 0 { "draft" } else { "published" };
        let tags = match n {
            1 => "\ntags: [Beta Test]",
            n if n % 3 == 0 => "\ntags: [Alpha]",
            _ => "",
        };
        let author = if n == 7 { "\nauthor: Kim" } else { "" };
        let text =
            format!("---\ntitle: Note {n}\ndate: 2025-01-{n:02}\nstatus: {status}{tags}{author}\n---\n");
        item(&pages, &format!("note-{n:02}.md"), &text, 1000);
    }
    // Breaks the model (a title is required).
    item(&pages, "untitled.md", "---\ndate: 2024-12-31\nstatus: draft\n---\n", 1000);
    // Undated after the dated, by last change: About, changed later, before Contact.
    item(&pages, "about.md", "---\ntitle: About\nstatus: published\n---\n", 10);
    item(&pages, "contact.md", "---\ntitle: Contact\nstatus: published\n---\n", 2000);
    std::fs::write(pages.join("broken.md"), "---\ntitle: [unclosed\n---\n").unwrap();
    user_with_password(root, "ed@example.com", "editor");
    let server = Server::start(root);
    let mut tab = Tab::new(&server);
    assert_eq!(tab.sign_in("ed@example.com", PASSWORD).status, 303);
    let mut list = |query: &str| {
        let answer = tab.get(&format!("/admin/collections/pages{query}"));
        assert_eq!(answer.status, 200, "{query}: {}", answer.body);
        answer.body
    };
    let count =
        |body: &str, words: &str| body.contains(&format!("<p class=\"hint\" id=\"count\">{words}</p>"));

    // Everything: 27 items on two pages of 20.
    let first = list("");
    let mut expected = vec!["twin-a.md".to_owned(), "twin-b.md".to_owned()];
    expected.extend(notes((5..=22).rev()));
    assert_eq!(rows(&first), expected);
    assert!(count(&first, "27 items"), "{first}");
    assert!(links_to(&first, "/admin/collections/pages?status=all&tag=&q=&page=2"), "{first}");
    assert!(first.contains("aria-current=\"page\"><span class=\"sr-only\">Page </span>1</a>"), "{first}");
    let second = list("?page=2");
    let mut expected = notes((1..=4).rev());
    expected.extend(["untitled.md", "about.md", "contact.md"].map(str::to_owned));
    assert_eq!(rows(&second), expected);
    assert!(second.contains("aria-current=\"page\"><span class=\"sr-only\">Page </span>2</a>"), "{second}");
    // Previous and next, as links with their `rel` (the pager's windowing has unit tests).
    let next =
        r#"<a href="/admin/collections/pages?status=all&#38;tag=&#38;q=&#38;page=2" rel="next">Next</a>"#;
    assert!(first.contains(next), "{first}");
    assert!(second.contains(r#"rel="prev">Previous</a>"#) && !second.contains(r#"rel="next""#), "{second}");
    assert!(rows(&list("?page=3")).is_empty(), "past the last page: no rows");
    assert!(list("?page=3").contains("No items match."));
    // The model's mark, on its row only; the unreadable file listed apart.
    assert_eq!(second.matches(r#"<span class="badge invalid">breaks the model</span>"#).count(), 1);
    let untitled_row = second.split("untitled.md</span>").nth(1).unwrap();
    assert!(untitled_row[..200].contains("breaks the model"), "{second}");
    assert!(second.contains("<code>broken.md</code>"), "{second}");
    // Every tag once, as written, none selected.
    assert!(first.contains("<option value=\"Alpha\">Alpha</option>"), "{first}");
    assert!(first.contains("<option value=\"Beta Test\">Beta Test</option>"), "{first}");
    assert_eq!(first.matches("<option value=\"Alpha\"").count(), 1);

    // Status: the drafts, one page, newest first.
    let drafts = list("?status=draft");
    let mut expected = notes((2..=22).rev().step_by(2));
    expected.push("untitled.md".into());
    assert_eq!(rows(&drafts), expected);
    assert!(count(&drafts, "12 items") && !drafts.contains("Page </span>"), "{drafts}");
    assert!(drafts.contains("<option value=\"draft\" selected>Drafts</option>"), "{drafts}");
    let published = list("?status=published");
    assert!(count(&published, "15 items"), "{published}");
    assert!(!rows(&published).iter().any(|name| ["note-02.md", "untitled.md"].contains(&name.as_str())));

    // Tag: as written or as its slug; its option selected.
    let alpha = list("?tag=Alpha");
    assert_eq!(rows(&alpha), notes([21, 18, 15, 12, 9, 6, 3]));
    assert!(alpha.contains("<option value=\"Alpha\" selected>Alpha</option>"), "{alpha}");
    let beta = list("?tag=beta-test");
    assert_eq!(rows(&beta), notes([1]));
    assert!(beta.contains("<option value=\"Beta Test\" selected>Beta Test</option>"), "{beta}");
    assert!(rows(&list("?tag=nothing")).is_empty());

    // Text: a title, file name or author containing it, or a tag equal to it, any case.
    assert_eq!(rows(&list("?q=kim")), notes([7]), "an author");
    assert_eq!(rows(&list("?q=TWIN")), ["twin-a.md", "twin-b.md"], "titles and file names");
    assert_eq!(rows(&list("?q=%20alpha%20")), notes([21, 18, 15, 12, 9, 6, 3]), "a tag, trimmed");
    assert!(rows(&list("?q=alph")).is_empty(), "a tag is equal, not contained");
    // Text over two pages: the page links keep the filters.
    let notes_first = list("?q=note");
    assert_eq!(rows(&notes_first), notes((3..=22).rev()));
    assert!(count(&notes_first, "22 items"), "{notes_first}");
    assert!(
        links_to(&notes_first, "/admin/collections/pages?status=all&tag=&q=note&page=2"),
        "{notes_first}"
    );
    assert!(notes_first.contains("name=\"q\" type=\"search\" value=\"note\""), "{notes_first}");
    assert_eq!(rows(&list("?status=all&tag=&q=note&page=2")), notes([2, 1]));

    // Combined: published, tagged Alpha, and "note-1" in the file name.
    let combined = list("?status=published&tag=Alpha&q=note-1");
    assert_eq!(rows(&combined), notes([15]));
    assert!(count(&combined, "1 item"), "{combined}");
    assert_eq!(rows(&list("?status=draft&tag=Alpha&q=note")), notes([18, 12, 6]));
    assert!(rows(&list("?status=draft&q=kim")).is_empty());
}
