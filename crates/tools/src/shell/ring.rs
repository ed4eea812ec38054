//! A bounded buffer keeping the most recent output of a stream.
//!
//! A long build prints far more than any model should read; what matters is the end (the
//! error, the summary), so the oldest bytes go first and the count of what went is kept.

use std::collections::VecDeque;

#[derive(Debug)]
pub(crate) struct Ring {
    bytes: VecDeque<u8>,
    capacity: usize,
    dropped: u64,
}

impl Ring {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            bytes: VecDeque::new(),
            capacity,
            dropped: 0,
        }
    }

    pub(crate) fn push(&mut self, chunk: &[u8]) {
        let keep = chunk.len().min(self.capacity);
        let skipped = chunk.len() - keep;
        let overflow = (self.bytes.len() + keep).saturating_sub(self.capacity);
        self.bytes.drain(..overflow);
        self.bytes.extend(&chunk[skipped..]);
        self.dropped += (skipped + overflow) as u64;
    }

    /// The buffered text (invalid UTF-8 replaced), at most `max_bytes` from its end and, when
    /// `tail_lines` is given, only that many last lines. Returns the text and how many bytes
    /// of the whole stream are not in it.
    pub(crate) fn tail(&self, max_bytes: usize, tail_lines: Option<usize>) -> (String, u64) {
        let (front, back) = self.bytes.as_slices();
        let mut all = Vec::with_capacity(self.bytes.len());
        all.extend_from_slice(front);
        all.extend_from_slice(back);
        let mut start = all.len().saturating_sub(max_bytes);
        if let Some(lines) = tail_lines {
            // The start of the `lines`-th line from the end; a final newline ends a line
            // rather than opening an empty one.
            let body = all.strip_suffix(b"\n").unwrap_or(&all);
            let line_start = body
                .iter()
                .enumerate()
                .rev()
                .filter(|(_, byte)| **byte == b'\n')
                .nth(lines.saturating_sub(1))
                .map_or(0, |(index, _)| index + 1);
            start = start.max(if lines == 0 { all.len() } else { line_start });
        }
        let text = String::from_utf8_lossy(&all[start..]).into_owned();
        (text, self.dropped + start as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_most_recent_bytes() {
        let mut ring = Ring::new(8);
        ring.push(b"hello ");
        ring.push(b"world");
        assert_eq!(ring.tail(100, None), ("lo world".to_owned(), 3));
        ring.push(b"0123456789abc");
        assert_eq!(ring.tail(100, None), ("56789abc".to_owned(), 16));
    }

    #[test]
    fn tails_by_lines_and_bytes() {
        let mut ring = Ring::new(1000);
        ring.push(b"a\nb\nc\nd\n");
        assert_eq!(ring.tail(1000, Some(2)), ("c\nd\n".to_owned(), 4));
        assert_eq!(ring.tail(1000, Some(10)), ("a\nb\nc\nd\n".to_owned(), 0));
        assert_eq!(ring.tail(3, None), ("\nd\n".to_owned(), 5));
        assert_eq!(ring.tail(1000, Some(0)), (String::new(), 8));
    }
}
