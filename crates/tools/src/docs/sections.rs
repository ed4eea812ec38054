//! A page split at its Markdown headings: each section is a heading and the lines up to the
//! next heading of any level, what a search ranks and a read returns.

use super::pages::Page;

/// One section of a page. Lines are numbered from 1, as the page reads in an editor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// Its page.
    pub page: &'static Page,
    /// Its heading's text, without the `#` marks; empty for the text before a page's first
    /// heading.
    pub title: String,
    /// 1 for `#`, 2 for `##`, …; 0 for the text before the first heading.
    pub level: usize,
    /// The heading as a link anchor (`adding-a-server`), unique within its page.
    pub anchor: String,
    /// Its first line (the heading's).
    pub first: usize,
    /// Its last line.
    pub last: usize,
}

impl Section {
    /// The name a search answers and a read takes: `mcp#adding-a-server`, or the page's
    /// name for the text before its first heading.
    pub fn name(&self) -> String {
        if self.anchor.is_empty() {
            self.page.name.to_owned()
        } else {
            format!("{}#{}", self.page.name, self.anchor)
        }
    }

    /// Its text, heading included.
    pub fn text(&self) -> String {
        lines(self.page.text, self.first, self.last).join("\n")
    }
}

/// Lines `first..=last` (from 1) of `text`.
pub fn lines(text: &str, first: usize, last: usize) -> Vec<&str> {
    text.lines()
        .skip(first.saturating_sub(1))
        .take((last + 1).saturating_sub(first))
        .collect()
}

/// The sections of `page`, in order. A `#` line inside a fenced code block is code, not a
/// heading; a page's text before its first heading is a section only when it holds any.
pub fn split(page: &'static Page) -> Vec<Section> {
    let mut sections: Vec<Section> = Vec::new();
    let mut anchors: Vec<String> = Vec::new();
    let mut fence: Option<&str> = None;
    let mut count = 0;
    let mut preamble = false;
    for (at, line) in page.text.lines().enumerate() {
        let number = at + 1;
        count = number;
        let trimmed = line.trim_start();
        if let Some(marker) = fence {
            if trimmed.starts_with(marker) {
                fence = None;
            }
            continue;
        }
        if let Some(marker) = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m)) {
            fence = Some(marker);
            continue;
        }
        match heading(line) {
            Some((level, title)) => {
                if let Some(open) = sections.last_mut() {
                    open.last = number - 1;
                }
                let anchor = unique(slug(&title), &mut anchors);
                sections.push(Section {
                    page,
                    title,
                    level,
                    anchor,
                    first: number,
                    last: number,
                });
            }
            None if sections.is_empty() && !line.trim().is_empty() => preamble = true,
            None => {}
        }
    }
    if let Some(open) = sections.last_mut() {
        open.last = count;
    }
    let first_heading = sections.first().map_or(count + 1, |s| s.first);
    if preamble {
        sections.insert(
            0,
            Section {
                page,
                title: String::new(),
                level: 0,
                anchor: String::new(),
                first: 1,
                last: first_heading - 1,
            },
        );
    }
    sections
}

/// An ATX heading (`## Title`, up to three spaces before it): its level and text.
fn heading(line: &str) -> Option<(usize, String)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let level = rest.len() - rest.trim_start_matches('#').len();
    if !(1..=6).contains(&level) {
        return None;
    }
    let text = &rest[level..];
    if !(text.is_empty() || text.starts_with([' ', '\t'])) {
        return None;
    }
    let title = text.trim().trim_end_matches('#').trim();
    (!title.is_empty()).then(|| (level, title.to_owned()))
}

/// The anchor GitHub gives a heading: lowercase, letters, digits, `-` and `_` kept, spaces as
/// `-`, the rest dropped.
pub fn slug(title: &str) -> String {
    title
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .flat_map(char::to_lowercase)
        .collect()
}

/// `anchor`, or `anchor-1`, `anchor-2`, … when the page has it already, as GitHub numbers them.
fn unique(anchor: String, taken: &mut Vec<String>) -> String {
    let mut candidate = anchor.clone();
    let mut n = 0;
    while taken.contains(&candidate) {
        n += 1;
        candidate = format!("{anchor}-{n}");
    }
    taken.push(candidate.clone());
    candidate
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    static PAGE: Page = Page {
        name: "demo",
        path: "docs/demo.md",
        text: "Before.\n# Title\n\nIntro.\n\n## Adding a server: `x`\nText.\n```sh\n# not a heading\n```\n## Adding a server: `x`\n####### seven\nEnd.\n",
    };

    #[test]
    fn a_page_splits_at_its_headings_and_not_in_code() {
        let sections = split(&PAGE);
        let got: Vec<(String, usize, usize, usize)> = sections
            .iter()
            .map(|s| (s.name(), s.level, s.first, s.last))
            .collect();
        assert_eq!(
            got,
            vec![
                ("demo".to_owned(), 0, 1, 1),
                ("demo#title".to_owned(), 1, 2, 5),
                ("demo#adding-a-server-x".to_owned(), 2, 6, 10),
                ("demo#adding-a-server-x-1".to_owned(), 2, 11, 13),
            ]
        );
        assert_eq!(
            sections[2].text(),
            "## Adding a server: `x`\nText.\n```sh\n# not a heading\n```"
        );
        assert_eq!(sections[2].title, "Adding a server: `x`");
    }

    #[test]
    fn every_built_in_page_has_sections_covering_it() {
        for page in super::super::pages::PAGES {
            let sections = split(page);
            assert!(!sections.is_empty(), "{}", page.name);
            assert_eq!(sections[0].first, 1, "{}", page.name);
            assert_eq!(
                sections.last().map(|s| s.last),
                Some(page.text.lines().count()),
                "{}",
                page.name
            );
            for pair in sections.windows(2) {
                assert_eq!(pair[0].last + 1, pair[1].first, "{}", page.name);
            }
        }
    }
}
