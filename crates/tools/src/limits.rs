//! Output limits, applied to every tool result before the model sees it (built-in and MCP).

use crate::tool::{Content, ToolOutput};

/// `tools.output_limits` of the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputLimits {
    pub max_bytes: usize,
    pub max_lines: usize,
}

impl Default for OutputLimits {
    fn default() -> Self {
        Self {
            max_bytes: 64 * 1024,
            max_lines: 2000,
        }
    }
}

/// Cuts each text to the limits (at a character boundary, keeping whole lines where it can)
/// and says what was cut in a note the model reads.
pub fn apply_limits(output: ToolOutput, limits: OutputLimits) -> ToolOutput {
    let content = output
        .content
        .into_iter()
        .map(|content| match content {
            Content::Text(text) => Content::Text(limit_text(&text, limits)),
            image => image,
        })
        .collect();
    ToolOutput {
        content,
        session_cwd: output.session_cwd,
        leaves_plan_mode: output.leaves_plan_mode,
        switch_model: output.switch_model,
        question: output.question,
        spawn: output.spawn,
    }
}

/// One text cut to the limits, with the note; the text itself when it fits.
pub fn limit_text(text: &str, limits: OutputLimits) -> String {
    let total_lines = text.lines().count();
    let mut end = text.len();
    if total_lines > limits.max_lines
        && let Some((index, _)) = text
            .match_indices('\n')
            .nth(limits.max_lines.saturating_sub(1))
    {
        end = index + 1;
    }
    if end > limits.max_bytes {
        end = limits.max_bytes;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        if let Some(newline) = text[..end].rfind('\n') {
            end = newline + 1;
        }
    }
    if end >= text.len() {
        return text.to_owned();
    }
    let kept_lines = text[..end].lines().count();
    format!(
        "{}\n[output cut: showing {kept_lines} of {total_lines} lines, {end} of {} bytes; narrow the request (offset/limit, a more specific pattern) to see the rest]",
        text[..end].trim_end_matches('\n'),
        text.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(output: &ToolOutput) -> &str {
        match &output.content[0] {
            Content::Text(text) => text,
            Content::Image { .. } => "",
        }
    }

    #[test]
    fn short_output_is_untouched() {
        let output = apply_limits(ToolOutput::text("a\nb\n"), OutputLimits::default());
        assert_eq!(text(&output), "a\nb\n");
    }

    #[test]
    fn long_output_is_cut_with_a_note() {
        let long: String = (0..10).map(|i| format!("line {i}\n")).collect();
        let limits = OutputLimits {
            max_bytes: 1000,
            max_lines: 3,
        };
        let output = apply_limits(ToolOutput::text(long), limits);
        assert!(
            text(&output).starts_with("line 0\nline 1\nline 2\n[output cut: showing 3 of 10 lines")
        );
        let limits = OutputLimits {
            max_bytes: 10,
            max_lines: 100,
        };
        let output = apply_limits(ToolOutput::text("ééééééééééé"), limits);
        assert!(text(&output).contains("[output cut"), "{}", text(&output));
    }
}
