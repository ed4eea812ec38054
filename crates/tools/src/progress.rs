//! How a long-running tool tells the person how far it is while the call still runs (a
//! pipeline's tasks as they finish): the daemon opens a [`scope`] around each call with a
//! sink that turns the lines into turn events; a tool takes the [`current`] reporter once,
//! before it moves to a blocking thread, and [`Progress::report`]s lines from anywhere.
//!
//! A task-local rather than a field of `ToolContext`: only the few tools that report need to
//! know, and a call outside any scope (the tools' own tests) reports to nowhere.

use std::sync::Arc;

/// Where progress lines go.
pub type ProgressSink = Arc<dyn Fn(&str) + Send + Sync>;

tokio::task_local! {
    static SINK: ProgressSink;
}

/// A handle that reports the current call's progress; cheap to clone, `Send`.
#[derive(Clone, Default)]
pub struct Progress(Option<ProgressSink>);

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Progress").field(&self.0.is_some()).finish()
    }
}

impl Progress {
    /// Sends one line; nothing happens outside a scope.
    pub fn report(&self, line: &str) {
        if let Some(sink) = &self.0 {
            sink(line);
        }
    }
}

/// The reporter of the call running on this task (none outside a [`scope`]).
pub fn current() -> Progress {
    Progress(SINK.try_with(Clone::clone).ok())
}

/// Runs `call` with its progress going to `sink`.
pub async fn scope<F: std::future::Future>(sink: ProgressSink, call: F) -> F::Output {
    SINK.scope(sink, call).await
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[tokio::test]
    async fn lines_reach_the_sink_of_their_scope_only() {
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let into = seen.clone();
        let sink: ProgressSink = Arc::new(move |line| {
            into.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(line.to_owned());
        });
        current().report("before: nowhere");
        scope(sink, async {
            let progress = current();
            let _ = tokio::task::spawn_blocking(move || progress.report("from a thread")).await;
        })
        .await;
        current().report("after: nowhere");
        let seen = seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        assert_eq!(*seen, ["from a thread"]);
    }
}
