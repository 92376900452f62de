//! Side-by-side line diffs (history pages and edit conflicts).

use similar::{DiffTag, TextDiff};

/// Unchanged lines kept around each change; longer unchanged runs fold into one row.
const CONTEXT: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    Same,
    /// Only on the left.
    Removed,
    /// Only on the right.
    Added,
    /// A line on each side that differs.
    Changed,
    /// Unchanged lines left out.
    Folded,
}

impl RowKind {
    /// The CSS class of the row.
    pub fn class(self) -> &'static str {
        match self {
            Self::Same => "same",
            Self::Removed => "removed",
            Self::Added => "added",
            Self::Changed => "changed",
            Self::Folded => "folded",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub kind: RowKind,
    /// 1-based line numbers.
    pub left_number: Option<usize>,
    pub left: String,
    pub right_number: Option<usize>,
    pub right: String,
}

impl Row {
    pub fn class(&self) -> &'static str {
        self.kind.class()
    }

    pub fn left_no(&self) -> String {
        self.left_number.map(|n| n.to_string()).unwrap_or_default()
    }

    pub fn right_no(&self) -> String {
        self.right_number.map(|n| n.to_string()).unwrap_or_default()
    }

    /// The marker before the left line (`−` when it is not on the right), so that colour
    /// is not the only cue (WCAG 1.4.1); [`Self::left_said`] is what a screen reader hears.
    pub fn left_mark(&self) -> &'static str {
        if matches!(self.kind, RowKind::Removed | RowKind::Changed) { "−" } else { "" }
    }

    pub fn left_said(&self) -> &'static str {
        if self.left_mark().is_empty() { "" } else { "removed: " }
    }

    /// The marker before the right line (`+` when it is not on the left).
    pub fn right_mark(&self) -> &'static str {
        if matches!(self.kind, RowKind::Added | RowKind::Changed) { "+" } else { "" }
    }

    pub fn right_said(&self) -> &'static str {
        if self.right_mark().is_empty() { "" } else { "added: " }
    }
}

/// The rows showing `left` against `right`, line by line.
pub fn side_by_side(left: &str, right: &str) -> Vec<Row> {
    let diff = TextDiff::from_lines(left, right);
    // The same lines as the diff's (it splits after each `\n`), without their endings.
    let lines = |text: &'_ str| -> Vec<String> {
        text.split_inclusive('\n').map(|l| l.trim_end_matches(['\n', '\r']).to_owned()).collect()
    };
    let (old, new) = (lines(left), lines(right));
    let ops = diff.ops();
    let mut rows = Vec::new();
    for (position, op) in ops.iter().enumerate() {
        let (tag, olds, news) = op.as_tag_tuple();
        match tag {
            DiffTag::Equal => {
                let lines: Vec<usize> = olds.clone().collect();
                let offset = news.start as isize - olds.start as isize;
                let first = position == 0;
                let last = position + 1 == ops.len();
                let keep_head = if first { 0 } else { CONTEXT };
                let keep_tail = if last { 0 } else { CONTEXT };
                let same = |i: usize| Row {
                    kind: RowKind::Same,
                    left_number: Some(i + 1),
                    left: old[i].clone(),
                    right_number: Some((i as isize + offset) as usize + 1),
                    right: old[i].clone(),
                };
                if lines.len() <= keep_head + keep_tail + 1 {
                    rows.extend(lines.iter().map(|&i| same(i)));
                } else {
                    rows.extend(lines[..keep_head].iter().map(|&i| same(i)));
                    let folded = lines.len() - keep_head - keep_tail;
                    rows.push(Row {
                        kind: RowKind::Folded,
                        left_number: None,
                        left: format!("{folded} unchanged lines"),
                        right_number: None,
                        right: String::new(),
                    });
                    rows.extend(lines[lines.len() - keep_tail..].iter().map(|&i| same(i)));
                }
            }
            DiffTag::Delete | DiffTag::Insert | DiffTag::Replace => {
                let (olds, news): (Vec<usize>, Vec<usize>) = (olds.collect(), news.collect());
                for k in 0..olds.len().max(news.len()) {
                    let (l, r) = (olds.get(k), news.get(k));
                    rows.push(Row {
                        kind: match (l, r) {
                            (Some(_), Some(_)) => RowKind::Changed,
                            (Some(_), None) => RowKind::Removed,
                            _ => RowKind::Added,
                        },
                        left_number: l.map(|i| i + 1),
                        left: l.map(|&i| old[i].clone()).unwrap_or_default(),
                        right_number: r.map(|i| i + 1),
                        right: r.map(|&i| new[i].clone()).unwrap_or_default(),
                    });
                }
            }
        }
    }
    rows
}

/// Whether the two texts differ at all.
pub fn differs(rows: &[Row]) -> bool {
    rows.iter().any(|r| matches!(r.kind, RowKind::Removed | RowKind::Added | RowKind::Changed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_pair_changes_and_fold_long_unchanged_runs() {
        let left = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";
        let right = "a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nk\n";
        let rows = side_by_side(left, right);
        let kinds: Vec<RowKind> = rows.iter().map(|r| r.kind).collect();
        use RowKind::*;
        assert_eq!(kinds, [Same, Changed, Same, Same, Same, Folded, Same, Same, Same, Added]);
        assert_eq!((rows[1].left.as_str(), rows[1].right.as_str()), ("b", "B"));
        assert_eq!(rows[5].left, "2 unchanged lines");
        assert_eq!(
            (rows[9].left_number, rows[9].right_number, rows[9].right.as_str()),
            (None, Some(11), "k")
        );
        assert!(differs(&rows));
        assert!(!differs(&side_by_side("same\n", "same\n")));
        assert_eq!(side_by_side("x\n", "")[0].kind, Removed);
        let marks = |row: &Row| (row.left_mark(), row.left_said(), row.right_mark(), row.right_said());
        assert_eq!(marks(&rows[1]), ("−", "removed: ", "+", "added: "), "a changed line is both");
        assert_eq!(marks(&rows[9]), ("", "", "+", "added: "));
        assert_eq!(marks(&rows[0]), ("", "", "", ""));
    }
}
