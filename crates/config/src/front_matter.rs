//! The front matter block at the top of a Markdown file (`---` … `---`), as skills and agent
//! definitions open: a small subset of YAML, read the same way for both.
//!
//! `key: value` lines, values quoted or not; `>`/`|` blocks and indented continuation lines
//! folded into one line; `- item` lines as a list under the key before them. Other shapes are
//! ignored, so a file written for another tool (Claude Code's `color:`) does no harm.

/// One key's value: its text (folded, not yet unquoted: [`unquote`] the trimmed whole) and its
/// `- item` lines (each unquoted).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Field {
    pub text: String,
    pub items: Vec<String>,
}

/// The block between the opening `---` and the closing `---` (or `...`), and the text after it;
/// `None` when the text does not open with `---` or the block never closes.
pub fn split(text: &str) -> Option<(&str, &str)> {
    let text = text.trim_start_matches('\u{feff}');
    let rest = text
        .strip_prefix("---\r\n")
        .or_else(|| text.strip_prefix("---\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        let bare = line.trim_end();
        if bare == "---" || bare == "..." {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

/// True when `text` opens with a front matter block's `---` line (closed or not).
pub fn opens(text: &str) -> bool {
    text.trim_start_matches('\u{feff}')
        .lines()
        .next()
        .map(str::trim_end)
        == Some("---")
}

/// The keys of a block, in order.
pub fn fields(block: &str) -> Vec<(String, Field)> {
    let mut fields: Vec<(String, Field)> = Vec::new();
    for line in block.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if let Some(item) = trimmed.strip_prefix("- ")
            && let Some((_, field)) = fields.last_mut()
        {
            field.items.push(unquote(item.trim()).to_owned());
            continue;
        }
        if line.starts_with([' ', '\t']) {
            if let Some((_, field)) = fields.last_mut() {
                if !field.text.is_empty() {
                    field.text.push(' ');
                }
                field.text.push_str(trimmed);
            }
            continue;
        }
        let Some((key, value)) = trimmed.split_once(':') else {
            continue;
        };
        let value = value.trim();
        let value = if matches!(value, ">" | "|" | ">-" | "|-" | ">+" | "|+") {
            ""
        } else {
            value
        };
        fields.push((
            key.trim().to_owned(),
            Field {
                text: value.to_owned(),
                items: Vec::new(),
            },
        ));
    }
    fields
}

/// `value` without one pair of surrounding quotes (`"…"` or `'…'`).
pub fn unquote(value: &str) -> &str {
    for quote in ['"', '\''] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|v| v.strip_suffix(quote))
        {
            return inner;
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_reads_keys_folded_text_and_lists() {
        let (block, body) = split("\u{feff}---\nname: a\ndescription: >\n  two\n  lines\ntools:\n  - \"x\"\n  - y\n# a comment\n...\nbody\n").unwrap();
        assert_eq!(body, "body\n");
        let read = fields(block);
        let keys: Vec<&str> = read.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["name", "description", "tools"]);
        assert_eq!(read[1].1.text, "two lines");
        assert_eq!(read[2].1.items, ["x", "y"]);
        assert!(split("---\nname: a\n").is_none());
        assert!(split("name: a\n---\n").is_none());
        assert!(opens("---\nname: a\n"));
        assert_eq!(unquote("'a b'"), "a b");
        assert_eq!(unquote("\"a"), "\"a");
    }
}
