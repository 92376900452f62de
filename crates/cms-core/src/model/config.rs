//! A content model as `cms.yaml` writes it (`collections[].fields`): the raw settings,
//! read in the order they are written (the editor's order). [`super::Model::build`]
//! checks them and makes the model.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// The types a field can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FieldType {
    /// One line of text.
    String,
    /// Text of several lines.
    Text,
    Number,
    /// A whole number.
    Integer,
    Boolean,
    /// One of `options`.
    Select,
    /// Some of `options`, as a list.
    Multiselect,
    /// A list of tags (a comma-separated string is read as one too).
    Tags,
    /// A date and time (`2026-01-12T09:30:00+01:00`, `2026-01-12 09:30:00 +0100`, ...).
    Datetime,
    /// A calendar date (`2026-01-12`).
    Date,
    /// An image in a resource folder, by its URL path (`/media/uploads/cover.jpg`).
    Image,
    /// A file in a resource folder, by its URL path.
    File,
    /// The slug of an item of `collection`.
    Reference,
    /// An absolute http(s) URL.
    Url,
    Email,
    /// A list of values of the field `of`.
    List,
    /// A map of the fields `fields`.
    Object,
}

impl FieldType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Text => "text",
            Self::Number => "number",
            Self::Integer => "integer",
            Self::Boolean => "boolean",
            Self::Select => "select",
            Self::Multiselect => "multiselect",
            Self::Tags => "tags",
            Self::Datetime => "datetime",
            Self::Date => "date",
            Self::Image => "image",
            Self::File => "file",
            Self::Reference => "reference",
            Self::Url => "url",
            Self::Email => "email",
            Self::List => "list",
            Self::Object => "object",
        }
    }
}

impl fmt::Display for FieldType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Keys the model does not name: kept (`allow`, the default) or refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ExtraFields {
    #[default]
    Allow,
    Refuse,
}

/// One field as written. Which settings apply depends on `type`; one that does not apply
/// is refused when the site loads.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FieldConfig {
    #[serde(rename = "type")]
    pub kind: FieldType,
    /// A write without it (or with it empty) is refused.
    #[serde(default)]
    pub required: bool,
    /// Given to new items that do not set it; must itself be valid for the field.
    #[serde(default)]
    pub default: Option<Value>,
    /// Shown beside the field in the editor and in the JSON Schema.
    #[serde(default)]
    pub description: Option<String>,
    /// Kept, but not shown in the editor's form.
    #[serde(default)]
    pub hidden: bool,
    /// On a site with `languages:`, `false` shares the field: it is edited in the default
    /// language and written the same into every translation (Hugo reads each file alone).
    /// Default `true`: each language has its own value.
    #[serde(default = "translated")]
    pub translate: bool,
    /// `string`, `text`: the fewest characters.
    #[serde(default)]
    pub min_length: Option<u64>,
    /// `string`, `text`: the most characters.
    #[serde(default)]
    pub max_length: Option<u64>,
    /// `string`, `text`: a regular expression the whole value must match.
    #[serde(default)]
    pub pattern: Option<String>,
    /// `number`, `integer`: the least value.
    #[serde(default)]
    pub min: Option<f64>,
    /// `number`, `integer`: the greatest value.
    #[serde(default)]
    pub max: Option<f64>,
    /// `select`, `multiselect`: the values allowed.
    #[serde(default)]
    pub options: Option<Vec<String>>,
    /// `reference`: the slug of the collection referred to.
    #[serde(default)]
    pub collection: Option<String>,
    /// `list`: the field each element is.
    #[serde(default)]
    pub of: Option<Box<FieldConfig>>,
    /// `list`, `multiselect`, `tags`: the fewest elements.
    #[serde(default)]
    pub min_items: Option<u64>,
    /// `list`, `multiselect`, `tags`: the most elements.
    #[serde(default)]
    pub max_items: Option<u64>,
    /// `object`: its fields.
    #[serde(default)]
    pub fields: Option<FieldsConfig>,
}

fn translated() -> bool {
    true
}

/// Fields by name, in the order written.
#[derive(Debug, Clone, Default)]
pub struct FieldsConfig(pub Vec<(String, FieldConfig)>);

impl<'de> Deserialize<'de> for FieldsConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct InOrder;
        impl<'de> Visitor<'de> for InOrder {
            type Value = FieldsConfig;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of field names to fields ({ title: { type: string } })")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FieldsConfig, A::Error> {
                let mut fields: Vec<(String, FieldConfig)> = Vec::new();
                while let Some((name, field)) = map.next_entry::<String, FieldConfig>()? {
                    if fields.iter().any(|(seen, _)| *seen == name) {
                        return Err(serde::de::Error::custom(format!("the field {name:?} is named twice")));
                    }
                    fields.push((name, field));
                }
                Ok(FieldsConfig(fields))
            }
        }
        deserializer.deserialize_map(InOrder)
    }
}

impl JsonSchema for FieldsConfig {
    fn schema_name() -> Cow<'static, str> {
        "FieldsConfig".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let field = generator.subschema_for::<FieldConfig>();
        json_schema!({
            "description": "Fields by name, in the editor's order.",
            "type": "object",
            "additionalProperties": field,
        })
    }
}
