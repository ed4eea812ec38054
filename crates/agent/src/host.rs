//! The seam between the turn loop and the daemon: what the loop hands over, what comes back.
//!
//! A call goes agent → host → dispatcher → tool and back, never returning to a crate it left:
//! the loop asks the host to [`decide`](TurnHost::decide) a call; the host answers
//! [`Decided::Run`] with a permit or [`Decided::Refused`] with the decision; only a permit runs a
//! host tool ([`run`](TurnHost::run)). The loop's own tools run here: `search_tools` against
//! the host's [`ToolIndex`], `request_capability` through the host's card call.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use codaris_catalogue::ToolId;
use codaris_index::{KindFilter, SearchOutcome};
use codaris_policy::{Capability, Decision, Task};
use serde_json::Value;

use crate::context::compact::ContextSection;
use crate::provider::{ModelProvider, Picture, ToolDefinition};
use crate::registry::Registry;
use crate::turn::TurnEvent;

/// A boxed future, so the host trait stays object-safe.
pub type HostFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One call as the host sees it: arguments as sent (or pinned by the turn's plan) and the task
/// of this call: the round's surface as `bound`, the turn's current directory as `cwd`, the
/// switched-off tools as `withheld`, and the loop guard's finding, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRequest {
    pub id: String,
    /// What the called name names, read once where the call entered the loop.
    pub tool: ToolId,
    pub args: Value,
    pub task: Task,
    /// The turn's directory as a tool moved it, typed (`task.cwd` is its text): `None` until
    /// a tool moves the turn.
    pub cwd: Option<PathBuf>,
}

/// What the loop may read of a permit: the decision that allowed the call and the arguments it
/// was decided on. How a permit is made is the host's own business; the daemon's can only be
/// made by its dispatcher. The loop's own tools run on it as the host's tools do.
pub trait Permit: Send {
    fn decision(&self) -> &Decision;
    /// The arguments the call was decided on, as sent (or pinned by the turn's plan).
    fn args(&self) -> &Value;
}

/// What the host decided about a call, final: a card was shown and answered if one was needed.
#[derive(Debug)]
pub enum Decided<P> {
    /// Allowed: the permit is the only way to run it.
    Run(P),
    /// Refused (or asked and not granted): the decision's sentence goes back to the model.
    Refused(Decision),
    /// Asked, but the call fails its tool's own checks (a pipeline launch's arguments), so no
    /// card was shown: `run`, the tool's error, goes back to the model with the decision.
    Failed { decision: Decision, run: ToolRun },
}

/// Why the host could not decide a call. The turn ends with an error: nothing unrecorded runs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    /// The decision could not be made durable.
    #[error("the ledger could not record a decision, so the call did not run: {reason}")]
    NotRecorded { reason: String },
    /// The host failed inside while deciding.
    #[error("deciding a call failed inside the daemon: {reason}")]
    Internal { reason: String },
}

impl HostError {
    /// The snake-case name of the variant, on the wire (`turn_ended.error_kind`).
    pub fn kind(&self) -> &'static str {
        match self {
            HostError::NotRecorded { .. } => "host_not_recorded",
            HostError::Internal { .. } => "host_internal",
        }
    }
}

/// What running an allowed call produced.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolRun {
    /// The text the model reads.
    pub output: String,
    pub is_error: bool,
    /// Pictures for a multimodal model, shown after `output` (the host leaves this empty for
    /// a model that takes none).
    pub pictures: Vec<Picture>,
    /// The directory the call moved the session to (`worktree_create`): the rest of the turn's
    /// calls are decided and run there.
    pub moved_to: Option<PathBuf>,
}

impl ToolRun {
    /// A successful run that answers `output`.
    pub fn ok(output: impl Into<String>) -> ToolRun {
        ToolRun {
            output: output.into(),
            ..ToolRun::default()
        }
    }

    /// A failed run that answers `output`.
    pub fn error(output: impl Into<String>) -> ToolRun {
        ToolRun {
            output: output.into(),
            is_error: true,
            ..ToolRun::default()
        }
    }
}

/// A `request_capability` call as the loop read it: what is asked for and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapabilityRequest {
    /// The tool call the card answers.
    pub call_id: String,
    pub capability: Capability,
    pub reason: String,
}

impl CapabilityRequest {
    /// The sentence its card shows the person.
    pub fn sentence(&self) -> String {
        format!(
            "the model asks for `{}`{}: {}",
            self.capability.name.as_str(),
            self.target(),
            self.reason
        )
    }

    /// ` on `path`` for a scoped capability, else nothing: how the texts name what is asked.
    pub(crate) fn target(&self) -> String {
        self.capability
            .path
            .as_ref()
            .map(|p| format!(" on `{p}`"))
            .unwrap_or_default()
    }
}

/// What the person's grants say about a requested capability once its card was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapabilityAnswer {
    /// A grant covers it for the next call only.
    GrantedOnce,
    /// A grant covers it for the rest of the session.
    GrantedSession,
    /// A recorded refusal covers it (now or from before: then no card was shown).
    Refused,
    /// The person refused this request alone (Ctrl-C at the card): nothing was recorded
    /// against the capability, so asking again shows a card again.
    RefusedOnce,
    /// Nobody answered, or the answer could not be recorded.
    Unanswered,
    /// Answered, yet no grant in force covers it.
    NotCovered,
}

/// The tools a turn can find and bind, as the host has them now. Read every round, so a tool
/// switched on or off mid-session counts from the next round.
pub trait ToolIndex: Send + Sync {
    /// Every tool that could be sent to the model, with its switched state.
    fn registry(&self) -> Arc<Registry>;
    /// Ranks the index for a `search_tools` call.
    fn search(&self, query: &str, kind: KindFilter, limit: usize) -> SearchOutcome;
}

/// The daemon's side of a turn.
pub trait TurnHost: Send + Sync {
    /// The host's proof that a call was decided `allow` and recorded.
    type Permit: Permit;

    /// The schema the model is shown for a bound tool; `None` leaves it off the request.
    fn spec(&self, tool: &str) -> Option<ToolDefinition>;
    /// The index `search_tools` searches and the registry the surface is built from.
    fn index(&self) -> &dyn ToolIndex;
    /// Decides a call with the policy (asking the person on a card when it says `ask`) and
    /// records the decision, whatever it is.
    fn decide<'a>(
        &'a self,
        call: &'a CallRequest,
    ) -> HostFuture<'a, Result<Decided<Self::Permit>, HostError>>;
    /// Runs an allowed host tool.
    fn run(&self, permit: Self::Permit) -> HostFuture<'_, ToolRun>;
    /// Shows a card asking for `request.capability`, waits for the answer and records it; says
    /// what the grants in force say afterwards.
    fn request_capability<'a>(
        &'a self,
        request: &'a CapabilityRequest,
    ) -> HostFuture<'a, CapabilityAnswer>;
    /// Cuts the result of a call of `tool` to the host's output limits before the model reads
    /// it. Every run passes here, the loop's own tools' too.
    fn limit(&self, tool: &ToolId, run: ToolRun) -> ToolRun {
        let _ = tool;
        run
    }
    fn emit(&self, event: TurnEvent);
    /// What a compaction keeps that lives outside the conversation, re-read now: the plan
    /// documents, the planner's checklist, the open background tasks.
    fn survivors(&self) -> HostFuture<'_, Vec<ContextSection>> {
        Box::pin(async { Vec::new() })
    }
    /// The provider of the configured model `model` names (`compact_context`'s `model`), or a
    /// sentence saying why there is none.
    fn summariser<'a>(
        &'a self,
        model: &'a str,
    ) -> HostFuture<'a, Result<Box<dyn ModelProvider>, String>> {
        Box::pin(async move { Err(format!("no configured model matches `{model}`")) })
    }
    /// The model this turn's next request goes to when a `switch_model` call changed it (for
    /// the session or for this turn); `None` keeps the one the turn started with. Read before
    /// every request.
    fn switched_model(&self) -> Option<Arc<dyn ModelProvider>> {
        None
    }
    /// Notes that arrived while the turn ran and go to the model with its next request (what
    /// the memory subagent recalled), taken. Read before every request; never waited for.
    fn round_notes(&self) -> Vec<String> {
        Vec::new()
    }
}
