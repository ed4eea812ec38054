//! `codaris tools eval --from-ledger`: a person's own evaluation set, mined from the
//! conversations their daemon stored beside its ledger (`<state>/ledger.conversations`).
//!
//! A search the model followed with a call to one of its hits is evidence of what that search
//! was for: the query becomes a line of the query-file format, its acceptable answer the name
//! called. Only a call the search could have led to counts: in the same session, from a later
//! answer of the model than the search's (a call made beside the search was chosen before its
//! hits were seen), within the search's binding window (its turn and the
//! [`BINDING_TURNS`]` - 1` after it, the turns its hits stay bound, counted by the person's
//! messages as the agent counts them).
//!
//! The hits of a search are the names its stored answer lists (one `- NAME [kind] — …` line
//! each, after the `Matches for "QUERY":` line, the shape `codaris-index` renders as a
//! contract) and the names the result bound (`bound`, kept with every stored result). Nothing
//! in a conversation is interpreted beyond that: the query is model-written text, used only as
//! a query; a called name counts only when it is one of the search's hits.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use codaris_agent::{BINDING_TURNS, Conversation, Event, SEARCH_TOOLS};
use codaris_index::{KindFilter, QueryLine};
use codaris_ledger::conversations_dir;
use serde_json::Value;

use crate::error::CliError;

/// The `style` of every mined query, so a report tells them from written ones.
pub const LEDGER_STYLE: &str = "ledger";

/// The longest name taken from a search's answer; longer is not a tool's name.
const MAX_NAME_CHARS: usize = 200;

/// What mining found: the query lines, and how much was read to find them.
#[derive(Debug, Default)]
pub struct Mined {
    /// One line per distinct query (and kind), its called hits as the acceptable answers, in
    /// the order first seen.
    pub lines: Vec<QueryLine>,
    /// Conversations read.
    pub sessions: usize,
    /// `search_tools` results read (answered, not refused).
    pub searches: usize,
    /// Conversations that could not be read, each with why; the rest are still mined.
    pub unreadable: Vec<Unreadable>,
}

/// A stored conversation that could not be read.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Unreadable {
    pub session: String,
    pub reason: String,
}

/// A search whose hits are still bound: the query line it would give, and from where.
struct Open {
    query: String,
    kind: KindFilter,
    hits: Vec<String>,
    /// The turn it was made in (person's messages seen before it).
    turn: usize,
    /// The model's answer it was made in.
    answer: usize,
}

/// Accumulates query lines across conversations: a query (with its kind) met again, in the
/// same session or another, adds its called names to the line it already has.
#[derive(Debug, Default)]
pub struct Miner {
    mined: Mined,
    at: HashMap<(String, KindFilter), usize>,
}

impl Miner {
    /// Mines one conversation's events.
    pub fn conversation(&mut self, events: &[Event]) {
        self.mined.sessions += 1;
        let mut turn = 0usize;
        let mut answer = 0usize;
        // The calls of the latest answer, by id: a result names its call only by id.
        let mut calls: HashMap<&str, (&str, &Value)> = HashMap::new();
        let mut open: Vec<Open> = Vec::new();
        for event in events {
            match event {
                Event::User { .. } => {
                    turn += 1;
                    open.retain(|search| turn - search.turn < BINDING_TURNS);
                }
                Event::Assistant { calls: made, .. } => {
                    answer += 1;
                    calls = made
                        .iter()
                        .map(|call| (call.id.as_str(), (call.name.as_str(), &call.arguments)))
                        .collect();
                }
                Event::ToolCall { id } => {
                    let Some(&(name, _)) = calls.get(id.as_str()) else {
                        continue;
                    };
                    if name == SEARCH_TOOLS {
                        continue;
                    }
                    for search in &open {
                        if search.answer < answer && search.hits.iter().any(|hit| hit == name) {
                            self.add(&search.query, search.kind, name);
                        }
                    }
                }
                Event::ToolResult {
                    id,
                    tool,
                    output,
                    bound,
                    is_error,
                    ..
                } if tool == SEARCH_TOOLS && !is_error => {
                    let Some(&(_, args)) = calls.get(id.as_str()) else {
                        continue;
                    };
                    self.mined.searches += 1;
                    if let Some(search) = searched(args, output, bound, turn, answer) {
                        open.push(search);
                    }
                }
                Event::ToolResult { .. } | Event::Compaction(_) => {}
            }
        }
    }

    /// A conversation that could not be read, reported and skipped.
    pub fn unreadable(&mut self, session: String, reason: String) {
        self.mined.unreadable.push(Unreadable { session, reason });
    }

    pub fn finish(self) -> Mined {
        self.mined
    }

    fn add(&mut self, query: &str, kind: KindFilter, name: &str) {
        let key = (query.to_owned(), kind);
        let at = match self.at.get(&key) {
            Some(&at) => at,
            None => {
                self.at.insert(key, self.mined.lines.len());
                self.mined.lines.push(QueryLine {
                    query: query.to_owned(),
                    kind,
                    style: Some(LEDGER_STYLE.to_owned()),
                    relevant: Vec::new(),
                });
                self.mined.lines.len() - 1
            }
        };
        if let Some(line) = self.mined.lines.get_mut(at)
            && !line.relevant.iter().any(|known| known == name)
        {
            line.relevant.push(name.to_owned());
        }
    }
}

/// The search a `search_tools` result answered, with its hits; `None` when its arguments are
/// not a search the index would run (no query, an unknown kind, nothing but spaces).
fn searched(
    args: &Value,
    output: &str,
    bound: &[String],
    turn: usize,
    answer: usize,
) -> Option<Open> {
    let query = args.get("query")?.as_str()?.trim();
    if query.is_empty() {
        return None;
    }
    let kind = match args.get("kind").and_then(Value::as_str) {
        None => KindFilter::Any,
        Some(word) => word.parse().ok()?,
    };
    let mut hits = listed_hits(query, output);
    for name in bound {
        if is_name(name) && !hits.contains(name) {
            hits.push(name.clone());
        }
    }
    Some(Open {
        query: query.to_owned(),
        kind,
        hits,
        turn,
        answer,
    })
}

/// The names on a search answer's hit lines. The `Matches for` line quotes the query, which
/// the model wrote and may hold line breaks and text shaped like a hit line, so it is stripped
/// whole (as rendered from this very query) before any line is read; descriptions are rendered
/// on one line. An answer of another shape lists nothing.
fn listed_hits(query: &str, output: &str) -> Vec<String> {
    let header = format!("Matches for \"{query}\":\n");
    let Some(body) = output.strip_prefix(&header) else {
        return Vec::new();
    };
    body.lines()
        .map_while(|line| line.strip_prefix("- "))
        .filter_map(|line| line.split_once(" [").map(|(name, _)| name))
        .filter(|name| is_name(name))
        .map(str::to_owned)
        .collect()
}

/// Whether `name` can be a tool's name: short, and nothing a terminal or a line reader could
/// take for something else.
fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && !name.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// Mines every conversation stored beside the ledger at `ledger`, in session order. A missing
/// ledger is an error; a ledger with no conversations yet mines nothing. Only regular files
/// named `<session>.json` are read (a save in progress is hidden, `.<id>.<n>.partial`).
pub fn mine(ledger: &Path) -> Result<Mined, CliError> {
    if !ledger.exists() {
        return Err(CliError::NoLedgerToMine {
            path: ledger.to_path_buf(),
        });
    }
    let dir = conversations_dir(ledger);
    let mut miner = Miner::default();
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(miner.finish()),
        Err(source) => return Err(CliError::Read { path: dir, source }),
    };
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| CliError::Read {
            path: dir.clone(),
            source,
        })?;
        let name = entry.file_name();
        let Some(session) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
            continue;
        };
        // Never follow a link out of the state directory, nor read a directory or a device.
        let regular = entry.file_type().is_ok_and(|kind| kind.is_file());
        if session.is_empty() || session.starts_with('.') || !regular {
            continue;
        }
        files.push((session.to_owned(), entry.path()));
    }
    files.sort();
    for (session, path) in files {
        let bytes = std::fs::read(&path).map_err(|source| CliError::Read {
            path: path.clone(),
            source,
        })?;
        match serde_json::from_slice::<Conversation>(&bytes) {
            Ok(conversation) => miner.conversation(conversation.events()),
            Err(err) => miner.unreadable(session, err.to_string()),
        }
    }
    Ok(miner.finish())
}

#[cfg(test)]
#[path = "tools_ledger_tests.rs"]
mod tests;
