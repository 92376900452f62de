//! Translating an item from its source (the default language's item) in one call, and
//! what changed in the source since a translation was made.

use std::sync::Arc;

use super::{Cms, ItemUpdate, NewItem, UpdateMode, WriteOutcome};
use crate::collection::Collection;
use crate::document::Frontmatter;
use crate::error::{CoreError, CoreResult};
use crate::item_file::{ContentTag, TRANSLATED_FROM};
use crate::policy::{Caller, Operation};
use crate::slug::ItemRef;

/// What changed in a translation's source since the translation was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceDiff {
    /// The translation's language.
    pub lang: Arc<str>,
    /// The source's (the default language).
    pub source_lang: Arc<str>,
    /// The source's file name.
    pub source: String,
    /// Whether the source holds something else now than what the translation was made from.
    pub outdated: bool,
    /// What the translation says it was made from (`None`: it does not say).
    pub translated_from: Option<String>,
    /// The source's version (its `timestamp`) that the translation was made from, when its
    /// history still holds it.
    pub from_version: Option<i64>,
    /// A unified diff of the source's file from what the translation was made from to now;
    /// empty when nothing changed; `None` when the older content is no longer kept (or the
    /// translation does not say what it was made from).
    pub diff: Option<String>,
}

impl Cms {
    /// Writes the translation of `item_ref` into language `at` (a position in
    /// `languages:`) from its source: a new translation starts as a draft copy of the
    /// source's frontmatter and text, with `fm` and `body` written over them; an existing
    /// one is patched with them. Either way the translation records that it is made from
    /// the source as it is now, so it is no longer outdated. `true` when it was created.
    pub async fn translate_item(
        &self,
        caller: impl Into<Caller<'_>>,
        collection: &Collection,
        item_ref: &ItemRef,
        at: usize,
        fm: Frontmatter,
        body: Option<String>,
    ) -> CoreResult<(WriteOutcome, bool)> {
        let caller = caller.into();
        // It reads the source whatever its status: as a read of drafts is.
        self.authorize(caller, Operation::ReadDrafts).await?;
        let languages = self.languages.as_deref().ok_or_else(no_translations)?;
        if at == 0 {
            return Err(CoreError::invalid(format!(
                "{} is the default language, which translations are made from; name another language ({})",
                languages.get(0).code,
                languages.codes()
            )));
        }
        let source = self.in_language(collection, 0);
        // From a translation's page: its own link (name or key) says which source it has.
        let linked = match collection.index == source.index {
            true => None,
            false => self.counterpart(collection, item_ref, source).await?.map(ItemRef::Filename),
        };
        let item_ref = match linked {
            Some(linked) => linked,
            None => self.named_in(source, item_ref).await?,
        };
        let original = self.read_raw(source, &item_ref).await?;
        let lane = self.in_language(collection, at);
        let source_name = source
            .naming
            .parse(&original.meta.filename)
            .ok_or_else(|| CoreError::not_found(format!("no item {item_ref} in {}", collection.slug)))?;
        let mut fm = fm;
        fm.insert(TRANSLATED_FROM.into(), original.etag.trim_matches('"').to_owned().into());
        match self.counterpart(source, &ItemRef::Filename(source_name.clone()), lane).await? {
            Some(existing) => {
                let update = ItemUpdate { mode: UpdateMode::Patch, fm, body };
                let existing = ItemRef::Filename(existing);
                Ok((self.update_item(caller, lane, &existing, update, None).await?, false))
            }
            None => {
                let mut start = original.doc.fm;
                // The source's own slug is its language's URL, not the translation's.
                for key in crate::model::SERVER_READ_KEYS.iter().chain([&crate::item_file::OWN_SLUG]) {
                    start.remove(*key);
                }
                start.extend(fm);
                // Named after the source's file, which links the two.
                let new = NewItem {
                    slug: Some(source_name.slug().to_owned()),
                    date_prefix: None,
                    fm: start,
                    body: body.unwrap_or(original.doc.body),
                };
                Ok((self.create_item(caller, lane, new).await?, true))
            }
        }
    }

    /// What changed in the source of the translation of `item_ref` into language `at`
    /// since it was made: from the source's history, the version whose content the
    /// translation names, against the source now.
    pub async fn source_diff(
        &self,
        caller: impl Into<Caller<'_>>,
        collection: &Collection,
        item_ref: &ItemRef,
        at: usize,
    ) -> CoreResult<SourceDiff> {
        // It reads the source's history.
        self.authorize(caller, Operation::ReadHistory).await?;
        let languages = self.languages.as_deref().ok_or_else(no_translations)?;
        if at == 0 {
            return Err(CoreError::invalid(format!(
                "{} is the default language: it is the source, not a translation",
                languages.get(0).code
            )));
        }
        let lane = self.in_language(collection, at);
        let translation = self.read_raw(lane, &self.named_in(lane, item_ref).await?).await?;
        let source = self.in_language(collection, 0);
        let own = lane.naming.parse(&translation.meta.filename).map(ItemRef::Filename);
        let found = match own {
            Some(own) => self.counterpart(lane, &own, source).await?,
            None => None,
        };
        let Some(found) = found else {
            return Err(CoreError::not_found(format!(
                "the {} translation {} has no source in {}: no item of that language has its name or its \
                 translationKey",
                languages.get(at).code,
                translation.meta.filename,
                languages.get(0).code
            )));
        };
        let (name, now) = self.load(source, &ItemRef::Filename(found)).await?;
        let translated_from = translation
            .doc
            .fm
            .get(TRANSLATED_FROM)
            .and_then(|v| v.as_str())
            .map(|text| text.trim().to_owned());
        let made_from = translated_from.as_deref().and_then(ContentTag::parse_hex);
        let current = ContentTag::of(&now.bytes);
        let mut answer = SourceDiff {
            lang: Arc::clone(&languages.get(at).code),
            source_lang: Arc::clone(&languages.get(0).code),
            source: name.as_str().to_owned(),
            outdated: made_from.is_some_and(|made_from| made_from != current),
            translated_from,
            from_version: None,
            diff: None,
        };
        let Some(made_from) = made_from else { return Ok(answer) };
        if made_from == current {
            answer.diff = Some(String::new());
            return Ok(answer);
        }
        let mut versions = self.ports.versions.list_versions(source, &name).await?;
        versions.sort_by_key(|version| std::cmp::Reverse(version.timestamp));
        for version in versions {
            let Some(bytes) = self.ports.versions.read_version(source, &name, version.timestamp).await?
            else {
                continue;
            };
            if ContentTag::of(&bytes) == made_from {
                answer.from_version = Some(version.timestamp);
                answer.diff = Some(unified_diff(&bytes, &now.bytes, name.as_str()));
                break;
            }
        }
        Ok(answer)
    }
}

/// A site without languages has no translation to write or compare: `404`, as for any
/// item it does not have.
fn no_translations() -> CoreError {
    CoreError::not_found("this site has no languages: (see docs/translations.md), so it has no translations")
}

/// `before` → `after` as a unified diff with three lines of context.
fn unified_diff(before: &[u8], after: &[u8], name: &str) -> String {
    let (before, after) = (String::from_utf8_lossy(before), String::from_utf8_lossy(after));
    similar::TextDiff::from_lines(before.as_ref(), after.as_ref())
        .unified_diff()
        .context_radius(3)
        .header(&format!("{name} (translated from)"), &format!("{name} (now)"))
        .to_string()
}
