//! The daemon's log: stderr for a person or a service manager's journal, and a file in the
//! state directory for `codaris daemon logs`, in text or JSON lines, rotated daily.
//!
//! The file never holds a terminal escape or another control byte: its layer formats fields
//! with a formatter of its own (tracing-subscriber caches a span's formatted fields per
//! formatter type, so a file layer sharing the stderr layer's type would reuse the coloured
//! text), and its writer escapes whatever control bytes remain (a relayed line from an MCP
//! server's line is escaped there already, but a message may quote the model) as `\u001b`-style text, which reads the same in text and
//! is a valid escape inside a JSON string.
//!
//! Rotation is `tracing-appender`'s, at midnight UTC: the day's file is `codarisd.YYYY-MM-DD.log`
//! and `codarisd.log` is a symbolic link to it, so the path every reader knows stays the
//! current log. At most `daemon.log_max_files` dated files are kept, the oldest removed first.
//!
//! Non-goals: shipping logs anywhere (that is the operator's collector, or [`crate::server::telemetry`]
//! for traces), and filtering by anything but `RUST_LOG`.

use std::borrow::Cow;
use std::fmt;
use std::io::{self, Write};
use std::path::Path;

use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::format::{DefaultFields, Writer};
use tracing_subscriber::fmt::{FormatFields, MakeWriter};

use crate::config::logging::{LogFormat, LogSettings};

/// The file name every reader opens: a link to the current dated file.
pub const CURRENT_LOG: &str = "codarisd.log";
/// Dated files are `<prefix>.YYYY-MM-DD.<suffix>`.
const PREFIX: &str = "codarisd";
const SUFFIX: &str = "log";

/// The rotating file writer for `dir`, already escaping control bytes.
///
/// A `codarisd.log` that is a regular file (written before rotation existed) is kept as
/// `codarisd.before-rotation.log`, which rotation counts and in time removes, instead of being
/// replaced by the link.
pub fn file_writer(
    dir: &Path,
    settings: &LogSettings,
) -> Result<Escaped<tracing_appender::rolling::RollingFileAppender>, io::Error> {
    let current = dir.join(CURRENT_LOG);
    if std::fs::symlink_metadata(&current).is_ok_and(|meta| meta.file_type().is_file()) {
        std::fs::rename(&current, dir.join("codarisd.before-rotation.log"))?;
    }
    tracing_appender::rolling::RollingFileAppender::builder()
        .rotation(tracing_appender::rolling::Rotation::DAILY)
        .filename_prefix(PREFIX)
        .filename_suffix(SUFFIX)
        .max_log_files(settings.max_files)
        .latest_symlink(CURRENT_LOG)
        .build(dir)
        .map(Escaped)
        .map_err(io::Error::other)
}

/// Formats fields exactly as [`DefaultFields`] does, under a type of its own, so that the
/// fields it caches on a span are formatted for its own (plain) writer and never the ones the
/// coloured stderr layer cached.
#[derive(Debug, Default)]
pub struct PlainFields(DefaultFields);

impl<'writer> FormatFields<'writer> for PlainFields {
    fn format_fields<R: RecordFields>(&self, writer: Writer<'writer>, fields: R) -> fmt::Result {
        self.0.format_fields(writer, fields)
    }
}

/// A [`MakeWriter`] whose writers escape control bytes (see [`escape_controls`]).
#[derive(Debug)]
pub struct Escaped<M>(pub M);

impl<'a, M: MakeWriter<'a>> MakeWriter<'a> for Escaped<M> {
    type Writer = EscapingWriter<M::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        EscapingWriter(self.0.make_writer())
    }
}

/// Writes what it is given with control bytes escaped; one formatted event per `write`.
#[derive(Debug)]
pub struct EscapingWriter<W>(W);

impl<W: Write> Write for EscapingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write_all(&escape_controls(buf))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// `bytes` with every C0 control but newline and tab, DEL, and every C1 control (U+0080 to
/// U+009F, which some terminals obey like `ESC`) written as `\u00XX` text.
pub fn escape_controls(bytes: &[u8]) -> Cow<'_, [u8]> {
    let is_c1 = |at: usize| {
        bytes[at] == 0xc2 && bytes.get(at + 1).is_some_and(|b| (0x80..=0x9f).contains(b))
    };
    let needs = |at: usize| {
        let b = bytes[at];
        (b < 0x20 && b != b'\n' && b != b'\t') || b == 0x7f || is_c1(at)
    };
    if !(0..bytes.len()).any(needs) {
        return Cow::Borrowed(bytes);
    }
    let mut out = Vec::with_capacity(bytes.len() + 16);
    let mut at = 0;
    while at < bytes.len() {
        if is_c1(at) {
            out.extend_from_slice(format!("\\u{:04x}", bytes[at + 1]).as_bytes());
            at += 2;
        } else if needs(at) {
            out.extend_from_slice(format!("\\u{:04x}", bytes[at]).as_bytes());
            at += 1;
        } else {
            out.push(bytes[at]);
            at += 1;
        }
    }
    Cow::Owned(out)
}

/// Installs the daemon's subscriber: stderr, and `<state>/codarisd.log` as this module writes
/// it, at the level `RUST_LOG` names (default info); traces are exported when `[telemetry]`
/// names a collector, and the exporter returned is to be shut down after the runtime.
pub fn init(
    state_dir: &Path,
    settings: &LogSettings,
    telemetry: Option<&crate::config::telemetry::TelemetryConfig>,
) -> Option<crate::server::telemetry::Telemetry> {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;

    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colours only for a person at a terminal: a pipe (the CLI starting this daemon, a service
    // manager's journal) gets plain text.
    let stderr_layer = tracing_subscriber::fmt::layer()
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    let (file_layer, file_err) = match file_writer(state_dir, settings) {
        Ok(writer) => {
            let layer = match settings.format {
                LogFormat::Text => tracing_subscriber::fmt::layer()
                    .with_ansi(false)
                    .fmt_fields(PlainFields::default())
                    .with_writer(writer)
                    .boxed(),
                LogFormat::Json => tracing_subscriber::fmt::layer()
                    .json()
                    .with_ansi(false)
                    .with_writer(writer)
                    .boxed(),
            };
            (Some(layer), None)
        }
        Err(err) => (None, Some(err)),
    };
    let (exporter, exporter_err) = match telemetry.map(crate::server::telemetry::Telemetry::start) {
        Some(Ok(exporter)) => (Some(exporter), None),
        Some(Err(err)) => (None, Some(err)),
        None => (None, None),
    };
    tracing_subscriber::registry()
        .with(filter)
        .with(stderr_layer)
        .with(file_layer)
        .with(
            exporter
                .as_ref()
                .map(crate::server::telemetry::Telemetry::layer),
        )
        .init();
    if let Some(err) = file_err {
        tracing::warn!(dir = %state_dir.display(), %err, "cannot open the log file; logging to stderr only");
    }
    if let Some(err) = exporter_err {
        tracing::warn!(%err, "traces are not exported");
    }
    if let Some(config) = telemetry.filter(|_| exporter.is_some()) {
        tracing::info!(url = %config.shown_url(), service = %config.service_name, "exporting traces over OTLP");
    }
    exporter
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_bytes_become_text_and_the_rest_is_untouched() {
        let line = "plain line\twith tab\n".as_bytes();
        assert!(matches!(escape_controls(line), Cow::Borrowed(_)));
        let coloured = "\u{1b}[31mred\u{1b}[0m \u{9b}2J bell\u{7} del\u{7f} é\r\n";
        let escaped = escape_controls(coloured.as_bytes());
        assert_eq!(
            String::from_utf8(escaped.into_owned()).unwrap(),
            "\\u001b[31mred\\u001b[0m \\u009b2J bell\\u0007 del\\u007f é\\u000d\n"
        );
    }

    #[test]
    fn an_escaped_json_line_still_parses_and_holds_no_raw_control() {
        let value = serde_json::json!({"fields": {"message": "stderr: \u{1b}[1mbold \u{9b}x"}});
        let line = format!("{value}\n");
        let escaped = escape_controls(line.as_bytes()).into_owned();
        assert!(!escaped.iter().any(|b| *b == 0x1b || *b == 0x9b));
        let back: serde_json::Value = serde_json::from_slice(&escaped).unwrap();
        assert_eq!(back["fields"]["message"], "stderr: \u{1b}[1mbold \u{9b}x");
    }

    #[test]
    fn the_current_log_is_a_link_to_the_dated_file_and_an_old_one_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(CURRENT_LOG), "from before\n").unwrap();
        let writer = file_writer(dir.path(), &LogSettings::default()).unwrap();
        writer
            .make_writer()
            .write_all(b"new \x1b[1mline\n")
            .unwrap();
        let kept = std::fs::read_to_string(dir.path().join("codarisd.before-rotation.log"));
        assert_eq!(kept.unwrap(), "from before\n");
        let current = dir.path().join(CURRENT_LOG);
        assert!(
            std::fs::symlink_metadata(&current)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        let target = std::fs::read_link(&current).unwrap();
        let name = target.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with("codarisd.") && name.ends_with(".log"),
            "{name}"
        );
        assert_eq!(
            std::fs::read_to_string(&current).unwrap(),
            "new \\u001b[1mline\n"
        );
    }
}
