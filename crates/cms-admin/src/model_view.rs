//! The model form as the edit page draws it: a flat list of rows (a fieldset's opening
//! and closing are rows too, so the template needs no recursion), each input with its
//! label, hint and error (`aria-invalid`, `aria-describedby`), the `datalist`s that offer
//! the items a reference may name (the files of the resource folders are the page's
//! media library, `media_library.rs`), and the summary of the errors at the top of the
//! page.

use std::collections::BTreeMap;

use cms_core::model::{Field, FieldError, Kind, Model};
use cms_core::policy::Principal;
use cms_core::query::{Direction, ListQuery, OrderBy, StatusFilter};
use cms_core::service::Viewer;

use crate::AdminState;
use crate::media_library::{Datalist, FILES_LIST, IMAGES_LIST, MediaLibrary, Suggestion};
use crate::model_form::{ModelForm, date_input_can_show, has_input, humanise, yaml_box_keys};

/// One option of a select or a checkbox group.
pub struct Choice {
    pub value: String,
    pub label: String,
    pub selected: bool,
    pub id: String,
}

/// One input (or a fieldset's opening or closing) of the form.
pub struct Row {
    /// `input`, `textarea`, `checkbox`, `select`, `checkboxes`, or `open` and `close` (a
    /// fieldset around an object's fields).
    pub control: &'static str,
    pub name: String,
    pub id: String,
    pub label: String,
    pub hint: Option<String>,
    pub error: Option<String>,
    /// Of an `input`: `text`, `number`, `url`, `email`, `date`.
    pub input_type: &'static str,
    pub value: String,
    pub checked: bool,
    pub choices: Vec<Choice>,
    pub required: bool,
    /// More attributes: `maxlength`, `min`, `max`, `step`, `list`, `placeholder`, `rows`.
    pub attrs: Vec<(&'static str, String)>,
    pub wide: bool,
}

impl Row {
    /// The ids of the hint and the error, for `aria-describedby`.
    pub fn described_by(&self) -> String {
        let mut ids = Vec::new();
        if self.hint.is_some() {
            ids.push(format!("{}-hint", self.id));
        }
        if self.error.is_some() {
            ids.push(format!("{}-error", self.id));
        }
        ids.join(" ")
    }

    /// The element a link to this row focuses (a checkbox group's first box).
    fn anchor(&self) -> String {
        match self.choices.first() {
            Some(first) if self.control == "checkboxes" => first.id.clone(),
            _ => self.id.clone(),
        }
    }
}

/// What the inputs offer to choose from, read once per page.
#[derive(Default)]
pub struct Lookups {
    /// The items of each referred-to collection: slug and title.
    references: BTreeMap<String, Vec<(String, String)>>,
    /// The resource folders could be listed: image and file inputs get the media picker
    /// over the page's lists of the library (`media_library.rs`).
    media_listed: bool,
}

/// Items a reference's list offers (the first by title, one page of the facade's list):
/// with the script, what is typed is searched for among all of them (`pages/suggest.rs`);
/// without, the slug is typed.
const REFERENCE_LIMIT: usize = 100;

fn kinds<'a>(fields: &'a [Field], out: &mut Vec<&'a Kind>) {
    for field in fields {
        out.push(&field.kind);
        match &field.kind {
            Kind::Object(inner) => kinds(inner, out),
            Kind::List { of, .. } => kinds(std::slice::from_ref(of), out),
            _ => {}
        }
    }
}

impl Lookups {
    /// Reads what `model`'s inputs offer: the items of the collections its references
    /// name; image and file fields pick from `media` (the page's library). What cannot be
    /// read offers nothing: the input still takes text.
    pub async fn load(
        state: &AdminState,
        principal: &Principal,
        model: &Model,
        media: &MediaLibrary,
    ) -> Self {
        let mut found = Vec::new();
        kinds(&model.fields, &mut found);
        let mut lookups = Self { media_listed: media.listed, ..Self::default() };
        // Drafts too: a reference may name an item before it is published.
        let first_by_title = ListQuery {
            status: StatusFilter::All,
            order_by: OrderBy::Title,
            direction: Direction::Asc,
            per_page: Some(REFERENCE_LIMIT),
            ..ListQuery::default()
        };
        let viewer = Viewer::Key(principal.clone());
        for kind in &found {
            if let Kind::Reference { collection } = kind
                && !lookups.references.contains_key(collection)
            {
                let mut items = Vec::new();
                if let Ok(target) = state.cms.collection(collection)
                    && let Ok(page) = state.cms.list_items(target, &first_by_title, &viewer).await
                {
                    items = page
                        .items
                        .iter()
                        .map(|i| (i.item.meta.slug.to_string(), i.item.meta.title.to_string()))
                        .collect();
                }
                lookups.references.insert(collection.clone(), items);
            }
        }
        lookups
    }

    fn datalists(&self) -> Vec<Datalist> {
        self.references
            .iter()
            .map(|(collection, items)| Datalist {
                id: format!("dl-ref-{}", collection),
                options: items
                    .iter()
                    .map(|(value, label)| Suggestion::labelled(value.clone(), label.clone()))
                    .collect(),
            })
            .collect()
    }
}

/// The inputs of a model form, ready to draw.
pub struct ModelView {
    pub rows: Vec<Row>,
    pub datalists: Vec<Datalist>,
    /// The model names `status`: its field stands for the status select.
    pub own_status: bool,
}

/// One error in the summary: a link to its input.
pub struct SummaryItem {
    pub href: String,
    pub label: String,
    pub message: String,
}

/// The errors of the form at the top of the page.
pub struct Summary {
    pub heading: String,
    pub items: Vec<SummaryItem>,
    /// Moved to when the page loads (after a refused save, not for a stored item's notice).
    pub focus: bool,
}

/// An id made of a field's path: `fm.seo.title` → `f-seo-title`.
fn id_of(name: &str) -> String {
    let path = name.strip_prefix("fm.").unwrap_or(name);
    let safe: String =
        path.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '-' }).collect();
    format!("f-{safe}")
}

/// The input an error's path belongs to: `fm.links[1]` → `fm.links`.
fn input_of(path: &str) -> &str {
    path.split('[').next().unwrap_or(path)
}

/// An error's message as its input shows it: an element of a list (one per line) says
/// which line (`fm.links[1]` → "line 2: ...").
fn message_of(error: &FieldError) -> String {
    let line =
        error.field.split_once('[').and_then(|(_, rest)| rest.split(']').next()?.parse::<usize>().ok());
    match line {
        Some(index) => format!("line {}: {}", index + 1, error.message),
        None => error.message.clone(),
    }
}

impl ModelView {
    /// Rows for `form`'s inputs, with `errors` at their fields.
    pub fn new(model: &Model, form: &ModelForm, lookups: &Lookups, errors: &[FieldError]) -> Self {
        let mut messages: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for error in errors {
            messages.entry(input_of(&error.field)).or_default().push(message_of(error));
        }
        let mut rows = Vec::new();
        let boxed_keys = yaml_box_keys(form);
        for field in model.fields.iter().filter(|f| has_input(f)) {
            let name = format!("fm.{}", field.name);
            let boxed = boxed_keys.contains(&field.name);
            add_rows(field, &name, form, lookups, &messages, boxed, &mut rows);
        }
        Self {
            rows,
            datalists: lookups.datalists(),
            own_status: model.field("status").is_some_and(has_input),
        }
    }

    /// The summary of `errors`, each linking to its input (or to the YAML box for a key
    /// without one).
    pub fn summary(&self, errors: &[FieldError], heading: String, focus: bool) -> Option<Summary> {
        if errors.is_empty() {
            return None;
        }
        let items = errors
            .iter()
            .map(|error| {
                let input = input_of(&error.field);
                // An input, else an object's group (an error about the object itself).
                let row = (self.rows.iter().find(|r| r.name == input && r.control != "open"))
                    .or_else(|| self.rows.iter().find(|r| r.name == input));
                let path = error.field.strip_prefix("fm.").unwrap_or(&error.field);
                SummaryItem {
                    href: format!("#{}", row.map_or_else(|| "extra".to_owned(), Row::anchor)),
                    label: row.map_or_else(|| path.to_owned(), |r| r.label.clone()),
                    message: message_of(error),
                }
            })
            .collect();
        Some(Summary { heading, items, focus })
    }
}

fn add_rows(
    field: &Field,
    name: &str,
    form: &ModelForm,
    lookups: &Lookups,
    messages: &BTreeMap<&str, Vec<String>>,
    boxed: bool,
    rows: &mut Vec<Row>,
) {
    let id = id_of(name);
    let label = humanise(&field.name);
    let mut hints: Vec<String> = field.description.iter().cloned().collect();
    if boxed && name.matches('.').count() == 1 {
        hints.push("Its value is in Other fields below: this input cannot show it.".into());
    }
    let error = messages.get(name).map(|m| format!("{label} {}.", m.join("; ")));
    let values = form.values(name);
    let value = values.last().cloned().unwrap_or_default();
    let mut row = Row {
        control: "input",
        name: name.to_owned(),
        id: id.clone(),
        label: label.clone(),
        hint: None,
        error,
        input_type: "text",
        value: value.clone(),
        checked: false,
        choices: Vec::new(),
        // An input whose value is in the YAML box must not stop the form being sent.
        required: field.required && !boxed,
        attrs: Vec::new(),
        wide: false,
    };
    match &field.kind {
        Kind::String(rules) => {
            if let Some(max) = rules.max_length {
                row.attrs.push(("maxlength", max.to_string()));
            }
            row.wide = field.name == "title";
        }
        Kind::Text(rules) => {
            row.control = "textarea";
            row.wide = true;
            row.attrs.push(("rows", "4".into()));
            if let Some(max) = rules.max_length {
                row.attrs.push(("maxlength", max.to_string()));
            }
        }
        Kind::Number(bounds) | Kind::Integer(bounds) => {
            // Only what a number input shows as it is: it empties `inf`, `+5` or `5.`, and
            // an emptied input would remove the value on the next save.
            if value.is_empty() || is_html_number(&value) {
                row.input_type = "number";
                for (attr, bound) in [("min", bounds.min), ("max", bounds.max)] {
                    if let Some(bound) = bound {
                        row.attrs.push((attr, bound.to_string()));
                    }
                }
                let step = if matches!(field.kind, Kind::Integer(_)) { "1" } else { "any" };
                row.attrs.push(("step", step.into()));
            } else {
                hints.push("A number (what is written is not one).".into());
            }
        }
        Kind::Boolean => {
            row.control = "checkbox";
            row.required = false;
            row.checked = value == "true";
        }
        Kind::Select(options) => {
            row.control = "select";
            row.choices = choices(&id, options, values);
        }
        Kind::Multiselect { options, .. } => {
            row.control = "checkboxes";
            row.required = false;
            row.wide = true;
            row.choices = choices(&id, options, values);
        }
        Kind::Tags(_) => hints.push("Separated by commas.".into()),
        Kind::Datetime => {
            // A text input: `datetime-local` would drop the offset.
            row.attrs.push(("placeholder", "2026-01-12T09:30:00+01:00".into()));
            hints.push("A date and time with its offset, e.g. 2026-01-12T09:30:00+01:00 (2026-01-12 09:30 means the site's time zone).".into());
        }
        Kind::Date => {
            if date_input_can_show(&value) {
                row.input_type = "date";
            } else {
                hints.push("A date like 2026-01-12.".into());
            }
        }
        Kind::Image | Kind::File => {
            let image = matches!(field.kind, Kind::Image);
            if lookups.media_listed {
                row.attrs.push(("list", if image { IMAGES_LIST } else { FILES_LIST }.into()));
                // The script adds a picker (with thumbnails for images) from the list.
                row.attrs.push(("data-media", if image { "image" } else { "file" }.into()));
            }
            row.attrs.push(("placeholder", "/media/uploads/cover.jpg".into()));
            hints.push(format!(
                "The path of {} in a resource folder (see Media): pick one from the list or type it.",
                if image { "an image" } else { "a file" }
            ));
        }
        Kind::Reference { collection } => {
            row.attrs.push(("list", format!("dl-ref-{collection}")));
            // The script searches the whole collection as the slug is typed.
            row.attrs.push(("data-suggest", format!("/admin/collections/{collection}/suggest")));
            hints.push(format!("The slug of an item of {collection}: pick one from the list or type it."));
        }
        Kind::Url => {
            row.input_type = "url";
            row.attrs.push(("placeholder", "https://".into()));
        }
        Kind::Email => row.input_type = "email",
        Kind::List { of, .. } => {
            row.control = "textarea";
            row.wide = true;
            row.attrs.push(("rows", "3".into()));
            hints.push(format!("One {} per line.", of.kind.field_type()));
        }
        Kind::Object(fields) => {
            let hint = (!hints.is_empty()).then(|| hints.join(" "));
            rows.push(Row { control: "open", wide: true, hint, ..row });
            for inner in fields.iter().filter(|f| has_input(f)) {
                // A field required inside an optional object is required only once the
                // object is given: the browser must not insist on it.
                let inner = Field { required: inner.required && field.required, ..inner.clone() };
                add_rows(&inner, &format!("{name}.{}", inner.name), form, lookups, messages, boxed, rows);
            }
            rows.push(Row {
                control: "close",
                name: String::new(),
                id: String::new(),
                label: String::new(),
                hint: None,
                error: None,
                input_type: "text",
                value: String::new(),
                checked: false,
                choices: Vec::new(),
                required: false,
                attrs: Vec::new(),
                wide: false,
            });
            return;
        }
    }
    if matches!(
        field.kind,
        Kind::String(_) | Kind::Reference { .. } | Kind::Image | Kind::File | Kind::Tags(_)
    ) {
        row.attrs.push(("autocomplete", "off".into()));
    }
    row.hint = (!hints.is_empty()).then(|| hints.join(" "));
    rows.push(row);
}

/// The options, and any chosen value that is not one (a hand-edited file), so that
/// nothing is lost: the check then names it at its field.
/// An HTML "valid floating-point number" (`-1.5`, `2e3`, `.5`): what `<input
/// type="number">` shows rather than empties.
fn is_html_number(text: &str) -> bool {
    let text = text.strip_prefix('-').unwrap_or(text);
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(at) => (&text[..at], Some(&text[at + 1..])),
        None => (text, None),
    };
    let digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some((whole, fraction)) => (whole.is_empty() || digits(whole)) && digits(fraction),
        None => digits(mantissa),
    };
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e)));
    mantissa_ok && exponent_ok
}

fn choices(id: &str, options: &[String], chosen: &[String]) -> Vec<Choice> {
    let mut all: Vec<String> = options.to_vec();
    all.extend(chosen.iter().filter(|c| !c.is_empty() && !options.contains(c)).cloned());
    all.into_iter()
        .enumerate()
        .map(|(i, value)| Choice {
            selected: chosen.contains(&value),
            label: if options.contains(&value) { value.clone() } else { format!("{value} (not an option)") },
            id: format!("{id}-{i}"),
            value,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{is_html_number, message_of};
    use cms_core::model::FieldError;

    #[test]
    fn an_element_of_a_list_is_named_by_its_line() {
        let error = |field: &str| FieldError { field: field.into(), message: "must be a URL".into() };
        assert_eq!(message_of(&error("fm.links[1]")), "line 2: must be a URL");
        assert_eq!(message_of(&error("fm.links")), "must be a URL");
        assert_eq!(message_of(&error("fm.seo.title")), "must be a URL");
    }

    #[test]
    fn number_inputs_take_only_what_they_can_show() {
        for good in ["0", "-1.5", "2e3", "1E-2", ".5", "12.25"] {
            assert!(is_html_number(good), "{good}");
        }
        for bad in ["inf", "NaN", "+5", "5.", "1e", "", "-", "1,5", " 1"] {
            assert!(!is_html_number(bad), "{bad}");
        }
    }
}
