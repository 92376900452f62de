//! Shared fields (`translate: false` in a collection's model, on a site with `languages:`):
//! edited in the default language and written the same into every translation's file,
//! since Hugo reads each file alone. A translation's write takes them from the default
//! language's item and refuses another value; the default language's write copies them into
//! the translations that exist.

use serde_json::Value;

use super::{Cms, ItemUpdate, UpdateMode};
use crate::collection::Collection;
use crate::document::Frontmatter;
use crate::engine::index::Link;
use crate::error::{CoreError, CoreResult};
use crate::policy::Caller;
use crate::slug::{ItemFilename, ItemRef};

/// Which translation a write's source is sought for (see [`Cms::source_of_translation`]).
pub(super) enum TranslationOf<'a> {
    /// A new translation, by its frontmatter's `translationKey`, else its slug.
    New { key: Option<&'a str>, slug: &'a str },
    /// An existing translation's file.
    File(&'a ItemFilename),
}

/// What a translation's write takes from its source (see [`Cms::source_of_translation`]).
pub(super) struct FromSource {
    /// The shared fields' values (`null`: the source has none).
    pub shared: Frontmatter,
    /// The source's file name: a new translation is named after it (`hello.md` →
    /// `hello.fr.md`), which links the two.
    pub filename: String,
    /// What the source's file holds now ([`crate::item_file::ContentTag::hex`]).
    pub content: String,
}

impl Cms {
    /// The shared fields of `collection`'s model (none on a site without languages).
    fn shared_fields(collection: &Collection) -> Vec<&str> {
        let (Some(_), Some(model)) = (&collection.language, collection.model.as_deref()) else {
            return Vec::new();
        };
        model.fields.iter().filter(|field| !field.translate).map(|field| field.name.as_str()).collect()
    }

    /// What a write of `translation` into the translation `lane` takes from its source,
    /// the default language's item (`None`: not a translation, or no such item in the
    /// default language). A shared field's value in `given` that differs from the source's
    /// is refused, naming where to change it.
    pub(super) async fn source_of_translation(
        &self,
        lane: &Collection,
        translation: TranslationOf<'_>,
        given: &Frontmatter,
    ) -> CoreResult<Option<FromSource>> {
        let Some(language) = lane.language.as_ref().filter(|l| l.at > 0) else { return Ok(None) };
        let shared = Self::shared_fields(lane);
        let source = self.in_language(lane, 0);
        let found = match translation {
            TranslationOf::File(name) => {
                self.counterpart(lane, &ItemRef::Filename(name.clone()), source).await?
            }
            TranslationOf::New { key: Some(key), .. } => {
                let link = Link { key: Some(Box::from(key)), base: String::new() };
                let index = self.index(source).await?;
                index
                    .linked(&link)
                    .and_then(Result::ok)
                    .and_then(|item| source.naming.parse(&item.meta.filename))
            }
            // The file of that slug, if it has no key of its own (else nothing links the
            // two): not an item whose own slug it is, which the new file is not named after.
            TranslationOf::New { key: None, slug } => match ItemRef::parse(slug) {
                Ok(item_ref) => {
                    let index = self.index(source).await?;
                    index.locate(&item_ref).filter(|name| {
                        name.slug() == slug
                            && index.get(name.as_str()).is_some_and(
                                |found| !matches!(found, Ok(item) if item.translation_key().is_some()),
                            )
                    })
                }
                Err(_) => None,
            },
        };
        let Some(found) = found else { return Ok(None) };
        let raw = match self.read_raw(source, &ItemRef::Filename(found)).await {
            Ok(raw) => raw,
            Err(CoreError::NotFound(_)) => return Ok(None),
            Err(other) => return Err(other),
        };
        let doc = &raw.doc;
        let mut values = Frontmatter::new();
        for name in shared {
            let value = doc.fm.get(name).cloned().unwrap_or(Value::Null);
            if let Some(wanted) = given.get(name)
                && *wanted != value
            {
                let default = self.languages.as_deref().map_or("the default language", |l| &l.get(0).code);
                return Err(CoreError::invalid(format!(
                    "fm.{name} is shared by every language (translate: false): change it in the {default} item, \
                     and it is written into every translation (this is the {} translation)",
                    language.code
                )));
            }
            values.insert(name.to_owned(), value);
        }
        Ok(Some(FromSource {
            shared: values,
            filename: raw.meta.filename.to_string(),
            content: raw.etag.trim_matches('"').to_owned(),
        }))
    }

    /// After a write of the file `name` in the default language with frontmatter `fm`: its
    /// shared fields written into each translation whose values differ (a translation that
    /// does not exist is not made).
    pub(super) async fn spread_shared(
        &self,
        caller: Caller<'_>,
        source: &Collection,
        name: &ItemFilename,
        fm: &Frontmatter,
    ) -> CoreResult<()> {
        let shared = Self::shared_fields(source);
        if shared.is_empty() || source.language.as_ref().is_none_or(|l| l.at != 0) {
            return Ok(());
        }
        let slug = name.slug();
        let written = ItemRef::Filename(name.clone());
        let lanes: Vec<&Collection> = self.family_of(source).filter(|c| c.index != source.index).collect();
        for lane in lanes {
            let Some(translation) = self.counterpart(source, &written, lane).await? else { continue };
            let item_ref = ItemRef::Filename(translation);
            let current = match self.read_raw(lane, &item_ref).await {
                Ok(raw) => raw.doc.fm,
                Err(CoreError::NotFound(_)) => continue,
                Err(error) => {
                    tracing::warn!(%error, collection = lane.slug.as_str(), item = slug, "cannot read a translation");
                    continue;
                }
            };
            let mut changes = Frontmatter::new();
            for name in &shared {
                let wanted = fm.get(*name).cloned().unwrap_or(Value::Null);
                if current.get(*name).cloned().unwrap_or(Value::Null) != wanted {
                    changes.insert((*name).to_owned(), wanted);
                }
            }
            if !changes.is_empty() {
                let update = ItemUpdate { mode: UpdateMode::Patch, fm: changes, body: None };
                // Boxed: a write of the default language's item awaits these writes. The
                // source is saved already: a translation that cannot take its shared
                // fields now is left for `cms check` to name, and the others still get them.
                if let Err(error) = Box::pin(self.update_item(caller, lane, &item_ref, update, None)).await {
                    tracing::warn!(
                        %error,
                        collection = lane.slug.as_str(),
                        item = slug,
                        "cannot copy shared fields into a translation; cms check names it"
                    );
                }
            }
        }
        Ok(())
    }

    /// The translations of `collection` (any language's) whose shared fields differ from
    /// the default language's item: file name and field, for `cms check`.
    pub async fn shared_field_drift(&self, collection: &Collection) -> CoreResult<Vec<(String, String)>> {
        let shared = Self::shared_fields(collection);
        let mut drift = Vec::new();
        if shared.is_empty() || collection.language.as_ref().is_none_or(|l| l.at == 0) {
            return Ok(drift);
        }
        let source = self.in_language(collection, 0);
        for item in self.indexed_items(collection).await? {
            let Some(name) = collection.naming.parse(&item.meta.filename) else { continue };
            let item_ref = ItemRef::Filename(name);
            let Some(original) = self.counterpart(collection, &item_ref, source).await? else { continue };
            let (Ok(translation), Ok(original)) = (
                self.read_raw(collection, &item_ref).await,
                self.read_raw(source, &ItemRef::Filename(original)).await,
            ) else {
                continue;
            };
            for name in &shared {
                if translation.doc.fm.get(*name) != original.doc.fm.get(*name) {
                    drift.push((item.meta.filename.to_string(), (*name).to_owned()));
                }
            }
        }
        Ok(drift)
    }
}
