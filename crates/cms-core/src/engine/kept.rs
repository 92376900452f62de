//! What the index keeps of an item's modelled fields, so that filters, orders and
//! `fields=` need not read the file: per field, whether it is set, its value as compared
//! and, when that does not give it back, the value as the file wrote it.
//!
//! The fields of one item are packed into one byte buffer, and a text that the item's meta
//! already holds (its title, author, date as written, tags) is kept as a reference to it.
//! A struct per field (64 bytes, and a heap string per text) cost about 750 bytes an item
//! with the bench's five fields, 75 MB at 100,000 items; packed, the same fields take a
//! few dozen bytes.
//!
//! Layout, per field in the model's order: a head byte (the value's kind in bits 0-2,
//! "set" in bit 3, how it was written in bits 4-5), the value's payload (a number as 8
//! bytes, an instant as 16, a text, or elements: a count then texts, count 0 meaning the
//! meta's tags), then the written form's text when it has one. A text is a LEB128 number
//! `n`: `n & 3` is 0 for `n >> 2` bytes that follow, else it names the meta's title (1),
//! author (2) or date (3).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use std::cmp::Ordering;

use crate::item::ItemMeta;
use crate::model::{Comparable, Field, FieldFilter, FilterOp, Model, Scalar, is_scalar, scalar_of};

/// The texts an item's meta already keeps, which packed fields refer to rather than copy.
#[derive(Debug, Clone, Copy, Default)]
pub struct Shared<'a> {
    pub title: &'a str,
    pub author: Option<&'a str>,
    pub date: Option<&'a str>,
    pub tags: &'a [Arc<str>],
}

impl<'a> Shared<'a> {
    pub fn of(meta: &'a ItemMeta) -> Self {
        Self {
            title: &meta.title,
            author: meta.author.as_deref(),
            date: meta.date.as_deref(),
            tags: &meta.tags,
        }
    }

    /// Nothing shared: every text is kept inline.
    pub const NONE: Shared<'static> = Shared { title: "", author: None, date: None, tags: &[] };
}

/// An item's modelled fields, packed (see the module's documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptFields(Box<[u8]>);

/// One kept field, read from [`KeptFields`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeptField<'a> {
    /// Present and not null, not empty (what `exists` asks).
    pub set: bool,
    pub value: KeptValue<'a>,
    written: Written<'a>,
}

/// A kept field's value as filters compare it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KeptValue<'a> {
    /// Absent, empty, or not of the field's type (a hand-edited file).
    None,
    Scalar(Scalar<'a>),
    /// The elements of a list-like field.
    Elements(Elements<'a>),
}

/// The elements of a list-like field: packed texts, or the meta's tags.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Elements<'a> {
    Packed { count: usize, bytes: &'a [u8] },
    Tags(&'a [Arc<str>]),
}

/// How the frontmatter wrote a kept value, as far as the value does not say it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Written<'a> {
    Absent,
    /// The JSON of the kept value (see [`KeptValue::to_json`]).
    AsKept,
    /// A JSON string (a date-time as written).
    Text(&'a str),
    /// Another JSON text (`4.0`, tags as one string...).
    Json(&'a str),
}

// The head byte's value kinds.
const NONE: u8 = 0;
const NUMBER: u8 = 1;
const FALSE: u8 = 2;
const TRUE: u8 = 3;
const INSTANT: u8 = 4;
const TEXT: u8 = 5;
const ELEMENTS: u8 = 6;
const KIND_BITS: u8 = 0b111;
const SET_BIT: u8 = 0b1000;
// The head byte's written forms (bits 4-5).
const ABSENT: u8 = 0;
const AS_KEPT: u8 = 1;
const WRITTEN_TEXT: u8 = 2;
const WRITTEN_JSON: u8 = 3;
const WRITTEN_SHIFT: u8 = 4;

// A text's reference to the meta (its LEB128 number's low two bits).
const INLINE: u64 = 0;
const TITLE: u64 = 1;
const AUTHOR: u64 = 2;
const DATE: u64 = 3;

impl KeptFields {
    /// What the index keeps of `fm` for these fields (a model's, in its order), with the
    /// texts `shared` holds referred to.
    pub fn keep(fields: &[Field], fm: &Map<String, Value>, shared: Shared<'_>) -> Self {
        let mut bytes = Vec::new();
        for field in fields {
            keep_field(&mut bytes, field, fm.get(&field.name), shared);
        }
        Self(bytes.into_boxed_slice())
    }

    /// The field at `at` (its place in the model); `shared` must be what it was kept with.
    pub fn get<'a>(&'a self, at: usize, shared: Shared<'a>) -> Option<KeptField<'a>> {
        let mut reader = Reader { bytes: &self.0, shared };
        for _ in 0..at {
            reader.field()?;
        }
        reader.field()
    }

    /// Every field, in the model's order.
    pub fn all<'a>(&'a self, shared: Shared<'a>) -> impl Iterator<Item = KeptField<'a>> {
        let mut reader = Reader { bytes: &self.0, shared };
        std::iter::from_fn(move || reader.field())
    }

    /// The packed bytes' length.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

fn keep_field(bytes: &mut Vec<u8>, field: &Field, value: Option<&Value>, shared: Shared<'_>) {
    let set = match value {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(_) => true,
    };
    let head_at = bytes.len();
    bytes.push(0);
    let kind = if is_scalar(field) {
        match value.and_then(|v| scalar_of(field, v)) {
            None => NONE,
            Some(Comparable::Number(n)) => {
                bytes.extend_from_slice(&n.to_le_bytes());
                NUMBER
            }
            Some(Comparable::Bool(b)) => {
                if b {
                    TRUE
                } else {
                    FALSE
                }
            }
            Some(Comparable::Instant(at)) => {
                bytes.extend_from_slice(&at.to_le_bytes());
                INSTANT
            }
            Some(Comparable::Text(text)) => {
                push_text(bytes, &text, shared);
                TEXT
            }
        }
    } else {
        let elements = elements(value);
        if elements.is_empty() {
            NONE
        } else if elements.iter().map(|e| &**e).eq(shared.tags.iter().map(|t| &**t)) {
            push_number(bytes, 0);
            ELEMENTS
        } else {
            push_number(bytes, elements.len() as u64);
            for element in &elements {
                push_text(bytes, element, Shared::NONE);
            }
            ELEMENTS
        }
    };
    let written = match value {
        None => ABSENT,
        Some(value) => {
            let kept = Reader { bytes: &bytes[head_at + 1..], shared }.value(kind).expect("just written");
            if kind != INSTANT && *value == kept.to_json() {
                AS_KEPT
            } else if let Value::String(text) = value {
                push_text(bytes, text, shared);
                WRITTEN_TEXT
            } else {
                push_text(bytes, &value.to_string(), Shared::NONE);
                WRITTEN_JSON
            }
        }
    };
    bytes[head_at] = kind | if set { SET_BIT } else { 0 } | written << WRITTEN_SHIFT;
}

/// The elements of a list-like field (tags also as a comma-separated string).
fn elements(value: Option<&Value>) -> Vec<std::borrow::Cow<'_, str>> {
    match value {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|v| match v {
                Value::String(s) => Some(s.as_str().into()),
                Value::Number(_) | Value::Bool(_) => Some(v.to_string().into()),
                _ => None,
            })
            .collect(),
        Some(Value::String(s)) => {
            s.split(',').map(str::trim).filter(|t| !t.is_empty()).map(Into::into).collect()
        }
        _ => Vec::new(),
    }
}

fn push_text(bytes: &mut Vec<u8>, text: &str, shared: Shared<'_>) {
    let reference = if text == shared.title && !text.is_empty() {
        TITLE
    } else if shared.author == Some(text) {
        AUTHOR
    } else if shared.date == Some(text) {
        DATE
    } else {
        push_number(bytes, (text.len() as u64) << 2 | INLINE);
        bytes.extend_from_slice(text.as_bytes());
        return;
    };
    push_number(bytes, reference);
}

/// LEB128.
fn push_number(bytes: &mut Vec<u8>, mut n: u64) {
    loop {
        let low = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            bytes.push(low);
            return;
        }
        bytes.push(low | 0x80);
    }
}

/// Reads packed fields one after the other.
struct Reader<'a> {
    bytes: &'a [u8],
    shared: Shared<'a>,
}

impl<'a> Reader<'a> {
    fn field(&mut self) -> Option<KeptField<'a>> {
        let (&head, rest) = self.bytes.split_first()?;
        self.bytes = rest;
        let value = self.value(head & KIND_BITS)?;
        let written = match head >> WRITTEN_SHIFT {
            ABSENT => Written::Absent,
            AS_KEPT => Written::AsKept,
            WRITTEN_TEXT => Written::Text(self.text()?),
            _ => Written::Json(self.text()?),
        };
        Some(KeptField { set: head & SET_BIT != 0, value, written })
    }

    fn value(&mut self, kind: u8) -> Option<KeptValue<'a>> {
        Some(match kind {
            NONE => KeptValue::None,
            NUMBER => KeptValue::Scalar(Scalar::Number(f64::from_le_bytes(self.take()?))),
            FALSE => KeptValue::Scalar(Scalar::Bool(false)),
            TRUE => KeptValue::Scalar(Scalar::Bool(true)),
            INSTANT => KeptValue::Scalar(Scalar::Instant(i128::from_le_bytes(self.take()?))),
            TEXT => KeptValue::Scalar(Scalar::Text(self.text()?)),
            ELEMENTS => match self.number()? {
                0 => KeptValue::Elements(Elements::Tags(self.shared.tags)),
                count => {
                    let start = self.bytes;
                    for _ in 0..count {
                        self.text()?;
                    }
                    let used = start.len() - self.bytes.len();
                    KeptValue::Elements(Elements::Packed { count: count as usize, bytes: &start[..used] })
                }
            },
            _ => return None,
        })
    }

    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (taken, rest) = self.bytes.split_first_chunk::<N>()?;
        self.bytes = rest;
        Some(*taken)
    }

    fn number(&mut self) -> Option<u64> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = self.bytes.split_first()?;
            self.bytes = rest;
            n |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(n);
            }
        }
        None
    }

    fn text(&mut self) -> Option<&'a str> {
        let n = self.number()?;
        match n & 3 {
            INLINE => {
                let len = usize::try_from(n >> 2).ok()?;
                if len > self.bytes.len() {
                    return None;
                }
                let (text, rest) = self.bytes.split_at(len);
                self.bytes = rest;
                std::str::from_utf8(text).ok()
            }
            TITLE => Some(self.shared.title),
            AUTHOR => self.shared.author,
            _ => self.shared.date,
        }
    }
}

impl<'a> Elements<'a> {
    pub fn iter(self) -> impl Iterator<Item = &'a str> {
        let (packed, tags) = match self {
            Self::Packed { count, bytes } => {
                let mut reader = Reader { bytes, shared: Shared::NONE };
                (Some((0..count).map_while(move |_| reader.text())), None)
            }
            Self::Tags(tags) => (None, Some(tags.iter().map(|t| &**t))),
        };
        packed.into_iter().flatten().chain(tags.into_iter().flatten())
    }
}

impl KeptField<'_> {
    /// The frontmatter's value; `None` when the field is absent.
    pub fn json(&self) -> Option<Value> {
        match self.written {
            Written::Absent => None,
            Written::AsKept => Some(self.value.to_json()),
            Written::Text(text) => Some(Value::String(text.to_owned())),
            Written::Json(text) => Some(serde_json::from_str(text).unwrap_or(Value::Null)),
        }
    }

    /// The value as written when the file wrote a string, whatever the value compares as
    /// (a date-time's own text, not its instant).
    pub fn written_text(&self) -> Option<&str> {
        match (self.written, self.value) {
            (Written::Text(text), _) => Some(text),
            (Written::AsKept, KeptValue::Scalar(Scalar::Text(text))) => Some(text),
            _ => None,
        }
    }
}

impl KeptValue<'_> {
    /// The JSON a value of this kind is written as most of the time.
    fn to_json(self) -> Value {
        match self {
            Self::None => Value::Null,
            Self::Scalar(Scalar::Number(n)) if n.fract() == 0.0 && n.abs() < 9.0e15 => Value::from(n as i64),
            Self::Scalar(Scalar::Number(n)) => Value::from(n),
            Self::Scalar(Scalar::Bool(b)) => Value::Bool(b),
            Self::Scalar(Scalar::Text(text)) => Value::String(text.to_owned()),
            Self::Scalar(Scalar::Instant(_)) => Value::Null,
            Self::Elements(elements) => elements.iter().map(|e| Value::String(e.to_owned())).collect(),
        }
    }
}

// Kept in the index's snapshot as one byte string (not a sequence of numbers).
impl Serialize for KeptFields {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for KeptFields {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = KeptFields;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an item's packed fields")
            }
            fn visit_bytes<E: serde::de::Error>(self, bytes: &[u8]) -> Result<KeptFields, E> {
                Ok(KeptFields(bytes.into()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<KeptFields, A::Error> {
                let mut bytes = Vec::new();
                while let Some(byte) = seq.next_element()? {
                    bytes.push(byte);
                }
                Ok(KeptFields(bytes.into()))
            }
        }
        deserializer.deserialize_bytes(Visitor)
    }
}

impl Model {
    /// What the index keeps of `fm`, with the texts `shared` holds referred to.
    pub fn keep(&self, fm: &Map<String, Value>, shared: Shared<'_>) -> KeptFields {
        KeptFields::keep(&self.fields, fm, shared)
    }
}

impl FieldFilter {
    /// Whether `fm` meets the condition (`model` is the one the filter was parsed with).
    pub fn matches(&self, model: &Model, fm: &Map<String, Value>) -> bool {
        self.admits(model.keep(fm, Shared::NONE).get(self.at, Shared::NONE))
    }

    /// Whether an item whose kept field at the filter's place is `kept` meets the
    /// condition.
    pub fn admits(&self, kept: Option<KeptField<'_>>) -> bool {
        let Some(field) = kept else { return false };
        match &self.op {
            FilterOp::Contains(needle) => contains(field, needle),
            _ => self.admits_value(field.set, field.value).unwrap_or(false),
        }
    }

    /// Whether a field that is `set` (or not) with `value` meets the condition; `None`
    /// when that takes how the field was written too (`contains`).
    #[inline]
    pub fn admits_value(&self, set: bool, value: KeptValue<'_>) -> Option<bool> {
        Some(match &self.op {
            FilterOp::Exists(wanted) => set == *wanted,
            FilterOp::Contains(_) => return None,
            FilterOp::Eq(values) => equals_any(value, values),
            FilterOp::Ne(values) => !equals_any(value, values),
            FilterOp::Gt(bound) => ordered(value, bound, |o| o == Ordering::Greater),
            FilterOp::Gte(bound) => ordered(value, bound, |o| o != Ordering::Less),
            FilterOp::Lt(bound) => ordered(value, bound, |o| o == Ordering::Less),
            FilterOp::Lte(bound) => ordered(value, bound, |o| o != Ordering::Greater),
        })
    }
}

/// Ascending order of two kept values of one field: values of the field's type in their
/// order, then the ones without such a value.
pub fn compare_kept(a: KeptValue<'_>, b: KeptValue<'_>) -> Ordering {
    match (a, b) {
        (KeptValue::Scalar(a), KeptValue::Scalar(b)) => a.compare(b).unwrap_or(Ordering::Equal),
        (KeptValue::Scalar(_), _) => Ordering::Less,
        (_, KeptValue::Scalar(_)) => Ordering::Greater,
        _ => Ordering::Equal,
    }
}

#[inline]
fn equals_any(value: KeptValue<'_>, values: &[Comparable]) -> bool {
    match value {
        KeptValue::Scalar(v) => values.iter().any(|w| v.compare(w.scalar()) == Some(Ordering::Equal)),
        KeptValue::Elements(have) => {
            values.iter().any(|w| matches!(w, Comparable::Text(w) if have.iter().any(|h| h == w)))
        }
        KeptValue::None => false,
    }
}

#[inline]
fn ordered(value: KeptValue<'_>, bound: &Comparable, holds: impl Fn(Ordering) -> bool) -> bool {
    matches!(value, KeptValue::Scalar(v) if v.compare(bound.scalar()).is_some_and(holds))
}

fn contains(field: KeptField<'_>, needle: &str) -> bool {
    match field.value {
        KeptValue::Elements(have) => have.iter().any(|element| element == needle),
        // Text as written (a date-time's own text, not its instant).
        _ => field.written_text().is_some_and(|text| text.to_lowercase().contains(&needle.to_lowercase())),
    }
}

#[cfg(test)]
mod tests;
