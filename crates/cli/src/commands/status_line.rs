//! The live status line of `codaris run` and `codaris chat` in text mode: the tool running and
//! how long it has run, the last line a running command printed, a model API being retried and
//! the wait before the retry.
//!
//! It is drawn (by `indicatif`) only when standard error or standard output is a terminal, on
//! the first of the two that is; every ordinary line is printed through [`StatusLine::print`]
//! (to the stream the caller chose for its lines), which clears it first and draws it again
//! after, so it never mixes with what stays on the screen. Under `--json`, or with neither
//! stream a terminal, it draws nothing at all.

use std::io::IsTerminal;
use std::time::Duration;

use codaris_proto::v1;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::error::CliError;
use crate::output;

/// How often the spinner and the elapsed time are redrawn.
const TICK: Duration = Duration::from_millis(120);

/// The status line; shows nothing when it is off.
#[derive(Debug)]
pub struct StatusLine {
    /// Where it draws, when on.
    target: Option<Target>,
    /// The line on screen now.
    bar: Option<ProgressBar>,
    /// The tool running, kept while the line is off the screen for a card.
    tool: Option<String>,
    /// Where [`StatusLine::print`] writes the ordinary lines.
    lines: output::Stream,
}

#[derive(Debug, Clone, Copy)]
enum Target {
    Stderr,
    Stdout,
}

impl StatusLine {
    /// On when `wanted` (text mode) and standard error or standard output is a terminal;
    /// ordinary lines go to `lines`.
    pub fn new(wanted: bool, lines: output::Stream) -> Self {
        let target = if !wanted {
            None
        } else if std::io::stderr().is_terminal() {
            Some(Target::Stderr)
        } else if std::io::stdout().is_terminal() {
            Some(Target::Stdout)
        } else {
            None
        };
        Self {
            target,
            bar: None,
            tool: None,
            lines,
        }
    }

    /// Whether it draws at all: when it does not, what it would show is worth a line instead.
    pub fn is_on(&self) -> bool {
        self.target.is_some()
    }

    /// Starts showing `what` with a spinner and the time since now.
    fn start(&mut self, what: String) {
        self.clear();
        let Some(target) = self.target else { return };
        let draw = match target {
            Target::Stderr => ProgressDrawTarget::stderr(),
            Target::Stdout => ProgressDrawTarget::stdout(),
        };
        let bar = ProgressBar::with_draw_target(None, draw);
        let style = ProgressStyle::with_template("{spinner} {prefix} · {elapsed} {wide_msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        bar.set_style(style);
        bar.set_prefix(what);
        bar.enable_steady_tick(TICK);
        self.bar = Some(bar);
    }

    /// A tool call began.
    pub fn tool_started(&mut self, tool: &str) {
        self.tool = Some(tool.to_owned());
        self.start(tool.to_owned());
    }

    /// The tool call ended (or the turn did): the line goes, and nothing comes back for it.
    pub fn tool_finished(&mut self) {
        self.tool = None;
        self.clear();
    }

    /// Shows the running tool again after the line was taken off for a card.
    pub fn resume(&mut self) {
        if self.bar.is_none()
            && let Some(tool) = self.tool.clone()
        {
            self.start(tool);
        }
    }

    /// A running tool reported a line (a command's latest output); the elapsed time goes on.
    pub fn tool_output(&mut self, tool: &str, line: &str) {
        if self.bar.is_none() {
            self.tool_started(tool);
        }
        if let Some(bar) = &self.bar {
            bar.set_message(format!("· {line}"));
        }
    }

    /// The model API is being retried (between rounds: no tool runs).
    pub fn provider_retry(&mut self, retry: &v1::ProviderRetry) {
        self.tool = None;
        self.start(retry_line(retry));
    }

    /// Takes the line off the screen; [`StatusLine::resume`] brings back a running tool's.
    pub fn clear(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }

    /// Prints an ordinary line with the status line out of the way.
    pub fn print(&self, text: &str) -> Result<(), CliError> {
        match &self.bar {
            Some(bar) => bar.suspend(|| output::line_to(self.lines, text)),
            None => output::line_to(self.lines, text),
        }
    }

    /// [`StatusLine::print`] for a line the CLI coloured itself ([`output::styled`]).
    pub fn print_styled(&self, text: &str) -> Result<(), CliError> {
        match &self.bar {
            Some(bar) => bar.suspend(|| output::styled_to(self.lines, text)),
            None => output::styled_to(self.lines, text),
        }
    }
}

impl Drop for StatusLine {
    fn drop(&mut self) {
        self.clear();
    }
}

/// "model API busy (429), retry 2/5 in 4 s".
pub fn retry_line(retry: &v1::ProviderRetry) -> String {
    let seconds = retry.delay_ms.div_ceil(1000);
    format!(
        "model API {}, retry {}/{} in {seconds} s",
        retry.reason, retry.attempt, retry.max_attempts
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_reads_as_what_failed_which_retry_and_how_long_the_wait_is() {
        let retry = v1::ProviderRetry {
            attempt: 2,
            max_attempts: 5,
            delay_ms: 3_500,
            reason: "busy (429)".to_owned(),
        };
        assert_eq!(retry_line(&retry), "model API busy (429), retry 2/5 in 4 s");
    }

    #[test]
    fn off_it_draws_nothing_and_prints_plain_lines() {
        let mut status = StatusLine::new(false, output::Stream::Stdout);
        assert!(!status.is_on());
        status.tool_started("run_command");
        status.tool_output("run_command", "compiling");
        assert!(status.bar.is_none());
        status.resume();
        assert!(status.bar.is_none());
        status.tool_finished();
        assert!(status.tool.is_none());
    }
}
