//! `codaris_docs_search` and `codaris_docs_read`: the model's way into the built-in pages.
//!
//! A page argument is looked up in the built-in list and nowhere else; lines are numbered from
//! 1 as in an editor, and `offset` is the page's line a part starts at.

use std::fmt::Write as _;

use codaris_catalogue::limits::{DOCS_SEARCH_LIMIT_DEFAULT, DOCS_SEARCH_LIMIT_MAX};
use codaris_index::SearchOutcome;
use serde::Deserialize;
use serde_json::Value;

use super::index::docs;
use super::pages::{PAGES, Page, find};
use super::sections::{Section, lines};
use crate::context::ToolContext;
use crate::tool::{Tool, ToolError, ToolOutput};

const SEARCH: &str = codaris_catalogue::CODARIS_DOCS_SEARCH.name;
const READ: &str = codaris_catalogue::CODARIS_DOCS_READ.name;

/// The most lines one part of a read holds: a page of the manual a model reads at once
/// without its context filling with the rest.
pub const PART_LINES: usize = 200;
/// The longest text of a section a search hit quotes, in characters.
const GIST_CHARS: usize = 160;

/// `codaris_docs_search`.
#[derive(Debug, Default, Clone, Copy)]
pub struct DocsSearch;

/// `codaris_docs_read`.
#[derive(Debug, Default, Clone, Copy)]
pub struct DocsRead;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    query: String,
    limit: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    page: Option<String>,
    offset: Option<u64>,
}

fn parse<'de, T: Deserialize<'de>>(tool: &str, args: &'de Value) -> Result<T, ToolError> {
    T::deserialize(args).map_err(|err| ToolError::model(format!("{tool}: {err}")))
}

#[async_trait::async_trait]
impl Tool for DocsSearch {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::CODARIS_DOCS_SEARCH
    }

    async fn call(&self, _ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let args: SearchArgs = parse(SEARCH, args)?;
        super::index::ready().await;
        search(&args.query, args.limit).map(ToolOutput::text)
    }
}

#[async_trait::async_trait]
impl Tool for DocsRead {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::CODARIS_DOCS_READ
    }

    async fn call(&self, _ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let args: ReadArgs = parse(READ, args)?;
        super::index::ready().await;
        match args.page.as_deref().map(str::trim) {
            None | Some("") => Ok(ToolOutput::text(contents())),
            Some(page) => read(page, args.offset).map(ToolOutput::text),
        }
    }
}

/// The answer to a search: the ranked sections, each with where it is and its first words.
pub fn search(query: &str, limit: Option<u64>) -> Result<String, ToolError> {
    let limit = limit.unwrap_or(DOCS_SEARCH_LIMIT_DEFAULT);
    if !(1..=DOCS_SEARCH_LIMIT_MAX).contains(&limit) {
        return Err(ToolError::model(format!(
            "{SEARCH}: `limit` is {limit}; it must be 1 to {DOCS_SEARCH_LIMIT_MAX}"
        )));
    }
    let index = docs();
    let hits = match index.search(query, usize::try_from(limit).unwrap_or(usize::MAX)) {
        SearchOutcome::Hits { hits, .. } => hits,
        SearchOutcome::NoHit { query, closest } => {
            let closest = closest.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>();
            return Ok(format!(
                "no section of Codaris's documentation matches \"{query}\"; the closest names: {}; codaris_docs_read with no page lists them all",
                closest.join(", ")
            ));
        }
        SearchOutcome::EmptyQuery => {
            return Err(ToolError::model(format!("{SEARCH}: the query is empty")));
        }
        SearchOutcome::TooLong { chars, max } => {
            return Err(ToolError::model(format!(
                "{SEARCH}: the query is {chars} characters; at most {max}"
            )));
        }
    };
    let mut out = format!(
        "Codaris documentation, {} section{} for \"{}\", best first:\n",
        hits.len(),
        if hits.len() == 1 { "" } else { "s" },
        query.trim()
    );
    for hit in &hits {
        let Some(section) = index.section(&hit.name) else {
            continue;
        };
        let _ = writeln!(
            out,
            "- {} — {} ({}, lines {}-{})",
            hit.name,
            heading_of(section),
            section.page.path,
            section.first,
            section.last
        );
        if let Some(gist) = gist(section) {
            let _ = writeln!(out, "  {gist}");
        }
    }
    if let Some(best) = hits.first() {
        let _ = write!(
            out,
            "Read a section with {READ} {{\"page\": \"{}\"}}.",
            best.name
        );
    }
    Ok(out)
}

/// A section's heading as a person reads it; the page's own name for its opening text.
fn heading_of(section: &Section) -> &str {
    if section.title.is_empty() {
        section.page.name
    } else {
        &section.title
    }
}

/// The first line of prose under a section's heading, cut to [`GIST_CHARS`].
fn gist(section: &Section) -> Option<String> {
    let lines = lines(section.page.text, section.first, section.last);
    let line = lines
        .iter()
        .skip(usize::from(section.level > 0))
        .map(|l| l.trim())
        .find(|l| !l.is_empty() && !l.starts_with("```") && !l.starts_with('|'))?;
    Some(match line.char_indices().nth(GIST_CHARS) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_owned(),
    })
}

/// Every page with its sections, as a read with no page answers.
pub fn contents() -> String {
    let index = docs();
    let mut out = format!(
        "Codaris documentation, {} pages; read one with {READ} {{\"page\": NAME}}, or one section with its NAME#ANCHOR:\n",
        PAGES.len()
    );
    for page in PAGES {
        let sections: Vec<&Section> = index
            .sections()
            .iter()
            .filter(|s| std::ptr::eq(s.page, page))
            .collect();
        let title = sections
            .iter()
            .find(|s| s.level == 1)
            .map_or("", |s| s.title.as_str());
        let _ = writeln!(
            out,
            "- {} ({}, {} lines): {title}",
            page.name,
            page.path,
            page.text.lines().count()
        );
        for section in sections.iter().filter(|s| s.level >= 2) {
            let indent = "  ".repeat(section.level - 1);
            let _ = writeln!(
                out,
                "{indent}- {} — {} (line {})",
                section.name(),
                section.title,
                section.first
            );
        }
    }
    out
}

/// A part of a page or of a section, from `offset` (a line of the page) or its start.
pub fn read(name: &str, offset: Option<u64>) -> Result<String, ToolError> {
    let (page, section) = match find(name) {
        Some(page) => (page, None),
        None => match docs().section(name) {
            Some(section) => (section.page, Some(section)),
            None => return Err(unknown(name)),
        },
    };
    let total = page.text.lines().count();
    let (first, last) = section.map_or((1, total), |s| (s.first, s.last));
    let start = match offset {
        None => first,
        Some(offset) => usize::try_from(offset).unwrap_or(usize::MAX),
    };
    if start < first || start > last.max(first) {
        return Err(ToolError::model(format!(
            "{READ}: `offset` {start} is outside lines {first}-{last} of `{name}`"
        )));
    }
    let end = last.min(start + PART_LINES - 1);
    let whole = start == first && end == last;
    let what = match section {
        Some(s) => format!("section `{}` of `{}`", s.name(), page.path),
        None => format!("page `{}` (`{}`)", page.name, page.path),
    };
    let next = if end < last {
        format!(
            "more follows: the next part is {READ} {{\"page\": \"{name}\", \"offset\": {}}}",
            end + 1
        )
    } else if whole {
        "the whole of it".to_owned()
    } else {
        "the last part".to_owned()
    };
    Ok(format!(
        "{what}, lines {start}-{end} of {first}-{last}; {next}\n\n{}",
        lines(page.text, start, end).join("\n")
    ))
}

/// One line naming what exists instead of `name`.
fn unknown(name: &str) -> ToolError {
    let pages: Vec<&str> = PAGES.iter().map(|p: &Page| p.name).collect();
    ToolError::model(format!(
        "{READ}: no built-in page or section `{name}`; the pages: {} (a section is named as {SEARCH} answers, `mcp#adding-a-server`)",
        pages.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(err: ToolError) -> String {
        err.to_string()
    }

    #[test]
    fn a_search_names_sections_a_read_takes() {
        let answer = search("add an MCP server", None).unwrap();
        let first = answer.lines().nth(1).unwrap();
        assert!(first.starts_with("- mcp#"), "{answer}");
        let name = first.trim_start_matches("- ").split(' ').next().unwrap();
        let read = read(name, None).unwrap();
        assert!(
            read.starts_with(&format!("section `{name}` of `docs/mcp.md`")),
            "{read}"
        );
        assert!(
            read.lines().next().unwrap().ends_with("the whole of it"),
            "{read}"
        );
    }

    #[test]
    fn a_long_page_comes_in_parts_that_say_how_to_get_the_next() {
        let total = find("nextflow").unwrap().text.lines().count();
        assert!(total > 2 * PART_LINES);
        let first = read("nextflow", None).unwrap();
        let head = first.lines().next().unwrap();
        assert_eq!(
            head,
            format!(
                "page `nextflow` (`docs/nextflow.md`), lines 1-{PART_LINES} of 1-{total}; more follows: the next part is codaris_docs_read {{\"page\": \"nextflow\", \"offset\": {}}}",
                PART_LINES + 1
            )
        );
        // The header, a blank line, then exactly the part's lines.
        assert_eq!(first.lines().count(), PART_LINES + 2);
        let last = read("nextflow", Some((total - 3) as u64)).unwrap();
        assert!(
            last.lines().next().unwrap().ends_with("the last part"),
            "{last}"
        );
        assert_eq!(last.lines().count(), 4 + 2);
        let past = message(read("nextflow", Some(total as u64 + 1)).unwrap_err());
        assert!(past.contains("is outside lines 1-"), "{past}");
    }

    #[test]
    fn a_page_is_a_name_from_the_list_never_a_path() {
        for page in [
            "../README.md",
            "/etc/passwd",
            "docs/../README.md",
            "mcp#../../x",
        ] {
            let err = message(read(page, None).unwrap_err());
            assert!(
                err.starts_with("codaris_docs_read: no built-in page"),
                "{err}"
            );
            assert!(err.contains("mcp, memory, nextflow"), "{err}");
            assert_eq!(err.lines().count(), 1);
        }
    }

    #[test]
    fn no_page_lists_every_page_and_its_sections() {
        let listing = contents();
        for page in PAGES {
            assert!(
                listing.contains(&format!("- {} ({}", page.name, page.path)),
                "{}",
                page.name
            );
        }
        assert!(listing.contains("- mcp#adding-a-server — Adding a server (line "));
    }

    #[test]
    fn a_bad_limit_or_query_is_one_line() {
        for (query, limit) in [("mcp", Some(0)), ("mcp", Some(21)), ("  ", None)] {
            let err = message(search(query, limit).unwrap_err());
            assert!(err.starts_with("codaris_docs_search: "), "{err}");
            assert_eq!(err.lines().count(), 1);
        }
    }
}
