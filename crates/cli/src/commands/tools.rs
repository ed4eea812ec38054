//! `codaris tools`: search and list the index, offline or through the daemon, and evaluate it.
//!
//! Offline (`--catalog`) the CLI builds its own index from a catalogue file and needs no daemon;
//! the `--json` lines it prints are a contract other tools read (fields are only ever added).

use std::path::{Path, PathBuf};

use codaris_index::eval::{evaluate_baseline, evaluate_index};
use codaris_index::{
    Bm25, DEFAULT_LIMIT, EvalReport, Hit, Index, IndexError, KindFilter, Metrics, QueryLine,
    SearchRequest, Searcher,
};
use codaris_proto::v1;
use serde::Serialize;
use serde_json::{Value, json};

use super::{Outcome, tools_ledger_eval};
use crate::cli::{ToolsEvalArgs, ToolsSearchArgs};
use crate::client::{self, Target};
use crate::error::CliError;
use crate::output;

/// The repository's evaluation set, built in so `codaris tools eval` runs anywhere.
const EVAL_CATALOG: &str = include_str!("../../../index/eval/catalog.jsonl");
const EVAL_QUERIES: &str = include_str!("../../../index/eval/queries.jsonl");
const EVAL_HOLDOUT: &str = include_str!("../../../index/eval/holdout.jsonl");

/// The words `--kind` accepts, for error messages.
const KINDS: &str = "any, tool, core, mcp, skill, reference";

pub async fn search(
    target: impl FnOnce() -> Result<Target, CliError>,
    autostart: bool,
    json: bool,
    args: ToolsSearchArgs,
) -> Result<Outcome, CliError> {
    let kind = kind_arg(args.kind.as_deref())?;
    let limit = limit_arg(args.limit)?;
    let query = args.query.join(" ");
    let want = Want {
        kind,
        limit,
        json,
        explain: args.explain,
    };
    match &args.catalog {
        Some(catalog) => offline(catalog, args.queries.as_deref(), &query, want)?,
        None => through_daemon(&target()?, autostart, &query, want).await?,
    }
    Ok(Outcome::Success)
}

/// What a `tools search` asks for beyond its query.
#[derive(Debug, Clone, Copy)]
struct Want {
    kind: Option<KindFilter>,
    limit: usize,
    json: bool,
    explain: bool,
}

/// Ranks a catalogue file for one query or every line of a query file.
fn offline(
    catalog: &Path,
    queries: Option<&Path>,
    query: &str,
    want: Want,
) -> Result<(), CliError> {
    let Want {
        kind,
        limit,
        json,
        explain,
    } = want;
    let entries = codaris_index::parse_catalog(&read(catalog)?)
        .map_err(|err| bad_line("catalogue", catalog, err))?;
    let index = Index::build(entries);
    if explain {
        let kind = kind.unwrap_or_default();
        let request = SearchRequest::new(query).kind(kind).limit(limit);
        let explained = Searcher::new().explain(&index, &request);
        return if json {
            output::json(&json!({
                "query": query,
                "kind": kind.as_str(),
                "explanation": explained,
            }))
        } else {
            output::line(&codaris_index::render_explanation(&explained))
        };
    }
    // With a query file, each line's kind counts unless --kind overrides them all.
    let queries: Vec<(String, KindFilter)> = match queries {
        Some(path) => codaris_index::parse_queries(&read(path)?)
            .map_err(|err| bad_line("query file", path, err))?
            .into_iter()
            .map(|line| (line.query, kind.unwrap_or(line.kind)))
            .collect(),
        None => vec![(query.to_owned(), kind.unwrap_or_default())],
    };
    let mut searcher = Searcher::new();
    for (i, (query, kind)) in queries.iter().enumerate() {
        let request = SearchRequest::new(query).kind(*kind).limit(limit);
        let outcome = searcher.search(&index, &request);
        if json {
            output::line(&contract_line(query, *kind, outcome.hits())?)?;
        } else {
            if i > 0 {
                output::line("")?;
            }
            output::line(&codaris_index::render(&outcome))?;
        }
    }
    Ok(())
}

/// One line of the offline `--json` contract, its keys in the documented order.
#[derive(Debug, Serialize)]
struct ContractLine<'a> {
    query: &'a str,
    kind: &'static str,
    hits: Vec<ContractHit<'a>>,
}

#[derive(Debug, Serialize)]
struct ContractHit<'a> {
    name: &'a str,
    kind: &'static str,
    score: f64,
    /// Whether `search_tools` would bind it (bindable and above the relevance floor).
    bound: bool,
}

fn contract_line(query: &str, kind: KindFilter, hits: &[Hit]) -> Result<String, CliError> {
    let line = ContractLine {
        query,
        kind: kind.as_str(),
        hits: hits
            .iter()
            .map(|hit| ContractHit {
                name: &hit.name,
                kind: hit.kind.as_str(),
                score: round(hit.score),
                bound: hit.bindable && hit.likely,
            })
            .collect(),
    };
    serde_json::to_string(&line).map_err(|err| CliError::Output(std::io::Error::other(err)))
}

/// Scores only order hits; four decimals keep the output readable and stable.
fn round(score: f64) -> f64 {
    (score * 10_000.0).round() / 10_000.0
}

async fn through_daemon(
    target: &Target,
    autostart: bool,
    query: &str,
    want: Want,
) -> Result<(), CliError> {
    let Want {
        kind,
        limit,
        json,
        explain,
    } = want;
    let channel = client::open(target, autostart).await?;
    let mut tools = v1::tools_client::ToolsClient::new(channel);
    let kind = kind.unwrap_or_default();
    let answer = tools
        .search_tools(v1::SearchToolsRequest {
            query: query.to_owned(),
            kind: kind.as_str().to_owned(),
            limit: u32::try_from(limit).unwrap_or(u32::MAX),
            explain,
        })
        .await?
        .into_inner();
    if !json {
        return output::line(if explain {
            &answer.explanation
        } else {
            &answer.text
        });
    }
    let hits: Vec<Value> = answer
        .hits
        .iter()
        .map(|hit| {
            json!({
                "name": hit.name,
                "kind": hit.kind,
                "score": round(hit.score),
                "description": hit.description,
                "bindable": hit.bindable,
                "likely": hit.likely,
                "bound": hit.bindable && hit.likely,
                "slash": hit.slash,
                "path": non_empty(&hit.path),
            })
        })
        .collect();
    let mut line = json!({
        "query": query,
        "kind": kind.as_str(),
        "hits": hits,
        "text": answer.text,
    });
    if explain {
        line["explanation"] = serde_json::from_str(&answer.explanation_json).unwrap_or(Value::Null);
    }
    output::json(&line)
}

pub async fn list(target: &Target, autostart: bool, json: bool) -> Result<Outcome, CliError> {
    let channel = client::open(target, autostart).await?;
    let mut tools = v1::tools_client::ToolsClient::new(channel);
    let answer = tools
        .list_tools(v1::ListToolsRequest {})
        .await?
        .into_inner();
    if json {
        let tools: Vec<Value> = answer
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "name": tool.name,
                    "kind": tool.kind,
                    "server": non_empty(&tool.server),
                    "description": tool.description,
                    "enabled": tool.enabled,
                    "slash": tool.slash,
                    "permission": non_empty(&tool.permission),
                    "path": non_empty(&tool.path),
                })
            })
            .collect();
        output::json(&json!({"tools": tools}))?;
    } else {
        output::line(&list_table(&answer.tools))?;
    }
    Ok(Outcome::Success)
}

/// `codaris tools enable|disable NAME`: the daemon rebuilds its index and keeps the state.
pub async fn set_enabled(
    target: &Target,
    autostart: bool,
    json: bool,
    name: String,
    enabled: bool,
) -> Result<Outcome, CliError> {
    let channel = client::open(target, autostart).await?;
    let mut tools = v1::tools_client::ToolsClient::new(channel);
    let tool = tools
        .set_tool_enabled(v1::SetToolEnabledRequest { name, enabled })
        .await?
        .into_inner();
    if json {
        output::json(&json!({"name": tool.name, "kind": tool.kind, "enabled": tool.enabled}))?;
    } else {
        output::line(&format!(
            "{} [{}] is switched {}",
            tool.name,
            tool.kind,
            if tool.enabled { "on" } else { "off" }
        ))?;
    }
    Ok(Outcome::Success)
}

/// The index as a table: one row per entry, then a count.
fn list_table(tools: &[v1::ToolInfo]) -> String {
    if tools.is_empty() {
        return "the tool index is empty: skills found in the daemon's skills directories \
                (`skills_dirs` in the configuration) appear here"
            .to_owned();
    }
    let dash = |s: &str| {
        if s.is_empty() {
            "-".to_owned()
        } else {
            s.to_owned()
        }
    };
    let rows: Vec<[String; 6]> = tools
        .iter()
        .map(|tool| {
            [
                tool.name.clone(),
                tool.kind.clone(),
                if tool.enabled { "on" } else { "off" }.to_owned(),
                dash(&tool.server),
                dash(&tool.slash.join(" ")),
                dash(&tool.path),
            ]
        })
        .collect();
    let header = ["NAME", "KIND", "STATE", "SERVER", "SLASH", "PATH"];
    let mut widths = header.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let format_row = |cells: [&str; 6]| {
        let mut line = String::new();
        for (i, (cell, width)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<width$}  "));
            }
        }
        line
    };
    let mut lines = vec![format_row(header)];
    lines.extend(
        rows.iter()
            .map(|row| format_row(row.each_ref().map(String::as_str))),
    );
    let off = tools.iter().filter(|t| !t.enabled).count();
    lines.push(format!(
        "{} indexed, {off} switched off",
        plural(tools.len(), "entry", "entries")
    ));
    lines.join("\n")
}

/// `codaris tools eval`: the built-in set or given files, or (`--from-ledger`) the person's own
/// searches.
pub async fn eval(
    target: impl FnOnce() -> Result<Target, CliError>,
    autostart: bool,
    json: bool,
    args: ToolsEvalArgs,
) -> Result<Outcome, CliError> {
    if args.from_ledger {
        return tools_ledger_eval::eval(&target()?, autostart, json, &args).await;
    }
    eval_files(json, args)
}

fn eval_files(json: bool, args: ToolsEvalArgs) -> Result<Outcome, CliError> {
    let (catalog_name, entries) = match &args.catalog {
        Some(path) => (
            path.display().to_string(),
            codaris_index::parse_catalog(&read(path)?)
                .map_err(|err| bad_line("catalogue", path, err))?,
        ),
        None => (
            "built-in catalog.jsonl".to_owned(),
            codaris_index::parse_catalog(EVAL_CATALOG)
                .map_err(|err| bad_line("catalogue", Path::new("catalog.jsonl"), err))?,
        ),
    };
    let sets: Vec<(String, Vec<QueryLine>)> = match &args.queries {
        Some(path) => {
            let queries = codaris_index::parse_queries(&read(path)?)
                .map_err(|err| bad_line("query file", path, err))?;
            if queries.iter().all(|q| q.relevant.is_empty()) {
                return Err(CliError::NothingToMeasure { path: path.clone() });
            }
            vec![(path.display().to_string(), queries)]
        }
        None => vec![
            ("dev".to_owned(), built_in("queries.jsonl", EVAL_QUERIES)?),
            (
                "holdout".to_owned(),
                built_in("holdout.jsonl", EVAL_HOLDOUT)?,
            ),
        ],
    };
    let catalog_size = entries.len();
    let baseline = args.baseline.then(|| Bm25::build(entries.clone()));
    let index = Index::build(entries);
    let mut searcher = Searcher::new();
    let results: Vec<SetResult> = sets
        .into_iter()
        .map(|(name, queries)| SetResult {
            index: evaluate_index(&index, &mut searcher, &queries),
            baseline: baseline.as_ref().map(|b| evaluate_baseline(b, &queries)),
            name,
        })
        .collect();

    if json {
        let sets: Vec<Value> = results.iter().map(SetResult::to_json).collect();
        output::json(&json!({
            "catalog": {"source": catalog_name, "entries": catalog_size},
            "sets": sets,
        }))?;
    } else {
        let blocks: Vec<String> = results
            .iter()
            .map(|set| set.table(&catalog_name, catalog_size))
            .collect();
        output::line(&blocks.join("\n\n"))?;
    }
    Ok(Outcome::Success)
}

fn built_in(name: &'static str, text: &str) -> Result<Vec<QueryLine>, CliError> {
    codaris_index::parse_queries(text).map_err(|err| bad_line("query file", Path::new(name), err))
}

/// One query set measured by the index and, when asked, by the baseline.
pub(super) struct SetResult {
    pub(super) name: String,
    pub(super) index: EvalReport,
    pub(super) baseline: Option<EvalReport>,
}

impl SetResult {
    pub(super) fn to_json(&self) -> Value {
        let report = |r: &EvalReport| json!({"overall": r.overall, "by_style": r.by_style});
        let mut value = json!({
            "name": self.name,
            "queries": self.index.overall.queries,
            "codaris_index": report(&self.index),
        });
        if let Some(baseline) = &self.baseline {
            value["baseline"] = report(baseline);
        }
        value
    }

    /// `recall@k` and MRR per style, the baseline's columns beside the index's.
    pub(super) fn table(&self, catalog: &str, catalog_size: usize) -> String {
        let mut lines = vec![format!(
            "{}: {} over {} ({catalog})",
            self.name,
            plural(self.index.overall.queries, "query", "queries"),
            plural(catalog_size, "entry", "entries"),
        )];
        let block = "recall@1  recall@3  recall@5     MRR";
        if self.baseline.is_some() {
            lines.push(format!("{:<18}{:<38}{}", "", "codaris-index", "plain BM25"));
            lines.push(format!("{:<12}{:>4}  {block}  {block}", "style", "n"));
        } else {
            lines.push(format!("{:<12}{:>4}  {block}", "style", "n"));
        }
        let mut row = |style: &str, metrics: &Metrics, baseline: Option<&Metrics>| {
            let mut line = format!("{style:<12}{:>4}  {}", metrics.queries, cells(metrics));
            if let Some(baseline) = baseline {
                line.push_str("  ");
                line.push_str(&cells(baseline));
            }
            lines.push(line);
        };
        let baseline = self.baseline.as_ref();
        row("overall", &self.index.overall, baseline.map(|b| &b.overall));
        for (style, metrics) in &self.index.by_style {
            row(style, metrics, baseline.and_then(|b| b.by_style.get(style)));
        }
        lines.join("\n")
    }
}

fn cells(m: &Metrics) -> String {
    format!(
        "{:>8.3}  {:>8.3}  {:>8.3}  {:>6.3}",
        m.recall_at_1, m.recall_at_3, m.recall_at_5, m.mrr
    )
}

pub(super) fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn non_empty(s: &str) -> Option<&str> {
    (!s.is_empty()).then_some(s)
}

fn kind_arg(kind: Option<&str>) -> Result<Option<KindFilter>, CliError> {
    kind.map(|word| {
        word.parse().map_err(|_| CliError::InvalidFlag {
            flag: "--kind",
            reason: format!("unknown kind `{word}`; use one of {KINDS}"),
        })
    })
    .transpose()
}

fn limit_arg(limit: Option<usize>) -> Result<usize, CliError> {
    match limit {
        None => Ok(DEFAULT_LIMIT),
        Some(0) => Err(CliError::InvalidFlag {
            flag: "--limit",
            reason: "must be at least 1".to_owned(),
        }),
        Some(n) => Ok(n),
    }
}

pub(super) fn read(path: &Path) -> Result<String, CliError> {
    std::fs::read_to_string(path).map_err(|source| CliError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// A catalogue or query file error, as one line naming the file and the line.
pub(super) fn bad_line(what: &'static str, path: &Path, err: IndexError) -> CliError {
    let (line, reason) = match err {
        IndexError::CatalogLine { line, source } | IndexError::QueryLine { line, source } => {
            (Some(line), json_reason(&source))
        }
        IndexError::EmptyName { line } => (Some(line), "the name is empty".to_owned()),
        IndexError::DuplicateName {
            line,
            name,
            first_line,
        } => (
            Some(line),
            format!("`{name}` is already defined on line {first_line}"),
        ),
        IndexError::ServerName { line, server } => (
            Some(line),
            format!("server `{server}` may not contain `__`"),
        ),
        other @ IndexError::UnknownKind { .. } => (None, other.to_string()),
    };
    CliError::BadLine {
        what,
        path: PathBuf::from(path),
        line,
        reason,
    }
}

/// serde's message without its position, which counts within the one JSON line, not the file.
fn json_reason(err: &serde_json::Error) -> String {
    let text = err.to_string();
    let position = format!(" at line {} column {}", err.line(), err.column());
    match text.strip_suffix(&position) {
        Some(reason) => format!("{reason} (column {})", err.column()),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_lines_name_the_file_and_the_line() {
        let err = codaris_index::parse_catalog(
            "{\"name\": \"a\", \"kind\": \"core\"}\n{\"name\": \"b\", \"kind\": \"tool\"}",
        )
        .err()
        .map(|err| bad_line("catalogue", Path::new("/tmp/c.jsonl"), err).to_string());
        assert_eq!(
            err.as_deref(),
            Some(
                "invalid catalogue /tmp/c.jsonl line 2: unknown variant `tool`, expected one of `core`, `mcp`, `skill`, `reference` (column 28)"
            )
        );
    }

    #[test]
    fn the_built_in_evaluation_set_parses() {
        assert!(codaris_index::parse_catalog(EVAL_CATALOG).is_ok_and(|c| c.len() >= 400));
        assert!(built_in("queries.jsonl", EVAL_QUERIES).is_ok_and(|q| q.len() >= 200));
        assert!(built_in("holdout.jsonl", EVAL_HOLDOUT).is_ok_and(|q| !q.is_empty()));
    }

    #[test]
    fn limits_and_kinds_are_checked() {
        assert!(matches!(
            limit_arg(Some(0)),
            Err(CliError::InvalidFlag { .. })
        ));
        assert_eq!(limit_arg(None).ok(), Some(DEFAULT_LIMIT));
        assert_eq!(kind_arg(Some("skill")).ok(), Some(Some(KindFilter::Skill)));
        let message = kind_arg(Some("tools")).err().map(|e| e.to_string());
        assert_eq!(
            message.as_deref(),
            Some(
                "invalid --kind: unknown kind `tools`; use one of any, tool, core, mcp, skill, reference"
            )
        );
    }
}
