//! `daemon.log_format` and `daemon.log_max_files`: how the log file is written and kept.

use crate::error::ConfigError;

/// How many dated files are kept when `daemon.log_max_files` is unset: a week.
pub const DEFAULT_LOG_MAX_FILES: usize = 7;
/// The largest `daemon.log_max_files` accepted: about three years of days.
pub const MAX_LOG_MAX_FILES: usize = 1000;

/// `daemon.log_format`: how the file's lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// tracing-subscriber's plain text, one event a line.
    #[default]
    Text,
    /// One JSON object a line (`timestamp`, `level`, `fields`, `target`, `span`, `spans`).
    Json,
}

/// How the log file is written and kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogSettings {
    pub format: LogFormat,
    /// Dated files kept, the current one included.
    pub max_files: usize,
}

impl Default for LogSettings {
    fn default() -> Self {
        Self {
            format: LogFormat::Text,
            max_files: DEFAULT_LOG_MAX_FILES,
        }
    }
}

/// Resolves `daemon.log_format` and `daemon.log_max_files`; `origin` names a key for an error.
pub fn resolve(
    format: Option<&str>,
    max_files: Option<usize>,
    origin: &dyn Fn(&str) -> String,
) -> Result<LogSettings, ConfigError> {
    let format = match format.map(str::trim) {
        None | Some("text") => LogFormat::Text,
        Some("json") => LogFormat::Json,
        Some(other) => {
            return Err(ConfigError::Invalid {
                key: origin("daemon.log_format"),
                reason: format!("must be `text` or `json`, not `{other}`"),
            });
        }
    };
    let max_files = match max_files {
        None => DEFAULT_LOG_MAX_FILES,
        Some(n @ 1..=MAX_LOG_MAX_FILES) => n,
        Some(n) => {
            return Err(ConfigError::Invalid {
                key: origin("daemon.log_max_files"),
                reason: format!("must be from 1 to {MAX_LOG_MAX_FILES}, not {n}"),
            });
        }
    };
    Ok(LogSettings { format, max_files })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_resolve_with_defaults_and_refuse_nonsense() {
        let origin = |key: &str| format!("`{key}`");
        assert_eq!(
            resolve(None, None, &origin).unwrap(),
            LogSettings::default()
        );
        assert_eq!(
            resolve(Some("json"), Some(3), &origin).unwrap(),
            LogSettings {
                format: LogFormat::Json,
                max_files: 3
            }
        );
        let bad = resolve(Some("xml"), None, &origin).unwrap_err().to_string();
        assert_eq!(
            bad,
            "invalid configuration: `daemon.log_format` must be `text` or `json`, not `xml`"
        );
        assert!(resolve(None, Some(0), &origin).is_err());
    }
}
