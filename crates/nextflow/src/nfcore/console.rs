//! nf-core's console log, read back: rich's log lines look like `ERROR    message`, with the
//! level padded to eight characters and continuation lines indented by nine spaces.

/// One log record: its level and its lines (the first without the level, the rest with the
/// indentation removed; trailing padding trimmed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord {
    pub level: Level,
    pub lines: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Debug,
    Info,
    Warning,
    Error,
    Critical,
}

impl LogRecord {
    /// The record's first line without rich's `[✓]`/`[✗]`/`[!]` mark.
    pub fn headline(&self) -> &str {
        let first = self.lines.first().map(String::as_str).unwrap_or("");
        strip_mark(first)
    }

    /// The lines up to the first blank one, as one sentence.
    pub fn summary(&self) -> String {
        let mut parts = vec![self.headline().to_owned()];
        parts.extend(
            self.lines
                .iter()
                .skip(1)
                .take_while(|line| !line.trim().is_empty())
                .map(|line| line.trim().to_owned()),
        );
        parts.retain(|p| !p.is_empty());
        parts.join(" ")
    }
}

fn strip_mark(line: &str) -> &str {
    let line = line.trim();
    for mark in ["[✓]", "[✗]", "[!]", "[?]"] {
        if let Some(rest) = line.strip_prefix(mark) {
            return rest.trim_start();
        }
    }
    line
}

fn level_of(word: &str) -> Option<Level> {
    match word {
        "DEBUG" => Some(Level::Debug),
        "INFO" => Some(Level::Info),
        "WARNING" => Some(Level::Warning),
        "ERROR" => Some(Level::Error),
        "CRITICAL" => Some(Level::Critical),
        _ => None,
    }
}

/// The log records in `text`; lines before the first record (the banner) are dropped.
pub fn records(text: &str) -> Vec<LogRecord> {
    let mut out: Vec<LogRecord> = Vec::new();
    for raw in text.lines() {
        let line = raw.trim_end();
        let word = line.split(' ').next().unwrap_or("");
        if let Some(level) = level_of(word) {
            let rest = line[word.len()..].trim_start();
            out.push(LogRecord {
                level,
                lines: vec![rest.to_owned()],
            });
        } else if let Some(last) = out.last_mut() {
            // rich indents continuations by the level column; deeper indentation is the
            // message's own and kept.
            let text = line.strip_prefix("         ").unwrap_or(line.trim_start());
            last.lines.push(text.to_owned());
        }
    }
    // Blank lines at the end of a record are padding, not content.
    for record in &mut out {
        while record.lines.last().is_some_and(|l| l.trim().is_empty()) {
            record.lines.pop();
        }
    }
    out
}

/// The records at `ERROR` or `CRITICAL` level.
pub fn error_blocks(text: &str) -> Vec<LogRecord> {
    records(text)
        .into_iter()
        .filter(|r| r.level >= Level::Error)
        .collect()
}

/// The sentence that best says why a run failed: its first error record, else the last
/// non-empty line it wrote to stderr, else to stdout.
pub fn failure_line(stdout: &str, stderr: &str) -> String {
    if let Some(record) = error_blocks(stdout)
        .into_iter()
        .chain(error_blocks(stderr))
        .next()
    {
        return format!("ERROR {}", record.summary());
    }
    [stderr, stdout]
        .iter()
        .find_map(|text| {
            text.lines()
                .rev()
                .map(str::trim)
                .find(|line| !line.is_empty())
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "it printed nothing".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_records_with_continuations() {
        let text = "\n  banner\nINFO     [✓] Fine   \nERROR    [✗] Broken:\n          detail one\n\n         more\nWARNING  careful\n";
        let all = records(text);
        assert_eq!(all.len(), 3);
        assert_eq!(all[1].headline(), "Broken:");
        assert_eq!(all[1].summary(), "Broken: detail one");
        assert_eq!(failure_line(text, ""), "ERROR Broken: detail one");
    }

    #[test]
    fn without_an_error_record_the_last_line_is_the_reason() {
        assert_eq!(
            failure_line("", "Traceback\nKeyError: 'x'\n\n"),
            "KeyError: 'x'"
        );
        assert_eq!(failure_line("", ""), "it printed nothing");
    }
}
