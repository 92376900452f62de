//! The edit form of an item whose collection has a content model: one input per field of
//! the model, in its order, and the YAML box for the keys the model does not name (and
//! for values that no input can show, such as a list of maps).
//!
//! What an input holds is kept as the text a browser sends (`raw`: the values of one
//! input name, by name: `fm.price`, `fm.seo.title`), whether it came from the stored
//! frontmatter or from a submitted form, so that a refused save shows again exactly what
//! was typed. A save changes only the fields whose text changed (so `2026-01-12 10:00`
//! written by hand keeps its form), each read as its JSON type: numbers as numbers,
//! booleans as booleans, an emptied input removes its key.

use std::collections::BTreeMap;

use cms_core::codec::{self, YamlLimits};
use cms_core::document::Frontmatter;
use cms_core::item::{self, Status};
use cms_core::model::{Field, Kind, Model};
use cms_core::slug::is_calendar_date;
use cms_core::{CoreError, CoreResult};
use serde_json::{Map, Number, Value};

use crate::forms::{Fields, unix_lines};
use crate::item_form::{ItemForm, parse_tags};

/// The inputs of an input name, as text (several for a checkbox group).
type Raw = BTreeMap<String, Vec<String>>;

#[derive(Debug, Clone, Default)]
pub struct ModelForm {
    raw: Raw,
    /// `published` or `draft`, from the status select (when the model does not name
    /// `status` itself).
    pub status: String,
    /// The YAML box.
    pub extra: String,
    pub body: String,
    /// Only for a new item: the slug (empty: from the title).
    pub slug: String,
}

/// The name of a top-level field's input.
fn input_name(field: &Field) -> String {
    format!("fm.{}", field.name)
}

/// Whether a list of `of` is edited one value per line.
fn scalar(kind: &Kind) -> bool {
    matches!(
        kind,
        Kind::String(_)
            | Kind::Number(_)
            | Kind::Integer(_)
            | Kind::Select(_)
            | Kind::Datetime
            | Kind::Date
            | Kind::Image
            | Kind::File
            | Kind::Reference { .. }
            | Kind::Url
            | Kind::Email
    )
}

/// Whether the form has an input for `field` (a hidden field is kept, not shown; a list
/// of maps or lists is edited in the YAML box).
pub fn has_input(field: &Field) -> bool {
    !field.hidden
        && match &field.kind {
            Kind::List { of, .. } => scalar(&of.kind),
            Kind::Object(fields) => fields.iter().any(has_input),
            _ => true,
        }
}

/// A scalar as one line of text; `None` for what an input cannot hold.
fn line_of(value: &Value) -> Option<String> {
    match value {
        Value::String(text) if !text.contains('\n') => Some(text.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Puts into `raw` what `field`'s input(s) show for `value`; false (and nothing put) when
/// they cannot show it, so the value goes to the YAML box instead.
fn show(field: &Field, name: &str, value: &Value, raw: &mut Raw) -> bool {
    let one = |raw: &mut Raw, text: String| {
        raw.insert(name.to_owned(), vec![text]);
        true
    };
    match (&field.kind, value) {
        (Kind::Text(_), Value::String(text)) => one(raw, text.clone()),
        (Kind::Boolean, Value::Bool(b)) => one(raw, b.to_string()),
        (Kind::Multiselect { .. }, Value::Array(chosen)) => {
            let Some(chosen) = chosen.iter().map(line_of).collect::<Option<Vec<_>>>() else { return false };
            raw.insert(name.to_owned(), chosen);
            true
        }
        (Kind::Tags(_), Value::Array(tags)) => {
            match tags
                .iter()
                .map(|t| t.as_str().filter(|t| !t.contains([',', '\n'])))
                .collect::<Option<Vec<_>>>()
            {
                Some(tags) => one(raw, tags.join(", ")),
                None => false,
            }
        }
        (Kind::List { of, .. }, Value::Array(elements)) => {
            match elements.iter().map(line_of).collect::<Option<Vec<_>>>() {
                Some(lines) if scalar(&of.kind) && lines.iter().all(|l| !l.trim().is_empty()) => {
                    one(raw, lines.join("\n"))
                }
                _ => false,
            }
        }
        (Kind::Object(fields), Value::Object(map)) => {
            if map.keys().any(|key| !fields.iter().any(|f| f.name == *key && has_input(f))) {
                return false;
            }
            let mut inner = Raw::new();
            for field in fields.iter().filter(|f| has_input(f)) {
                if let Some(value) = map.get(&field.name)
                    && !value.is_null()
                    && !show(field, &format!("{name}.{}", field.name), value, &mut inner)
                {
                    return false;
                }
            }
            raw.extend(inner);
            true
        }
        // A box cannot show `"yes"` (and ticking it twice would leave it as it was).
        (Kind::List { .. } | Kind::Object(_) | Kind::Multiselect { .. } | Kind::Boolean, _) => false,
        // A value of another JSON type (`price: "12"`, `rating: 4.0`, `title: 2024`) goes
        // to the YAML box: its input would show text that looks right while the stored
        // type is wrong, and a save of that text would change nothing.
        (kind, value) if !of_its_type(kind, value) => false,
        (_, value) => match line_of(value) {
            Some(text) => one(raw, text),
            None => false,
        },
    }
}

/// Whether a scalar input's value has the JSON type its kind is written as.
fn of_its_type(kind: &Kind, value: &Value) -> bool {
    match kind {
        Kind::Number(_) => value.is_number(),
        Kind::Integer(_) => value.is_i64() || value.is_u64(),
        _ => value.is_string(),
    }
}

/// The value `field`'s input(s) say, `None` when left empty. Text that is not of the
/// field's type (`abc` in a number box) is kept as text: the model's check then refuses it
/// with the same words as REST, beside every other failing field.
fn read(field: &Field, name: &str, raw: &Raw) -> Option<Value> {
    let values = raw.get(name).map(Vec::as_slice).unwrap_or_default();
    let text = values.last().map(String::as_str).unwrap_or("");
    match &field.kind {
        Kind::Boolean => Some(Value::Bool(text == "true")),
        Kind::Text(_) => {
            let text = unix_lines(text);
            (!text.trim().is_empty()).then_some(Value::String(text))
        }
        Kind::Multiselect { .. } => {
            let chosen: Vec<Value> =
                values.iter().filter(|v| !v.is_empty()).map(|v| Value::String(v.clone())).collect();
            (!chosen.is_empty()).then_some(Value::Array(chosen))
        }
        Kind::Tags(_) => {
            let tags = parse_tags(text);
            (!tags.is_empty()).then(|| tags.into())
        }
        Kind::List { of, .. } => {
            let mut elements = Vec::new();
            for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
                elements
                    .push(scalar_value(&of.kind, line).unwrap_or_else(|_| Value::String(line.to_owned())));
            }
            (!elements.is_empty()).then_some(Value::Array(elements))
        }
        Kind::Object(fields) => {
            let mut map = Map::new();
            for inner in fields.iter().filter(|f| has_input(f)) {
                if let Some(value) = read(inner, &format!("{name}.{}", inner.name), raw) {
                    map.insert(inner.name.clone(), value);
                }
            }
            // An object of only unticked boxes says nothing.
            (!map.values().all(|v| *v == Value::Bool(false))).then_some(Value::Object(map))
        }
        kind => {
            let text = text.trim();
            if text.is_empty() {
                return None;
            }
            Some(scalar_value(kind, text).unwrap_or_else(|_| Value::String(text.to_owned())))
        }
    }
}

/// One line of text as a value of a scalar kind: numbers as numbers, the rest as text.
fn scalar_value(kind: &Kind, text: &str) -> Result<Value, String> {
    match kind {
        Kind::Number(_) => match text.parse::<f64>() {
            Ok(number) if number.is_finite() => {
                Ok(serde_json::from_str::<Number>(text).ok().map_or_else(|| number.into(), Value::Number))
            }
            _ => Err(format!("must be a number, got {text:?}")),
        },
        Kind::Integer(_) => match (text.parse::<i64>(), text.parse::<f64>()) {
            (Ok(number), _) => Ok(number.into()),
            // `4.0`, as a number input may send it.
            (_, Ok(number)) if number.fract() == 0.0 && number.abs() < 9.0e15 => Ok((number as i64).into()),
            _ => Err(format!("must be a whole number, got {text:?}")),
        },
        _ => Ok(Value::String(text.to_owned())),
    }
}

/// An input's text in a form to compare: a browser may send `\r\n` and trailing spaces.
fn normal(field: &Field, values: Option<&Vec<String>>) -> Vec<String> {
    let values = values.cloned().unwrap_or_default();
    match &field.kind {
        Kind::Boolean => vec![(values.last().map(String::as_str) == Some("true")).to_string()],
        // The browser sends the chosen boxes in the options' order: a stored order is
        // not a change.
        Kind::Multiselect { .. } => {
            let mut chosen: Vec<String> = values.into_iter().filter(|v| !v.is_empty()).collect();
            chosen.sort();
            chosen.dedup();
            chosen
        }
        Kind::Text(_) | Kind::List { .. } => values
            .last()
            .map(|t| unix_lines(t).trim_end().to_owned())
            .into_iter()
            .filter(|t| !t.is_empty())
            .collect(),
        _ => values.last().map(|t| t.trim().to_owned()).into_iter().filter(|t| !t.is_empty()).collect(),
    }
}

/// Every input name of a field (an object's fields' too).
fn names_of(field: &Field, name: &str, out: &mut Vec<(String, Field)>) {
    match &field.kind {
        Kind::Object(fields) => {
            for inner in fields.iter().filter(|f| has_input(f)) {
                names_of(inner, &format!("{name}.{}", inner.name), out);
            }
        }
        _ => out.push((name.to_owned(), field.clone())),
    }
}

impl ModelForm {
    /// The form showing a stored item (or a new item's defaults).
    pub fn of(model: &Model, fm: &Frontmatter, body: &str) -> CoreResult<Self> {
        let (raw, extra) = split(model, fm);
        Ok(Self {
            raw,
            status: item::status_of(fm).as_str().into(),
            extra: if extra.is_empty() { String::new() } else { codec::to_yaml(&extra)? },
            body: body.into(),
            slug: String::new(),
        })
    }

    /// The form of a new item: a draft, its fields at their defaults.
    pub fn blank(model: &Model) -> CoreResult<Self> {
        let mut defaults = Map::new();
        model.apply_defaults(&mut defaults);
        let mut form = Self::of(model, &defaults, "")?;
        if model.field("status").is_none() {
            form.status = Status::Draft.as_str().into();
        }
        Ok(form)
    }

    /// The form as submitted.
    pub fn from_fields(model: &Model, fields: &Fields) -> Self {
        let mut raw = Raw::new();
        let mut names = Vec::new();
        for field in model.fields.iter().filter(|f| has_input(f)) {
            names_of(field, &input_name(field), &mut names);
        }
        for (name, _) in names {
            raw.insert(name.clone(), fields.all(&name).into_iter().map(unix_lines).collect());
        }
        Self {
            raw,
            status: fields.text("status").to_owned(),
            extra: unix_lines(fields.text("extra")),
            body: unix_lines(fields.text("body")),
            slug: fields.text("slug").trim().to_owned(),
        }
    }

    /// The texts of an input, as shown.
    pub fn values(&self, name: &str) -> &[String] {
        self.raw.get(name).map(Vec::as_slice).unwrap_or_default()
    }

    /// The title, for the page's heading.
    pub fn title(&self) -> String {
        self.values("fm.title").last().cloned().unwrap_or_default()
    }

    /// The parts the template shares with the form of a collection without a model.
    pub fn as_item_form(&self) -> ItemForm {
        ItemForm {
            title: self.title(),
            status: self.status.clone(),
            extra: self.extra.clone(),
            body: self.body.clone(),
            slug: self.slug.clone(),
            ..ItemForm::default()
        }
    }

    /// The frontmatter changes that turn the stored `fm` into what this form says (`null`
    /// removes a key), with the status set to `status` when given (publish, unpublish).
    /// Inputs that cannot be read (`abc` in a number) are `InvalidFields`, as the
    /// model's own checks are.
    pub fn changes_from(
        &self,
        model: &Model,
        fm: &Frontmatter,
        status: Option<Status>,
    ) -> CoreResult<Frontmatter> {
        self.changes(model, fm, status, false)
    }

    /// As [`Self::changes_from`]; with `all`, every input that says something is a
    /// change (a new item: an unticked box is written `false`).
    fn changes(
        &self,
        model: &Model,
        fm: &Frontmatter,
        status: Option<Status>,
        all: bool,
    ) -> CoreResult<Frontmatter> {
        let (shown, shown_extra) = split(model, fm);
        let extra = parse_extra(&self.extra)?;
        let mut changes = Map::new();
        for field in model.fields.iter().filter(|f| has_input(f)) {
            let name = input_name(field);
            let mut names = Vec::new();
            names_of(field, &name, &mut names);
            let value = read(field, &name, &self.raw);
            let changed = (all && value.is_some())
                || names.iter().any(|(n, f)| normal(f, self.raw.get(n)) != normal(f, shown.get(n)));
            if extra.contains_key(&field.name) {
                if value.is_some() && changed {
                    return Err(CoreError::invalid(format!(
                        "{} has its own field above; take it out of the other fields",
                        field.name
                    )));
                }
                continue;
            }
            if changed {
                changes.insert(field.name.clone(), value.unwrap_or(Value::Null));
            }
        }
        for (key, value) in &extra {
            if key == "status" {
                return Err(CoreError::invalid(
                    "status has its own field above; take it out of the other fields",
                ));
            }
            if fm.get(key) != Some(value) {
                changes.insert(key.clone(), value.clone());
            }
        }
        for key in shown_extra.keys() {
            if !extra.contains_key(key) && !changes.contains_key(key) {
                changes.insert(key.clone(), Value::Null);
            }
        }
        let shown_status = item::status_of(fm);
        let wanted = match status {
            Some(status) => Some(status),
            // The model's own `status` field, when it has one, is read as the others are.
            None if model.field("status").is_some_and(has_input) => None,
            None => Some(self.status.parse::<Status>()?),
        };
        if let Some(wanted) = wanted
            && (wanted != shown_status
                || changes.contains_key("status")
                || (status.is_some() && fm.get("status").and_then(Value::as_str) != Some(wanted.as_str())))
        {
            changes.insert("status".into(), wanted.as_str().into());
        }
        Ok(changes)
    }

    /// The frontmatter of a new item: the model's fields in its order, then the others.
    pub fn new_frontmatter(&self, model: &Model) -> CoreResult<Frontmatter> {
        let status = match model.field("status") {
            Some(field) if has_input(field) => None,
            _ => Some(self.status.parse::<Status>()?),
        };
        let mut fm: Frontmatter = self
            .changes(model, &Map::new(), status, true)?
            .into_iter()
            .filter(|(_, v)| !v.is_null())
            .collect();
        let mut ordered = Map::new();
        for field in &model.fields {
            if let Some(value) = fm.shift_remove(&field.name) {
                ordered.insert(field.name.clone(), value);
            }
        }
        if let Some(status) = fm.shift_remove("status") {
            ordered.insert("status".into(), status);
        }
        ordered.extend(fm);
        Ok(ordered)
    }
}

/// The inputs' texts for `fm`, and the keys left for the YAML box: those the model does
/// not name, and values no input can show (`status` goes to neither, nor does a hidden
/// field, unless its value breaks the model: then the YAML box shows it, to be mended,
/// since a save would be refused for it).
fn split(model: &Model, fm: &Frontmatter) -> (Raw, Frontmatter) {
    let mut raw = Raw::new();
    let mut extra = Map::new();
    let status_shown = model.field("status").is_none_or(has_input);
    let hidden_broken = broken_hidden_fields(model, fm);
    for (key, value) in fm {
        match model.field(key) {
            Some(field) if field.hidden && !hidden_broken.contains(key.as_str()) => {}
            Some(field)
                if has_input(field)
                    && (value.is_null() || show(field, &input_name(field), value, &mut raw)) => {}
            None if key == "status" && status_shown => {}
            _ => {
                extra.insert(key.clone(), value.clone());
            }
        }
    }
    (raw, extra)
}

/// The hidden fields whose values in `fm` break the model (by the top-level key of each
/// error's path: `fm.seo.title` is `seo`).
fn broken_hidden_fields(model: &Model, fm: &Frontmatter) -> std::collections::HashSet<String> {
    if !model.fields.iter().any(|f| f.hidden) {
        return Default::default();
    }
    model
        .validate(fm)
        .into_iter()
        .filter_map(|error| {
            let path = error.field.strip_prefix("fm.")?;
            let key = path.split(['.', '[']).next().unwrap_or(path);
            model.field(key).is_some_and(|f| f.hidden).then(|| key.to_owned())
        })
        .collect()
}

/// The YAML box as a mapping; `Invalid` with the parser's words when it is not one.
fn parse_extra(text: &str) -> CoreResult<Frontmatter> {
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    codec::mapping_from_yaml(text, YamlLimits::FRONTMATTER).map_err(|e| {
        CoreError::invalid(format!("the other fields are not a valid YAML mapping ({e}); nothing was saved"))
    })
}

/// The keys in the YAML box (none while it is not a mapping): a field among them has its
/// value there rather than in its input.
pub fn yaml_box_keys(form: &ModelForm) -> Vec<String> {
    parse_extra(&form.extra).map(|extra| extra.keys().cloned().collect()).unwrap_or_default()
}

/// A field's name for people: `event_day` → `Event day`.
pub fn humanise(name: &str) -> String {
    let words = name.replace(['_', '-'], " ");
    let mut chars = words.trim().chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => name.to_owned(),
    }
}

/// Whether `text` is a date an `<input type="date">` can show.
pub fn date_input_can_show(text: &str) -> bool {
    text.is_empty() || is_calendar_date(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cms_core::model::{ExtraFields, FieldsConfig};
    use serde_json::json;

    fn model() -> Model {
        let yaml = "
title: { type: string, required: true, max_length: 20 }
summary: { type: text }
price: { type: number, min: 0 }
rating: { type: integer }
featured: { type: boolean }
category: { type: select, options: [news, guide] }
topics: { type: multiselect, options: [rust, web] }
tags: { type: tags }
date: { type: datetime }
links: { type: list, of: { type: url } }
blocks: { type: list, of: { type: object, fields: { a: { type: string } } } }
seo: { type: object, fields: { title: { type: string }, noindex: { type: boolean } } }
secret: { type: string, hidden: true }
";
        let fields: FieldsConfig = codec::from_yaml(yaml, YamlLimits::FRONTMATTER).unwrap();
        Model::build("fields", &fields, ExtraFields::Allow, &[]).unwrap()
    }

    fn fm(value: Value) -> Frontmatter {
        value.as_object().unwrap().clone()
    }

    fn posted(pairs: &[(&str, &str)]) -> Fields {
        let body = form_urlencoded::Serializer::new(String::new()).extend_pairs(pairs).finish();
        Fields::parse(body.as_bytes())
    }

    #[test]
    fn a_stored_item_fills_the_inputs_and_an_untouched_form_changes_nothing() {
        let model = model();
        let stored = fm(json!({
            "title": "Hello", "price": 9.5, "rating": 4, "featured": true, "topics": ["web"],
            "tags": "a,b", "date": "2026-01-12 10:00:00 +0100", "links": ["https://a.example"],
            "blocks": [{"a": "x"}], "seo": {"title": "T"}, "secret": "s", "status": "draft", "other": 1
        }));
        let form = ModelForm::of(&model, &stored, "Body").unwrap();
        assert_eq!(form.values("fm.price"), ["9.5"]);
        assert_eq!(form.values("fm.featured"), ["true"]);
        assert_eq!(form.values("fm.tags"), ["a,b"]);
        assert_eq!(form.values("fm.seo.title"), ["T"]);
        assert!(form.values("fm.secret").is_empty(), "hidden fields are not shown");
        assert!(form.extra.contains("other: 1") && form.extra.contains("blocks:"), "{}", form.extra);
        assert!(!form.extra.contains("secret") && !form.extra.contains("status"), "{}", form.extra);
        assert_eq!(form.status, "draft");
        assert_eq!(form.changes_from(&model, &stored, None).unwrap(), Map::new());

        // A hidden field whose value breaks the model is shown in the YAML box, where it
        // can be mended (a save would be refused for it); mended, it is saved.
        let mut broken = stored.clone();
        broken.insert("secret".into(), json!(12));
        let form = ModelForm::of(&model, &broken, "Body").unwrap();
        assert!(form.extra.contains("secret: 12"), "{}", form.extra);
        assert_eq!(form.changes_from(&model, &broken, None).unwrap(), Map::new(), "untouched");
        let mended = ModelForm { extra: form.extra.replace("secret: 12", "secret: twelve"), ..form };
        assert_eq!(mended.changes_from(&model, &broken, None).unwrap(), fm(json!({"secret": "twelve"})));
    }

    #[test]
    fn a_submitted_form_is_read_as_typed_values() {
        let model = model();
        let stored = fm(json!({"title": "Hello", "featured": true, "tags": ["x"], "keep": 1}));
        let fields = posted(&[
            ("fm.title", " Hello again "),
            ("fm.summary", "Two\r\nlines"),
            ("fm.price", "10"),
            ("fm.rating", "3"),
            ("fm.featured", "false"),
            ("fm.category", ""),
            ("fm.topics", "rust"),
            ("fm.topics", "web"),
            ("fm.tags", "x"),
            ("fm.date", "2026-01-12T09:30:00+01:00"),
            ("fm.links", "https://a.example\r\n\r\nhttps://b.example\r\n"),
            ("fm.seo.title", "Seo"),
            ("fm.seo.noindex", "false"),
            ("fm.seo.noindex", "true"),
            ("status", "published"),
            ("extra", "keep: 1\nnew: [1]\n"),
        ]);
        let form = ModelForm::from_fields(&model, &fields);
        let changes = form.changes_from(&model, &stored, None).unwrap();
        assert_eq!(
            Value::Object(changes),
            json!({
                "title": "Hello again", "summary": "Two\nlines", "price": 10, "rating": 3,
                "featured": false, "topics": ["rust", "web"], "date": "2026-01-12T09:30:00+01:00",
                "links": ["https://a.example", "https://b.example"],
                "seo": {"title": "Seo", "noindex": true}, "new": [1]
            })
        );
    }

    #[test]
    fn emptied_inputs_remove_their_keys_and_unreadable_ones_stay_text_for_the_model_to_refuse() {
        let model = model();
        let stored = fm(json!({"title": "Hello", "price": 2, "links": ["https://a.example"]}));
        let mut form = ModelForm::of(&model, &stored, "").unwrap();
        form.raw.insert("fm.price".into(), vec![String::new()]);
        form.raw.insert("fm.links".into(), vec![String::new()]);
        let changes = form.changes_from(&model, &stored, None).unwrap();
        assert_eq!(Value::Object(changes), json!({"price": null, "links": null}));
        form.raw.insert("fm.price".into(), vec!["ten".into()]);
        form.raw.insert("fm.rating".into(), vec!["4.0".into()]);
        let changes = form.changes_from(&model, &stored, None).unwrap();
        assert_eq!(changes.get("rating"), Some(&json!(4)), "4.0 is a whole number");
        assert_eq!(changes.get("price"), Some(&json!("ten")), "kept as typed, for the model to refuse");
        form.raw.insert("fm.rating".into(), vec!["2.5".into()]);
        let changes = form.changes_from(&model, &stored, None).unwrap();
        let merged: Frontmatter = stored.into_iter().chain(changes).collect();
        let failing: Vec<String> = model.validate(&merged).into_iter().map(|e| e.field).collect();
        assert_eq!(failing, ["fm.price", "fm.rating"], "both, at once, by the model");
    }

    #[test]
    fn values_no_input_can_show_go_to_the_yaml_box_and_come_back() {
        let model = model();
        let stored =
            fm(json!({"title": "T", "price": [1], "seo": {"title": "x", "extra": 1}, "featured": "yes"}));
        let form = ModelForm::of(&model, &stored, "").unwrap();
        assert!(form.values("fm.price").is_empty());
        assert!(form.extra.contains("featured:"), "{}", form.extra);
        assert!(form.extra.contains("price:") && form.extra.contains("seo:"), "{}", form.extra);
        assert!(yaml_box_keys(&form).contains(&"price".to_owned()));
        assert_eq!(form.changes_from(&model, &stored, None).unwrap(), Map::new());
        let mut typed = form.clone();
        typed.raw.insert("fm.price".into(), vec!["3".into()]);
        let error = typed.changes_from(&model, &stored, None).unwrap_err().to_string();
        assert!(error.contains("price has its own field"), "{error}");
    }

    /// A multiselect stored in another order than the options' is left as it is when its
    /// boxes are not changed.
    #[test]
    fn an_unchanged_multiselect_keeps_its_stored_order() {
        let model = model();
        let stored = fm(json!({"title": "T", "topics": ["web", "rust"]}));
        let mut form = ModelForm::of(&model, &stored, "").unwrap();
        form.raw.insert("fm.topics".into(), vec!["rust".into(), "web".into()]);
        assert_eq!(form.changes_from(&model, &stored, None).unwrap(), Map::new());
        form.raw.insert("fm.topics".into(), vec!["rust".into()]);
        assert_eq!(form.changes_from(&model, &stored, None).unwrap().get("topics"), Some(&json!(["rust"])));
    }

    /// A value of the wrong JSON type whose text looks right (`price: "12"`) is shown in
    /// the YAML box, where retyping it fixes the type; its input is empty.
    #[test]
    fn a_value_of_the_wrong_json_type_goes_to_the_yaml_box() {
        let model = model();
        let stored = fm(json!({"title": 2024, "price": "12", "rating": 4.0, "summary": 42}));
        let form = ModelForm::of(&model, &stored, "").unwrap();
        for input in ["fm.title", "fm.price", "fm.rating", "fm.summary"] {
            assert!(form.values(input).is_empty(), "{input}");
        }
        let mut keys = yaml_box_keys(&form);
        keys.sort();
        assert_eq!(keys, ["price", "rating", "summary", "title"]);
        let mut fixed = form.clone();
        fixed.extra = "price: 12\nrating: 4\ntitle: '2024'\nsummary: '42'\n".into();
        let changes = fixed.changes_from(&model, &stored, None).unwrap();
        assert_eq!(changes.get("price"), Some(&json!(12)));
        assert_eq!(changes.get("rating"), Some(&json!(4)));
        assert_eq!(changes.get("title"), Some(&json!("2024")));
    }

    #[test]
    fn a_model_that_names_status_has_its_own_input_and_publishing_still_sets_it() {
        let fields: FieldsConfig = codec::from_yaml(
            "title: { type: string }\nstatus: { type: select, options: [published, draft] }\n",
            YamlLimits::FRONTMATTER,
        )
        .unwrap();
        let model = Model::build("fields", &fields, ExtraFields::Allow, &[]).unwrap();
        let stored = fm(json!({"title": "T", "status": "draft"}));
        let form = ModelForm::of(&model, &stored, "").unwrap();
        assert_eq!(form.values("fm.status"), ["draft"]);
        assert_eq!(form.extra, "");
        assert_eq!(form.changes_from(&model, &stored, None).unwrap(), Map::new());
        let changes = form.changes_from(&model, &stored, Some(Status::Published)).unwrap();
        assert_eq!(Value::Object(changes), json!({"status": "published"}));
        let mut chosen = form.clone();
        chosen.raw.insert("fm.status".into(), vec!["published".into()]);
        let changes = chosen.changes_from(&model, &stored, None).unwrap();
        assert_eq!(Value::Object(changes), json!({"status": "published"}));
        let changes = chosen.changes_from(&model, &stored, Some(Status::Draft)).unwrap();
        assert_eq!(Value::Object(changes), json!({"status": "draft"}));
    }

    #[test]
    fn a_new_item_lists_the_model_order_then_status_then_the_rest() {
        let model = model();
        let blank = ModelForm::blank(&model).unwrap();
        assert_eq!(blank.status, "draft");
        let fields = posted(&[
            ("fm.featured", "false"),
            ("fm.price", "1.25"),
            ("fm.title", "New"),
            ("status", "draft"),
            ("extra", "zz: 1\n"),
        ]);
        let form = ModelForm::from_fields(&model, &fields);
        let fm = form.new_frontmatter(&model).unwrap();
        assert_eq!(fm.keys().collect::<Vec<_>>(), ["title", "price", "featured", "status", "zz"]);
        assert_eq!(fm["price"], json!(1.25));
        assert_eq!(humanise("event_day"), "Event day");
    }
}
