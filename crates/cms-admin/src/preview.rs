//! The edit page's live preview of a body: the site's own rendering (`render::to_html`,
//! raw HTML never passes), with its headings moved under the preview's own heading.
//!
//! The preview is a section of the edit page headed `Preview` (an `h2` under the page's
//! `h1`). A post's `# Title` rendered as is would be a second `h1` and its `##` would sit
//! beside `Preview` in the page's outline. So the editor's preview (only it: the site and
//! the API render as before) demotes every heading by two levels (`h1` → `h3`, …, down to
//! `h6`) and keeps the written level as a class (`md-h1`) so that it still looks like its
//! level. Screen reader users still find the body's structure, inside the preview
//! section, where it belongs.

use cms_core::render;

/// How many levels the preview's headings go down: below the page's `h1` and the
/// preview's `h2`.
const DEMOTED_BY: u8 = 2;

/// The body as the preview shows it.
pub fn html(markdown: &str) -> String {
    demote_headings(&render::to_html(markdown))
}

/// `<h1>…</h1>` → `<h3 class="md-h1">…</h3>`. The renderer writes headings as bare
/// `<hN>` tags and never passes raw HTML (a `<h1>` typed in the text arrives escaped or
/// as a comment), so every such tag is one of its headings.
fn demote_headings(html: &str) -> String {
    let mut out = String::with_capacity(html.len() + 64);
    let mut rest = html;
    while let Some(at) = rest.find('<') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let closing = rest.starts_with("</");
        let tag = if closing { &rest[2..] } else { &rest[1..] };
        let level = match tag.as_bytes() {
            [b'h', digit @ b'1'..=b'6', b'>', ..] => digit - b'0',
            _ => {
                out.push('<');
                rest = &rest[1..];
                continue;
            }
        };
        let shown = (level + DEMOTED_BY).min(6);
        if closing {
            out.push_str(&format!("</h{shown}>"));
            rest = &rest[5..];
        } else {
            out.push_str(&format!("<h{shown} class=\"md-h{level}\">"));
            rest = &rest[4..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_go_under_the_preview_heading_and_keep_their_look() {
        let html = html("# Title\n\n## Part\n\n###### Deep\n\nText <h1>typed</h1> and `<h2>`\n");
        assert!(html.contains("<h3 class=\"md-h1\">Title</h3>"), "{html}");
        assert!(html.contains("<h4 class=\"md-h2\">Part</h4>"), "{html}");
        assert!(html.contains("<h6 class=\"md-h6\">Deep</h6>"), "{html}");
        assert!(!html.contains("<h1") && !html.contains("<h2"), "{html}");
        assert!(html.contains("&lt;h2&gt;"), "code stays as written: {html}");
    }

    #[test]
    fn other_tags_pass_unchanged() {
        let text = "a <b>c</b> <hr> <h7> </h> <";
        assert_eq!(demote_headings(text), text);
    }
}
