//! A turn's plan: what the message typed (slash commands, a link) and whether it is research,
//! read once when the turn starts, and what follows from it for the surface and the policy.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use codaris_catalogue::ToolId;
use codaris_policy::{Activity, Task};

use crate::forced::{COMPLIANCE_TOOL, Forced, RESEARCH_TOOLS, row};
use crate::research::{ResearchMatch, ResearchRule, classify_research, is_link};
use crate::slash::{Command, ReviewForm, Slash, parse_slash, strip};

/// What one user message asks of its turn.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnPlan {
    /// The slash commands typed.
    pub slash: Slash,
    /// Why the turn is research, when it is: `/research` typed, or (only when no command was
    /// typed) the classifier's rule.
    pub research: Option<ResearchMatch>,
    /// The `http(s)` links pasted, punctuation stripped, in order.
    pub links: Vec<String>,
}

impl TurnPlan {
    /// Reads a user message. The classifier runs only when no slash command was typed.
    pub fn from_message(message: &str) -> TurnPlan {
        let slash = parse_slash(message);
        let research = if slash.has(Command::Research) {
            Some(ResearchMatch {
                rule: ResearchRule::Command,
                evidence: Command::Research.as_str().to_owned(),
            })
        } else if slash.is_empty() {
            classify_research(message)
        } else {
            None
        };
        let links = message
            .split_whitespace()
            .filter(|t| is_link(t))
            .map(|t| strip(t).to_owned())
            .collect();
        TurnPlan {
            slash,
            research,
            links,
        }
    }

    /// True when a command in `commands` was typed.
    pub fn typed_any(&self, commands: &[Command]) -> bool {
        commands.iter().any(|c| self.slash.has(*c))
    }

    /// The form of the `/review`, when one was typed.
    pub fn review_form(&self) -> Option<ReviewForm> {
        self.slash.review.as_ref().map(|r| r.form())
    }

    /// True when the compliance audit is asked for: `/audit`, `/review --compliance`,
    /// `/review --quick`.
    pub fn is_audit(&self) -> bool {
        self.slash.has(Command::Audit) || self.review_form() == Some(ReviewForm::Audit)
    }

    /// The forced additions in order: each command's row in the order typed, then the research
    /// tools of a classified research turn, then the URL fetcher for a pasted link. Repeats are
    /// dropped, the first place kept.
    pub fn forced(&self) -> Vec<Forced> {
        let mut out: Vec<Forced> = Vec::new();
        let mut push = |f: Forced| {
            if !out.contains(&f) {
                out.push(f);
            }
        };
        let form = self.review_form().unwrap_or(ReviewForm::Bare);
        for command in &self.slash.commands {
            row(*command, form)
                .iter()
                .for_each(|t| push(Forced::Tool(*t)));
        }
        if self.research.is_some() {
            RESEARCH_TOOLS.iter().for_each(|t| push(Forced::Tool(*t)));
        }
        if !self.links.is_empty() {
            push(Forced::UrlFetcher);
        }
        out
    }

    /// True when `run_compliance_autofix` is forced this turn and neither `/remediate` nor
    /// `/autofix` was typed: every call of it is then made report-only (see
    /// [`TurnPlan::pin_args`]), so it can audit but never fix.
    pub fn report_only_pinned(&self) -> bool {
        !self.typed_any(&[Command::Remediate, Command::Autofix])
            && self.forced().contains(&Forced::Tool(COMPLIANCE_TOOL))
    }

    /// The activity the policy should see, given the session's own (`base`). Plan and ask
    /// sessions keep theirs. Otherwise, in order: a command that changes things (`/remediate`,
    /// `/autofix`, `/fix`, `/run`, `/repair`, `/extend`) keeps `agent`; the audit forms give
    /// `audit`; any other `/review` gives `review`; a research turn gives `research`.
    pub fn activity(&self, base: Activity) -> Activity {
        if base != Activity::Agent {
            return base;
        }
        let changes = [
            Command::Remediate,
            Command::Autofix,
            Command::Fix,
            Command::Run,
            Command::Repair,
            Command::Extend,
        ];
        if self.typed_any(&changes) {
            Activity::Agent
        } else if self.is_audit() {
            Activity::Audit
        } else if self.slash.has(Command::Review) {
            Activity::Review
        } else if self.research.is_some() {
            Activity::Research
        } else {
            Activity::Agent
        }
    }

    /// Writes the plan into the policy's task: the typed commands, the activity, and the
    /// extension workspace that `/extend` opens. `bound` is left to the surface.
    pub fn apply_to(&self, task: &mut Task) {
        task.slash = self.slash.typed();
        task.activity = self.activity(task.activity);
        task.extension |= self.slash.has(Command::Extend);
    }

    /// The arguments to dispatch for a call of `tool`: when the report-only pin holds and the
    /// tool is `run_compliance_autofix` with object arguments, a copy with `report_only: true`;
    /// otherwise `None` (dispatch the arguments as the model gave them).
    pub fn pin_args(&self, tool: &ToolId, args: &Value) -> Option<Value> {
        if tool.builtin() != Some(COMPLIANCE_TOOL) || !self.report_only_pinned() {
            return None;
        }
        let mut pinned = args.as_object()?.clone();
        pinned.insert("report_only".to_owned(), Value::Bool(true));
        Some(Value::Object(pinned))
    }
}
