//! An item as an edit form: its frontmatter split into fields (title, date, status, tags,
//! author) and a YAML box for every other key, and back into the frontmatter changes a
//! save sends through the facade.
//!
//! A save changes only what the user changed: a field whose text is what the form showed
//! leaves its key as stored (so a date written as `2026-01-12 10:00` or tags written as one
//! string keep their form), an emptied field removes its key, and a key taken out of the
//! YAML box is removed.

use cms_core::codec::{self, YamlLimits};
use cms_core::document::Frontmatter;
use cms_core::item::{self, Status};
use cms_core::{CoreError, CoreResult};
use serde_json::{Map, Value};

use crate::forms::{Fields, unix_lines};

/// Keys with their own field in the form.
pub const OWN_FIELDS: [&str; 5] = ["title", "date", "status", "tags", "author"];

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ItemForm {
    pub title: String,
    pub date: String,
    /// `published` or `draft`: the status as it takes effect.
    pub status: String,
    /// Comma-separated.
    pub tags: String,
    pub author: String,
    /// The other keys, as YAML.
    pub extra: String,
    pub body: String,
    /// Only for a new item: the slug (empty: from the title).
    pub slug: String,
}

impl ItemForm {
    /// The form of a new item: a draft.
    pub fn blank() -> Self {
        Self { status: Status::Draft.as_str().into(), ..Self::default() }
    }

    /// The form showing a stored item.
    pub fn of(fm: &Frontmatter, body: &str) -> CoreResult<Self> {
        let mut form =
            Self { status: item::status_of(fm).as_str().into(), body: body.into(), ..Self::default() };
        let extra = form.take_own_fields(fm);
        form.extra = yaml_text(&extra)?;
        Ok(form)
    }

    /// Fills the own fields from `fm`; returns the keys left for the YAML box. The status
    /// never goes there: the select shows it as it takes effect.
    fn take_own_fields(&mut self, fm: &Frontmatter) -> Frontmatter {
        let mut extra = Map::new();
        for (key, value) in fm {
            match (key.as_str(), value) {
                ("title", Value::String(text)) => self.title = text.clone(),
                ("date", Value::String(text)) => self.date = text.clone(),
                ("author", Value::String(text)) => self.author = text.clone(),
                ("tags", Value::String(text)) => self.tags = text.clone(),
                ("tags", Value::Array(tags)) if tags.iter().all(Value::is_string) => {
                    self.tags = tags.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ");
                }
                ("status", _) => {}
                _ => {
                    extra.insert(key.clone(), value.clone());
                }
            }
        }
        extra
    }

    /// The form as submitted (line endings of the text boxes made `\n`).
    pub fn from_fields(fields: &Fields) -> Self {
        Self {
            title: fields.text("title").to_owned(),
            date: fields.text("date").to_owned(),
            status: fields.text("status").to_owned(),
            tags: fields.text("tags").to_owned(),
            author: fields.text("author").to_owned(),
            extra: unix_lines(fields.text("extra")),
            body: unix_lines(fields.text("body")),
            slug: fields.text("slug").trim().to_owned(),
        }
    }

    /// The frontmatter changes that turn the stored `fm` into what this form says (`null`
    /// removes a key), with the status set to `status` when given (publish, unpublish).
    pub fn changes_from(&self, fm: &Frontmatter, status: Option<Status>) -> CoreResult<Frontmatter> {
        let mut shown = Self::default();
        let shown_extra = shown.take_own_fields(fm);
        let shown_status = item::status_of(fm);
        let mut changes = Map::new();
        for (key, now, before) in [("title", &self.title, &shown.title), ("date", &self.date, &shown.date)] {
            text_change(&mut changes, key, now, before);
        }
        let wanted = match status {
            Some(status) => status,
            None => self.status.parse::<Status>()?,
        };
        if wanted != shown_status
            || (status.is_some() && fm.get("status").and_then(Value::as_str) != Some(wanted.as_str()))
        {
            changes.insert("status".into(), wanted.as_str().into());
        }
        if self.tags.trim() != shown.tags.trim() {
            let tags = parse_tags(&self.tags);
            changes.insert("tags".into(), if tags.is_empty() { Value::Null } else { tags.into() });
        }
        text_change(&mut changes, "author", &self.author, &shown.author);

        let extra = self.parse_extra()?;
        for (key, value) in &extra {
            let own_field_used = match key.as_str() {
                "status" => true,
                "title" => !self.title.trim().is_empty(),
                "date" => !self.date.trim().is_empty(),
                "author" => !self.author.trim().is_empty(),
                "tags" => !self.tags.trim().is_empty(),
                _ => false,
            };
            if own_field_used {
                return Err(CoreError::invalid(format!(
                    "{key} has its own field above; take it out of the other fields"
                )));
            }
            if fm.get(key) != Some(value) {
                changes.insert(key.clone(), value.clone());
            }
        }
        for key in shown_extra.keys() {
            if !extra.contains_key(key) {
                changes.insert(key.clone(), Value::Null);
            }
        }
        Ok(changes)
    }

    /// The frontmatter of a new item: the fields in form order, then the other keys.
    pub fn new_frontmatter(&self) -> CoreResult<Frontmatter> {
        let mut fm = Map::new();
        let status = self.status.parse::<Status>()?;
        for (key, value) in self.changes_from(&Map::new(), Some(status))? {
            if !value.is_null() {
                fm.insert(key, value);
            }
        }
        // Form order: title, date, status, tags, author, then the rest as written.
        let mut ordered = Map::new();
        for key in OWN_FIELDS {
            if let Some(value) = fm.shift_remove(key) {
                ordered.insert(key.into(), value);
            }
        }
        ordered.extend(fm);
        Ok(ordered)
    }

    /// The YAML box as a mapping; `Invalid` with the parser's words when it is not one.
    fn parse_extra(&self) -> CoreResult<Frontmatter> {
        if self.extra.trim().is_empty() {
            return Ok(Map::new());
        }
        codec::mapping_from_yaml(&self.extra, YamlLimits::FRONTMATTER).map_err(|e| {
            CoreError::invalid(format!(
                "the other fields are not a valid YAML mapping ({e}); nothing was saved"
            ))
        })
    }
}

/// Sets `key` when its text changed: trimmed, or `null` (removed) when emptied.
fn text_change(changes: &mut Frontmatter, key: &str, now: &str, before: &str) {
    let now = now.trim();
    if now == before.trim() {
        return;
    }
    changes.insert(key.into(), if now.is_empty() { Value::Null } else { now.into() });
}

/// `a, b ,,c` → `["a", "b", "c"]`
pub fn parse_tags(text: &str) -> Vec<String> {
    text.split(',').map(str::trim).filter(|t| !t.is_empty()).map(str::to_owned).collect()
}

fn yaml_text(map: &Frontmatter) -> CoreResult<String> {
    if map.is_empty() { Ok(String::new()) } else { codec::to_yaml(map) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fm(value: Value) -> Frontmatter {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn a_stored_item_splits_into_fields_and_yaml() {
        let stored = fm(json!({
            "title": "Hello", "date": "2026-01-12 10:00:00 +0100", "status": "published",
            "tags": ["a", "b"], "author": "Ann", "image": "/x.jpg", "seo": {"noindex": true}
        }));
        let form = ItemForm::of(&stored, "Body").unwrap();
        assert_eq!(form.title, "Hello");
        assert_eq!(form.date, "2026-01-12 10:00:00 +0100");
        assert_eq!(form.status, "published");
        assert_eq!(form.tags, "a, b");
        assert_eq!(form.author, "Ann");
        assert!(
            form.extra.contains("image: /x.jpg") && form.extra.contains("noindex: true"),
            "{}",
            form.extra
        );
        assert!(!form.extra.contains("title"));
        assert_eq!(
            form.changes_from(&stored, None).unwrap(),
            Map::new(),
            "an untouched form changes nothing"
        );
    }

    #[test]
    fn only_what_changed_is_sent_and_emptied_fields_are_removed() {
        let stored =
            fm(json!({"title": "Hello", "tags": "a,b", "author": "Ann", "image": "/x.jpg", "keep": 1}));
        let mut form = ItemForm::of(&stored, "").unwrap();
        form.title = "Hello again ".into();
        form.author = " ".into();
        form.extra = "keep: 1\nnew: [1, 2]\n".into();
        let changes = form.changes_from(&stored, None).unwrap();
        assert_eq!(
            Value::Object(changes),
            json!({"title": "Hello again", "author": null, "new": [1, 2], "image": null})
        );
        form.tags = "a, c".into();
        let changes = form.changes_from(&stored, Some(Status::Draft)).unwrap();
        assert_eq!(changes["tags"], json!(["a", "c"]));
        assert_eq!(changes["status"], json!("draft"));
    }

    #[test]
    fn publishing_writes_the_status_even_when_it_was_implied() {
        let stored = fm(json!({"title": "Hand-written, no status"}));
        let form = ItemForm::of(&stored, "").unwrap();
        assert_eq!(form.status, "published");
        assert_eq!(form.changes_from(&stored, None).unwrap(), Map::new());
        let changes = form.changes_from(&stored, Some(Status::Published)).unwrap();
        assert_eq!(changes["status"], json!("published"));
    }

    #[test]
    fn bad_yaml_and_doubled_fields_are_refused() {
        let stored = fm(json!({"title": "T"}));
        let mut form = ItemForm::of(&stored, "").unwrap();
        form.extra = "a: [unclosed".into();
        let error = form.changes_from(&stored, None).unwrap_err().to_string();
        assert!(error.contains("not a valid YAML mapping"), "{error}");
        form.extra = "- a list\n".into();
        assert!(form.changes_from(&stored, None).is_err());
        form.extra = "title: again\n".into();
        let error = form.changes_from(&stored, None).unwrap_err().to_string();
        assert!(error.contains("title has its own field"), "{error}");
        form.extra = "status: published\n".into();
        assert!(form.changes_from(&stored, None).is_err());
        form.extra = String::new();
        form.status = "maybe".into();
        assert!(form.changes_from(&stored, None).is_err());
    }

    #[test]
    fn a_non_text_title_stays_in_the_yaml_box() {
        let stored = fm(json!({"title": 2026, "tags": [1, 2]}));
        let form = ItemForm::of(&stored, "").unwrap();
        assert_eq!(form.title, "");
        assert!(form.extra.contains("title: 2026"), "{}", form.extra);
        assert_eq!(form.changes_from(&stored, None).unwrap(), Map::new());
    }

    #[test]
    fn a_new_item_lists_its_keys_in_form_order() {
        let form = ItemForm {
            title: "New".into(),
            tags: "x".into(),
            status: "draft".into(),
            extra: "image: /a.png\n".into(),
            ..ItemForm::blank()
        };
        let fm = form.new_frontmatter().unwrap();
        assert_eq!(fm.keys().collect::<Vec<_>>(), ["title", "status", "tags", "image"]);
        let published = ItemForm { status: "published".into(), ..form };
        assert_eq!(published.new_frontmatter().unwrap()["status"], json!("published"));
    }
}
