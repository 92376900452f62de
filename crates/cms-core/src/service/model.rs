//! The content model on the write paths: defaults for new items, every field checked at
//! once, and the items and media a frontmatter refers to checked to exist.

use super::Cms;
use crate::collection::Collection;
use crate::document::Frontmatter;
use crate::error::{CoreError, CoreResult};
use crate::model::{FieldError, LinkTarget};

impl Cms {
    /// Checks `fm` against `collection`'s model, if it has one (after giving a `new`
    /// item its defaults). `InvalidFields` names every failing field.
    pub(super) async fn check_model(
        &self,
        collection: &Collection,
        fm: &mut Frontmatter,
        new: bool,
    ) -> CoreResult<()> {
        let Some(model) = collection.model.clone() else { return Ok(()) };
        if new {
            model.apply_defaults(fm);
        }
        let mut errors = model.validate(fm);
        for link in model.links(fm) {
            if errors.iter().any(|e| e.field == link.field) {
                continue;
            }
            if let Some(message) = self.missing(&link.target).await? {
                errors.push(FieldError { field: link.field, message });
            }
        }
        if errors.is_empty() { Ok(()) } else { Err(CoreError::fields(errors)) }
    }

    /// Why a link's target cannot be used (it does not exist, or is not an image), if so.
    async fn missing(&self, target: &LinkTarget) -> CoreResult<Option<String>> {
        match target {
            LinkTarget::Item { collection, slug } => {
                let Some(target) = self.collections().iter().find(|c| c.slug == *collection) else {
                    return Ok(Some(format!(
                        "names the collection {collection:?}, which this site does not have"
                    )));
                };
                Ok(match self.file_with_slug(target, slug).await? {
                    Some(_) => None,
                    None => Some(format!("names {slug:?}, but {collection} has no item with that slug")),
                })
            }
            LinkTarget::Media { path, image } => {
                let found = self.resource_folders().iter().find_map(|folder| {
                    path.strip_prefix(folder.url.as_str())
                        .and_then(|rest| rest.strip_prefix('/'))
                        .map(|tail| (folder.index, tail))
                });
                let Some((folder, tail)) = found else {
                    let urls: Vec<&str> = self.resource_folders().iter().map(|f| f.url.as_str()).collect();
                    return Ok(Some(format!(
                        "{path} is in no resource folder (they are at {})",
                        urls.join(", ")
                    )));
                };
                let opened = async {
                    self.open_resource(folder, &crate::resource::FilePath::from_url_tail(tail)?).await
                };
                match opened.await {
                    Ok(file) if *image && !file.content_type.starts_with("image/") => {
                        Ok(Some(format!("must be an image; {path} is {}", file.content_type)))
                    }
                    Ok(_) => Ok(None),
                    Err(CoreError::NotFound(_)) => {
                        Ok(Some(format!("names {path}, but there is no file there")))
                    }
                    Err(other) => Err(other),
                }
            }
        }
    }

    /// How many of a modelled collection's items break its model, as its index holds them
    /// (`None`: it has no model, or its index is not built yet).
    pub fn items_breaking_model_count(&self, collection: &Collection) -> Option<usize> {
        collection.model.as_ref()?;
        super::read(&self.indexes[collection.index].index).as_ref().map(|index| index.breaking_model_count())
    }

    /// The JSON Schema (2020-12) of `collection`'s frontmatter: its model's, or any object
    /// for a collection without one.
    pub fn collection_schema(&self, collection: &Collection) -> serde_json::Value {
        match &collection.model {
            Some(model) => model.json_schema(&collection.label),
            None => serde_json::json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "title": collection.label,
                "description": "This collection has no content model (fields: in cms.yaml): any frontmatter.",
                "type": "object",
            }),
        }
    }

    /// The items of `collection` that break its model, each with every failing field, in
    /// filename order (for `cms check`: it reads every item file of the collection). A
    /// collection without a model has none.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn items_breaking_model(
        &self,
        collection: &Collection,
    ) -> CoreResult<Vec<(String, Vec<FieldError>)>> {
        if collection.model.is_none() {
            return Ok(Vec::new());
        }
        let mut broken = Vec::new();
        let mut names: Vec<std::sync::Arc<str>> =
            self.indexed_items(collection).await?.iter().map(|item| item.meta.filename.clone()).collect();
        names.sort();
        for name in names {
            let Some(filename) = collection.naming.parse(&name) else { continue };
            let Some(file) = self.ports.content.read(collection, &filename).await? else { continue };
            let mut doc = crate::item_file::parse_bytes(&filename, &file.bytes)?;
            if let Err(error) = self.check_model(collection, &mut doc.fm, false).await {
                match error {
                    CoreError::InvalidFields { fields, .. } => broken.push((name.to_string(), fields)),
                    other => return Err(other),
                }
            }
        }
        Ok(broken)
    }
}

impl Cms {
    /// Every way `fm` breaks `collection`'s model, with the items and media it refers to
    /// checked to exist (none without a model): for the editor's notice on an item edited
    /// by hand, which it reads anyway to show it.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn model_errors(
        &self,
        collection: &Collection,
        fm: &Frontmatter,
    ) -> CoreResult<Vec<FieldError>> {
        if collection.model.is_none() {
            return Ok(Vec::new());
        }
        let mut fm = fm.clone();
        match self.check_model(collection, &mut fm, false).await {
            Ok(()) => Ok(Vec::new()),
            Err(CoreError::InvalidFields { fields, .. }) => Ok(fields),
            Err(other) => Err(other),
        }
    }
}
