//! Markdown to HTML and to plain text. Raw HTML in Markdown is never passed through:
//! comrak's safe mode replaces it and drops `javascript:`-style link targets.

use comrak::nodes::NodeValue;
use comrak::{Arena, Options, markdown_to_html, parse_document};

fn options() -> Options<'static> {
    let mut options = Options::default();
    options.extension.strikethrough = true;
    options.extension.table = true;
    options.extension.autolink = true;
    options.extension.tasklist = true;
    options.extension.footnotes = true;
    options.render.r#unsafe = false;
    options
}

/// Renders a Markdown body to safe HTML.
pub fn to_html(markdown: &str) -> String {
    markdown_to_html(markdown, &options())
}

/// The text of a Markdown body without markup, whitespace collapsed.
pub fn to_plain_text(markdown: &str) -> String {
    let arena = Arena::new();
    let root = parse_document(&arena, markdown, &options());
    let mut text = String::new();
    for node in root.descendants() {
        match &node.data().value {
            NodeValue::Text(t) => text.push_str(t),
            NodeValue::Code(code) => text.push_str(&code.literal),
            NodeValue::CodeBlock(block) => {
                text.push(' ');
                text.push_str(&block.literal);
            }
            NodeValue::SoftBreak
            | NodeValue::LineBreak
            | NodeValue::Paragraph
            | NodeValue::Heading(_)
            | NodeValue::Item(_)
            | NodeValue::TableCell => {
                text.push(' ');
            }
            _ => {}
        }
    }
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Cuts `text` to at most `max_chars` characters on a word boundary, adding `…` when cut.
pub fn excerpt(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max_chars).collect();
    let at_word = match cut.rfind(char::is_whitespace) {
        Some(space) if space > 0 => &cut[..space],
        _ => &cut,
    };
    format!("{}…", at_word.trim_end_matches(|c: char| c.is_ascii_punctuation() || c.is_whitespace()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_script_never_passes_through() {
        let html =
            to_html("Hi <script>alert(1)</script>\n\n<script>x()</script>\n\n[x](javascript:alert(1))");
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("javascript:"), "{html}");
    }

    #[test]
    fn renders_extensions() {
        let html = to_html("# T\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n~~old~~");
        assert!(html.contains("<table>") && html.contains("<del>old</del>"), "{html}");
    }

    #[test]
    fn plain_text_and_excerpt() {
        let text = to_plain_text("# Title\n\nSome **bold** text and `code`.\n\n- one\n- two");
        assert_eq!(text, "Title Some bold text and code. one two");
        assert_eq!(to_plain_text("| a | b |\n|---|---|\n| 1 | 2 |"), "a b 1 2");
        assert_eq!(excerpt("alpha beta gamma", 12), "alpha beta…");
        assert_eq!(excerpt("short", 12), "short");
        assert_eq!(excerpt("averyveryverylongword", 5), "avery…");
    }
}
