//! RSS 2.0 and sitemaps.org documents, written by hand: a small escaping helper and the
//! dates their consumers expect (RFC 822 for RSS, W3C datetime for sitemaps).

use std::fmt::Write as _;

use time::format_description::well_known::Rfc2822;
use time::{OffsetDateTime, UtcOffset};

/// Escapes text for XML character data and attribute values. Characters XML 1.0 does not
/// allow at all (most control characters, U+FFFE, U+FFFF) are dropped, since no escape
/// can carry them.
pub fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

/// RFC 822 date-time as RSS readers want it, in the offset the date was written with, e.g.
/// `Thu, 19 Apr 2018 16:07:00 +0100`. `None` for years RFC 2822 cannot express (before
/// 1900).
pub fn rfc822(at: OffsetDateTime) -> Option<String> {
    at.format(&Rfc2822).ok()
}

/// W3C datetime in UTC as sitemaps want it, e.g. `2024-03-01T10:00:00+00:00`.
pub fn w3c_datetime(at: OffsetDateTime) -> String {
    let at = at.to_offset(UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}+00:00",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second()
    )
}

/// An RSS channel's own elements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RssChannel {
    pub title: String,
    pub link: String,
    pub description: String,
    /// RFC 822; the newest item's date.
    pub last_build_date: Option<String>,
    /// `<language>`: the feed's language, on a site with languages.
    pub language: Option<String>,
}

/// One `<item>` of a feed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RssItem {
    pub title: String,
    pub link: String,
    /// A permanent absolute URL (written with `isPermaLink="true"`).
    pub guid: String,
    /// RFC 822.
    pub pub_date: Option<String>,
    pub description: String,
    pub categories: Vec<String>,
}

/// An RSS 2.0 document.
pub fn rss_xml(channel: &RssChannel, items: &[RssItem]) -> String {
    let mut xml = String::with_capacity(512 + items.len() * 512);
    xml.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rss version=\"2.0\">\n<channel>\n");
    element(&mut xml, 1, "title", &channel.title);
    element(&mut xml, 1, "link", &channel.link);
    element(&mut xml, 1, "description", &channel.description);
    if let Some(language) = &channel.language {
        element(&mut xml, 1, "language", language);
    }
    if let Some(date) = &channel.last_build_date {
        element(&mut xml, 1, "lastBuildDate", date);
    }
    element(&mut xml, 1, "generator", "cms");
    for item in items {
        xml.push_str("  <item>\n");
        element(&mut xml, 2, "title", &item.title);
        element(&mut xml, 2, "link", &item.link);
        let _ = writeln!(xml, "    <guid isPermaLink=\"true\">{}</guid>", xml_escape(&item.guid));
        if let Some(date) = &item.pub_date {
            element(&mut xml, 2, "pubDate", date);
        }
        element(&mut xml, 2, "description", &item.description);
        for category in &item.categories {
            element(&mut xml, 2, "category", category);
        }
        xml.push_str("  </item>\n");
    }
    xml.push_str("</channel>\n</rss>\n");
    xml
}

/// One `<url>` of a sitemap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SitemapUrl {
    /// Absolute URL.
    pub loc: String,
    /// W3C datetime.
    pub lastmod: Option<String>,
    /// The page in each language, this one's included (`hreflang`, absolute URL), and
    /// `x-default`, on a site with languages for a page that has translations (as Google
    /// asks: every version lists every version).
    pub alternates: Vec<(String, String)>,
}

/// A sitemaps.org `urlset` document.
pub fn sitemap_xml(urls: &[SitemapUrl]) -> String {
    let mut xml = String::with_capacity(128 + urls.len() * 128);
    xml.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"");
    if urls.iter().any(|url| !url.alternates.is_empty()) {
        xml.push_str(" xmlns:xhtml=\"http://www.w3.org/1999/xhtml\"");
    }
    xml.push_str(">\n");
    for url in urls {
        xml.push_str("  <url>\n");
        element(&mut xml, 2, "loc", &url.loc);
        if let Some(lastmod) = &url.lastmod {
            element(&mut xml, 2, "lastmod", lastmod);
        }
        for (hreflang, href) in &url.alternates {
            let _ = writeln!(
                xml,
                "    <xhtml:link rel=\"alternate\" hreflang=\"{}\" href=\"{}\"/>",
                xml_escape(hreflang),
                xml_escape(href)
            );
        }
        xml.push_str("  </url>\n");
    }
    xml.push_str("</urlset>\n");
    xml
}

fn element(xml: &mut String, depth: usize, name: &str, text: &str) {
    let _ = writeln!(xml, "{:indent$}<{name}>{}</{name}>", "", xml_escape(text), indent = depth * 2);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_quotes_and_drops_forbidden_characters() {
        assert_eq!(
            xml_escape(r#"Tom & "Jerry" <b>'s</b>"#),
            "Tom &amp; &quot;Jerry&quot; &lt;b&gt;&apos;s&lt;/b&gt;"
        );
        assert_eq!(xml_escape("a\u{0}b\u{1b}c\td\u{FFFF}"), "abc\td");
        assert_eq!(xml_escape("&amp;"), "&amp;amp;", "already escaped text is escaped again");
    }

    #[test]
    fn date_formats() {
        let parse = |text| crate::dates::SiteZone::utc().parse(text).unwrap();
        assert_eq!(rfc822(parse("2024-03-01")).unwrap(), "Fri, 01 Mar 2024 00:00:00 +0000");
        let offset = parse("2024-03-01T01:30:00+02:00");
        assert_eq!(rfc822(offset).unwrap(), "Fri, 01 Mar 2024 01:30:00 +0200", "the written offset is kept");
        assert_eq!(w3c_datetime(offset), "2024-02-29T23:30:00+00:00");
        assert_eq!(rfc822(parse("2018-04-19 16:07:00 +0100")).unwrap(), "Thu, 19 Apr 2018 16:07:00 +0100");
        assert_eq!(rfc822(parse("1800-01-01")), None);
    }

    #[test]
    fn rss_document() {
        let channel = RssChannel {
            language: None,
            title: "A & B".into(),
            link: "https://example.com/blog".into(),
            description: "<News>".into(),
            last_build_date: Some("Fri, 01 Mar 2024 00:00:00 +0000".into()),
        };
        let item = RssItem {
            title: "Tom & \"Jerry\" <3".into(),
            link: "https://example.com/blog/x?item=a&b".into(),
            guid: "https://example.com/blog/x".into(),
            pub_date: None,
            description: "d".into(),
            categories: vec!["R&D".into(), "web".into()],
        };
        let xml = rss_xml(&channel, &[item]);
        assert!(
            xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rss version=\"2.0\">"),
            "{xml}"
        );
        assert!(xml.contains("  <title>A &amp; B</title>\n"), "{xml}");
        assert!(xml.contains("<description>&lt;News&gt;</description>"), "{xml}");
        assert!(xml.contains("    <title>Tom &amp; &quot;Jerry&quot; &lt;3</title>\n"), "{xml}");
        assert!(xml.contains("<link>https://example.com/blog/x?item=a&amp;b</link>"), "{xml}");
        assert!(xml.contains("<guid isPermaLink=\"true\">https://example.com/blog/x</guid>"), "{xml}");
        assert!(xml.contains("<category>R&amp;D</category>\n    <category>web</category>"), "{xml}");
        assert!(!xml.contains("pubDate"), "no date, no pubDate: {xml}");
    }

    #[test]
    fn sitemap_document() {
        let xml = sitemap_xml(&[SitemapUrl {
            alternates: Vec::new(),
            loc: "https://example.com/?item=a&x=1".into(),
            lastmod: Some("2024-03-01T00:00:00+00:00".into()),
        }]);
        assert_eq!(
            xml,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n\
             \x20 <url>\n\
             \x20   <loc>https://example.com/?item=a&amp;x=1</loc>\n\
             \x20   <lastmod>2024-03-01T00:00:00+00:00</lastmod>\n\
             \x20 </url>\n\
             </urlset>\n"
        );
    }
}
