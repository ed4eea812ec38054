//! The literature and archive tools on NCBI's E-utilities: `search_pubmed` (articles, abstracts on request)
//! and `search_geo_sra` (GEO series and SRA experiments, with run accessions ready for a
//! samplesheet), and PubMed as `web_research`'s literature. All share one [`codaris_ncbi::Eutils`], so every session of the daemon stays
//! under NCBI's rate limit together.

mod geo_sra;
mod literature;
mod pubmed;

pub use geo_sra::SearchGeoSra;
pub use literature::PubmedLiterature;
pub use pubmed::SearchPubmed;

use std::sync::Arc;

use codaris_ncbi::{Eutils, NcbiError, SearchResult};
use serde_json::Value;

use crate::tool::{Tool, ToolError};
use crate::web::common;

/// Characters of a query accepted at most: far above any real search, far below what would
/// make a request NCBI refuses for its length.
const MAX_QUERY_CHARS: usize = 2000;

/// The research tools in the catalogue's order, sharing `client`.
pub fn ncbi_tools(client: Eutils) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(SearchPubmed::new(client.clone())),
        Arc::new(SearchGeoSra::new(client)),
    ]
}

/// Refuses arguments that are not a JSON object (the policy checks it too; a tool called
/// directly must not take a string for an empty search).
fn object(tool: &str, args: &Value) -> Result<(), ToolError> {
    if args.is_object() {
        Ok(())
    } else {
        Err(ToolError::model(format!(
            "{tool} takes a JSON object of arguments, e.g. {{\"query\": \"…\"}}"
        )))
    }
}

/// The required, non-blank `query`, trimmed.
fn query(args: &Value) -> Result<String, ToolError> {
    let query = common::opt_str(args, "query")?
        .map(str::trim)
        .filter(|query| !query.is_empty())
        .ok_or_else(|| ToolError::model("`query` is required and must not be empty"))?;
    if query.chars().count() > MAX_QUERY_CHARS {
        return Err(ToolError::model(format!(
            "`query` is longer than {MAX_QUERY_CHARS} characters"
        )));
    }
    Ok(query.to_owned())
}

/// An optional string argument that must be one of `allowed`.
fn choice(args: &Value, name: &str, allowed: &[&str]) -> Result<Option<String>, ToolError> {
    match common::opt_str(args, name)?.map(str::trim) {
        None => Ok(None),
        Some(value) if allowed.contains(&value) => Ok(Some(value.to_owned())),
        Some(value) => Err(ToolError::model(format!(
            "`{name}` must be {}, not `{}`",
            allowed
                .iter()
                .map(|a| format!("\"{a}\""))
                .collect::<Vec<_>>()
                .join(" or "),
            flat(value, 40)
        ))),
    }
}

/// A date argument, `YYYY`, `YYYY/MM` or `YYYY/MM/DD` (`-` accepted for `/`), zero-padded.
fn date(args: &Value, name: &str) -> Result<Option<String>, ToolError> {
    let Some(text) = common::opt_str(args, name)?.map(str::trim) else {
        return Ok(None);
    };
    let bad = || {
        ToolError::model(format!(
            "`{name}` must be a date as YYYY, YYYY/MM or YYYY/MM/DD, not `{}`",
            flat(text, 40)
        ))
    };
    let parts: Vec<&str> = text.split(['/', '-']).collect();
    if parts.is_empty() || parts.len() > 3 || parts.iter().any(|p| p.is_empty() || p.len() > 4) {
        return Err(bad());
    }
    let numbers: Vec<u32> = parts
        .iter()
        .map(|p| {
            p.bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| p.parse::<u32>().ok())
                .flatten()
        })
        .collect::<Option<_>>()
        .ok_or_else(bad)?;
    let in_range = match numbers.as_slice() {
        [year] => parts[0].len() == 4 && (1000..=9999).contains(year),
        [year, month] => parts[0].len() == 4 && *year >= 1000 && (1..=12).contains(month),
        [year, month, day] => {
            parts[0].len() == 4
                && *year >= 1000
                && (1..=12).contains(month)
                && (1..=31).contains(day)
        }
        _ => false,
    };
    if !in_range {
        return Err(bad());
    }
    Ok(Some(
        numbers
            .iter()
            .enumerate()
            .map(|(at, n)| {
                if at == 0 {
                    n.to_string()
                } else {
                    format!("{n:02}")
                }
            })
            .collect::<Vec<_>>()
            .join("/"),
    ))
}

/// An optional free-text filter (`organism`, `strategy`) that goes inside `"…"[Field]`: quotes
/// and brackets would let it rewrite the rest of the search, so they are refused.
fn filter(args: &Value, name: &str) -> Result<Option<String>, ToolError> {
    let Some(value) = common::opt_str(args, name)?
        .map(str::trim)
        .filter(|value| !value.is_empty())
    else {
        return Ok(None);
    };
    if value.chars().count() > 100 {
        return Err(ToolError::model(format!(
            "`{name}` is longer than 100 characters"
        )));
    }
    if value.contains(['"', '[', ']', '(', ')']) || value.chars().any(char::is_control) {
        return Err(ToolError::model(format!(
            "`{name}` must be a plain name such as Homo sapiens or RNA-Seq, without quotes, brackets or parentheses"
        )));
    }
    Ok(Some(value.to_owned()))
}

/// An NCBI failure told to the model, the key already redacted by the client.
fn ncbi_error(error: NcbiError) -> ToolError {
    ToolError::model(error.to_string())
}

/// NCBI's reading of the query: its translation and the words or fields it did not know.
fn explain(out: &mut String, found: &SearchResult) {
    if let Some(translation) = &found.query_translation {
        out.push_str(&format!("\nNCBI read the query as: {translation}"));
    }
    if !found.phrases_not_found.is_empty() {
        out.push_str(&format!(
            "\nNot found anywhere: {}",
            found.phrases_not_found.join(", ")
        ));
    }
    if !found.fields_not_found.is_empty() {
        out.push_str(&format!(
            "\nUnknown fields (ignored): {}",
            found.fields_not_found.join(", ")
        ));
    }
    if !found.warnings.is_empty() {
        out.push_str(&format!("\nNCBI warnings: {}", found.warnings.join("; ")));
    }
}

/// `text` on one line, cut to `max` characters (for echoing the model's own words).
fn flat(text: &str, max: usize) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match joined.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &joined[..end]),
        None => joined,
    }
}

/// `n` things, singular for one.
fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn dates_are_checked_and_padded() {
        let args = |d: &str| json!({"mindate": d});
        assert_eq!(
            date(&args("2020"), "mindate").unwrap().as_deref(),
            Some("2020")
        );
        assert_eq!(
            date(&args("2020/1"), "mindate").unwrap().as_deref(),
            Some("2020/01")
        );
        assert_eq!(
            date(&args("2020-03-09"), "mindate").unwrap().as_deref(),
            Some("2020/03/09")
        );
        for bad in [
            "20",
            "2020/13",
            "2020/00",
            "2020/01/32",
            "yesterday",
            "2020//01",
            "2020/1/1/1",
            "+2020",
            "２０２０",
        ] {
            let error = date(&args(bad), "mindate").unwrap_err().to_string();
            assert!(
                error.starts_with("`mindate` must be a date"),
                "{bad}: {error}"
            );
        }
        assert!(date(&json!({"mindate": 2020}), "mindate").is_err());
        assert_eq!(date(&json!({}), "mindate").unwrap(), None);
    }

    #[test]
    fn filters_cannot_rewrite_the_search() {
        for hostile in [
            "Homo sapiens\"[Organism] OR \"x",
            "x[Filter]",
            "a) OR (b",
            "a\nb",
        ] {
            assert!(
                filter(&json!({"organism": hostile}), "organism").is_err(),
                "{hostile}"
            );
        }
        assert_eq!(
            filter(&json!({"organism": " Mus musculus "}), "organism")
                .unwrap()
                .as_deref(),
            Some("Mus musculus")
        );
        assert_eq!(
            filter(&json!({"organism": "  "}), "organism").unwrap(),
            None
        );
    }

    #[test]
    fn choices_name_what_is_allowed() {
        let error = choice(
            &json!({"sort": "newest"}),
            "sort",
            &["relevance", "pub_date"],
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            error,
            "`sort` must be \"relevance\" or \"pub_date\", not `newest`"
        );
    }
}
