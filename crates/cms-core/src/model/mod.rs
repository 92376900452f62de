//! A collection's content model: the fields its frontmatter holds, each with a type and
//! rules (`collections[].fields` in `cms.yaml`). Optional: a collection without one takes
//! any frontmatter, as it always has.
//!
//! [`Model::build`] checks the settings when the site loads (an unknown collection
//! referred to, a default that breaks its own field, a setting that does not apply to the
//! type: each named by its key). [`Model::validate`] checks a frontmatter and reports
//! every failing field at once; [`Model::links`] names the items and media it refers to,
//! for the caller to check that they exist; [`Model::json_schema`] describes it for
//! clients and code generators.

mod compare;
mod config;
mod filter;
mod schema;
mod typescript;
mod validate;

pub(crate) use compare::scalar_of;
pub use compare::{Comparable, Scalar, is_scalar, value_of};
pub use config::{ExtraFields, FieldConfig, FieldType, FieldsConfig};
pub use filter::{FieldFilter, FilterOp};
pub use typescript::type_name;
pub use validate::{FieldError, Link, LinkTarget};

use serde_json::Value;

/// Keys the server itself reads (status and schedule): allowed whatever the model says.
pub const SERVER_READ_KEYS: [&str; 4] = ["status", "draft", "publish_date", "unpublish_date"];

/// A checked model: its fields in the editor's order.
#[derive(Debug, Clone)]
pub struct Model {
    pub fields: Vec<Field>,
    pub extra_fields: ExtraFields,
    /// On a site with `languages:`: the server also reads `translated_from` (what a
    /// translation was made from), allowed whatever the model says.
    pub translated: bool,
}

/// One field of a model.
#[derive(Debug, Clone)]
pub struct Field {
    pub name: String,
    pub kind: Kind,
    pub required: bool,
    pub default: Option<Value>,
    pub description: Option<String>,
    pub hidden: bool,
    /// `false`: shared by every language of a site with `languages:` (see
    /// `service/shared_fields.rs`).
    pub translate: bool,
}

/// A field's type with the rules that apply to it.
#[derive(Debug, Clone)]
pub enum Kind {
    String(TextRules),
    Text(TextRules),
    Number(Bounds),
    Integer(Bounds),
    Boolean,
    Select(Vec<String>),
    Multiselect { options: Vec<String>, items: Counts },
    Tags(Counts),
    Datetime,
    Date,
    Image,
    File,
    Reference { collection: String },
    Url,
    Email,
    List { of: Box<Field>, items: Counts },
    Object(Vec<Field>),
}

impl Kind {
    pub fn field_type(&self) -> FieldType {
        match self {
            Self::String(_) => FieldType::String,
            Self::Text(_) => FieldType::Text,
            Self::Number(_) => FieldType::Number,
            Self::Integer(_) => FieldType::Integer,
            Self::Boolean => FieldType::Boolean,
            Self::Select(_) => FieldType::Select,
            Self::Multiselect { .. } => FieldType::Multiselect,
            Self::Tags(_) => FieldType::Tags,
            Self::Datetime => FieldType::Datetime,
            Self::Date => FieldType::Date,
            Self::Image => FieldType::Image,
            Self::File => FieldType::File,
            Self::Reference { .. } => FieldType::Reference,
            Self::Url => FieldType::Url,
            Self::Email => FieldType::Email,
            Self::List { .. } => FieldType::List,
            Self::Object(_) => FieldType::Object,
        }
    }
}

/// The rules of a text: lengths in characters, and a pattern the whole value matches.
#[derive(Debug, Clone, Default)]
pub struct TextRules {
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
    pub pattern: Option<Pattern>,
}

/// A regular expression as written, and compiled (anchored at both ends).
#[derive(Debug, Clone)]
pub struct Pattern {
    pub source: String,
    regex: regex_lite::Regex,
}

impl Pattern {
    fn new(source: &str) -> Result<Self, String> {
        let regex = regex_lite::RegexBuilder::new(&format!("^(?:{source})$"))
            .size_limit(1 << 20)
            .build()
            .map_err(|e| format!("is not a regular expression: {e}"))?;
        Ok(Self { source: source.to_owned(), regex })
    }

    pub fn matches(&self, text: &str) -> bool {
        self.regex.is_match(text)
    }
}

/// The least and greatest number allowed.
#[derive(Debug, Clone, Copy, Default)]
pub struct Bounds {
    pub min: Option<f64>,
    pub max: Option<f64>,
}

/// The fewest and most elements of a list.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counts {
    pub min: Option<u64>,
    pub max: Option<u64>,
}

impl Model {
    /// Checks the settings of `fields` (written at `key`, e.g. `collections[0].fields`) and
    /// makes the model. `collections` are the slugs a reference may name.
    pub fn build(
        key: &str,
        fields: &FieldsConfig,
        extra_fields: ExtraFields,
        collections: &[String],
    ) -> Result<Self, String> {
        Ok(Self { fields: build_fields(key, fields, collections)?, extra_fields, translated: false })
    }

    /// A number naming this model's settings (the same settings, the same number, in one
    /// build of the program): what an index snapshot was made with.
    pub fn signature(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::hash::DefaultHasher::new();
        format!("{self:?}").hash(&mut hasher);
        hasher.finish() | 1
    }

    /// The field named `name`, at the top level.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

fn build_fields(key: &str, fields: &FieldsConfig, collections: &[String]) -> Result<Vec<Field>, String> {
    fields
        .0
        .iter()
        .map(|(name, config)| build_field(&format!("{key}.{name}"), name, config, collections))
        .collect()
}

/// The settings each type takes beyond the common ones.
fn allowed_settings(kind: FieldType) -> &'static [&'static str] {
    match kind {
        FieldType::String | FieldType::Text => &["min_length", "max_length", "pattern"],
        FieldType::Number | FieldType::Integer => &["min", "max"],
        FieldType::Select => &["options"],
        FieldType::Multiselect => &["options", "min_items", "max_items"],
        FieldType::Tags => &["min_items", "max_items"],
        FieldType::Reference => &["collection"],
        FieldType::List => &["of", "min_items", "max_items"],
        FieldType::Object => &["fields"],
        _ => &[],
    }
}

fn build_field(key: &str, name: &str, config: &FieldConfig, collections: &[String]) -> Result<Field, String> {
    if name.is_empty() || name.contains(['.', '[', ']']) {
        return Err(format!("{key}: a field's name must be a plain key (no '.', '[' or ']'), got {name:?}"));
    }
    let set: [(&str, bool); 10] = [
        ("min_length", config.min_length.is_some()),
        ("max_length", config.max_length.is_some()),
        ("pattern", config.pattern.is_some()),
        ("min", config.min.is_some()),
        ("max", config.max.is_some()),
        ("options", config.options.is_some()),
        ("collection", config.collection.is_some()),
        ("of", config.of.is_some()),
        ("min_items", config.min_items.is_some() || config.max_items.is_some()),
        ("fields", config.fields.is_some()),
    ];
    let allowed = allowed_settings(config.kind);
    if let Some((setting, _)) = set.iter().find(|(setting, is_set)| *is_set && !allowed.contains(setting)) {
        let setting =
            if *setting == "min_items" && config.min_items.is_none() { "max_items" } else { setting };
        let takes = if allowed.is_empty() { "no settings of its own".to_owned() } else { allowed.join(", ") };
        return Err(format!("{key}.{setting}: a field of type {} takes {takes}", config.kind));
    }
    let need = |setting: &str| format!("{key}.{setting}: a field of type {} needs it", config.kind);
    let counts = || -> Result<Counts, String> {
        let counts = Counts { min: config.min_items, max: config.max_items };
        match counts {
            Counts { min: Some(min), max: Some(max) } if min > max => {
                Err(format!("{key}.min_items: {min} is more than max_items ({max})"))
            }
            counts => Ok(counts),
        }
    };
    let options = || -> Result<Vec<String>, String> {
        let options = config.options.clone().ok_or_else(|| need("options"))?;
        if options.is_empty() {
            return Err(format!("{key}.options: name at least one value"));
        }
        Ok(options)
    };
    let kind = match config.kind {
        FieldType::String | FieldType::Text => {
            let pattern = match &config.pattern {
                Some(source) => Some(Pattern::new(source).map_err(|e| format!("{key}.pattern: {e}"))?),
                None => None,
            };
            if let (Some(min), Some(max)) = (config.min_length, config.max_length)
                && min > max
            {
                return Err(format!("{key}.min_length: {min} is more than max_length ({max})"));
            }
            let rules = TextRules { min_length: config.min_length, max_length: config.max_length, pattern };
            if config.kind == FieldType::String { Kind::String(rules) } else { Kind::Text(rules) }
        }
        FieldType::Number | FieldType::Integer => {
            let bounds = Bounds { min: config.min, max: config.max };
            for (setting, value) in [("min", config.min), ("max", config.max)] {
                if value.is_some_and(|v| !v.is_finite()) {
                    return Err(format!("{key}.{setting}: must be a finite number"));
                }
            }
            if let (Some(min), Some(max)) = (bounds.min, bounds.max)
                && min > max
            {
                return Err(format!("{key}.min: {min} is more than max ({max})"));
            }
            if config.kind == FieldType::Number { Kind::Number(bounds) } else { Kind::Integer(bounds) }
        }
        FieldType::Boolean => Kind::Boolean,
        FieldType::Select => Kind::Select(options()?),
        FieldType::Multiselect => Kind::Multiselect { options: options()?, items: counts()? },
        FieldType::Tags => Kind::Tags(counts()?),
        FieldType::Datetime => Kind::Datetime,
        FieldType::Date => Kind::Date,
        FieldType::Image => Kind::Image,
        FieldType::File => Kind::File,
        FieldType::Reference => {
            let collection = config.collection.clone().ok_or_else(|| need("collection"))?;
            if !collections.contains(&collection) {
                return Err(format!(
                    "{key}.collection: no collection has the slug {collection:?}; the collections are {}",
                    collections.join(", ")
                ));
            }
            Kind::Reference { collection }
        }
        FieldType::Url => Kind::Url,
        FieldType::Email => Kind::Email,
        FieldType::List => {
            let of = config.of.as_deref().ok_or_else(|| need("of"))?;
            let element = build_field(&format!("{key}.of"), name, of, collections)?;
            Kind::List { of: Box::new(element), items: counts()? }
        }
        FieldType::Object => {
            let fields = config.fields.as_ref().ok_or_else(|| need("fields"))?;
            Kind::Object(build_fields(&format!("{key}.fields"), fields, collections)?)
        }
    };
    let field = Field {
        name: name.to_owned(),
        kind,
        required: config.required,
        default: config.default.clone(),
        description: config.description.clone(),
        hidden: config.hidden,
        translate: config.translate,
    };
    if let Some(default) = &field.default {
        let mut errors = Vec::new();
        validate::check_value(&field, default, "default", &mut errors);
        if let Some(error) = errors.first() {
            return Err(format!("{key}.default {}", error.message));
        }
    }
    Ok(field)
}

#[cfg(test)]
pub(crate) mod tests;
