//! A stdio server's output with a bound on its lines. rmcp's line reader drops a line over its
//! limit and keeps reading, so the request that line answered never gets an answer and its
//! caller waits forever. Here a line over the bound ends the stream instead: the connection
//! closes, every call in flight fails at once, and the registry says why.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// The longest message a stdio server may send (rmcp's own default).
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// `inner` with lines of at most `max` bytes; `overflowed` is set when a longer one ended it.
#[derive(Debug)]
pub struct BoundedLines<R> {
    inner: R,
    max: usize,
    /// Bytes of the current line seen so far.
    current: usize,
    overflowed: Arc<AtomicBool>,
}

impl<R> BoundedLines<R> {
    pub fn new(inner: R, max: usize, overflowed: Arc<AtomicBool>) -> Self {
        Self {
            inner,
            max,
            current: 0,
            overflowed,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.overflowed.load(Ordering::Relaxed) {
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {}
            other => return other,
        }
        let mut keep = buf.filled().len();
        let mut current = this.current;
        for (at, byte) in buf.filled()[before..].iter().enumerate() {
            if *byte == b'\n' {
                current = 0;
                continue;
            }
            current += 1;
            if current > this.max {
                // Keep the whole lines before this one; the rest of the stream is gone.
                let start_of_line = before + at + 1 - current.min(at + 1);
                keep = start_of_line;
                this.overflowed.store(true, Ordering::Relaxed);
                break;
            }
        }
        this.current = current;
        buf.set_filled(keep);
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn read_all(input: &[u8], max: usize) -> (Vec<u8>, bool) {
        let flag = Arc::new(AtomicBool::new(false));
        let mut reader = BoundedLines::new(input, max, flag.clone());
        let mut out = Vec::new();
        let read = reader.read_to_end(&mut out).await;
        assert!(read.is_ok());
        (out, flag.load(Ordering::Relaxed))
    }

    #[tokio::test]
    async fn lines_within_the_bound_pass_whole() {
        let (out, overflowed) = read_all(b"{\"a\":1}\n{\"b\":2}\n", 8).await;
        assert_eq!(out, b"{\"a\":1}\n{\"b\":2}\n");
        assert!(!overflowed);
    }

    #[tokio::test]
    async fn a_line_over_the_bound_ends_the_stream_after_the_lines_before_it() {
        let (out, overflowed) = read_all(b"ok\nthis line is too long\nlater\n", 8).await;
        assert_eq!(out, b"ok\n");
        assert!(overflowed);
    }
}
