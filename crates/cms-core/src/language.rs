//! The site's languages (`languages:` in `cms.yaml`): BCP 47 tags checked against the
//! IANA registry, each language's fallback chain, and `Accept-Language` negotiation
//! (RFC 9110, 12.5.4, with RFC 4647's matching). A site without `languages:` has none of
//! this: every answer is as it was before translations existed.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::error::{CoreError, CoreResult};

/// One entry of `languages:`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LanguageConfig {
    /// A BCP 47 language tag whose subtags are in the IANA registry (`en`, `fr-CH`,
    /// `zh-Hant`); not `en_US` nor `en-UK`.
    pub code: String,
    /// The language's name in itself (`Français`), for the editor's switcher.
    #[serde(default)]
    pub name: Option<String>,
    /// Which way its text runs: `ltr` (the default) or `rtl`.
    #[serde(default)]
    pub dir: TextDirection,
    /// The languages an answer falls back to, in order, when an item has no translation
    /// into this one. Default: RFC 4647 lookup (`fr-CH` → `fr`), then the default
    /// language (the first of `languages:`), which ends every chain.
    #[serde(default)]
    pub fallback: Option<Vec<String>>,
}

/// Which way a language's text runs (the `dir` attribute of HTML).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TextDirection {
    #[default]
    Ltr,
    Rtl,
}

impl TextDirection {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ltr => "ltr",
            Self::Rtl => "rtl",
        }
    }
}

/// Where translations live (`translations:` in `cms.yaml`), as Hugo lays them out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TranslationLayout {
    /// `hello.fr.md` beside `hello.md`: the default language's file has no suffix.
    #[default]
    Filename,
    /// A folder per language: each collection's `path` holds `{lang}`
    /// (`content/{lang}/posts`).
    Folder,
}

/// The placeholder of a collection path in the `folder` layout.
pub const LANG_PLACEHOLDER: &str = "{lang}";

/// The folders of a configured collection path: one per language for `{lang}` in the
/// `folder` layout, else the path itself.
pub fn language_folders(path: &str, languages: Option<&Languages>) -> Vec<String> {
    match languages {
        Some(languages) if path.contains(LANG_PLACEHOLDER) => {
            languages.all().iter().map(|l| path.replace(LANG_PLACEHOLDER, &l.code)).collect()
        }
        _ => vec![path.to_owned()],
    }
}

/// A language of the site, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Language {
    /// As written in `cms.yaml` (`fr-CH`): what answers name it by.
    pub code: Arc<str>,
    /// Its name, or its code when none is written.
    pub name: String,
    pub dir: TextDirection,
    /// The code in lower case, as Hugo writes it in file names (`hello.fr-ch.md`) and URLs
    /// (`/fr-ch/...`).
    pub key: Arc<str>,
    /// The languages to fall back to, in order, by position (never itself).
    fallback: Vec<usize>,
}

/// The site's languages: the first is the default language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Languages {
    list: Vec<Language>,
    layout: TranslationLayout,
}

/// Which language an answer is in, and what was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Choice {
    /// The language asked for (by `lang=` or negotiated from `Accept-Language`).
    pub requested: usize,
    /// Whether `lang=` named it; otherwise the answer varies with `Accept-Language`.
    pub explicit: bool,
    /// `fallback=none`: no other language stands in for a missing translation.
    pub no_fallback: bool,
}

impl Languages {
    /// The languages of `languages:` (`None` when there are none), each code checked
    /// against the IANA registry; errors name the key (`languages[1].code ...`).
    pub fn from_config(
        configs: &[LanguageConfig],
        layout: TranslationLayout,
    ) -> Result<Option<Self>, String> {
        if configs.is_empty() {
            return Ok(None);
        }
        let mut list: Vec<Language> = Vec::with_capacity(configs.len());
        for (i, config) in configs.iter().enumerate() {
            check_tag(&format!("languages[{i}].code"), &config.code)?;
            let key: Arc<str> = config.code.to_ascii_lowercase().into();
            if let Some(same) = list.iter().position(|l| l.key == key) {
                return Err(format!(
                    "languages[{i}].code {:?} is languages[{same}] again (codes ignore case)",
                    config.code
                ));
            }
            list.push(Language {
                code: config.code.as_str().into(),
                name: config.name.clone().unwrap_or_else(|| config.code.clone()),
                dir: config.dir,
                key,
                fallback: Vec::new(),
            });
        }
        for (i, config) in configs.iter().enumerate() {
            let mut chain = Vec::new();
            match &config.fallback {
                Some(codes) => {
                    for (j, code) in codes.iter().enumerate() {
                        let Some(at) = find_in(&list, code) else {
                            return Err(format!(
                                "languages[{i}].fallback[{j}] {code:?} is not one of the site's languages ({})",
                                codes_of(&list)
                            ));
                        };
                        if at == i {
                            return Err(format!(
                                "languages[{i}].fallback[{j}] {code:?} is the language itself"
                            ));
                        }
                        if !chain.contains(&at) {
                            chain.push(at);
                        }
                    }
                }
                None => {
                    // RFC 4647 lookup: the tag with its last subtag cut off, again and again.
                    let mut tag = list[i].key.to_string();
                    while let Some(cut) = tag.rfind('-') {
                        tag.truncate(cut);
                        if let Some(at) = find_in(&list, &tag).filter(|&at| at != i) {
                            chain.push(at);
                        }
                    }
                }
            }
            if i != 0 && !chain.contains(&0) {
                chain.push(0);
            }
            list[i].fallback = chain;
        }
        Ok(Some(Self { list, layout }))
    }

    pub fn layout(&self) -> TranslationLayout {
        self.layout
    }

    pub fn all(&self) -> &[Language] {
        &self.list
    }

    pub fn get(&self, at: usize) -> &Language {
        &self.list[at]
    }

    /// The position of a language by its code, ignoring case.
    pub fn find(&self, code: &str) -> Option<usize> {
        find_in(&self.list, code)
    }

    /// The languages to try, in order, for an answer in language `at`: itself, then its
    /// fallback chain (only itself with `fallback=none`).
    pub fn chain(&self, choice: Choice) -> impl Iterator<Item = usize> + '_ {
        let rest: &[usize] = if choice.no_fallback { &[] } else { &self.list[choice.requested].fallback };
        std::iter::once(choice.requested).chain(rest.iter().copied())
    }

    /// What a read asks for: `lang=` (a `400` naming the site's languages when it is not
    /// one of them), else the best language `Accept-Language` asks for, else the default
    /// language. `fallback` is the `fallback=` parameter (`none` or absent).
    pub fn choose(
        &self,
        lang: Option<&str>,
        accept_language: Option<&str>,
        fallback: Option<&str>,
    ) -> CoreResult<Choice> {
        let no_fallback = match fallback {
            None => false,
            Some(value) if value.eq_ignore_ascii_case("none") => true,
            Some(other) => {
                return Err(CoreError::invalid(format!(
                    "fallback={other:?} is not allowed: leave it out, or fallback=none to answer only in the language asked for"
                )));
            }
        };
        match lang {
            Some(code) => Ok(Choice { requested: self.parse(code)?, explicit: true, no_fallback }),
            None => Ok(Choice {
                requested: accept_language.and_then(|header| self.negotiate(header)).unwrap_or(0),
                explicit: false,
                no_fallback,
            }),
        }
    }

    /// `lang=` of a request: one of the site's languages (ignoring case), or a `400`
    /// that names them.
    pub fn parse(&self, code: &str) -> CoreResult<usize> {
        self.parse_as("lang", code)
    }

    /// [`Self::parse`] of the parameter `name` (`missing=de` names `missing`).
    pub fn parse_as(&self, name: &str, code: &str) -> CoreResult<usize> {
        self.find(code).ok_or_else(|| {
            CoreError::invalid(format!(
                "{name}={code:?} is not one of this site's languages: {}",
                codes_of(&self.list)
            ))
        })
    }

    /// The site's language that an `Accept-Language` header prefers, if any: its ranges
    /// by quality (the first written first among equals); each matched exactly, then by
    /// RFC 4647 basic filtering (`fr` takes `fr-CA`), then by lookup (`fr-CH` takes `fr`).
    /// `*` takes the default language; a range with `q=0` is never chosen.
    pub fn negotiate(&self, header: &str) -> Option<usize> {
        let mut ranges: Vec<(&str, u16)> = header
            .split(',')
            .take(MAX_RANGES)
            .filter_map(|part| {
                let mut pieces = part.split(';');
                let range = pieces.next()?.trim();
                if range.is_empty() {
                    return None;
                }
                let mut quality = 1000;
                for parameter in pieces {
                    let (name, value) = parameter.split_once('=')?;
                    if name.trim().eq_ignore_ascii_case("q") {
                        quality = parse_quality(value.trim())?;
                    }
                }
                Some((range, quality))
            })
            .collect();
        ranges.sort_by_key(|&(_, quality)| std::cmp::Reverse(quality));
        let refused: Vec<usize> =
            ranges.iter().filter(|(_, q)| *q == 0).filter_map(|(range, _)| self.find(range)).collect();
        let allowed = |at: &usize| !refused.contains(at);
        for (range, quality) in ranges {
            if quality == 0 {
                continue;
            }
            if range == "*" {
                if let Some(at) = (0..self.list.len()).find(allowed) {
                    return Some(at);
                }
                continue;
            }
            let range = range.to_ascii_lowercase();
            if let Some(at) = self.find(&range).filter(allowed) {
                return Some(at);
            }
            let prefix = format!("{range}-");
            if let Some(at) =
                (0..self.list.len()).find(|at| allowed(at) && self.list[*at].key.starts_with(&prefix))
            {
                return Some(at);
            }
            let mut tag = range;
            while let Some(cut) = tag.rfind('-') {
                tag.truncate(cut);
                if let Some(at) = self.find(&tag).filter(allowed) {
                    return Some(at);
                }
            }
        }
        None
    }

    /// The codes, for messages: `en, fr, ar`.
    pub fn codes(&self) -> String {
        codes_of(&self.list)
    }
}

/// The most ranges of an `Accept-Language` header looked at (browsers send a handful).
const MAX_RANGES: usize = 32;

/// A quality value (`0`, `0.5`, `1.000`) in thousandths; `None` when malformed.
fn parse_quality(text: &str) -> Option<u16> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if fraction.len() > 3 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let thousandths: u16 = format!("{fraction:0<3}").parse().ok()?;
    match whole {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

fn find_in(list: &[Language], code: &str) -> Option<usize> {
    list.iter().position(|l| l.key.eq_ignore_ascii_case(code))
}

fn codes_of(list: &[Language]) -> String {
    list.iter().map(|l| &*l.code).collect::<Vec<_>>().join(", ")
}

/// `Err` naming `key` unless `code` is a well-formed BCP 47 tag whose subtags the IANA
/// registry holds.
fn check_tag(key: &str, code: &str) -> Result<(), String> {
    let hint = if code.contains('_') { " (BCP 47 joins subtags with '-': en-US, not en_US)" } else { "" };
    let tag = language_tags::LanguageTag::parse(code)
        .map_err(|e| format!("{key} {code:?} is not a BCP 47 language tag: {e}{hint}"))?;
    tag.validate().map_err(|e| {
        let hint = match e {
            language_tags::ValidationError::RegionNotInRegistry => {
                " (regions are ISO 3166 codes: the United Kingdom is GB)"
            }
            _ => "",
        };
        format!("{key} {code:?} is not a registered language tag: {e}{hint}")
    })?;
    if tag.private_use().is_some() || tag.extension().is_some() {
        return Err(format!(
            "{key} {code:?}: a site's language is a language, script, region or variant, without extensions"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(codes: &[&str]) -> Vec<LanguageConfig> {
        codes
            .iter()
            .map(|code| LanguageConfig {
                code: (*code).into(),
                name: None,
                dir: TextDirection::Ltr,
                fallback: None,
            })
            .collect()
    }

    fn site(codes: &[&str]) -> Languages {
        Languages::from_config(&config(codes), TranslationLayout::Filename).unwrap().unwrap()
    }

    #[test]
    fn malformed_and_unregistered_tags_are_refused_with_their_key() {
        for (code, said) in [
            ("en_US", "en-US, not en_US"),
            ("en-UK", "the United Kingdom is GB"),
            ("xx", "not a registered language tag"),
            ("", "not a BCP 47 language tag"),
            ("en-x-private", "without extensions"),
        ] {
            let error =
                Languages::from_config(&config(&["fr", code]), TranslationLayout::Filename).unwrap_err();
            assert!(error.starts_with("languages[1].code"), "{code}: {error}");
            assert!(error.contains(said), "{code}: {error}");
        }
        assert!(Languages::from_config(&config(&["en", "EN"]), TranslationLayout::Filename).is_err());
        assert_eq!(Languages::from_config(&[], TranslationLayout::Filename), Ok(None));
        site(&["en", "fr-CH", "zh-Hant", "ar", "pt-BR", "es-419"]);
    }

    #[test]
    fn fallback_chains_look_up_then_end_at_the_default_language() {
        let languages = site(&["en", "fr", "fr-CH", "de"]);
        let chain = |code: &str| -> Vec<&str> {
            let choice =
                Choice { requested: languages.find(code).unwrap(), explicit: true, no_fallback: false };
            languages.chain(choice).map(|at| &*languages.get(at).code).collect()
        };
        assert_eq!(chain("fr-CH"), ["fr-CH", "fr", "en"]);
        assert_eq!(chain("de"), ["de", "en"]);
        assert_eq!(chain("en"), ["en"]);
        let mut written = config(&["en", "fr", "fr-CH"]);
        written[2].fallback = Some(vec!["en".into()]);
        let languages = Languages::from_config(&written, TranslationLayout::Filename).unwrap().unwrap();
        let choice = Choice { requested: 2, explicit: true, no_fallback: false };
        assert_eq!(languages.chain(choice).collect::<Vec<_>>(), [2, 0]);
        assert_eq!(languages.chain(Choice { no_fallback: true, ..choice }).collect::<Vec<_>>(), [2]);
        written[2].fallback = Some(vec!["de".into()]);
        let error = Languages::from_config(&written, TranslationLayout::Filename).unwrap_err();
        assert!(
            error.contains("languages[2].fallback[0] \"de\" is not one of the site's languages"),
            "{error}"
        );
    }

    #[test]
    fn accept_language_is_negotiated_by_quality_filtering_and_lookup() {
        let languages = site(&["en", "fr", "de-CH", "ar"]);
        let cases = [
            ("fr", Some("fr")),
            ("FR", Some("fr")),
            ("fr-CA", Some("fr")),
            ("de", Some("de-CH")),
            ("de-ch-1996", Some("de-CH")),
            ("ja, ar;q=0.5, fr;q=0.8", Some("fr")),
            ("ar;q=0.9, fr;q=0.9", Some("ar")),
            ("ja, *;q=0.1", Some("en")),
            ("en;q=0, *", Some("fr")),
            ("fr;q=0, fr-CA", None),
            ("ja, ko", None),
            ("fr;q=1.5, ar", Some("ar")),
            ("fr;q=0.0001, ar;q=0.001", Some("ar")),
            ("", None),
            (",,;q=1", None),
        ];
        for (header, expected) in cases {
            let found = languages.negotiate(header).map(|at| &*languages.get(at).code);
            assert_eq!(found, expected, "{header:?}");
        }
    }

    #[test]
    fn a_choice_names_an_unknown_language_and_the_known_ones() {
        let languages = site(&["en", "fr"]);
        let error = languages.choose(Some("de"), None, None).unwrap_err().to_string();
        assert!(error.contains("lang=\"de\" is not one of this site's languages: en, fr"), "{error}");
        assert!(languages.choose(None, None, Some("some")).is_err());
        let choice = languages.choose(None, Some("fr"), Some("none")).unwrap();
        assert_eq!(choice, Choice { requested: 1, explicit: false, no_fallback: true });
        assert_eq!(languages.choose(Some("FR"), Some("en"), None).unwrap().requested, 1);
        assert_eq!(languages.choose(None, None, None).unwrap().requested, 0);
    }
}
