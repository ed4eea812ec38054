//! The value formats Nextflow writes in a trace: durations (`650ms`, `4.7s`, `1h 2m 3s`, `5
//! min`), memory (`1.2 GB`, `540 B`, `0`), percentages (`94.1%`) and `-` for "no value". The
//! raw mode (`trace.raw = true`) writes plain numbers (milliseconds, bytes), read the same way.

/// Nextflow's "no value" marker.
pub(crate) const NA: &str = "-";

/// A duration in milliseconds, from any of the forms `nextflow.util.Duration` prints or
/// parses: components `<number><unit>` separated by optional spaces, units `ms`/`s`/`m`/`h`/`d`
/// and their long names, the legacy `HH:MM:SS`, or a plain number of milliseconds.
pub fn parse_duration(text: &str) -> Option<u64> {
    let text = text.trim();
    if text.is_empty() || text == NA {
        return None;
    }
    if let Ok(ms) = text.parse::<u64>() {
        return Some(ms);
    }
    if let Some(ms) = legacy_hms(text) {
        return Some(ms);
    }
    let mut rest = text;
    let mut total = 0f64;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest.get(..digits)?.parse().ok()?;
        rest = rest.get(digits..)?.trim_start();
        let letters = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        let unit = rest.get(..letters)?;
        let factor = match unit {
            "ms" | "milli" | "millis" => 1.0,
            "s" | "sec" | "second" | "seconds" => 1_000.0,
            "m" | "min" | "minute" | "minutes" => 60_000.0,
            "h" | "hour" | "hours" => 3_600_000.0,
            "d" | "day" | "days" => 86_400_000.0,
            _ => return None,
        };
        total += number * factor;
        rest = rest.get(letters..)?.trim_start();
    }
    to_u64(total)
}

fn legacy_hms(text: &str) -> Option<u64> {
    let mut parts = text.split(':');
    let (h, m, s) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || [h, m, s].iter().any(|p| p.is_empty() || p.len() > 2) {
        return None;
    }
    let (h, m, s): (u64, u64, u64) = (h.parse().ok()?, m.parse().ok()?, s.parse().ok()?);
    Some(((h * 60 + m) * 60 + s) * 1_000)
}

/// A memory size in bytes: `0`, `540 B`, `193.5 KB`, `1.2 GB`, … (binary units, as
/// `nextflow.util.MemoryUnit` prints them), or a plain number of bytes.
pub fn parse_memory(text: &str) -> Option<u64> {
    let text = text.trim();
    if text.is_empty() || text == NA {
        return None;
    }
    if let Ok(bytes) = text.parse::<u64>() {
        return Some(bytes);
    }
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let number: f64 = text.get(..split)?.parse().ok()?;
    let unit = text.get(split..)?.trim();
    let power = match unit.to_ascii_uppercase().as_str() {
        "B" | "" => 0,
        "K" | "KB" => 1,
        "M" | "MB" => 2,
        "G" | "GB" => 3,
        "T" | "TB" => 4,
        "P" | "PB" => 5,
        "E" | "EB" => 6,
        _ => return None,
    };
    to_u64(number * 1024f64.powi(power))
}

/// A percentage as written (`94.1%`, or a plain number in raw mode).
pub fn parse_percent(text: &str) -> Option<f64> {
    let text = text.trim();
    if text == NA {
        return None;
    }
    text.strip_suffix('%')
        .unwrap_or(text)
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
}

fn to_u64(value: f64) -> Option<u64> {
    // A value past u64 (zettabytes, a forged row) saturates rather than wraps.
    (value.is_finite() && value >= 0.0).then(|| value.round().min(u64::MAX as f64) as u64)
}

/// A duration the way Nextflow prints one (`650ms`, `4.7s`, `1h 2m 3s`), so answers read
/// like the trace the person knows.
pub fn format_duration(ms: u64) -> String {
    if ms < 1_000 {
        return format!("{ms}ms");
    }
    if ms < 60_000 {
        let tenths = (ms + 50) / 100;
        return if tenths.is_multiple_of(10) {
            format!("{}s", tenths / 10)
        } else {
            format!("{}.{}s", tenths / 10, tenths % 10)
        };
    }
    let secs = (ms + 500) / 1_000;
    let (d, h, m, s) = (secs / 86_400, secs / 3_600 % 24, secs / 60 % 60, secs % 60);
    let parts: Vec<String> = [(d, "d"), (h, "h"), (m, "m"), (s, "s")]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, u)| format!("{n}{u}"))
        .collect();
    parts.join(" ")
}

/// A size the way Nextflow prints one (`29.8 MB`, `0`).
pub fn format_memory(bytes: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KB", "MB", "GB", "TB", "PB", "EB"];
    if bytes == 0 {
        return "0".to_string();
    }
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    let rounded = (value * 10.0).round() / 10.0;
    let text = if rounded.fract() == 0.0 {
        format!("{rounded:.0}")
    } else {
        format!("{rounded:.1}")
    };
    format!("{text} {}", UNITS.get(unit).copied().unwrap_or("B"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_every_printed_form() {
        assert_eq!(parse_duration("650ms"), Some(650));
        assert_eq!(parse_duration("4.7s"), Some(4_700));
        assert_eq!(parse_duration("48m 31s"), Some(2_911_000));
        assert_eq!(parse_duration("1h 33m 30s"), Some(5_610_000));
        assert_eq!(parse_duration("1d 2h"), Some(93_600_000));
        assert_eq!(parse_duration("5 min"), Some(300_000));
        assert_eq!(parse_duration("01:02:03"), Some(3_723_000));
        assert_eq!(parse_duration("1234"), Some(1234));
        assert_eq!(parse_duration("-"), None);
        assert_eq!(parse_duration("3 parsecs"), None);
        assert_eq!(parse_duration("m"), None);
    }

    #[test]
    fn memory_in_binary_units() {
        assert_eq!(parse_memory("0"), Some(0));
        assert_eq!(parse_memory("540 B"), Some(540));
        assert_eq!(parse_memory("1 MB"), Some(1_048_576));
        assert_eq!(parse_memory("1.5 GB"), Some(1_610_612_736));
        assert_eq!(parse_memory("1 TB"), Some(1_099_511_627_776));
        assert_eq!(parse_memory("9999999 EB"), Some(u64::MAX));
        assert_eq!(parse_memory("-"), None);
        assert_eq!(parse_memory("lots"), None);
    }

    #[test]
    fn printing_matches_nextflow() {
        assert_eq!(format_duration(650), "650ms");
        assert_eq!(format_duration(4_700), "4.7s");
        assert_eq!(format_duration(5_000), "5s");
        assert_eq!(format_duration(2_911_000), "48m 31s");
        assert_eq!(format_duration(93_600_000), "1d 2h");
        assert_eq!(format_memory(0), "0");
        assert_eq!(format_memory(31_247_564), "29.8 MB");
        assert_eq!(format_memory(540), "540 B");
        assert_eq!(parse_percent("94.1%"), Some(94.1));
        assert_eq!(parse_percent("-"), None);
    }
}
