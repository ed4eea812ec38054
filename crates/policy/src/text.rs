//! Putting values from a call into a one-line sentence safely.
//!
//! A tool name or a path comes from the model and may hold anything: newlines, backticks,
//! kilobytes of text. A sentence must stay one line a person can read, so values are quoted in
//! backticks with control characters and backticks escaped, and long values keep their head and
//! tail (the tail of a path is usually the part that matters). The full value stays available in
//! the decision's `capability`.

use std::fmt::{self, Display, Formatter, Write};

/// Characters of a value shown before the ellipsis, and after it.
const HEAD: usize = 64;
const TAIL: usize = 48;

/// A value rendered as `` `value` `` inside a sentence.
pub(crate) struct Quoted<'a>(pub &'a str);

impl Display for Quoted<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_char('`')?;
        let count = self.0.chars().count();
        if count <= HEAD + TAIL + 1 {
            write_escaped(f, self.0)?;
        } else {
            let head_end = self.0.char_indices().nth(HEAD).map_or(0, |(i, _)| i);
            let tail_start = self
                .0
                .char_indices()
                .nth(count - TAIL)
                .map_or(0, |(i, _)| i);
            write_escaped(f, &self.0[..head_end])?;
            f.write_char('…')?;
            write_escaped(f, &self.0[tail_start..])?;
        }
        f.write_char('`')
    }
}

/// A value rendered as `` `value` `` whole: escaped like [`Quoted`] but never shortened, for
/// the one sentence that has always named its value whole (the refusal at a card).
pub(crate) struct Whole<'a>(pub &'a str);

impl Display for Whole<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_char('`')?;
        write_escaped(f, self.0)?;
        f.write_char('`')
    }
}

fn write_escaped(f: &mut Formatter<'_>, s: &str) -> fmt::Result {
    // Runs of ordinary characters go out in one write; only the rare special ones are escaped.
    let mut run = 0;
    for (i, c) in s.char_indices() {
        if c != '`' && !c.is_control() {
            continue;
        }
        f.write_str(&s[run..i])?;
        if c == '`' {
            f.write_str("\\`")?;
        } else {
            write!(f, "{}", c.escape_default())?;
        }
        run = i + c.len_utf8();
    }
    f.write_str(&s[run..])
}

/// Joins quoted alternatives as prose: `` `a` ``, `` `a` or `b` ``, `` `a`, `b` or `c` ``.
pub(crate) struct OneOf<'a>(pub &'a [&'a str]);

impl Display for OneOf<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let n = self.0.len();
        for (i, item) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(if i + 1 == n { " or " } else { ", " })?;
            }
            Quoted(item).fmt(f)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{OneOf, Quoted};
    use pretty_assertions::assert_eq;

    #[test]
    fn control_characters_and_backticks_are_escaped() {
        assert_eq!(Quoted("a\nb`c\0").to_string(), "`a\\nb\\`c\\u{0}`");
    }

    #[test]
    fn long_values_keep_head_and_tail() {
        let long = format!("/{}/file.rs", "d".repeat(500));
        let shown = Quoted(&long).to_string();
        assert!(shown.chars().count() < 120, "{shown}");
        assert!(shown.starts_with("`/ddd"));
        assert!(shown.ends_with("dd/file.rs`"));
        assert!(shown.contains('…'));
    }

    #[test]
    fn multibyte_values_are_cut_on_character_boundaries() {
        let long = "é".repeat(400);
        assert_eq!(Quoted(&long).to_string().chars().count(), 64 + 1 + 48 + 2);
    }

    #[test]
    fn alternatives_read_as_prose() {
        assert_eq!(OneOf(&["/fix"]).to_string(), "`/fix`");
        assert_eq!(OneOf(&["/a", "/b"]).to_string(), "`/a` or `/b`");
        assert_eq!(OneOf(&["/a", "/b", "/c"]).to_string(), "`/a`, `/b` or `/c`");
    }
}
