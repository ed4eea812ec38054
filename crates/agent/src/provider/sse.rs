//! A server-sent-events decoder: bytes in, whole events out. Pure, no I/O.
//!
//! Lines end with `\n` or `\r\n` (what both APIs send). `data:` lines of one event are joined with
//! `\n`, comments (`:` lines) and unknown fields are skipped, a blank line dispatches the event.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field, when there was one.
    pub(crate) event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub(crate) data: String,
}

/// Why the bytes are not an event stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SseError {
    /// A line was not UTF-8.
    NotUtf8,
    /// A line grew past the limit without ending.
    LineTooLong(usize),
}

impl std::fmt::Display for SseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotUtf8 => f.write_str("an event line is not UTF-8"),
            Self::LineTooLong(limit) => write!(f, "an event line is longer than {limit} bytes"),
        }
    }
}

/// The longest line accepted; a server that never ends a line is an error, not a memory leak.
const MAX_LINE: usize = 16 * 1024 * 1024;

/// Decodes a byte stream into events, keeping the partial line between chunks.
#[derive(Debug, Default)]
pub(crate) struct SseDecoder {
    buffer: Vec<u8>,
    event: Option<String>,
    data: Option<String>,
    started: bool,
}

impl SseDecoder {
    /// Feeds a chunk; returns the events it completed.
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, SseError> {
        let mut buffer = std::mem::take(&mut self.buffer);
        buffer.extend_from_slice(chunk);
        let mut events = Vec::new();
        let mut start = 0;
        while let Some(offset) = buffer[start..].iter().position(|&b| b == b'\n') {
            let end = start + offset;
            let mut line = &buffer[start..end];
            if let Some(stripped) = line.strip_suffix(b"\r") {
                line = stripped;
            }
            if !self.started {
                self.started = true;
                line = line.strip_prefix("\u{feff}".as_bytes()).unwrap_or(line);
            }
            let line = std::str::from_utf8(line).map_err(|_| SseError::NotUtf8)?;
            if let Some(event) = self.line(line) {
                events.push(event);
            }
            start = end + 1;
        }
        buffer.drain(..start);
        if buffer.len() > MAX_LINE {
            return Err(SseError::LineTooLong(MAX_LINE));
        }
        self.buffer = buffer;
        Ok(events)
    }

    /// The stream ended: an event whose lines were complete but that lacked its blank line is
    /// dispatched (some servers end that way); a partial line is dropped.
    pub(crate) fn finish(&mut self) -> Option<SseEvent> {
        self.buffer.clear();
        self.dispatch()
    }

    fn line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        let data = self.data.take()?;
        Some(SseEvent { event, data })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut decoder = SseDecoder::default();
        let mut events = Vec::new();
        for chunk in chunks {
            events.extend(decoder.push(chunk).unwrap_or_default());
        }
        events.extend(decoder.finish());
        events
    }

    #[test]
    fn events_split_across_chunks_at_any_byte_decode_the_same() {
        let text = b"event: ping\ndata: {}\n\n: comment\r\nevent: message_stop\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n";
        let whole = decode_all(&[text]);
        assert_eq!(
            whole,
            vec![
                SseEvent {
                    event: Some("ping".into()),
                    data: "{}".into()
                },
                SseEvent {
                    event: Some("message_stop".into()),
                    data: "{\"a\":\n1}".into()
                },
            ]
        );
        for cut in 0..text.len() {
            let (a, b) = text.split_at(cut);
            assert_eq!(decode_all(&[a, b]), whole, "cut at {cut}");
        }
    }

    #[test]
    fn data_without_event_name_and_final_event_without_blank_line() {
        let events = decode_all(&[b"data: [DONE]\n"]);
        assert_eq!(
            events,
            vec![SseEvent {
                event: None,
                data: "[DONE]".into()
            }]
        );
    }

    #[test]
    fn a_partial_line_at_the_end_is_dropped() {
        assert_eq!(decode_all(&[b"data: {\"cho"]), Vec::new());
    }

    #[test]
    fn an_event_without_data_dispatches_nothing() {
        assert_eq!(decode_all(&[b"event: x\n\n"]), Vec::new());
    }

    #[test]
    fn invalid_utf8_is_an_error() {
        let mut decoder = SseDecoder::default();
        assert_eq!(decoder.push(b"data: \xff\n"), Err(SseError::NotUtf8));
    }
}
