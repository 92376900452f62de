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
    let mut text = Collapsed::with_capacity(markdown.len());
    for node in root.descendants() {
        match &node.data().value {
            NodeValue::Text(t) => text.push(t),
            NodeValue::Code(code) => text.push(&code.literal),
            NodeValue::CodeBlock(block) => {
                text.space();
                text.push(&block.literal);
            }
            NodeValue::SoftBreak
            | NodeValue::LineBreak
            | NodeValue::Paragraph
            | NodeValue::Heading(_)
            | NodeValue::Item(_)
            | NodeValue::TableCell => text.space(),
            _ => {}
        }
    }
    text.out
}

/// The start of [`to_plain_text`]: a string prefix of it with more than `chars`
/// characters, or all of it. What an excerpt of `chars` characters needs, made without
/// parsing the whole body (a start-up makes one for every item).
///
/// The body is cut before a blank line, where every paragraph (and so every inline
/// construct) has ended, and parsed alone: each block before the cut parses as it does in
/// the whole body, and a block the cut splits (a list, a quote, code) gives a start of its
/// text. Two constructs let later lines change earlier text, link reference definitions
/// and footnotes (`[a]: /x`, `[^1]`): a body with either is parsed whole.
pub fn plain_text_start(markdown: &str, chars: usize) -> String {
    if markdown.contains("]:") || markdown.contains("[^") {
        return to_plain_text(markdown);
    }
    let mut from = chars * 2;
    while let Some(cut) = blank_line_from(markdown, from) {
        let text = to_plain_text(&markdown[..cut]);
        if text.chars().count() > chars {
            return text;
        }
        from = cut * 2;
    }
    to_plain_text(markdown)
}

/// The byte offset of the first blank line (spaces and tabs only) that starts at or after
/// `from`.
fn blank_line_from(markdown: &str, from: usize) -> Option<usize> {
    let bytes = markdown.as_bytes();
    let mut at = from.checked_sub(1)?;
    loop {
        let newline = at + memchr(b'\n', bytes.get(at..)?)?;
        let start = newline + 1;
        let line_end = memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |n| start + n);
        let line = &bytes[start..line_end];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line_end < bytes.len() && line.iter().all(|&b| b == b' ' || b == b'\t') {
            return Some(start);
        }
        at = start;
    }
}

fn memchr(byte: u8, haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|&b| b == byte)
}

/// Text with every run of whitespace made one space, and none at either end: what
/// `split_whitespace().join(" ")` of the whole would give, made in one pass.
struct Collapsed {
    out: String,
    space_pending: bool,
}

impl Collapsed {
    fn with_capacity(capacity: usize) -> Self {
        Self { out: String::with_capacity(capacity), space_pending: false }
    }

    fn space(&mut self) {
        self.space_pending = true;
    }

    fn push(&mut self, piece: &str) {
        let mut rest = piece;
        loop {
            let word_start = rest.trim_start();
            if word_start.len() != rest.len() {
                self.space_pending = true;
            }
            if word_start.is_empty() {
                return;
            }
            let end = word_start.find(char::is_whitespace).unwrap_or(word_start.len());
            if self.space_pending && !self.out.is_empty() {
                self.out.push(' ');
            }
            self.space_pending = false;
            self.out.push_str(&word_start[..end]);
            rest = &word_start[end..];
        }
    }
}

/// Cuts `text` to at most `max_chars` characters on a word boundary, adding `…` when cut.
pub fn excerpt(text: &str, max_chars: usize) -> String {
    let Some((end, _)) = text.char_indices().nth(max_chars) else {
        return text.to_owned();
    };
    let cut = &text[..end];
    let at_word = match cut.rfind(char::is_whitespace) {
        Some(space) if space > 0 => &cut[..space],
        _ => cut,
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

    /// The plain text as it was made before [`Collapsed`]: the text pieces pushed into
    /// one string, its whitespace collapsed at the end.
    fn plain_text_reference(markdown: &str) -> String {
        let arena = Arena::new();
        let mut text = String::new();
        for node in parse_document(&arena, markdown, &options()).descendants() {
            match &node.data().value {
                NodeValue::Text(t) => text.push_str(t),
                NodeValue::Code(code) => text.push_str(&code.literal),
                NodeValue::CodeBlock(block) => text.push_str(&format!(" {}", block.literal)),
                NodeValue::SoftBreak
                | NodeValue::LineBreak
                | NodeValue::Paragraph
                | NodeValue::Heading(_)
                | NodeValue::Item(_)
                | NodeValue::TableCell => text.push(' '),
                _ => {}
            }
        }
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// Blocks that end at a blank line and blocks that do not (lists, quotes, code, HTML
    /// comments), and the constructs whose later lines change earlier text.
    const BLOCKS: &[&str] = &[
        "A paragraph of plain words that goes on for a while, long enough to be cut.",
        "Some *emphasis*, **strong** and `code` with a [link](https://example.com) and www.example.com.",
        "- one item\n- two items\n- three items",
        "1. first\n\n2. second, loose\n\n   continued inside",
        "> a quote\n>\n> that goes on",
        "```\nfenced code\n\nwith a blank line\n```",
        "```rust\nan unclosed fence\n\nto the end",
        "    indented code\n\n    more indented code",
        "<!-- a comment\n\nthat spans a blank line -->after it",
        "<div>\n\n*inside html*\n</div>",
        "| a | b |\n|---|---|\n| 1 | 2 |",
        "Setext title\n===",
        "===",
        "---",
        "# An ATX heading",
        "Tabs\tand  double  spaces, a hard  \nbreak",
        "日本語\u{3000}のテキスト、全角の空白",
        "Windows lines\r\n\r\nand more\r\n",
        "- [ ] a task\n- [x] done",
        "~~struck~~ words",
        "A [reference][r] link\n\n[r]: https://example.com/r",
        "A footnote[^1]\n\n[^1]: the note",
        "[^2]: a note first",
        "  \t",
    ];

    #[test]
    fn collapsed_text_is_what_splitting_and_joining_gave() {
        for first in BLOCKS {
            for second in BLOCKS {
                let markdown = format!("{first}\n\n{second}\n{first}");
                assert_eq!(to_plain_text(&markdown), plain_text_reference(&markdown), "{markdown:?}");
            }
        }
    }

    #[test]
    fn the_start_of_the_plain_text_gives_the_same_excerpt() {
        for first in BLOCKS {
            for second in BLOCKS {
                for joint in ["\n\n", "\n", "\n  \n"] {
                    let markdown = format!("{first}{joint}{second}\n\n{first}{joint}{second}");
                    let whole = to_plain_text(&markdown);
                    for chars in [3, 10, 25, 60, 160] {
                        let start = plain_text_start(&markdown, chars);
                        assert!(whole.starts_with(&start), "{markdown:?} at {chars}: {start:?} / {whole:?}");
                        assert!(start == whole || start.chars().count() > chars, "{markdown:?} at {chars}");
                        assert_eq!(excerpt(&start, chars), excerpt(&whole, chars), "{markdown:?} at {chars}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_long_body_is_cut_at_a_blank_line_and_a_referenced_one_is_not() {
        let paragraph = "Words and more words in a paragraph of some length, ".repeat(4);
        let markdown = format!("{paragraph}\n\n{paragraph}\n\n{paragraph}");
        let start = plain_text_start(&markdown, 40);
        assert_eq!(start, to_plain_text(&paragraph));
        let referenced = format!("{markdown}\n\n[x]: /y");
        assert_eq!(plain_text_start(&referenced, 40), to_plain_text(&referenced));
    }
}
