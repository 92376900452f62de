//! Collections and how a request addresses one: integer index or label slug.

use std::sync::Arc;

use crate::config::{CollectionConfig, SiteConfig};
use crate::error::{CoreError, CoreResult};
use crate::language::{LANG_PLACEHOLDER, TranslationLayout};
use crate::model::Model;
use crate::slug::{Naming, slugify};
use crate::urls::PagePath;

/// A configured collection: a folder of items.
#[derive(Debug, Clone)]
pub struct Collection {
    pub index: usize,
    pub label: String,
    pub slug: String,
    /// Folder relative to the site folder, e.g. `content/posts`.
    pub path: String,
    /// URL prefix of item pages, e.g. `/blog`.
    pub page_path: String,
    /// Whether new items get a `YYYY-MM-DD-` filename prefix by default.
    pub date_prefix: bool,
    /// The content model, when `cms.yaml` gives one (`fields:`).
    pub model: Option<Arc<Model>>,
    /// On a site with `languages:`, the language of this collection's items: each
    /// configured collection is one collection per language (see [`Collection::all_of_site`]).
    pub language: Option<CollectionLanguage>,
    /// How the folder's file names carry their language (translations by file name).
    pub naming: Naming,
}

/// Which language a collection holds, of which configured collection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectionLanguage {
    /// The language's position in `languages:` (0: the default language).
    pub at: usize,
    /// The code as `languages:` writes it.
    pub code: Arc<str>,
    /// The index of the configured collection (its default language's) that this is a
    /// translation of; its own index for the default language.
    pub family: usize,
}

/// Two collections are the same when they are the same folder under the same name (the
/// model follows from the configuration they both come from).
impl PartialEq for Collection {
    fn eq(&self, other: &Self) -> bool {
        (self.index, &self.label, &self.slug, &self.path, &self.page_path, self.date_prefix, &self.language)
            == (
                other.index,
                &other.label,
                &other.slug,
                &other.path,
                &other.page_path,
                other.date_prefix,
                &other.language,
            )
    }
}

impl Eq for Collection {}

impl Collection {
    pub fn from_config(index: usize, config: &CollectionConfig) -> Self {
        let slug = slugify(&config.label);
        let page_path = config.page_path.clone().unwrap_or_else(|| format!("/{slug}"));
        Self {
            index,
            label: config.label.clone(),
            slug,
            path: config.path.trim_end_matches('/').to_owned(),
            page_path,
            date_prefix: config.date_prefix,
            model: None,
            language: None,
            naming: Naming::default(),
        }
    }

    /// Every collection of a site: the configured ones first (in the default language),
    /// then, on a site with `languages:`, each configured collection again for each other
    /// language, language by language (the collection of language `p` of configured
    /// collection `i` has index `p × configured + i`). A translation's collection shares
    /// its label, slug and model; its items' URLs start with `/{lang}` (Hugo's default);
    /// its folder is the same (`filename` layout, the names carry the language) or its
    /// language's (`folder` layout). A site whose languages do not load (which the config's
    /// check refuses first) gets its configured collections alone.
    pub fn all_of_site(config: &SiteConfig) -> Vec<Self> {
        let families = Self::all_from_config(&config.collections);
        let Ok(Some(languages)) = config.languages() else { return families };
        let keys: Vec<Arc<str>> = languages.all().iter().map(|l| Arc::clone(&l.key)).collect();
        // A translation's `translated_from` is the server's own key, whatever the model.
        let families: Vec<Self> = families
            .into_iter()
            .map(|mut family| {
                family.model =
                    family.model.map(|model| Arc::new(Model { translated: true, ..(*model).clone() }));
                family
            })
            .collect();
        let mut all = Vec::with_capacity(families.len() * keys.len());
        for (at, language) in languages.all().iter().enumerate() {
            for family in &families {
                let mut collection = family.clone();
                collection.index = at * families.len() + family.index;
                collection.language =
                    Some(CollectionLanguage { at, code: Arc::clone(&language.code), family: family.index });
                match languages.layout() {
                    TranslationLayout::Folder => {
                        collection.path = family.path.replace(LANG_PLACEHOLDER, &language.code);
                    }
                    TranslationLayout::Filename => {
                        let others = keys.iter().filter(|key| **key != language.key).cloned().collect();
                        let own = (at > 0).then(|| Arc::clone(&language.key));
                        collection.naming = Naming::new(own, if at > 0 { Vec::new() } else { others });
                    }
                }
                if at > 0 {
                    collection.page_path =
                        format!("/{}{}", language.key, family.page_path.trim_end_matches('/'));
                }
                all.push(collection);
            }
        }
        all
    }

    /// The configured collection this one translates (itself on a site without languages).
    pub fn family(&self) -> usize {
        self.language.as_ref().map_or(self.index, |language| language.family)
    }

    /// The collections of a site, each with its model (built against the others' slugs;
    /// a model that does not build, which the config's check refuses first, is left out).
    pub fn all_from_config(configs: &[CollectionConfig]) -> Vec<Self> {
        let mut collections: Vec<Self> =
            configs.iter().enumerate().map(|(i, c)| Self::from_config(i, c)).collect();
        let slugs: Vec<String> = collections.iter().map(|c| c.slug.clone()).collect();
        for (i, (collection, config)) in collections.iter_mut().zip(configs).enumerate() {
            collection.model =
                config.model(&format!("collections[{i}]"), &slugs).ok().flatten().map(Arc::new);
        }
        collections
    }

    /// The site-relative URL of an item page (pretty form).
    pub fn item_url(&self, slug: &str) -> String {
        PagePath::trusted(&self.page_path, true).url("item", slug)
    }

    /// Where its items' slugs come from: on a site with languages, a file's own `slug:`
    /// names it (Hugo's localized URLs); else its file's name, as always.
    pub fn slugs(&self) -> crate::item::SlugSource {
        match self.language {
            Some(_) => crate::item::SlugSource::Frontmatter,
            None => crate::item::SlugSource::FileName,
        }
    }
}

/// Finds a collection by `{collection}`: integer index, label slug (any case) or the slug
/// of the folder's base name.
pub fn resolve<'a>(collections: &'a [Collection], key: &str) -> CoreResult<&'a Collection> {
    let not_found = || {
        let known: Vec<String> = collections.iter().map(|c| format!("{} ({})", c.index, c.slug)).collect();
        CoreError::not_found(format!(
            "no collection {key:?}; known collections: {}",
            if known.is_empty() { "none".into() } else { known.join(", ") }
        ))
    };
    if let Ok(index) = key.parse::<usize>() {
        return collections.get(index).ok_or_else(not_found);
    }
    // Slugs are lowercase: compared without making a lowercase copy of the key (the
    // busiest routes name a collection by its slug).
    collections
        .iter()
        .find(|c| c.slug.eq_ignore_ascii_case(key))
        .or_else(|| {
            let wanted = key.to_ascii_lowercase();
            collections.iter().find(|c| {
                let base = c.path.rsplit('/').next().unwrap_or(&c.path);
                slugify(base) == wanted
            })
        })
        .ok_or_else(not_found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collections() -> Vec<Collection> {
        let configs = [("Blog Posts", "content/posts"), ("Pages", "content/pages")];
        configs
            .iter()
            .enumerate()
            .map(|(i, (label, path))| {
                Collection::from_config(
                    i,
                    &CollectionConfig {
                        label: (*label).into(),
                        path: (*path).into(),
                        page_path: None,
                        date_prefix: false,
                        fields: None,
                        extra_fields: Default::default(),
                    },
                )
            })
            .collect()
    }

    #[test]
    fn index_label_slug_and_folder_name_are_equivalent() {
        let all = collections();
        for key in ["0", "blog-posts", "Blog-Posts", "posts", "POSTS"] {
            assert_eq!(resolve(&all, key).unwrap().index, 0, "{key}");
        }
        assert_eq!(resolve(&all, "pages").unwrap().index, 1);
        assert_eq!(all[0].item_url("hello"), "/blog-posts/hello");
    }

    #[test]
    fn unknown_collection_lists_known_ones() {
        let message = resolve(&collections(), "7").unwrap_err().to_string();
        assert!(message.contains("0 (blog-posts)"), "{message}");
        assert!(resolve(&collections(), "nope").is_err());
    }
}
