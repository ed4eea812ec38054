//! What a turn's host needs of the live sessions to run subagents: starting a child's turn,
//! reaching a live session, cancelling and waking. The live sessions (`live.rs`) provide it; a
//! host reaches it through [`super::services::Services::family`], so neither imports the other.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use codaris_proto::v1;
use tokio::sync::mpsc;

use super::session::Session;
use crate::error::DaemonError;

/// A boxed future, so the trait stays object-safe.
pub type FamilyFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The live sessions as subagents use them.
pub trait Family: Send + Sync {
    /// Starts a turn of `session_id` with `text` and follows its events.
    fn start<'a>(
        &'a self,
        session_id: &'a str,
        text: String,
    ) -> FamilyFuture<'a, Result<mpsc::Receiver<v1::TurnEvent>, DaemonError>>;
    /// The live value of `session_id`, when it has one.
    fn live(&self, session_id: &str) -> Option<Arc<Session>>;
    /// Cancels `session_id`'s running turn and its running children's; `false` when nothing
    /// ran.
    fn cancel(&self, session_id: &str) -> bool;
    /// Wakes `session_id` with `text` (a background child's report): a turn starts now when
    /// none runs, else once the running one ends.
    fn wake(&self, session_id: &str, text: String);
    /// Lets go of a finished child's live value (its record and kept conversation stay, so
    /// `resume` makes it again): what a session holds must not grow with its finished children.
    fn release(&self, session_id: &str);
}
