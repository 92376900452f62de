//! A fast path for the frontmatter most files have: one `key: value` per line, each value
//! a plain word or phrase, a quoted string without escapes, an integer, an unquoted date
//! (`2016-01-01 07:00:00 +0900`), or a flow list of those (`tags: [rust, web]`).
//!
//! serde-saphyr stays the parser of record. This path answers only documents it reads
//! completely and leaves everything else to saphyr (`None`): blank lines, comments,
//! indentation, escapes, floats, times alone, `yes`/`null`-like words, anchors, tabs,
//! carriage returns, duplicate keys. A test holds its answers equal to saphyr's on every form it
//! takes. It exists because saphyr takes about 15 µs for seven such lines, and a first
//! start reads 100,000 of them; this path takes about one.

use serde_json::{Map, Value};

/// Longer documents go to saphyr, which also enforces the node budget: at this size a
/// flat document holds at most a few thousand nodes, far below any [`super::YamlLimits`].
pub(super) const MAX_BYTES: usize = 4096;

/// The mapping `text` holds, when it is a flat document this path reads completely.
pub(super) fn parse(text: &str) -> Option<Map<String, Value>> {
    if text.len() > MAX_BYTES {
        return None;
    }
    let lines = text.strip_suffix('\n').unwrap_or(text);
    let mut map = Map::new();
    for line in lines.split('\n') {
        let (key, value) = line.split_once(':')?;
        let value = value.strip_prefix(' ')?.trim_start_matches(' ');
        if !is_key(key) || map.contains_key(key) {
            return None;
        }
        map.insert(key.to_owned(), parse_value(value)?);
    }
    Some(map)
}

fn is_key(key: &str) -> bool {
    let mut bytes = key.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        && !is_special_word(key)
}

fn parse_value(value: &str) -> Option<Value> {
    if let Some(list) = value.strip_prefix('[') {
        let inner = list.strip_suffix(']')?.trim_matches(' ');
        if inner.is_empty() {
            return Some(Value::Array(Vec::new()));
        }
        let entries = inner.split(',').map(|entry| parse_scalar(entry.trim_matches(' '), false));
        return entries.collect::<Option<Vec<_>>>().map(Value::Array);
    }
    parse_scalar(value, true)
}

/// A scalar: quoted, an integer, or plain words. `block` says whether it stands alone
/// (a comma is then part of plain words) or in a flow list (it is not: the list was split
/// on them).
fn parse_scalar(scalar: &str, block: bool) -> Option<Value> {
    let quoted = |quote: char| {
        let inner = scalar.strip_prefix(quote)?.strip_suffix(quote)?;
        (scalar.len() >= 2 && !inner.contains(['"', '\'', '\\']) && inner.chars().all(is_printable))
            .then(|| Value::String(inner.to_owned()))
    };
    match scalar.bytes().next()? {
        b'"' => quoted('"'),
        b'\'' => quoted('\''),
        b'-' | b'0'..=b'9' => match integer(scalar) {
            Some(number) => Some(Value::from(number)),
            None => (block && is_date(scalar)).then(|| Value::String(scalar.to_owned())),
        },
        first if first.is_ascii_alphabetic() => {
            let plain = scalar.chars().all(|c| is_plain_char(c) || (block && c == ','));
            (plain && !scalar.ends_with(' ') && !is_special_word(scalar))
                .then(|| Value::String(scalar.to_owned()))
        }
        _ => None,
    }
}

/// `0`, or up to 18 digits not starting with 0, with an optional `-`: always an `i64`.
fn integer(scalar: &str) -> Option<i64> {
    let digits = scalar.strip_prefix('-').unwrap_or(scalar);
    let canonical = digits == "0" && digits.len() == scalar.len()
        || (!digits.starts_with('0') && (1..=18).contains(&digits.len()));
    (canonical && digits.bytes().all(|b| b.is_ascii_digit())).then(|| scalar.parse().ok())?
}

/// A date as Jekyll and Hugo sites write it, unquoted: `2016-01-01`, optionally with a
/// time and an offset (`2016-01-01 07:00:00 +0900`, `2016-01-01T07:00:00.5Z`). Text to
/// JSON, as to saphyr; the site's zone reads it later.
fn is_date(scalar: &str) -> bool {
    let bytes = scalar.as_bytes();
    let digits =
        |range: std::ops::Range<usize>| bytes.get(range).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    let dash = |at: usize| bytes.get(at) == Some(&b'-');
    let day = digits(0..4) && dash(4) && digits(5..7) && dash(7) && digits(8..10);
    day && bytes[10..].iter().all(|b| b.is_ascii_digit() || b" :.+-TZ".contains(b))
        && !scalar.contains(": ")
        && !scalar.ends_with([' ', ':'])
}

/// Characters of plain words that mean nothing to YAML past a scalar's first character.
fn is_plain_char(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_alphanumeric() || " _-.'!?()/&+".contains(c)
    } else {
        c.is_alphanumeric() && is_printable(c)
    }
}

/// What YAML allows in a scalar without escaping, less tabs and the byte order mark.
fn is_printable(c: char) -> bool {
    matches!(c, ' '..='~' | '\u{A0}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
        && c != '\u{FEFF}'
}

/// Words that some YAML schema reads as something other than text (booleans, null,
/// infinities): left to saphyr, whatever it makes of them.
fn is_special_word(word: &str) -> bool {
    const WORDS: [&str; 12] =
        ["null", "true", "false", "yes", "no", "on", "off", "y", "n", "inf", "infinity", "nan"];
    word.len() <= 8 && WORDS.iter().any(|special| word.eq_ignore_ascii_case(special))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{YamlLimits, from_yaml};

    /// Values of every form this path reads, and of forms next to them that it must leave
    /// to saphyr.
    const VALUES: &[&str] = &[
        "Hello",
        "Hello world",
        "Hello  world",
        "Café crème",
        "Don't stop",
        "Tom & Jerry",
        "What? Yes!",
        "a - b",
        "a, b",
        "(x) y/z + w",
        "v1.2.3",
        "x_y-z",
        "e",
        "E5",
        "x1e5",
        "null",
        "Null",
        "NULL",
        "true",
        "True",
        "FALSE",
        "yes",
        "Yes",
        "no",
        "NO",
        "on",
        "Off",
        "y",
        "Y",
        "n",
        "inf",
        "Inf",
        "infinity",
        "nan",
        "NaN",
        "nano",
        "infinite",
        "yesterday",
        "nullable",
        "0",
        "-0",
        "1",
        "-5",
        "007",
        "10",
        "123456789012345678",
        "-123456789012345678",
        "1234567890123456789",
        "99999999999999999999",
        "1.5",
        "1e3",
        "0x1F",
        "0o17",
        "+1",
        "1_000",
        "1:2",
        "2016-01-01",
        "2016-01-01 07:00:00 +0900",
        "2016-01-01 07:00:00 -0130",
        "2016-01-01T07:00:00Z",
        "2016-01-01T07:00:00.25+09:00",
        "2016-01-01 07:00",
        "2016-01-01 07:00:00",
        "2016-01-01t07:00:00z",
        "2016-01-01 07: 00",
        "2016-01-01 07:",
        "2016-01-01 ",
        "2016-1-1",
        "2016-01-1",
        "16-01-01",
        "2016-01-01x",
        "2016-01-01 #x",
        "2016-01-01T",
        "2016-01-01Z",
        "2016-01-01--",
        "20160101",
        "12:30",
        "0123",
        "2016",
        "2016-",
        "2016-01-0",
        "[2016-01-01]",
        "\"quoted\"",
        "\"\"",
        "\"  spaced  \"",
        "\"a: b\"",
        "\"yes\"",
        "\"1\"",
        "\"a # b\"",
        "\"日本語\"",
        "\"a\\nb\"",
        "\"a'b\"",
        "'single'",
        "''",
        "'it''s'",
        "'a \"b\"'",
        "\"unclosed",
        "'unclosed",
        "\"a\" b",
        "\"\u{85}\"",
        "\"a\u{FEFF}b\"",
        "\"a\u{7F}b\"",
        "\"\u{A0}\"",
        "\"\u{1F600}\"",
        "[]",
        "[ ]",
        "[a]",
        "[a, b]",
        "[a,b]",
        "[ a , b ]",
        "[rust, web dev]",
        "[1, -2, x]",
        "[yes]",
        "[\"a, b\", c]",
        "['a', \"b\"]",
        "[a, ]",
        "[, a]",
        "[[a]]",
        "[a]]",
        "[a] x",
        "[{a: b}]",
        "[a: b]",
        "[a #b]",
        "[null, 1]",
        "[0x1]",
        "[Café]",
        "?x",
        "!x",
        "!!str x",
        "&x",
        "*x",
        "-x",
        "- x",
        "%x",
        "@x",
        "`x",
        "|",
        ">",
        "#x",
        "x #y",
        "x# y",
        "{a: b}",
        "x\u{85}y",
        "x\u{2028}y",
        "Été",
        "e\u{301}",
        "日本",
        "trailing ",
        "a\tb",
        "",
    ];

    const KEYS: &[&str] = &["title", "_x", "a-b", "a1", "yes", "null", "y", "1", "-a", "a b", "a.b", "é"];

    fn saphyr(text: &str) -> Option<Map<String, Value>> {
        match from_yaml::<Value>(text, YamlLimits::FRONTMATTER) {
            Ok(Value::Object(map)) => Some(map),
            _ => None,
        }
    }

    fn check(text: &str) -> bool {
        let Some(fast) = parse(text) else { return false };
        assert_eq!(Some(&fast), saphyr(text).as_ref(), "{text:?}");
        true
    }

    #[test]
    fn every_answer_is_saphyrs() {
        let mut read = 0;
        for value in VALUES {
            for key in KEYS {
                read += usize::from(check(&format!("{key}: {value}\n")));
            }
            read += usize::from(check(&format!("a: x\nkey: {value}\nk_3: [a]")));
            read += usize::from(check(&format!("key:  {value}\n")));
        }
        // Most forms above are read here; the rest went to saphyr.
        assert!(read > 150, "{read}");
    }

    #[test]
    fn typical_frontmatter_is_read_here() {
        let bench = "title: Async slug review layout\ndate: \"2016-01-01 07:00:00 +0900\"\nstatus: published\n\
                     tags: [tutorial]\nauthor: ken\nrating: 1\n";
        assert!(check(bench));
        assert!(check("title: A Jekyll post\ndate: 2016-01-01 07:00:00 +0900\nupdated: 2016-01-02\n"));
        assert!(check("title: 'Hello, world'\ndraft: \"true\"\ntags: [a, b, c]\nweight: -3"));
    }

    #[test]
    fn what_is_not_flat_is_left_to_saphyr() {
        for text in [
            "a: 1\na: 2\n",
            "a: 1\n\nb: 2\n",
            "# comment\na: 1\n",
            "a: 1\r\nb: 2\r\n",
            "a:\n  - x\n",
            "a: b\n  c\n",
            "a: x\n---\nb: y\n",
            "a: 1 # note\n",
            "a: 1.5\n",
        ] {
            assert_eq!(parse(text), None, "{text:?}");
        }
        assert_eq!(parse(&format!("a: {}\n", "x".repeat(MAX_BYTES))), None);
    }
}
