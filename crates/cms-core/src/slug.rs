//! Slugs and item filenames: `YYYY-MM-DD-<slug>.md` or `<slug>.md`.

use std::fmt;
use std::sync::Arc;

use crate::error::{CoreError, CoreResult};

const MAX_SLUG_LEN: usize = 200;

/// A validated item slug: safe to use as part of a file name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Slug(String);

impl Slug {
    /// Accepts ASCII letters, digits, `-`, `_` and inner `.`; refuses `/`, `\`, `..`, NUL,
    /// a leading dot and anything over 200 characters.
    pub fn parse(raw: &str) -> CoreResult<Self> {
        Self::check(raw)?;
        Ok(Self(raw.to_owned()))
    }

    /// Whether [`Self::parse`] accepts `raw`, without keeping it (start-up checks every
    /// file name).
    fn check(raw: &str) -> CoreResult<()> {
        let bad = |why: &str| CoreError::invalid(format!("invalid slug {raw:?}: {why}"));
        if raw.is_empty() {
            return Err(bad("it is empty"));
        }
        if raw.len() > MAX_SLUG_LEN {
            return Err(bad("it is longer than 200 characters"));
        }
        if raw.starts_with('.') || raw.contains("..") {
            return Err(bad("it may not start with a dot or contain '..'"));
        }
        if let Some(c) = raw.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))) {
            return Err(bad(&format!(
                "character {c:?} is not allowed (use letters, digits, '-', '_' and '.')"
            )));
        }
        Ok(())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Slug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Derives a slug from a title: lowercase ASCII, each run of other characters becomes one
/// `-`, no `-` at either end. Accented Latin letters lose their accents first.
pub fn slugify(title: &str) -> String {
    let mut slug = String::with_capacity(title.len());
    let mut pending_dash = false;
    for c in title.chars().flat_map(fold_accent) {
        if c.is_ascii_alphanumeric() {
            if pending_dash && !slug.is_empty() {
                slug.push('-');
            }
            pending_dash = false;
            slug.push(c.to_ascii_lowercase());
        } else {
            pending_dash = true;
        }
    }
    slug.truncate(MAX_SLUG_LEN);
    slug.trim_end_matches('-').to_owned()
}

/// Maps common accented Latin letters to their base letters (é → e, ß → ss).
pub(crate) fn fold_accent(c: char) -> impl Iterator<Item = char> {
    let folded: &str = match c {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'À' | 'Á' | 'Â' | 'Ã' | 'Ä' | 'Å' => "a",
        'æ' | 'Æ' => "ae",
        'ç' | 'Ç' => "c",
        'è' | 'é' | 'ê' | 'ë' | 'È' | 'É' | 'Ê' | 'Ë' => "e",
        'ì' | 'í' | 'î' | 'ï' | 'Ì' | 'Í' | 'Î' | 'Ï' => "i",
        'ñ' | 'Ñ' => "n",
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'Ò' | 'Ó' | 'Ô' | 'Õ' | 'Ö' | 'Ø' => "o",
        'ù' | 'ú' | 'û' | 'ü' | 'Ù' | 'Ú' | 'Û' | 'Ü' => "u",
        'ý' | 'ÿ' | 'Ý' => "y",
        'ß' => "ss",
        _ => "",
    };
    let single = folded.is_empty().then_some(c);
    folded.chars().chain(single)
}

/// The extensions of item files: `.md`, which new items get, and the other names Markdown
/// files carry in Jekyll and Hugo sites (Jekyll's default is `.markdown`).
pub const ITEM_EXTENSIONS: [&str; 4] = [".md", ".markdown", ".mdown", ".mkd"];

/// The name of an item file, split into its optional date prefix and its slug.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemFilename {
    filename: String,
    date: Option<String>,
    slug: String,
}

impl ItemFilename {
    /// Recognises `YYYY-MM-DD-<slug>.md` and `<slug>.md` (or one of the other
    /// [`ITEM_EXTENSIONS`]); anything else is not an item.
    pub fn parse(filename: &str) -> Option<Self> {
        Self::classify(filename).ok()
    }

    /// As [`Self::parse`], saying why a name is not an item's (for the skipped-file report).
    pub fn classify(filename: &str) -> Result<Self, String> {
        if filename.starts_with('.') {
            return Err("hidden files are not items".to_owned());
        }
        let Some(stem) = ITEM_EXTENSIONS.iter().find_map(|ext| filename.strip_suffix(ext)) else {
            return Err("not an item file: items end in .md, .markdown, .mdown or .mkd".to_owned());
        };
        Self::of_stem(filename, stem)
    }

    /// The item file `filename`, whose name without its extension (and language suffix)
    /// is `stem`.
    fn of_stem(filename: &str, stem: &str) -> Result<Self, String> {
        let (date, slug) = match split_date_prefix(stem) {
            Some((date, slug)) => (Some(date), slug),
            None => (None, stem),
        };
        Slug::check(slug).map_err(|e| e.to_string())?;
        Ok(Self { filename: filename.to_owned(), date: date.map(str::to_owned), slug: slug.to_owned() })
    }

    /// Builds the filename for a new item.
    pub fn new(slug: &Slug, date: Option<&str>) -> Self {
        let filename = match date {
            Some(date) => format!("{date}-{slug}.md"),
            None => format!("{slug}.md"),
        };
        Self { filename, date: date.map(str::to_owned), slug: slug.as_str().to_owned() }
    }

    pub fn as_str(&self) -> &str {
        &self.filename
    }

    pub fn slug(&self) -> &str {
        &self.slug
    }

    /// The `YYYY-MM-DD` prefix, if the name has one.
    pub fn date(&self) -> Option<&str> {
        self.date.as_deref()
    }
}

/// How a collection's file names say their language, on a site with translations by
/// file name (Hugo's default): `hello.fr.md` is the French translation of `hello.md`. The
/// default language's files carry no suffix; each language's collection owns the names
/// with its suffix, and the default language's owns those with none. A site without
/// languages, or with a folder per language, names files as always ([`Naming::default`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Naming {
    /// `fr` for French: names must carry it, and the slug is the name without it.
    own: Option<Arc<str>>,
    /// The other languages' suffixes: a name carrying one is theirs.
    others: Arc<[Arc<str>]>,
}

impl Naming {
    /// The names of one language's files: `own` is its suffix (`None` for the default
    /// language), `others` the other languages' suffixes (lower case).
    pub fn new(own: Option<Arc<str>>, others: Vec<Arc<str>>) -> Self {
        Self { own, others: others.into() }
    }

    /// The language suffix this collection's names carry, if any.
    pub fn suffix(&self) -> Option<&str> {
        self.own.as_deref()
    }

    /// Whether `filename` belongs to this language: it carries this language's suffix, or,
    /// for the default language, no other language's. Names of no language's item (`notes.txt`)
    /// belong to the default language's collection, which reports them as skipped.
    pub fn owns(&self, filename: &str) -> bool {
        let Some(stem) = ITEM_EXTENSIONS.iter().find_map(|ext| filename.strip_suffix(ext)) else {
            return self.own.is_none();
        };
        match &self.own {
            Some(own) => language_suffix(stem, own).is_some(),
            None => !self.others.iter().any(|other| language_suffix(stem, other).is_some()),
        }
    }

    /// [`ItemFilename::classify`] for this language's files; another language's file is
    /// not an item here.
    pub fn classify(&self, filename: &str) -> Result<ItemFilename, String> {
        if !self.owns(filename) {
            return Err("another language's file".to_owned());
        }
        let Some(own) = &self.own else { return ItemFilename::classify(filename) };
        let stem = ITEM_EXTENSIONS
            .iter()
            .find_map(|ext| filename.strip_suffix(ext))
            .expect("an owned name has an item extension");
        let base = language_suffix(stem, own).expect("an owned name has the suffix");
        ItemFilename::of_stem(filename, base)
    }

    /// Whether this language writes `filename`, one of its files, otherwise
    /// ([`Self::name_for_base`] of its [`Self::base_name`] differs): its suffix in other
    /// letters (`hello.FR.md`). Without a look at more than the suffix, since start-up asks
    /// it of every file.
    pub fn writes_otherwise(&self, filename: &str) -> bool {
        let Some(own) = &self.own else { return false };
        let Some(stem) = ITEM_EXTENSIONS.iter().find_map(|ext| filename.strip_suffix(ext)) else {
            return false;
        };
        match language_suffix(stem, own) {
            Some(base) => stem[base.len() + 1..] != **own,
            None => true,
        }
    }

    /// The slug of this language's file `filename` ([`ItemFilename::slug`] of
    /// [`Self::parse`]), without making an `ItemFilename`.
    pub fn file_slug<'a>(&self, filename: &'a str) -> Option<&'a str> {
        if !self.owns(filename) || filename.starts_with('.') {
            return None;
        }
        let mut stem = ITEM_EXTENSIONS.iter().find_map(|ext| filename.strip_suffix(ext))?;
        if let Some(own) = &self.own {
            stem = language_suffix(stem, own)?;
        }
        let slug = split_date_prefix(stem).map_or(stem, |(_, slug)| slug);
        Slug::check(slug).is_ok().then_some(slug)
    }

    /// [`ItemFilename::parse`] for this language's files.
    pub fn parse(&self, filename: &str) -> Option<ItemFilename> {
        self.classify(filename).ok()
    }

    /// The name of this language's file as the default language's file is named: the
    /// name without its language suffix (`hello.fr.md` → `hello.md`). What links the
    /// translations of an item, whatever language a name is in.
    pub fn base_name(&self, filename: &str) -> String {
        let Some(own) = &self.own else { return filename.to_owned() };
        let found = ITEM_EXTENSIONS.iter().find_map(|ext| {
            let stem = filename.strip_suffix(ext)?;
            Some(format!("{}{ext}", language_suffix(stem, own)?))
        });
        found.unwrap_or_else(|| filename.to_owned())
    }

    /// The name in this language of the item whose [`Self::base_name`] is `base`
    /// (`hello.md` → `hello.fr.md`).
    pub fn name_for_base(&self, base: &str) -> String {
        let Some(own) = &self.own else { return base.to_owned() };
        match ITEM_EXTENSIONS.iter().find_map(|ext| Some((base.strip_suffix(ext)?, ext))) {
            Some((stem, ext)) => format!("{stem}.{own}{ext}"),
            None => base.to_owned(),
        }
    }

    /// The name in this language of `from`'s file `filename` ([`Self::name_for_base`] of
    /// `from`'s [`Self::base_name`]), written into `out`: without allocating once `out` has
    /// room, since a list answer asks it for each of its items in each other language.
    pub fn write_name_from(&self, from: &Naming, filename: &str, out: &mut String) {
        out.clear();
        // The base name, as a stem and an extension (`None`: the name as it is).
        let base = from.own.as_ref().and_then(|own| {
            ITEM_EXTENSIONS
                .iter()
                .find_map(|ext| Some((language_suffix(filename.strip_suffix(ext)?, own)?, *ext)))
        });
        let parts = match (&self.own, base) {
            (Some(_), None) => {
                ITEM_EXTENSIONS.iter().find_map(|ext| Some((filename.strip_suffix(ext)?, *ext)))
            }
            (_, base) => base,
        };
        match (parts, &self.own) {
            (Some((stem, ext)), Some(own)) => {
                for part in [stem, ".", own, ext] {
                    out.push_str(part);
                }
            }
            (Some((stem, ext)), None) => {
                out.push_str(stem);
                out.push_str(ext);
            }
            (None, _) => out.push_str(filename),
        }
    }

    /// [`ItemFilename::new`] for this language: `hello.fr.md`.
    pub fn new_name(&self, slug: &Slug, date: Option<&str>) -> ItemFilename {
        let mut name = ItemFilename::new(slug, date);
        if let Some(own) = &self.own {
            let stem = name.filename.strip_suffix(".md").expect("new items end in .md");
            name.filename = format!("{stem}.{own}.md");
        }
        name
    }
}

/// The stem without `.{suffix}` when it ends with it (ignoring case), and something is left.
fn language_suffix<'a>(stem: &'a str, suffix: &str) -> Option<&'a str> {
    let cut = stem.len().checked_sub(suffix.len() + 1)?;
    let (base, tail) = (stem.get(..cut)?, stem.get(cut..)?);
    (cut > 0 && tail.starts_with('.') && tail[1..].eq_ignore_ascii_case(suffix)).then_some(base)
}

/// Splits `2024-01-15-hello` into `("2024-01-15", "hello")`.
fn split_date_prefix(stem: &str) -> Option<(&str, &str)> {
    let bytes = stem.as_bytes();
    if bytes.len() < 12 || bytes[10] != b'-' {
        return None;
    }
    let date = &stem[..10];
    is_iso_date(date).then(|| (date, &stem[11..]))
}

/// `YYYY-MM-DD` with a plausible month and day.
pub fn is_iso_date(text: &str) -> bool {
    let b = text.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if !(digits(0..4) && digits(5..7) && digits(8..10)) {
        return false;
    }
    let month: u8 = text[5..7].parse().unwrap_or(0);
    let day: u8 = text[8..10].parse().unwrap_or(0);
    (1..=12).contains(&month) && (1..=31).contains(&day)
}

/// `YYYY-MM-DD` naming a day of the calendar (no February 30th, no year 0): what a `date`
/// field holds, and what a browser's date input can show.
pub fn is_calendar_date(text: &str) -> bool {
    if !is_iso_date(text) {
        return false;
    }
    let number = |range: std::ops::Range<usize>| text[range].parse::<u32>().unwrap_or(0);
    let (year, month, day) = (number(0..4), number(5..7), number(8..10));
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    year >= 1 && day <= days
}

/// How a request names an item: by bare slug or by full filename.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemRef {
    Slug(Slug),
    Filename(ItemFilename),
}

impl ItemRef {
    pub fn parse(raw: &str) -> CoreResult<Self> {
        if ITEM_EXTENSIONS.iter().any(|ext| raw.ends_with(ext)) {
            if raw.contains(['/', '\\', '\0']) || raw.contains("..") {
                return Err(CoreError::invalid(format!("invalid item filename {raw:?}")));
            }
            return ItemFilename::parse(raw)
                .map(Self::Filename)
                .ok_or_else(|| CoreError::invalid(format!("invalid item filename {raw:?}")));
        }
        Slug::parse(raw).map(Self::Slug)
    }

    /// The slug of the item named: a filename's slug is its name without date and extension.
    pub fn slug(&self) -> &str {
        match self {
            Self::Slug(slug) => slug.as_str(),
            Self::Filename(filename) => filename.slug(),
        }
    }

    pub fn matches(&self, name: &ItemFilename) -> bool {
        match self {
            Self::Slug(slug) => name.slug() == slug.as_str(),
            Self::Filename(filename) => filename.as_str() == name.as_str(),
        }
    }
}

impl fmt::Display for ItemRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Slug(slug) => f.write_str(slug.as_str()),
            Self::Filename(name) => f.write_str(name.as_str()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calendar_dates_are_days_that_exist() {
        for good in ["2026-01-31", "2024-02-29", "2000-02-29", "0001-01-01", "2026-12-31"] {
            assert!(is_calendar_date(good), "{good}");
        }
        for bad in ["2026-02-29", "1900-02-29", "2026-04-31", "0000-01-01", "2026-13-01", "2026-1-01"] {
            assert!(!is_calendar_date(bad), "{bad}");
        }
    }

    #[test]
    fn slug_rules() {
        assert!(Slug::parse("hello-world_2.0").is_ok());
        for bad in ["", "a/b", "..", "a..b", ".hidden", "a\0b", "a\\b", "über", "a b", &"x".repeat(201)] {
            assert!(Slug::parse(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn slugify_titles() {
        assert_eq!(slugify("Hello, World!"), "hello-world");
        assert_eq!(slugify("  Rust & WebAssembly  "), "rust-webassembly");
        assert_eq!(slugify("Café déjà vu"), "cafe-deja-vu");
        assert_eq!(slugify("Straße"), "strasse");
        assert_eq!(slugify("!!!"), "");
        assert_eq!(slugify("日本語"), "");
    }

    #[test]
    fn filenames_with_and_without_dates() {
        let dated = ItemFilename::parse("2024-01-15-hello.md").unwrap();
        assert_eq!((dated.date(), dated.slug()), (Some("2024-01-15"), "hello"));
        let plain = ItemFilename::parse("about.md").unwrap();
        assert_eq!((plain.date(), plain.slug()), (None, "about"));
        let odd = ItemFilename::parse("2024-13-40-x.md").unwrap();
        assert_eq!((odd.date(), odd.slug()), (None, "2024-13-40-x"));
        for not_item in ["notes.txt", ".md", ".hidden.md", "a b.md", "x.markdown.bak", ".markdown"] {
            assert!(ItemFilename::parse(not_item).is_none(), "{not_item}");
        }
        assert!(ItemFilename::classify("notes.txt").unwrap_err().contains(".markdown"));
        assert!(ItemFilename::classify("a b.md").unwrap_err().contains("' '"));
    }

    #[test]
    fn jekyll_and_hugo_extensions_are_items_under_their_own_name() {
        for (name, slug) in [
            ("2018-04-19-welcome-to-jekyll.markdown", "welcome-to-jekyll"),
            ("about.mdown", "about"),
            ("2020-01-01-notes.mkd", "notes"),
        ] {
            let parsed = ItemFilename::parse(name).unwrap();
            assert_eq!((parsed.as_str(), parsed.slug()), (name, slug));
            assert!(matches!(ItemRef::parse(name).unwrap(), ItemRef::Filename(f) if f == parsed));
        }
        let new = ItemFilename::new(&Slug::parse("x").unwrap(), None);
        assert_eq!(new.as_str(), "x.md", "new items are still .md");
    }

    #[test]
    fn each_language_owns_the_names_with_its_suffix() {
        let others: Vec<Arc<str>> = vec!["fr".into(), "pt-br".into()];
        let default = Naming::new(None, others);
        let french = Naming::new(Some("fr".into()), Vec::new());
        let brazilian = Naming::new(Some("pt-br".into()), Vec::new());
        for (name, owner, slug) in [
            ("hello.md", &default, "hello"),
            ("2024-01-15-hello.markdown", &default, "hello"),
            ("hello.fr.md", &french, "hello"),
            ("hello.FR.md", &french, "hello"),
            ("2024-01-15-hello.fr.md", &french, "hello"),
            ("hello.pt-BR.md", &brazilian, "hello"),
            ("v1.0.md", &default, "v1.0"),
        ] {
            for naming in [&default, &french, &brazilian] {
                let parsed = naming.parse(name);
                if std::ptr::eq(naming, owner) {
                    let parsed = parsed.unwrap_or_else(|| panic!("{name}"));
                    assert_eq!((parsed.slug(), parsed.as_str()), (slug, name));
                } else {
                    assert!(parsed.is_none(), "{name} is not {naming:?}'s");
                }
            }
        }
        assert!(default.owns("notes.txt") && !french.owns("notes.txt"));
        assert!(
            default.classify("a b.md").is_err() && french.classify("a b.fr.md").unwrap_err().contains("' '")
        );
        assert!(french.parse(".fr.md").is_none() && default.parse(".fr.md").is_none());
        let slug = Slug::parse("hello").unwrap();
        assert_eq!(french.new_name(&slug, Some("2024-01-15")).as_str(), "2024-01-15-hello.fr.md");
        assert_eq!(default.new_name(&slug, None).as_str(), "hello.md");
        assert_eq!(french.base_name("2024-01-15-hello.FR.markdown"), "2024-01-15-hello.markdown");
        assert_eq!(french.name_for_base("2024-01-15-hello.markdown"), "2024-01-15-hello.fr.markdown");
        assert_eq!(
            (default.base_name("hello.md"), default.name_for_base("hello.md")),
            ("hello.md".into(), "hello.md".into())
        );
    }

    /// The start-up's checks that make no `ItemFilename` answer as the ones that do.
    #[test]
    fn the_cheap_checks_agree_with_parsing() {
        let others: Vec<Arc<str>> = vec!["fr".into(), "pt-br".into()];
        let namings = [
            Naming::default(),
            Naming::new(None, others),
            Naming::new(Some("fr".into()), Vec::new()),
            Naming::new(Some("pt-br".into()), Vec::new()),
        ];
        let names = [
            "hello.md",
            "2024-01-15-hello.markdown",
            "hello.fr.md",
            "hello.FR.md",
            "hello.Fr.mkd",
            "2024-01-15-hello.fr.md",
            "hello.pt-BR.md",
            "hello.pt-br.md",
            "v1.0.md",
            ".fr.md",
            ".hidden.md",
            "a b.md",
            "a b.fr.md",
            "notes.txt",
            "fr.md",
            "2024-01-15-.md",
            "2024-13-45-x.md",
            "..md",
        ];
        for naming in &namings {
            for name in names {
                let parsed = naming.parse(name);
                assert_eq!(
                    naming.file_slug(name),
                    parsed.as_ref().map(ItemFilename::slug),
                    "{name} {naming:?}"
                );
                if parsed.is_some() {
                    let written = naming.name_for_base(&naming.base_name(name));
                    assert_eq!(naming.writes_otherwise(name), written != name, "{name} {naming:?}");
                }
                let mut out = String::from("left over");
                for to in &namings {
                    to.write_name_from(naming, name, &mut out);
                    assert_eq!(out, to.name_for_base(&naming.base_name(name)), "{name} {naming:?} {to:?}");
                }
            }
        }
    }

    #[test]
    fn item_refs() {
        let by_file = ItemRef::parse("2024-01-15-hello.md").unwrap();
        let by_slug = ItemRef::parse("hello").unwrap();
        let name = ItemFilename::parse("2024-01-15-hello.md").unwrap();
        assert!(by_file.matches(&name) && by_slug.matches(&name));
        assert!(ItemRef::parse("../etc/passwd.md").is_err());
        assert!(ItemRef::parse("a/b").is_err());
    }
}
