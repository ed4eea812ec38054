//! `codaris tools eval --from-ledger`: the queries mined from the person's own sessions
//! ([`tools_ledger`](super::tools_ledger)), ranked by the index they have now — the daemon's,
//! as `codaris tools search` asks it, or a catalogue file's with `--catalog` — and reported as
//! `codaris tools eval` reports a query file, with each query's rank.
//!
//! Queries are model-written text: they are only ever searched for and printed, every control
//! character shown as text and each on one line.

use std::collections::HashMap;
use std::path::Path;

use codaris_index::eval::{EVAL_DEPTH, evaluate, evaluate_baseline};
use codaris_index::{Bm25, Index, KindFilter, QueryLine, SearchRequest, Searcher};
use codaris_proto::v1;
use serde::Serialize;
use serde_json::json;

use super::Outcome;
use super::tools::{SetResult, bad_line, plural, read};
use super::tools_ledger;
use crate::cli::ToolsEvalArgs;
use crate::client::{self, Target};
use crate::error::CliError;
use crate::output::{self, one_line};

/// The name of the mined set in reports.
const SET_NAME: &str = "ledger";
/// Where the ranking came from when the daemon's index ranked.
const DAEMON_INDEX: &str = "codarisd's index";

pub async fn eval(
    target: &Target,
    autostart: bool,
    json: bool,
    args: &ToolsEvalArgs,
) -> Result<Outcome, CliError> {
    if args.baseline && args.catalog.is_none() {
        return Err(CliError::InvalidFlag {
            flag: "--baseline",
            reason:
                "with --from-ledger it needs --catalog: the daemon ranks with its own index only"
                    .to_owned(),
        });
    }
    let ledger = target.layout.ledger();
    let mined = tools_ledger::mine(&ledger)?;
    for unreadable in &mined.unreadable {
        output::error_line(&format!(
            "codaris: the conversation of session `{}` cannot be read, so it is left out: {}",
            one_line(&unreadable.session),
            one_line(&unreadable.reason)
        ));
    }
    if let Some(path) = &args.write {
        write_queries(path, &mined.lines)?;
    }
    let summary = json!({
        "source": ledger.display().to_string(),
        "sessions": mined.sessions,
        "searches": mined.searches,
        "queries": mined.lines.len(),
        "unreadable": mined.unreadable,
    });
    if mined.lines.is_empty() {
        // Not a failure: the person has not searched (or not followed a search) yet.
        if json {
            output::json(&json!({"ledger": summary, "sets": []}))?;
        } else {
            output::line(&format!(
                "no search in {} was followed by a call to one of its hits ({} in {} read), so there is nothing to measure yet",
                ledger.display(),
                plural(mined.searches, "search", "searches"),
                plural(mined.sessions, "session", "sessions"),
            ))?;
            saved(args.write.as_deref(), 0)?;
        }
        return Ok(Outcome::Success);
    }

    let ranked = match &args.catalog {
        Some(path) => offline(path, &mined.lines, args.baseline)?,
        None => through_daemon(target, autostart, &mined.lines).await?,
    };
    let set = SetResult {
        name: SET_NAME.to_owned(),
        index: evaluate(&mined.lines, |q| ranked.names(q)),
        baseline: ranked.baseline,
    };
    let results: Vec<QueryResult> = mined
        .lines
        .iter()
        .map(|line| QueryResult::of(line, &ranked.by_query))
        .collect();
    if json {
        let mut value = set.to_json();
        value["misses"] = serde_json::to_value(&set.index.misses)?;
        value["results"] = serde_json::to_value(&results)?;
        output::json(&json!({
            "catalog": {"source": ranked.source, "entries": ranked.entries},
            "ledger": summary,
            "sets": [value],
        }))?;
    } else {
        output::line(&format!(
            "mined {} from {} in {} of {}",
            plural(mined.lines.len(), "query", "queries"),
            plural(mined.searches, "search", "searches"),
            plural(mined.sessions, "session", "sessions"),
            ledger.display(),
        ))?;
        output::line(&set.table(&ranked.source, ranked.entries))?;
        print_misses(&results)?;
        saved(args.write.as_deref(), mined.lines.len())?;
    }
    Ok(Outcome::Success)
}

/// The mined queries in the query-file format, one JSON line each, so `codaris tools eval
/// --queries FILE` (and `codaris tools search --queries FILE`) read them again.
fn write_queries(path: &Path, lines: &[QueryLine]) -> Result<(), CliError> {
    let mut text = String::new();
    for line in lines {
        text.push_str(&serde_json::to_string(line)?);
        text.push('\n');
    }
    std::fs::write(path, text).map_err(|source| CliError::Write {
        path: path.to_path_buf(),
        source,
    })
}

fn saved(path: Option<&Path>, queries: usize) -> Result<(), CliError> {
    match path {
        Some(path) if queries == 0 => {
            output::line(&format!("saved no queries to {}", path.display()))
        }
        Some(path) => output::line(&format!(
            "saved {} to {} (measure them again with `codaris tools eval --catalog FILE --queries {}`)",
            plural(queries, "query", "queries"),
            path.display(),
            path.display(),
        )),
        None => Ok(()),
    }
}

/// Every mined query's ranked names, from one ranking.
struct Ranked {
    /// The names ranked for each query and kind, best first, at most [`EVAL_DEPTH`].
    by_query: HashMap<(String, KindFilter), Vec<String>>,
    source: String,
    entries: usize,
    baseline: Option<codaris_index::EvalReport>,
}

impl Ranked {
    fn names(&self, query: &QueryLine) -> Vec<String> {
        self.by_query
            .get(&(query.query.clone(), query.kind))
            .cloned()
            .unwrap_or_default()
    }
}

/// Ranks the queries over a catalogue file, as `codaris tools eval --catalog` does.
fn offline(catalog: &Path, lines: &[QueryLine], baseline: bool) -> Result<Ranked, CliError> {
    let entries = codaris_index::parse_catalog(&read(catalog)?)
        .map_err(|err| bad_line("catalogue", catalog, err))?;
    let size = entries.len();
    let baseline = baseline.then(|| evaluate_baseline(&Bm25::build(entries.clone()), lines));
    let index = Index::build(entries);
    let mut searcher = Searcher::new();
    let by_query = lines
        .iter()
        .map(|line| {
            let request = SearchRequest::new(&line.query)
                .kind(line.kind)
                .limit(EVAL_DEPTH);
            let names = searcher
                .search(&index, &request)
                .hits()
                .iter()
                .map(|hit| hit.name.clone())
                .collect();
            ((line.query.clone(), line.kind), names)
        })
        .collect();
    Ok(Ranked {
        by_query,
        source: catalog.display().to_string(),
        entries: size,
        baseline,
    })
}

/// Ranks the queries with the daemon's index, the one `search_tools` and `codaris tools
/// search` use.
async fn through_daemon(
    target: &Target,
    autostart: bool,
    lines: &[QueryLine],
) -> Result<Ranked, CliError> {
    let channel = client::open(target, autostart).await?;
    let mut tools = v1::tools_client::ToolsClient::new(channel);
    let entries = tools
        .list_tools(v1::ListToolsRequest {})
        .await?
        .into_inner()
        .tools
        .len();
    let mut by_query = HashMap::new();
    for line in lines {
        let answer = tools
            .search_tools(v1::SearchToolsRequest {
                query: line.query.clone(),
                kind: line.kind.as_str().to_owned(),
                limit: u32::try_from(EVAL_DEPTH).unwrap_or(u32::MAX),
                explain: false,
            })
            .await?
            .into_inner();
        let names = answer.hits.into_iter().map(|hit| hit.name).collect();
        by_query.insert((line.query.clone(), line.kind), names);
    }
    Ok(Ranked {
        by_query,
        source: DAEMON_INDEX.to_owned(),
        entries,
        baseline: None,
    })
}

/// One mined query as ranked now.
#[derive(Debug, Serialize)]
struct QueryResult<'a> {
    query: &'a str,
    kind: &'static str,
    relevant: &'a [String],
    /// The 1-based rank of the first acceptable hit within the first [`EVAL_DEPTH`].
    rank: Option<usize>,
    /// The first three hits.
    top: Vec<&'a str>,
}

impl<'a> QueryResult<'a> {
    fn of(line: &'a QueryLine, ranked: &'a HashMap<(String, KindFilter), Vec<String>>) -> Self {
        let names: &[String] = ranked
            .get(&(line.query.clone(), line.kind))
            .map_or(&[], Vec::as_slice);
        QueryResult {
            query: &line.query,
            kind: line.kind.as_str(),
            relevant: &line.relevant,
            rank: names
                .iter()
                .take(EVAL_DEPTH)
                .position(|name| line.relevant.contains(name))
                .map(|at| at + 1),
            top: names.iter().take(3).map(String::as_str).collect(),
        }
    }
}

/// The queries whose first hit was not an answer, one line each.
fn print_misses(results: &[QueryResult]) -> Result<(), CliError> {
    let misses: Vec<String> = results
        .iter()
        .filter(|r| r.rank != Some(1))
        .map(miss_line)
        .collect();
    if misses.is_empty() {
        return Ok(());
    }
    output::line("")?;
    output::line("misses (the first hit was not a tool you called):")?;
    for line in misses {
        output::line(&line)?;
    }
    Ok(())
}

/// A miss on one line: the query quoted with every control character and line break shown
/// as text, the names likewise (they came from a model and from MCP servers).
fn miss_line(result: &QueryResult) -> String {
    let names = |names: &[&str]| {
        names
            .iter()
            .map(|name| one_line(name).into_owned())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let kind = match result.kind {
        "any" => String::new(),
        kind => format!(" [{kind}]"),
    };
    let relevant: Vec<&str> = result.relevant.iter().map(String::as_str).collect();
    let rank = match result.rank {
        Some(rank) => format!("rank {rank}"),
        None => format!("not in the first {EVAL_DEPTH}"),
    };
    let top = if result.top.is_empty() {
        "no hits".to_owned()
    } else {
        format!("first hits {}", names(&result.top))
    };
    format!(
        "  \"{}\"{kind} wants {}: {rank}; {top}",
        one_line(result.query),
        names(&relevant)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn result<'a>(query: &'a str, relevant: &'a [String], rank: Option<usize>) -> QueryResult<'a> {
        QueryResult {
            query,
            kind: "any",
            relevant,
            rank,
            top: vec!["a", "b\u{1b}[2J", "c"],
        }
    }

    #[test]
    fn a_miss_shows_a_query_with_control_characters_on_one_line_escaped() {
        let relevant = vec!["lint_pipeline".to_owned()];
        let line = miss_line(&result("lint\n- x\u{1b}]0;owned\u{7}", &relevant, Some(2)));
        assert_eq!(
            line,
            "  \"lint\\u{a}- x\\u{1b}]0;owned\\u{7}\" wants lint_pipeline: rank 2; first hits a, b\\u{1b}[2J, c"
        );
        assert!(!line.chars().any(char::is_control));
        let line = miss_line(&result("lint", &relevant, None));
        assert!(
            line.ends_with(": not in the first 10; first hits a, b\\u{1b}[2J, c"),
            "{line}"
        );
    }
}
