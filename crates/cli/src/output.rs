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

/// `812 B`, `1.2 KiB`, `3.4 MiB`: a file's size for people.
pub fn size(bytes: u64) -> String {
    #[expect(
        clippy::cast_precision_loss,
        reason = "a size shown to one decimal place"
    )]
    let value = bytes as f64;
    if bytes < 1024 {
        format!("{bytes} B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1} KiB", value / 1024.0)
    } else {
        format!("{:.1} MiB", value / (1024.0 * 1024.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(size(812), "812 B");
        assert_eq!(size(1229), "1.2 KiB");
        assert_eq!(size(3 * 1024 * 1024 + 400 * 1024), "3.4 MiB");
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(999), "0s");
        assert_eq!(duration(12_000), "12s");
        assert_eq!(duration(245_000), "4m 05s");
        assert_eq!(duration(3 * 3600 * 1000 + 120_000), "3h 02m");
    }
}
