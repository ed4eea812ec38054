//! One chat turn: rounds of model call → tool calls dispatched through the policy → results,
//! until the model stops, the loop guard ends the turn, the round limit is reached, or the turn
//! is cancelled.
//!
//! The loop knows neither storage nor transport: the daemon implements [`TurnHost`] (deciding a
//! call with the policy and the ledger, running what a permit allows, reporting events); the
//! loop's own tools (`search_tools`, `request_capability`) run here.

use codaris_catalogue::{BuiltinTool, ToolId};
use codaris_policy::{Decision, Task};
use futures_util::StreamExt;
use serde_json::Value;

use crate::compaction::{Fold, compact_tool, fit, server_compacted};
use crate::context::budget::ContextBudget;
use crate::context::estimate;
use crate::conversation::Conversation;
use crate::error::TurnError;
use crate::guard::{Check, LoopGuard, Progress};
use crate::history::CompactionTrigger;
use crate::history::Event;
use crate::host::{CallRequest, Decided, HostError, Permit, ToolRun, TurnHost};
use crate::loop_calls;
use crate::plan::TurnPlan;
use crate::provider::{
    CacheHints, ModelProvider, ModelRequest, Picture, ProviderError, Retrying, StopReason,
    StreamEvent, ToolCall, ToolDefinition, ToolTier,
};
use crate::reason::EndReason;
use crate::registry::Registry;
use crate::scripted::is_script_exhausted;
use crate::surface::{Surface, TurnState, surface, withholding};
use crate::usage::Usage;

/// What the loop reports as it goes.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEvent {
    TurnStarted {
        turn: u32,
    },
    Binding {
        turn: u32,
        round: u32,
        surface: Surface,
    },
    Text {
        text: String,
    },
    ToolCall {
        id: String,
        /// On the wire, the name as called.
        tool: ToolId,
        args: Value,
    },
    /// Every call is decided and recorded, a loop-guard refusal included (`repeated_search`);
    /// `decision` is `None` only for a call the turn never decided.
    ToolResult {
        id: String,
        tool: String,
        decision: Option<Decision>,
        output: String,
        /// The call did not do its job: refused, or it ran and reported an error.
        failed: bool,
    },
    /// The model API failed a request and the provider waits before trying it again.
    ProviderRetry(Retrying),
    Usage {
        turn: u32,
        usage: Usage,
        /// The last request against the model's context window, when the session has one.
        context: Option<ContextShare>,
    },
    /// Old tool results were evicted from what is sent (the conversation keeps them).
    Evicted {
        turn: u32,
        round: u32,
        results: u32,
        tokens_before: u64,
        tokens_after: u64,
    },
    /// The history before this round was folded into a summary.
    Compacted {
        turn: u32,
        round: u32,
        trigger: CompactionTrigger,
        /// Events folded.
        folded: u32,
        tokens_before: u64,
        tokens_after: u64,
    },
    TurnEnded {
        turn: u32,
        reason: EndReason,
        /// Why, beyond the reason: set with `error` and `max_tokens`.
        error: Option<TurnError>,
    },
}

/// The last request of a turn against the model's context window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextShare {
    /// The request's prompt tokens: as the API counted them when it said, else the estimate.
    pub tokens: u64,
    /// The model's context window.
    pub window: u64,
}

impl ContextShare {
    /// The share in whole percent, rounded half up.
    pub fn percent(&self) -> u64 {
        ContextBudget::new(self.window, 0).percent_of_window(self.tokens)
    }

    /// The sentence the usage line ends with: `Context: N of W tokens (P%).`
    pub fn sentence(&self) -> String {
        format!(
            "Context: {} of {} tokens ({}%).",
            self.tokens,
            self.window,
            self.percent()
        )
    }
}

/// Settings of the loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnConfig {
    pub system: String,
    pub max_rounds: u32,
    /// The lean nine-tool surface (`CODARIS_LEAN_7_TOOLS`), else the whole registry.
    pub lean: bool,
    /// Send the long tail as deferred tools and bind found ones by reference
    /// (`CODARIS_TOOL_SEARCH_API`, Anthropic only), so the tools array never changes.
    pub tool_search_api: bool,
    /// The context budget; `None` sends the whole conversation every round.
    pub context: Option<ContextBudget>,
}

/// Runs one turn of `text` and returns why it ended. Cancellation is the caller's: drop the
/// future (the provider's stream closes with it) and report `cancelled`.
pub async fn run_turn<H: TurnHost>(
    conversation: &mut Conversation,
    text: &str,
    base_task: &Task,
    provider: &dyn ModelProvider,
    host: &H,
    config: &TurnConfig,
) -> EndReason {
    let turn = conversation.turns;
    conversation.turns += 1;
    host.emit(TurnEvent::TurnStarted { turn });
    let notes = std::mem::take(&mut conversation.notes);
    conversation.push(Event::User {
        text: text.to_owned(),
        notes,
    });
    let mut state = TurnState::new(TurnPlan::from_message(text), base_task.clone(), config.lean);
    let mut guard = LoopGuard::new();
    let mut usage = Usage::default();
    let mut context = None;
    let (reason, error) = rounds(
        conversation,
        &mut state,
        provider,
        host,
        config,
        turn,
        &mut guard,
        (&mut usage, &mut context),
    )
    .await;
    host.emit(TurnEvent::Usage {
        turn,
        usage,
        context,
    });
    host.emit(TurnEvent::TurnEnded {
        turn,
        reason,
        error,
    });
    reason
}

#[expect(
    clippy::too_many_arguments,
    reason = "the loop's whole state, passed down once"
)]
async fn rounds<H: TurnHost>(
    conversation: &mut Conversation,
    state: &mut TurnState,
    provider: &dyn ModelProvider,
    host: &H,
    config: &TurnConfig,
    turn: u32,
    guard: &mut LoopGuard,
    (usage, context): (&mut Usage, &mut Option<ContextShare>),
) -> (EndReason, Option<TurnError>) {
    for round in 0..config.max_rounds {
        // A `switch_model` call counts from the next request on.
        let switched = host.switched_model();
        let provider: &dyn ModelProvider = switched.as_deref().unwrap_or(provider);
        // What arrived since the last request (the memory subagent's recall) rides along now.
        conversation.note_now(host.round_notes());
        // Read every round: a tool switched off mid-turn is gone from the next round.
        let registry = host.index().registry();
        state.switch_off(&registry);
        let surface = surface(conversation.events(), state, &registry);
        host.emit(TurnEvent::Binding {
            turn,
            round,
            surface: surface.clone(),
        });
        let tools = request_tools(
            &surface,
            state.task(),
            &registry,
            host,
            config.tool_search_api,
        );
        let fixed = estimate::fixed(&config.system, &tools);
        let estimated = match &config.context {
            Some(budget) => {
                let fitted = fit(conversation, budget, fixed, provider, host, turn, round).await;
                Some((fitted.tokens, budget.window))
            }
            None => None,
        };
        let request = ModelRequest {
            system: config.system.clone(),
            messages: conversation.sent_messages(),
            tools,
            cache: cache_hints(config),
            max_tokens: None,
            server_compaction: config
                .context
                .filter(|budget| budget.server_side)
                .map(|budget| budget.at(budget.compact_at)),
        };
        let mut answer = match collect(provider, &request, host).await {
            Ok(answer) => answer,
            Err(error) => return (EndReason::Error, Some(TurnError::from(&error))),
        };
        if let Some(round_usage) = &answer.usage {
            usage.add(round_usage);
        }
        if let Some((estimate, window)) = estimated {
            // The API's own count of the prompt when it gave one.
            let tokens = answer
                .usage
                .map(|u| u.prompt_tokens())
                .filter(|t| *t > 0)
                .unwrap_or(estimate);
            *context = Some(ContextShare { tokens, window });
        }
        if answer.exhausted {
            return (EndReason::ScriptExhausted, None);
        }
        if let (Some(summary), Some(budget)) = (answer.compacted.take(), &config.context) {
            let fold = Fold {
                trigger: CompactionTrigger::Server,
                instructions: None,
                budget,
                fixed,
                turn,
                round,
            };
            server_compacted(conversation, summary, fold, host).await;
        }
        if answer.capped {
            // The partial text stays; calls cut off by the cap are dropped: unanswered calls
            // would make the next request invalid, and a cut call's arguments are incomplete.
            // No text, no message: an empty assistant message is refused by the Anthropic API.
            if !answer.text.is_empty() {
                conversation.push(Event::assistant(answer.text));
            }
            return (
                EndReason::MaxTokens,
                Some(TurnError::OutputCapped {
                    provider: provider.name().to_owned(),
                    cap: provider.max_output_tokens(),
                }),
            );
        }
        conversation.push(Event::Assistant {
            text: answer.text,
            calls: answer.calls.clone(),
        });
        if answer.calls.is_empty() {
            return (EndReason::EndTurn, None);
        }
        let round_of = RoundOf {
            surface: &surface,
            provider,
            config,
            fixed,
            turn,
            round,
        };
        for call in answer.calls {
            match dispatch(conversation, state, &round_of, host, guard, call).await {
                Ok(None) => {}
                Ok(Some(reason)) => return (reason, None),
                Err(error) => return (EndReason::Error, Some(TurnError::Host(error))),
            }
        }
    }
    (EndReason::MaxRounds, None)
}

/// The prompt-cache breakpoints of a request: on the last always-on tool and, with a context
/// budget, on the conversation's last block too, so a round reads the rounds before it from
/// the cache and an eviction batch costs one rewrite.
fn cache_hints(config: &TurnConfig) -> CacheHints {
    CacheHints {
        conversation: config.context.is_some(),
        ..CacheHints::default()
    }
}

/// What a call of a round may need of its round.
struct RoundOf<'a> {
    surface: &'a Surface,
    provider: &'a dyn ModelProvider,
    config: &'a TurnConfig,
    fixed: u64,
    turn: u32,
    round: u32,
}

/// The tools array of a request: the round's surface in order; or, with the tool-search API,
/// the always-on tools and then every other tool the task does not hold back deferred, in
/// registry order — the same array in every request of the session (until a switch or a mode
/// changes it), since found tools are bound by reference instead.
fn request_tools<H: TurnHost>(
    surface: &Surface,
    task: &Task,
    registry: &Registry,
    host: &H,
    tool_search_api: bool,
) -> Vec<ToolDefinition> {
    if !tool_search_api {
        return surface.tools.iter().filter_map(|t| host.spec(t)).collect();
    }
    let mut tools: Vec<ToolDefinition> = surface
        .tools
        .iter()
        .take(surface.always_on)
        .filter_map(|t| host.spec(t))
        .collect();
    let offered = registry
        .tools()
        .iter()
        .filter(|t| withholding(&t.name, task, registry).is_none());
    for tool in offered {
        if tools.iter().any(|s| s.name == tool.name) {
            continue;
        }
        if let Some(mut spec) = host.spec(&tool.name) {
            spec.tier = ToolTier::Deferred;
            tools.push(spec);
        }
    }
    tools
}

/// One model answer, gathered from its stream.
#[derive(Debug, Default)]
struct Answer {
    text: String,
    calls: Vec<ToolCall>,
    usage: Option<Usage>,
    exhausted: bool,
    /// The answer stopped at its output cap.
    capped: bool,
    /// The API's summary, when it compacted server-side before answering.
    compacted: Option<String>,
}

// A span per model request (retries and streaming included), exported when telemetry is on.
#[tracing::instrument(
    name = "model_request",
    level = "info",
    skip_all,
    fields(provider = provider.name(), model = provider.model())
)]
async fn collect<H: TurnHost>(
    provider: &dyn ModelProvider,
    request: &ModelRequest,
    host: &H,
) -> Result<Answer, ProviderError> {
    let mut stream = provider.stream(request);
    let mut answer = Answer::default();
    while let Some(event) = stream.next().await {
        match event? {
            StreamEvent::TextDelta { text } => {
                host.emit(TurnEvent::Text { text: text.clone() });
                answer.text.push_str(&text);
            }
            StreamEvent::ToolCall(call) => answer.calls.push(call),
            // Arguments that are not JSON reach the policy as a string, which it refuses with
            // a sentence telling the model how to call again.
            StreamEvent::InvalidToolCall(bad) => answer.calls.push(ToolCall {
                id: bad.id,
                name: bad.name,
                arguments: Value::String(bad.raw_arguments),
            }),
            StreamEvent::Usage(round) => {
                answer.usage.get_or_insert_with(Usage::default).add(&round)
            }
            StreamEvent::Stop { reason } => {
                answer.exhausted = is_script_exhausted(&reason);
                answer.capped = reason == StopReason::MaxTokens;
            }
            StreamEvent::Retrying(retry) => host.emit(TurnEvent::ProviderRetry(retry)),
            StreamEvent::Compacted { summary } => answer.compacted = Some(summary),
        }
    }
    Ok(answer)
}

/// Guards, decides, runs and records one call; `Some` ends the turn.
// A span per tool call, decision and run alike; never its arguments (they may hold secrets).
#[tracing::instrument(
    name = "tool_call",
    level = "info",
    skip_all,
    fields(tool.name = %call.name, tool.call_id = %call.id)
)]
async fn dispatch<H: TurnHost>(
    conversation: &mut Conversation,
    state: &mut TurnState,
    round: &RoundOf<'_>,
    host: &H,
    guard: &mut LoopGuard,
    call: ToolCall,
) -> Result<Option<EndReason>, HostError> {
    // The one place the called name is read: from here on the call carries what it names.
    let tool = ToolId::parse(&call.name);
    host.emit(TurnEvent::ToolCall {
        id: call.id.clone(),
        tool: tool.clone(),
        args: call.arguments.clone(),
    });
    conversation.push(Event::ToolCall {
        id: call.id.clone(),
    });
    let surface = round.surface;
    let mut task = state.dispatch_task(surface);
    // A guard refusal is decided and recorded like any call: its finding is the task's input.
    let guard_ends = match guard.check(&tool, &call.arguments) {
        Check::Proceed => None,
        Check::Refuse(refusal) => {
            task.repeated_search = refusal.search;
            Some(false)
        }
        Check::EndTurn(refusal) => {
            task.repeated_search = refusal.search;
            Some(true)
        }
    };
    let args = state
        .plan()
        .pin_args(&tool, &call.arguments)
        .unwrap_or_else(|| call.arguments.clone());
    let request = CallRequest {
        id: call.id.clone(),
        tool,
        args,
        task,
        cwd: state.moved_to().map(std::path::Path::to_path_buf),
    };
    let permit = match host.decide(&request).await? {
        Decided::Run(permit) if guard_ends.is_none() => permit,
        // The policy refuses every call the guard found repeating; a host that allowed one
        // anyway does not get to run it.
        Decided::Run(permit) => {
            let decision = permit.decision().clone();
            answer(
                conversation,
                host,
                &call,
                Some(decision),
                Reply::error("the loop guard refused this call".to_owned()),
            );
            return Ok(guard_ends
                .filter(|ends| *ends)
                .map(|_| EndReason::LoopGuard));
        }
        Decided::Refused(decision) => {
            let refused = Reply::error(decision.sentence.clone());
            answer(conversation, host, &call, Some(decision), refused);
            return Ok(guard_ends
                .filter(|ends| *ends)
                .map(|_| EndReason::LoopGuard));
        }
        Decided::Failed { decision, run } => {
            let failed = Reply::error(run.output);
            answer(conversation, host, &call, Some(decision), failed);
            return Ok(guard_ends
                .filter(|ends| *ends)
                .map(|_| EndReason::LoopGuard));
        }
    };
    let decision = permit.decision().clone();
    let (run, bound) = match request.tool {
        ToolId::Builtin(BuiltinTool::SearchTools) => {
            loop_calls::search(host.index(), state.task(), permit)
        }
        ToolId::Builtin(BuiltinTool::RequestCapability) => (
            request_capability(host, &request.id, permit).await,
            Vec::new(),
        ),
        ToolId::Builtin(BuiltinTool::CompactContext) => {
            let budget = round
                .config
                .context
                .unwrap_or_else(|| ContextBudget::for_model(round.provider.model(), None, 0));
            let fold = Fold {
                trigger: CompactionTrigger::Tool,
                instructions: None,
                budget: &budget,
                fixed: round.fixed,
                turn: round.turn,
                round: round.round,
            };
            let run = compact_tool(conversation, permit.args(), fold, round.provider, host).await;
            (run, Vec::new())
        }
        _ => (host.run(permit).await, Vec::new()),
    };
    let run = host.limit(&request.tool, run);
    if let Some(cwd) = &run.moved_to {
        state.move_to(cwd.clone());
    }
    let progress = guard.record(&request.tool, &call.arguments, &run.output, &bound);
    let (output, ends) = match progress {
        Progress::Made => (run.output, false),
        Progress::None(refusal) => (format!("{}\n\n[{}]", run.output, refusal.sentence), false),
        Progress::EndTurn(refusal) => (format!("{}\n\n[{}]", run.output, refusal.sentence), true),
    };
    let reply = Reply {
        output,
        is_error: run.is_error,
        bound,
        pictures: run.pictures,
    };
    answer(conversation, host, &call, Some(decision), reply);
    Ok(ends.then_some(EndReason::LoopGuard))
}

/// A `request_capability` call, run on its permit: read here, asked through the host's card
/// call.
async fn request_capability<H: TurnHost>(host: &H, call_id: &str, permit: H::Permit) -> ToolRun {
    match loop_calls::capability_request(call_id, permit.args()) {
        Ok(asked) => {
            let answer = host.request_capability(&asked).await;
            loop_calls::capability_reply(&asked, answer)
        }
        Err(refused) => refused,
    }
}

/// What goes back to the model for one call.
#[derive(Debug)]
struct Reply {
    output: String,
    is_error: bool,
    bound: Vec<String>,
    pictures: Vec<Picture>,
}

impl Reply {
    /// A refusal: the sentence alone.
    fn error(sentence: String) -> Self {
        Self {
            output: sentence,
            is_error: true,
            bound: Vec::new(),
            pictures: Vec::new(),
        }
    }
}

/// Records a call's result in the conversation and reports it.
fn answer<H: TurnHost>(
    conversation: &mut Conversation,
    host: &H,
    call: &ToolCall,
    decision: Option<Decision>,
    reply: Reply,
) {
    let Reply {
        output,
        is_error,
        bound,
        pictures,
    } = reply;
    host.emit(TurnEvent::ToolResult {
        id: call.id.clone(),
        tool: call.name.clone(),
        decision,
        output: output.clone(),
        failed: is_error,
    });
    conversation.push_result(Event::ToolResult {
        id: call.id.clone(),
        tool: call.name.clone(),
        output,
        bound,
        is_error,
        pictures,
        retired: String::new(),
    });
}
