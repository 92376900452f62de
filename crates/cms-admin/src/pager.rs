//! The page links under a long list: the first and last pages, the pages around the
//! current one, gaps between, and the previous and next pages. A collection of 100,000
//! items has 5,000 pages of 20; a link to each would make the page itself megabytes.

/// One entry of the page links: a page, a gap, or the previous or next page.
pub struct PageLink {
    pub label: String,
    pub href: String,
    pub current: bool,
    /// Pages left out here; shown as "…", not a link.
    pub gap: bool,
    /// `prev` or `next` for the previous and next pages' links, else empty.
    pub rel: &'static str,
}

/// Pages on each side of the current one that get a link.
const AROUND: usize = 2;

/// The links for page `page` of `last` (none when there is one page), each page's address
/// made by `href`.
pub fn page_links(page: usize, last: usize, href: impl Fn(usize) -> String) -> Vec<PageLink> {
    if last <= 1 {
        return Vec::new();
    }
    let link = |p: usize, label: String, rel: &'static str| PageLink {
        label,
        href: href(p),
        current: p == page && rel.is_empty(),
        gap: false,
        rel,
    };
    let mut links = Vec::new();
    if page > 1 && page <= last {
        links.push(link(page - 1, "Previous".to_owned(), "prev"));
    }
    let near = page.saturating_sub(AROUND).max(1)..=page.saturating_add(AROUND).min(last);
    let mut shown_up_to = 0;
    for p in [1].into_iter().chain(near).chain([last]) {
        if p <= shown_up_to {
            continue;
        }
        if p > shown_up_to + 1 {
            // One page left out is shown as its link: a gap would be no shorter.
            if p == shown_up_to + 2 {
                links.push(link(p - 1, (p - 1).to_string(), ""));
            } else {
                links.push(PageLink {
                    label: "…".to_owned(),
                    href: String::new(),
                    current: false,
                    gap: true,
                    rel: "",
                });
            }
        }
        links.push(link(p, p.to_string(), ""));
        shown_up_to = p;
    }
    if page < last {
        links.push(link(page + 1, "Next".to_owned(), "next"));
    }
    links
}

#[cfg(test)]
mod tests {
    use super::page_links;

    /// The links as text: `[3]` the current page, `…` a gap, `<2` and `4>` previous and next.
    fn shown(page: usize, last: usize) -> String {
        page_links(page, last, |p| format!("?page={p}"))
            .iter()
            .map(|link| {
                assert!(link.gap || link.href.ends_with(&format!("={}", link.label)) || !link.rel.is_empty());
                match (link.gap, link.current, link.rel) {
                    (true, ..) => "…".to_owned(),
                    (_, true, _) => format!("[{}]", link.label),
                    (_, _, "prev") => format!("<{}", link.href.trim_start_matches("?page=")),
                    (_, _, "next") => format!("{}>", link.href.trim_start_matches("?page=")),
                    _ => link.label.clone(),
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn one_page_has_no_links() {
        assert_eq!(shown(1, 1), "");
        assert_eq!(shown(1, 0), "");
    }

    #[test]
    fn few_pages_are_all_linked() {
        assert_eq!(shown(1, 2), "[1] 2 2>");
        assert_eq!(shown(2, 2), "<1 1 [2]");
        assert_eq!(shown(4, 7), "<3 1 2 3 [4] 5 6 7 5>");
    }

    #[test]
    fn many_pages_keep_the_ends_and_the_pages_around() {
        assert_eq!(shown(1, 5000), "[1] 2 3 … 5000 2>");
        assert_eq!(shown(2500, 5000), "<2499 1 … 2498 2499 [2500] 2501 2502 … 5000 2501>");
        assert_eq!(shown(5000, 5000), "<4999 1 … 4998 4999 [5000]");
        assert_eq!(shown(5, 5000), "<4 1 2 3 4 [5] 6 7 … 5000 6>");
        assert_eq!(page_links(2500, 5000, |p| p.to_string()).len(), 11);
    }

    #[test]
    fn a_page_past_the_last_links_back() {
        assert_eq!(shown(9, 3), "1 2 3");
    }
}
