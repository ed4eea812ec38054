//! Writing to stdout so that a closed pipe ends the program quietly instead of panicking.

use std::io::Write;

use crate::error::CliError;

/// Writes `text` and a newline to stdout.
pub fn line(text: &str) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")?;
    out.flush()?;
    Ok(())
}

/// Writes one JSON value as a line.
pub fn json(value: &serde_json::Value) -> Result<(), CliError> {
    line(&value.to_string())
}

/// `3h 02m`, `4m 05s`, `12s`: uptime for people.
pub fn duration(ms: u64) -> String {
    let secs = ms / 1000;
    let (h, m, s) = (secs / 3600, (secs / 60) % 60, secs % 60);
    if h > 0 {
        format!("{h}h {m:02}m")
    } else if m > 0 {
        format!("{m}m {s:02}s")
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(999), "0s");
        assert_eq!(duration(12_000), "12s");
        assert_eq!(duration(245_000), "4m 05s");
        assert_eq!(duration(3 * 3600 * 1000 + 120_000), "3h 02m");
    }
}
